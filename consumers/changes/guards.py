"""What every feature shares when it acts: who acts (`Actor`), the one refusal (`ChangeRefused`,
with the HTTP status that says why) and the guards every mutation passes before anything is
read or written: a role, a writable cluster, a reason."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _


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


def require_role(
    actor: Actor, permission: str, doing: str, role: str, *, cluster=None, group: str | None = None
) -> None:
    """The actor holds `permission` (somewhere; with `cluster` and `group`, on that group): a
    group the actor cannot even see is refused as not found (its name does not leak)."""
    from ..identity import VIEW, scope_of

    scope = scope_of(actor.user)
    if cluster is None or not scope.may_somewhere(VIEW):  # no role at all: nothing to leak
        if not scope.may_somewhere(permission):
            raise ChangeRefused(_("%(doing)s needs the %(role)s role") % {"doing": doing, "role": role}, 403)
        return
    name = getattr(cluster, "name", cluster)
    if not scope.may(VIEW, name, group):
        raise ChangeRefused(_("no group %(group)s in %(cluster)s") % {"group": group, "cluster": name}, 404)
    if not scope.may(permission, name, group):
        raise ChangeRefused(
            _("%(doing)s needs the %(role)s role on group %(group)s of %(cluster)s")
            % {"doing": doing, "role": role, "group": group, "cluster": name},
            403,
        )


def require_writable(cluster) -> None:
    if cluster.read_only:
        raise ChangeRefused(
            _("cluster %(cluster)s is read-only: it refuses resets and redrives") % {"cluster": cluster.name}, 403
        )


MAX_REASON = 2000


def require_reason(reason: str | None, message: str | None = None) -> str:
    if not (reason or "").strip():
        raise ChangeRefused(message or _("a reason is required"))
    if len(reason) > MAX_REASON:
        raise ChangeRefused(
            _("a reason is at most %(limit)s characters, not %(length)s") % {"limit": MAX_REASON, "length": len(reason)}
        )
    return reason.strip()


def require_topic(actor: Actor, permission: str, cluster, topic: str) -> None:
    """The actor holds `permission` on the topic (its grants' topic patterns)."""
    from ..identity import scope_of

    if not scope_of(actor.user).may_topic(permission, getattr(cluster, "name", cluster), topic):
        raise ChangeRefused(_("writing to topic %(topic)s needs the operator role on it") % {"topic": topic}, 403)
