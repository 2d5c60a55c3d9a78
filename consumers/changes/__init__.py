"""Change requests: the four-eyes workflow (request, approve or reject, run, result) and the
append-only audit log, shared by offset resets and DLQ redrives."""
