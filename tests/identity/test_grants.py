"""Which grants apply to a user, and the database filter that must say what the checks say
(run on SQLite and on PostgreSQL: the filter is a regular expression both must read alike)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from consumers.audit import record
from consumers.audit.models import AuditEvent
from consumers.identity import EVERY, REQUEST, VIEW, Grant, PatternError, Scope, patterns, scope_of, scope_q
from consumers.identity.grants import rules_for
from consumers.identity.scope import Rule


@pytest.fixture
def alice(db):
    user = get_user_model().objects.create_user("alice")
    user.groups.add(Group.objects.create(name="idp:payments"), Group.objects.create(name="oncall"))
    return user


def test_grants_apply_by_user_local_group_and_idp_group(alice):
    Grant.objects.create(subject_kind="user", subject="alice", role="viewer", clusters="east", groups="a-*")
    Grant.objects.create(subject_kind="group", subject="oncall", role="operator", clusters="*", groups="b")
    Grant.objects.create(subject_kind="idp_group", subject="payments", role="approver", clusters="west", groups="c d")
    # not hers: another user, a local group named like her IdP group, an IdP group she is not in
    Grant.objects.create(subject_kind="user", subject="bob", role="admin")
    Grant.objects.create(subject_kind="group", subject="payments", role="admin")
    Grant.objects.create(subject_kind="idp_group", subject="oncall", role="admin")
    assert sorted(rules_for(alice), key=lambda r: r.role) == [
        Rule("approver", ("west",), ("c", "d")),
        Rule("operator", EVERY, ("b",)),
        Rule("viewer", ("east",), ("a-*",)),
    ]


def test_role_groups_superusers_and_inactive_users(db, personas):
    assert rules_for(personas["operator"]) == (Rule("operator", EVERY, EVERY, EVERY),)
    assert scope_of(personas["admin"]).everything and not scope_of(personas["nobody"]).may_somewhere(VIEW)
    root = get_user_model().objects.create_superuser("root", password="x" * 20)
    assert scope_of(root).everything
    personas["viewer"].is_active = False
    assert rules_for(personas["viewer"]) == ()


def test_patterns_are_checked():
    assert patterns("east, west  north") == ("east", "west", "north")
    assert patterns("", blank=EVERY) == EVERY and patterns(" ") == ()
    for bad in ("a;b", "payments-[ab]", "x" * 256, "naïve", "a/b"):
        with pytest.raises(PatternError):
            patterns(bad)


NAMES = ["orders", "orders-1", "orders-12", "orders.v2", "ordersXv2", "%RETRY%orders", "pay|ments", "pay_ments",
         "payments", "payments-web", "", "Orders"]  # fmt: skip
RULES = [
    Rule("viewer", ("east",), ("orders",)),
    Rule("viewer", ("e*",), ("orders-?", "pay*")),
    Rule("viewer", EVERY, ("orders.v2", "pay_ments", "pay|ments", "%RETRY%*")),
    Rule("operator", ("west",), EVERY),
]


@pytest.mark.parametrize("rules", [RULES[:1], RULES[1:2], RULES[2:3], RULES[3:], RULES])
def test_the_database_filter_agrees_with_the_checks(db, rules):
    """Every (cluster, group) pair as an audit event, filtered in the database; the pure
    checks say which must come back. `.`, `_`, `%` and `|` are literal characters."""
    for cluster in ("east", "eastern", "west", ""):
        for group in NAMES:
            record("test", username="t", cluster=cluster, group=group, details={})
    scope = Scope(tuple(rules))
    found = set(AuditEvent.objects.filter(scope_q(scope, VIEW, cluster="cluster", group="group"))
                .values_list("cluster", "group"))  # fmt: skip
    expected = {(c, g) for c, g in AuditEvent.objects.values_list("cluster", "group") if scope.may(VIEW, c, g)}
    assert found == expected and expected  # something matches, and not everything
    assert len(expected) < AuditEvent.objects.count()


def test_a_token_limit_is_applied_in_the_database_too(db):
    for group in ("a", "b"):
        record("test", username="t", cluster="east", group=group, details={})
    scope = Scope((Rule("viewer", EVERY, EVERY, EVERY),), limit=Rule("viewer", EVERY, ("b",)))
    filtered = AuditEvent.objects.filter(scope_q(scope, VIEW, cluster="cluster", group="group"))
    assert list(filtered.values_list("group", flat=True)) == ["b"]
    assert scope_q(Scope((Rule("viewer", EVERY, EVERY, EVERY),)), VIEW, cluster="cluster", group="group") is None


def test_the_demo_teams_see_their_own_groups(db):
    """devstack/demo.py --sso: Keycloak's payments team operates payments-* and billing-*, the
    orders team orders-*; run twice, it leaves the same grants."""
    from devstack.demo_seed import team_grants as _demo_team_grants

    _demo_team_grants()
    _demo_team_grants()
    alice = get_user_model().objects.create_user("alice")
    alice.groups.add(Group.objects.create(name="idp:payments"))
    scope = scope_of(alice)
    assert Grant.objects.count() == 2
    assert scope.may(REQUEST, "local", "billing-legacy") and scope.may(REQUEST, "local", "payments-worker")
    assert not scope.sees_group("local", "orders-service") and scope.sees_topic("local", "payments")
