"""The list's order: the top rows the overview takes without sorting every group are the same
rows, in the same order, as the head of the fully sorted list."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from consumers.live.selectors import GroupRow, _ordered

values = st.one_of(st.none(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False))


@given(
    rows=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.sampled_from(["east", "west"]), values,
                            values), unique_by=lambda r: r[:2], max_size=10),
    sort=st.sampled_from(["lag", "lag_seconds", "group"]),
    descending=st.booleans(),
    first=st.integers(0, 12),
)  # fmt: skip
def test_the_first_rows_are_the_head_of_the_full_order(rows, sort, descending, first):
    grouped = [
        GroupRow(SimpleNamespace(name=cluster), {"group": group, "lag": lag, "lag_seconds": seconds}, 1.0, False)
        for group, cluster, lag, seconds in rows
    ]
    full = _ordered(grouped, sort, descending=descending)
    assert _ordered(grouped, sort, descending=descending, first=first) == full[:first]
