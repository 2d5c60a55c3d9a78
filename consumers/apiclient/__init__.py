"""The console's own clients of its HTTP API: the MCP server (`rocketmq-console mcp`) and the
command line (`rocketmq-console api ...`).

They talk to /api/ with an API token, like any script, so scope, read-only tokens, throttling
and the audit log are the API's own, and they can run on another host than the console. No
Django here: the package imports without the console's settings.
"""
