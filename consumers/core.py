"""What every feature shares when it acts: who acts (`Actor`), the one refusal (`ChangeRefused`,
with the HTTP status that says why) and the guards every mutation passes before anything is
read or written: a role, a writable cluster, a reason."""

from __future__ import annotations

from dataclasses import dataclass

from .roles import perm


class ChangeRefused(Exception):
    """A request or a decision that is not allowed, with the HTTP status that says why."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Actor:
    """Who does something, and from where (for the audit log)."""

    user: object
    remote_addr: str = ""

    @property
    def username(self) -> str:
        return self.user.get_username() if self.user is not None else "system"


SYSTEM = Actor(None, "")


def require_role(actor: Actor, permission: str, doing: str, role: str) -> None:
    if not actor.user.has_perm(perm(permission)):
        raise ChangeRefused(f"{doing} needs the {role} role", 403)


def require_writable(cluster) -> None:
    if cluster.read_only:
        raise ChangeRefused(f"cluster {cluster.name} is read-only: it refuses resets and redrives", 403)


MAX_REASON = 2000


def require_reason(reason: str | None, message: str = "a reason is required") -> str:
    if not (reason or "").strip():
        raise ChangeRefused(message)
    if len(reason) > MAX_REASON:
        raise ChangeRefused(f"a reason is at most {MAX_REASON} characters, not {len(reason)}")
    return reason.strip()
