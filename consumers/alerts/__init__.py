"""Alerts: rules an admin writes over what every poll judged (health states, lag in seconds,
dead-letter arrivals, a degraded cluster, a missing broker), notified through channels
(webhook, Slack, e-mail, Alertmanager), with silences and acknowledgements.

The poll knows nothing of alerts: it sends `live.signals.poll_published`, and `evaluate`
turns each poll into transitions (pending, firing, resolved). Each transition is one
conditional UPDATE and its notifications are rows with a unique (alert, channel, event), so
two workers or a redelivered task still notify once. `delivery` sends them as claimed jobs,
retried with backoff, every attempt logged.
"""
