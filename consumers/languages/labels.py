"""The codes the console stores and the API gives (states, triggers, actions, a group's message
model, who knows a client), as words on a page.

The database, the snapshots in Redis, the API and the CSV downloads keep the codes: scripts
filter on them, and a code stored once reads the same for every reader. A page shows each code
through `label` (the `word` template filter), in the reader's language. In English the word is
the code itself, as it always read; a code no table knows (a state added later) is shown as it
is. Each table has its own context, so that "failed" may be worded differently for a change
request and for a delivery."""

from __future__ import annotations

from django.utils.translation import pgettext_lazy

# a group's message model, as the clients report it (consumers/live/diagnostics.py: message_model)
MESSAGE_MODELS = {
    "CLUSTERING": pgettext_lazy("message model", "CLUSTERING"),
    "BROADCASTING": pgettext_lazy("message model", "BROADCASTING"),
}
# who knows a connected client (consumers/live/documents.py writes the connections' "via")
KNOWN_TO = {
    "broker": pgettext_lazy("known to", "broker"),
    "proxy (gRPC)": pgettext_lazy("known to", "proxy (gRPC)"),
}
CHANGE_STATES = {
    "draft": pgettext_lazy("change state", "draft"),
    "pending": pgettext_lazy("change state", "pending"),
    "approved": pgettext_lazy("change state", "approved"),
    "running": pgettext_lazy("change state", "running"),
    "done": pgettext_lazy("change state", "done"),
    "partial": pgettext_lazy("change state", "partial"),
    "failed": pgettext_lazy("change state", "failed"),
    "rejected": pgettext_lazy("change state", "rejected"),
    "expired": pgettext_lazy("change state", "expired"),
    "cancelled": pgettext_lazy("change state", "cancelled"),
}
# what an audit event (and a change request's timeline) records: the `action` of audit.record
AUDIT_ACTIONS = {
    "request": pgettext_lazy("audit action", "request"),
    "approve": pgettext_lazy("audit action", "approve"),
    "approve-part": pgettext_lazy("audit action", "approve-part"),
    "approve-alone": pgettext_lazy("audit action", "approve-alone"),
    "reject": pgettext_lazy("audit action", "reject"),
    "cancel": pgettext_lazy("audit action", "cancel"),
    "expire": pgettext_lazy("audit action", "expire"),
    "refresh-preview": pgettext_lazy("audit action", "refresh-preview"),
    "run": pgettext_lazy("audit action", "run"),
    "resume": pgettext_lazy("audit action", "resume"),
    "result": pgettext_lazy("audit action", "result"),
    "redrive-plan": pgettext_lazy("audit action", "redrive-plan"),
    "redrive-pause": pgettext_lazy("audit action", "redrive-pause"),
    "redrive-resume": pgettext_lazy("audit action", "redrive-resume"),
    "redrive-cancel": pgettext_lazy("audit action", "redrive-cancel"),
    "redrive-run": pgettext_lazy("audit action", "redrive-run"),
    "redrive-result": pgettext_lazy("audit action", "redrive-result"),
    "redrive-continued": pgettext_lazy("audit action", "redrive-continued"),
    "dlq-export": pgettext_lazy("audit action", "dlq-export"),
    "dlq-make-readable": pgettext_lazy("audit action", "dlq-make-readable"),
    "report-download": pgettext_lazy("audit action", "report-download"),
    "report-scheduled": pgettext_lazy("audit action", "report-scheduled"),
    "api-token-create": pgettext_lazy("audit action", "api-token-create"),
    "api-token-revoke": pgettext_lazy("audit action", "api-token-revoke"),
    "api-token-locked-out": pgettext_lazy("audit action", "api-token-locked-out"),
    "api-call": pgettext_lazy("audit action", "api-call"),  # a call of the MCP server or the command line
    "login": pgettext_lazy("audit action", "login"),
    "logout": pgettext_lazy("audit action", "logout"),
    "login-locked-out": pgettext_lazy("audit action", "login-locked-out"),
    "idp-groups-changed": pgettext_lazy("audit action", "idp-groups-changed"),
    "write-refused": pgettext_lazy("audit action", "write-refused"),
    "grant-add": pgettext_lazy("audit action", "grant-add"),
    "grant-change": pgettext_lazy("audit action", "grant-change"),
    "grant-delete": pgettext_lazy("audit action", "grant-delete"),
    "alert-acknowledged": pgettext_lazy("audit action", "alert-acknowledged"),
    "alert-rule-saved": pgettext_lazy("audit action", "alert-rule-saved"),
    "alert-rule-deleted": pgettext_lazy("audit action", "alert-rule-deleted"),
    "alert-channel-saved": pgettext_lazy("audit action", "alert-channel-saved"),
    "alert-channel-deleted": pgettext_lazy("audit action", "alert-channel-deleted"),
    "silence-created": pgettext_lazy("audit action", "silence-created"),
    "silence-ended": pgettext_lazy("audit action", "silence-ended"),
}
# a statistics run: what started it (StatsRun.trigger) and its state
RUN_TRIGGERS = {
    "nightly": pgettext_lazy("run trigger", "nightly"),
    "page": pgettext_lazy("run trigger", "page"),
    "command": pgettext_lazy("run trigger", "command"),
    "demo": pgettext_lazy("run trigger", "demo"),
}
RUN_STATES = {
    "queued": pgettext_lazy("run state", "queued"),
    "running": pgettext_lazy("run state", "running"),
    "succeeded": pgettext_lazy("run state", "succeeded"),
    "failed": pgettext_lazy("run state", "failed"),
}
# alerts: a rule's severity, an alert's state, and each notification's event and state
SEVERITIES = {
    "critical": pgettext_lazy("severity", "critical"),
    "warning": pgettext_lazy("severity", "warning"),
    "info": pgettext_lazy("severity", "info"),
}
ALERT_STATES = {
    "pending": pgettext_lazy("alert state", "pending"),
    "firing": pgettext_lazy("alert state", "firing"),
    "resolved": pgettext_lazy("alert state", "resolved"),
    "cleared": pgettext_lazy("alert state", "cleared"),
}
DELIVERY_EVENTS = {
    "firing": pgettext_lazy("notification event", "firing"),
    "resolved": pgettext_lazy("notification event", "resolved"),
}
DELIVERY_STATES = {
    "pending": pgettext_lazy("notification state", "pending"),
    "sending": pgettext_lazy("notification state", "sending"),
    "sent": pgettext_lazy("notification state", "sent"),
    "failed": pgettext_lazy("notification state", "failed"),
}

