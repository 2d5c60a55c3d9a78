"""What a scope allows, worked by hand: grants on patterns, their union, a token's narrowing."""

from __future__ import annotations

from consumers.identity import ADMINISTER, APPROVE, EVERY, EVERYTHING, NOTHING, REQUEST, VIEW, Scope
from consumers.identity.scope import Rule, covers, from_wire, to_wire

PAYMENTS_OPERATOR = Rule("operator", ("east",), ("payments-*",))
ORDERS_APPROVER = Rule("approver", ("east", "west"), ("orders", "orders-?"), ("orders.*",))


def test_a_rule_allows_its_role_on_its_patterns_only():
    scope = Scope((PAYMENTS_OPERATOR,))
    assert scope.may(REQUEST, "east", "payments-billing")
    assert scope.may(VIEW, "east", "payments-billing")
    assert not scope.may(APPROVE, "east", "payments-billing")  # an operator does not approve
    assert not scope.may(REQUEST, "west", "payments-billing")  # another cluster
    assert not scope.may(VIEW, "east", "payments")  # the glob needs the dash
    assert not scope.may(VIEW, "east", "orders")
    assert not scope.everything


def test_grants_add_up():
    scope = Scope((PAYMENTS_OPERATOR, ORDERS_APPROVER))
    assert scope.may(APPROVE, "west", "orders-1") and scope.may(APPROVE, "east", "orders")
    assert not scope.may(APPROVE, "west", "orders-12")  # ? is one character
    assert not scope.may(REQUEST, "east", "orders")  # approver there, not operator
    assert scope.roles() == ["operator", "approver"]
    assert scope.may_somewhere(APPROVE) and not scope.may_somewhere(ADMINISTER)


def test_topics_are_the_named_ones_and_the_groups_own_retry_and_dead_letter_topics():
    scope = Scope((PAYMENTS_OPERATOR, ORDERS_APPROVER))
    assert scope.sees_topic("east", "%DLQ%payments-billing") and scope.sees_topic("east", "%RETRY%payments-x")
    assert scope.sees_topic("west", "orders.created")
    assert not scope.sees_topic("east", "payments-events")  # no topic pattern names it
    assert not scope.sees_topic("east", "%DLQ%orders-12")
    assert not scope.may_topic(REQUEST, "west", "orders.created")  # approver there


def test_a_role_group_is_everything():
    assert Scope((Rule("viewer", EVERY, EVERY, EVERY),)).everything
    assert EVERYTHING.everything and EVERYTHING.may(ADMINISTER, "any", "group")
    assert not NOTHING.sees_cluster("east") and not NOTHING.may_somewhere(VIEW) and NOTHING.roles() == []


def test_cluster_wide_acts_need_every_group_of_the_cluster():
    scope = Scope((PAYMENTS_OPERATOR, Rule("operator", ("west",), EVERY)))
    assert scope.may_all_groups(REQUEST, "west")
    assert not scope.may_all_groups(REQUEST, "east")  # payments-* only
    assert not scope.may_all_groups(REQUEST, None)  # not every cluster
    assert scope.sees_cluster("east") and not scope.sees_cluster("north")


def test_a_token_narrows_its_owners_scope_and_never_widens_it():
    owner = (PAYMENTS_OPERATOR, Rule("viewer", ("west",), EVERY))
    read_only = Scope(owner, limit=Rule("viewer", EVERY, ("payments-a*", "orders")))
    assert read_only.may(VIEW, "east", "payments-abc")
    assert not read_only.may(REQUEST, "east", "payments-abc")  # the token is a viewer's
    assert not read_only.may(VIEW, "east", "payments-b")  # outside the token's groups
    assert not read_only.may(VIEW, "east", "orders")  # inside the token's, outside the owner's
    assert read_only.may(VIEW, "west", "orders")
    assert read_only.roles() == ["viewer"]


def test_covers_reads_a_pattern_as_a_name():
    assert covers(("pay*",), "payments-*") and covers(("*",), "*") and covers(("a", "b"), "b")
    assert not covers(("payments-*",), "*") and not covers(("pay*",), "orders")
    owner = Scope((PAYMENTS_OPERATOR,))
    assert owner.covers(Rule("viewer", ("east",), ("payments-web",)))
    assert owner.covers(Rule("operator", ("east",), ("payments-*",)))
    assert not owner.covers(Rule("approver", ("east",), ("payments-web",)))  # a role the owner lacks
    assert not owner.covers(Rule("viewer", EVERY, ("payments-web",)))  # every cluster
    assert not owner.covers(Rule("viewer", ("east",), ("payments-web",), ("payments-events",)))  # a topic


def test_a_scope_survives_its_wire_form():
    scope = Scope((PAYMENTS_OPERATOR, ORDERS_APPROVER), limit=Rule("viewer", EVERY, ("orders",)))
    assert from_wire(to_wire(scope)) == scope
    assert to_wire(EVERYTHING) is None and from_wire(None).everything
