"""Message investigation: find a message (by id, key, position or time) and track it through
every group that consumes its topic, with the offsets and copies behind each verdict.

`lookup` and `track` are pure asyncio over the admin client (no Django); `services` runs them
on a cluster and adds what the console keeps (the last poll, redrive records); `views` and
`api` are the pages and their JSON. Bodies are for operators only (identity/bodies.py)."""
