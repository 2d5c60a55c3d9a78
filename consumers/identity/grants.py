"""The grants that apply to a user, read once per request: the user's scope.

Who holds what: a superuser holds admin everywhere; a member of a role group (viewer, operator,
approver, admin) holds that role everywhere; the Grant rows name IdP groups, local groups and
users. A user with none of these sees nothing. An API token may carry a rule of its own that
narrows its owner's scope (tokens/services.py sets it on the user it returns).
"""

from __future__ import annotations

import re

from django.db.models import Q
from django.utils.translation import gettext as _

from .claims import IDP_GROUP_PREFIX
from .roles import ROLES, VIEW
from .scope import EVERY, NOTHING, Rule, Scope

# RocketMQ's names (clusters here are slugs) with the wildcards * and ?: the same characters as
# group and topic names (letters, digits, % | _ -) and no character classes, so a pattern is
# also a portable SQL regular expression (database_regex)
PATTERN = re.compile(r"^[A-Za-z0-9_.%|*?-]{1,255}$")


class PatternError(ValueError):
    pass


def patterns(text: str, *, blank: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A comma- or space-separated list of globs, checked (no empty list unless `blank`)."""
    found = tuple(dict.fromkeys(part for part in re.split(r"[\s,]+", text or "") if part))
    for pattern in found:
        if not PATTERN.match(pattern):
            raise PatternError(
                _("%(pattern)r is not a name or glob (letters, digits, _ . %% | - and the wildcards * ?)")
                % {"pattern": pattern}
            )
    return found or blank


def rule_of(grant) -> Rule:
    return Rule(
        role=grant.role,
        clusters=patterns(grant.clusters, blank=EVERY),
        groups=patterns(grant.groups, blank=EVERY),
        topics=patterns(grant.topics),
    )


def teams_covering(cluster: str, group: str) -> list[str]:
    """The teams (IdP and local groups) a grant names this group for by pattern: its owners, as
    far as the grants say (a grant on every group names no owner)."""
    from .models import Grant

    found = []
    for grant in Grant.objects.exclude(subject_kind=Grant.Subject.USER).exclude(groups__in=("", "*")):
        rule = rule_of(grant)
        if rule.groups != EVERY and rule.allows_group(cluster, group):
            found.append(grant.subject)
    return sorted(set(found))


def rules_for(user) -> tuple[Rule, ...]:
    from .models import Grant

    if user is None or not user.is_authenticated or not user.is_active:
        return ()
    if user.is_superuser:
        return (Rule("admin", EVERY, EVERY, EVERY),)
    names = set(user.groups.values_list("name", flat=True))
    rules = [Rule(role, EVERY, EVERY, EVERY) for role in ROLES if role in names]
    idp = {name[len(IDP_GROUP_PREFIX) :] for name in names if name.startswith(IDP_GROUP_PREFIX)}
    local = {name for name in names if not name.startswith(IDP_GROUP_PREFIX)}
    subjects = (
        Q(subject_kind=Grant.Subject.USER, subject=user.get_username())
        | Q(subject_kind=Grant.Subject.GROUP, subject__in=local)
        | Q(subject_kind=Grant.Subject.IDP_GROUP, subject__in=idp)
    )
    for grant in Grant.objects.filter(subjects):
        try:
            rules.append(rule_of(grant))
        except PatternError:
            continue  # saved before the check (the admin form refuses it): grants nothing
    return tuple(rules)


def scope_of(user) -> Scope:
    """The user's scope, computed once per user object (a request's user lives one request)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return NOTHING
    cached = getattr(user, "_console_scope", None)
    if cached is None:
        cached = Scope(rules=rules_for(user), limit=getattr(user, "_console_token_rule", None))
        user._console_scope = cached
    return cached


def roles_of(user) -> list[str]:
    """The roles the user holds somewhere (on every group, or on a scope of grants)."""
    return scope_of(user).roles()


def forget_scope(user) -> None:
    """After a change of the user's grants or groups within the same request."""
    user.__dict__.pop("_console_scope", None)


def database_regex(pattern: str) -> str:
    """A checked glob as a regular expression both SQLite (Python's re) and PostgreSQL read alike."""
    out = []
    for char in pattern:
        out.append(".*" if char == "*" else "." if char == "?" else re.escape(char))
    return "^" + "".join(out) + "$"


def scope_q(scope: Scope, perm: str, *, cluster: str, group: str | None) -> Q | None:
    """The rows (by their cluster-name and group fields) on which `scope` holds `perm`, as a
    filter; None when it holds it everywhere (nothing to filter). Without a group field: the
    rows of the clusters on which it holds `perm` somewhere."""
    if scope.may_everywhere(perm):
        return None
    if not scope.may_somewhere(perm):
        return Q(pk__in=[])
    wanted = _union([_rule_q(rule, cluster, group) for rule in scope.rules if perm in rule.perms])
    if scope.limit is not None:
        limit = _rule_q(scope.limit, cluster, group)
        wanted = limit if wanted is None else wanted if limit is None else wanted & limit
    return wanted


def _union(qs: list) -> Q | None:
    """None (every row) when one of them is None."""
    if any(q is None for q in qs):
        return None
    union = Q(pk__in=[])
    for q in qs:
        union |= q
    return union


def _rule_q(rule: Rule, cluster: str, group: str | None) -> Q | None:
    """None: the rule allows every row."""
    fields = ((cluster, rule.clusters), (group, rule.groups))
    parts = [_any_of(field, globs) for field, globs in fields if field is not None and globs != EVERY]
    if not parts:
        return None
    q = parts[0]
    for part in parts[1:]:
        q &= part
    return q


def _any_of(field: str, globs: tuple[str, ...]) -> Q:
    q = Q(pk__in=[])
    for glob in globs:
        q |= Q(**{f"{field}__regex": database_regex(glob)})
    return q


def within(user, *, cluster: str = "cluster__name", group: str | None = "group") -> Q | None:
    """A filter for rows of the groups `user` sees (by the rows' cluster-name and group fields;
    without a group field, of the clusters they see), or None when they see everything."""
    return scope_q(scope_of(user), VIEW, cluster=cluster, group=group)
