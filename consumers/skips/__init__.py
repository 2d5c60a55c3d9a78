"""Skipping a poison message: a reviewed request to move one queue's committed offset past the
message(s) a group is pinned at, keeping a copy of each in the group's DLQ first."""
