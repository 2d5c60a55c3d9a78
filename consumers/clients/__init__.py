"""A consumer's own view: what each online client of a group reports about itself (its running
info, relayed by a broker it is connected to) and its threads' stacks, read for the operator."""
