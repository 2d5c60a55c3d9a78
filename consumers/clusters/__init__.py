"""Reaching a cluster: every feature gets its admin client through `connect`."""
