"""A group's lifecycle: groups nobody runs any more (abandoned.py: no client online for
ABANDONED_AFTER_DAYS, from when each poll last saw one, seen.py).

The poll knows nothing of this package: seen.py listens to `live.signals.poll_published`."""
