"""Dead-letter queues: overview, browse, export, and redrive jobs (rate-limited, resumable,
cancellable, exactly once), large ones behind the change-request approval."""
