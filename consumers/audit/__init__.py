"""The append-only audit log: one event per thing that happened, each chained to the one before
by SHA-256 over its content and the previous hash.

The application never updates or deletes an event (the model and its queryset refuse, the
admin shows them read-only). Someone editing the database directly cannot recompute the
chain without also rewriting every later hash, and `verify_chain` (manage.py verify_audit)
finds the first event whose content no longer matches its hash.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import hashlib
import json
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, Model

from .models import AuditEvent, AuditHead

GENESIS = "0" * 64

# How the request being served came: the API token (its prefix) and the client that says it sent
# it (the MCP server, the command line), set by the API's wrapper (identity.access.api_view) for
# the request's life, so every event recorded while serving it names them without each feature
# passing them on. Empty for pages, workers and scripts.
_calling: contextvars.ContextVar[dict | None] = contextvars.ContextVar("audit_calling", default=None)


@contextlib.contextmanager
def calling(**how):
    """Within this block every event recorded carries `how` (the keys whose value is not empty)
    as its details' "api"."""
    token = _calling.set({k: v for k, v in how.items() if v})
    try:
        yield
    finally:
        _calling.reset(token)


def _canonical(event: AuditEvent) -> str:
    return json.dumps(
        {
            "at": event.at.astimezone(dt.UTC).isoformat(),
            "username": event.username,
            "remote_addr": event.remote_addr,
            "action": event.action,
            "cluster": event.cluster,
            "group": event.group,
            "change_request": event.change_request_id,
            "details": event.details,
        },
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )


def digest(previous_hash: str, event: AuditEvent) -> str:
    return hashlib.sha256((previous_hash + _canonical(event)).encode()).hexdigest()


def record(
    action: str,
    *,
    username: str,
    remote_addr: str = "",
    cluster: str = "",
    group: str = "",
    change_request: Model | None = None,
    details: dict | None = None,
) -> AuditEvent:
    """Append one event. Runs in (or opens) a transaction; appends are serialised on the head row."""
    how = _calling.get()
    if how:
        details = {**(details or {}), "api": how}
    with transaction.atomic():
        # the UPDATE takes the write lock first (SQLite) / the row lock (PostgreSQL)
        if not AuditHead.objects.filter(pk=1).update(count=F("count") + 1):
            AuditHead.objects.create(pk=1, count=1, hash=GENESIS)
        head = AuditHead.objects.select_for_update().get(pk=1)
        event = AuditEvent(
            at=dt.datetime.now(dt.UTC),
            username=username,
            remote_addr=remote_addr or "",
            action=action,
            cluster=cluster,
            group=group,
            change_request=change_request,
            # through JSON and back, so the hash is over exactly what the database will return
            details=json.loads(json.dumps(details or {}, default=str)),
            previous_hash=head.hash,
        )
        event.hash = digest(head.hash, event)
        event.save()
        head.hash = event.hash
        head.save(update_fields=["hash"])
    return event


@dataclass
class ChainCheck:
    checked: int
    broken_at: AuditEvent | None
    why: str | None

    @property
    def ok(self) -> bool:
        return self.why is None


def verify_chain() -> ChainCheck:
    """Recompute every hash in order; the first event that does not match breaks the chain."""
    previous = GENESIS
    checked = 0
    for event in AuditEvent.objects.order_by("id").iterator(chunk_size=2000):
        if event.previous_hash != previous:
            return ChainCheck(checked, event, "its previous hash is not the hash of the event before it")
        if digest(previous, event) != event.hash:
            return ChainCheck(checked, event, "its content does not match its hash (edited after it was written)")
        previous = event.hash
        checked += 1
    head = AuditHead.objects.filter(pk=1).first()
    if head is not None and head.hash != previous:
        return ChainCheck(checked, None, "the newest events were removed (the chain head does not match)")
    return ChainCheck(checked, None, None)