# a DLQ redrive job's state (dlq/models.py: RedriveJob.State), and the two its shown_state adds
# while its worker still sends the window in flight
REDRIVE_STATES = {
    "awaiting-approval": pgettext_lazy("redrive state", "awaiting-approval"),
    "queued": pgettext_lazy("redrive state", "queued"),
    "running": pgettext_lazy("redrive state", "running"),
    "paused": pgettext_lazy("redrive state", "paused"),
    "pausing": pgettext_lazy("redrive state", "pausing"),
    "cancelled": pgettext_lazy("redrive state", "cancelled"),
    "cancelling": pgettext_lazy("redrive state", "cancelling"),
    "done": pgettext_lazy("redrive state", "done"),
    "partial": pgettext_lazy("redrive state", "partial"),
    "failed": pgettext_lazy("redrive state", "failed"),
    "rejected": pgettext_lazy("redrive state", "rejected"),
}
# an API token's state (identity/tokens/models.py: ApiToken.state)
TOKEN_STATES = {
    "active": pgettext_lazy("token state", "active"),
    "expired": pgettext_lazy("token state", "expired"),
    "revoked": pgettext_lazy("token state", "revoked"),
}
# a saved report's state (reports/models.py: Report.State)
REPORT_STATES = {
    "queued": pgettext_lazy("report state", "queued"),
    "running": pgettext_lazy("report state", "running"),
    "ready": pgettext_lazy("report state", "ready"),
    "failed": pgettext_lazy("report state", "failed"),
}
# a cluster's state on the overview and cluster pages (live/selectors.py: ClusterState.state)
CLUSTER_STATES = {
    "ok": pgettext_lazy("cluster state", "ok"),
    "degraded": pgettext_lazy("cluster state", "degraded"),
    "stale": pgettext_lazy("cluster state", "stale"),
    "failed": pgettext_lazy("cluster state", "failed"),
    "awaiting poll": pgettext_lazy("cluster state", "awaiting poll"),
    "never polled": pgettext_lazy("cluster state", "never polled"),
}
# what a poll could not read of a group (rocketmq/groups.py: Problem.scope), in a group's problems
PROBLEM_SCOPES = {
    "group": pgettext_lazy("problem scope", "group"),
    "broker": pgettext_lazy("problem scope", "broker"),
    "route": pgettext_lazy("problem scope", "route"),
    "connection": pgettext_lazy("problem scope", "connection"),
    "proxy": pgettext_lazy("problem scope", "proxy"),
    "running-info": pgettext_lazy("problem scope", "running-info"),
    "topic-stats": pgettext_lazy("problem scope", "topic-stats"),
}

# the tables by the name a template gives (`{{ change.state|word:"change state" }}`)
TABLES = {
    "message model": MESSAGE_MODELS,
    "known to": KNOWN_TO,
    "change state": CHANGE_STATES,
    "audit action": AUDIT_ACTIONS,
    "run trigger": RUN_TRIGGERS,
    "run state": RUN_STATES,
    "severity": SEVERITIES,
    "alert state": ALERT_STATES,
    "notification event": DELIVERY_EVENTS,
    "notification state": DELIVERY_STATES,
    "redrive state": REDRIVE_STATES,
    "token state": TOKEN_STATES,
    "report state": REPORT_STATES,
    "cluster state": CLUSTER_STATES,
    "problem scope": PROBLEM_SCOPES,
}


def label(table: str, code) -> str:
    """The word for `code` in the active language; the code itself when the table has none."""
    if code is None or code == "":
        return code
    found = TABLES[table].get(str(code))
    return str(found) if found is not None else str(code)
