"""What a user may see and do, group by group: the grants that apply to them, as one object.

A grant gives a role (viewer, operator, approver, admin) on clusters and consumer-group
patterns, and optionally topic patterns (shell-style globs: `payments-*`, `*`). A user's scope
is the union of their grants; an API token may narrow its owner's scope, never widen it
(both must allow). The role groups (viewer, operator, approver, admin) are grants on
everything, so a site without grants works as before.

Pure: no database (grants.py reads the rules; this only answers with them).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from ..rocketmq.codes import DLQ_PREFIX, RETRY_PREFIX
from .roles import ROLE_PERMISSIONS, ROLES, VIEW

EVERY = ("*",)


def matches(name: str, patterns: Iterable[str]) -> bool:
    return any(pattern == "*" or fnmatchcase(name, pattern) for pattern in patterns)


def covers(patterns: Iterable[str], wanted: str) -> bool:
    """Whether `patterns` allow every name the pattern `wanted` does (a pattern read as a name:
    `pay*` covers `payments-*`; only `*` covers `*`). Errs towards refusing."""
    return any(pattern == "*" or pattern == wanted or fnmatchcase(wanted, pattern) for pattern in patterns)


def _compiled(patterns) -> Callable[[str], bool]:
    """A test of a name against globs: one regular expression for all of them."""
    patterns = list(dict.fromkeys(patterns))
    if "*" in patterns:
        return lambda name: True
    if not patterns:
        return lambda name: False
    match = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match
    return lambda name: match(name) is not None


@dataclass(frozen=True)
class Rule:
    """One grant as the checks use it."""

    role: str
    clusters: tuple[str, ...] = EVERY
    groups: tuple[str, ...] = EVERY
    topics: tuple[str, ...] = ()  # beyond the groups' own retry and dead-letter topics

    @property
    def perms(self) -> frozenset[str]:
        return frozenset(ROLE_PERMISSIONS.get(self.role, ()))

    @property
    def everywhere(self) -> bool:
        return self.clusters == EVERY and self.groups == EVERY and self.topics == EVERY

    def allows_cluster(self, cluster: str) -> bool:
        return matches(cluster, self.clusters)

    def allows_group(self, cluster: str, group: str) -> bool:
        return matches(cluster, self.clusters) and matches(group, self.groups)

    def allows_all_groups(self, cluster: str | None) -> bool:
        """Every group of `cluster` (None: of every cluster)."""
        if self.groups != EVERY:
            return False
        return self.clusters == EVERY if cluster is None else matches(cluster, self.clusters)

    def allows_topic(self, cluster: str, topic: str) -> bool:
        if not matches(cluster, self.clusters):
            return False
        if matches(topic, self.topics):
            return True
        for prefix in (RETRY_PREFIX, DLQ_PREFIX):  # a group's own retry and dead-letter topics
            if topic.startswith(prefix) and matches(topic[len(prefix) :], self.groups):
                return True
        return False


@dataclass(frozen=True)
class Scope:
    """The rules of one user (and, for a token, the token's own rule: both must allow)."""

    rules: tuple[Rule, ...]
    limit: Rule | None = None

    @functools.cached_property
    def everything(self) -> bool:
        """Sees every cluster, group and topic (the fast path: nothing to filter)."""
        return any(rule.everywhere for rule in self.rules) and (self.limit is None or self.limit.everywhere)

    def _with(self, perm: str):
        limit = self.limit
        if limit is not None and perm not in limit.perms:
            return ()
        return [rule for rule in self.rules if perm in rule.perms]

    def may(self, perm: str, cluster: str, group: str) -> bool:
        """Whether `perm` is held on the group `group` of `cluster`."""
        return self._groups_matcher(perm, cluster)(group)

    def _groups_matcher(self, perm: str, cluster: str):
        """One compiled test of a group name per (permission, cluster), kept for the scope's
        life (a request): a list of 10,000 groups asks it 10,000 times."""
        cache = self.__dict__.setdefault("_matchers", {})
        found = cache.get((perm, cluster))
        if found is None:
            rules = [rule for rule in self._with(perm) if rule.allows_cluster(cluster)]
            mine = _compiled([pattern for rule in rules for pattern in rule.groups])
            if self.limit is not None:
                limit = _compiled(self.limit.groups if self.limit.allows_cluster(cluster) else ())
                found = lambda name: mine(name) and limit(name)  # noqa: E731
            else:
                found = mine
            cache[(perm, cluster)] = found
        return found

    def may_topic(self, perm: str, cluster: str, topic: str) -> bool:
        if self.limit is not None and not self.limit.allows_topic(cluster, topic):
            return False
        return any(rule.allows_topic(cluster, topic) for rule in self._with(perm))

    def may_somewhere(self, perm: str) -> bool:
        return bool(self._with(perm))

    def may_on_cluster(self, perm: str, cluster: str) -> bool:
        """Held on some group of `cluster` (what pages about the cluster as a whole need)."""
        if self.limit is not None and not self.limit.allows_cluster(cluster):
            return False
        return any(rule.allows_cluster(cluster) for rule in self._with(perm))

    def may_all_groups(self, perm: str, cluster: str | None) -> bool:
        """Held on every group of `cluster` (None: of every cluster): what acts on a cluster as
        a whole needs (a silence, whose subject pattern may match any group)."""
        if self.limit is not None and not self.limit.allows_all_groups(cluster):
            return False
        return any(rule.allows_all_groups(cluster) for rule in self._with(perm))

    def may_everywhere(self, perm: str) -> bool:
        """Held on every cluster, group and topic (cluster-wide actions, such as a statistics run)."""
        if self.limit is not None and not self.limit.everywhere:
            return False
        return any(rule.everywhere for rule in self._with(perm))

    def group_test(self, cluster: str) -> Callable[[str], bool]:
        """sees_group for the groups of one cluster, as one function (for loops over thousands)."""
        return (lambda name: True) if self.everything else self._groups_matcher(VIEW, cluster)

    def sees_group(self, cluster: str, group: str) -> bool:
        return self.everything or self.may(VIEW, cluster, group)

    def sees_topic(self, cluster: str, topic: str) -> bool:
        return self.everything or self.may_topic(VIEW, cluster, topic)

    def sees_cluster(self, cluster: str) -> bool:
        return self.everything or self.may_on_cluster(VIEW, cluster)

    def roles(self) -> list[str]:
        """The roles held somewhere, in ROLES order (for the header and the token form)."""
        held = {rule.role for rule in self.rules}
        if self.limit is not None:
            held &= {self.limit.role}
        return [role for role in ROLES if role in held]

    def covers(self, rule: Rule) -> bool:
        """Whether the rule is no wider than one of this scope's rules of the same or a higher
        role (what a new token may be given)."""
        for mine in self.rules:
            if not rule.perms <= mine.perms:
                continue
            pairs = ((mine.clusters, rule.clusters), (mine.groups, rule.groups), (mine.topics, rule.topics))
            if all(covers(held, wanted) for held, asked in pairs for wanted in asked):
                return True
        return False


NOTHING = Scope(rules=())
# what the system itself acts with (workers, the command line): no user, no limit
EVERYTHING = Scope(rules=(Rule("admin", EVERY, EVERY, EVERY),))


def to_wire(scope: Scope) -> dict | None:
    """A scope as JSON (what a report keeps of its maker's); None for one that sees everything."""
    if scope.everything:
        return None
    rule = lambda r: {"role": r.role, "clusters": list(r.clusters), "groups": list(r.groups), "topics": list(r.topics)}  # noqa: E731
    return {"rules": [rule(r) for r in scope.rules], "limit": rule(scope.limit) if scope.limit else None}


def from_wire(data: dict | None) -> Scope:
    if data is None:
        return EVERYTHING

    def rule(r: dict) -> Rule:
        return Rule(r["role"], tuple(r["clusters"]), tuple(r["groups"]), tuple(r["topics"]))

    return Scope(rules=tuple(rule(r) for r in data["rules"]), limit=rule(data["limit"]) if data.get("limit") else None)
