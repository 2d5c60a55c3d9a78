"""The HTTP edge every page and API shares: the JSON error shape and error pages, middleware,
strict input fields, the API's body schemas, streamed CSV, the read-only admin, system checks."""
