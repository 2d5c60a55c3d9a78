"""The claimed-job machinery every long task shares: claims (claim, token, heartbeat, take-over),
the child processes jobs run, and the Redis connection jobs and polls travel through."""
