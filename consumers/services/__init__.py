"""Plain service functions: the logic views, tasks and commands call."""
