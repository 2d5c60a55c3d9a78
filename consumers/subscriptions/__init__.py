"""A group's subscription config per broker, and changes of it (pause and resume among them)
as a kind of change request."""
