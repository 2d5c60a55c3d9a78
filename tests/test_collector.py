"""The garbage collector held off during a poll (consumers/jobs/collector.py)."""

from __future__ import annotations

import gc
import weakref

import pytest

from consumers.jobs import collector


def test_held_off_inside_and_on_again_after_even_when_the_block_raises():
    assert gc.isenabled()
    with collector.held_off():
        assert not gc.isenabled()
        with collector.held_off():  # nested: the outer block turns it on again, not this one
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector.held_off():
        raise RuntimeError("a poll that failed")
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off():
    gc.disable()
    try:
        with collector.held_off():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_cycle_made_while_held_off_outlives_many_allocations_and_is_collected_after():
    class Node:
        pass

    with collector.held_off():
        a, b = Node(), Node()
        a.other, b.other = b, a
        made = weakref.ref(a)
        del a, b
        kept = [{"n": n} for n in range(100_000)]  # with the collector on, many passes would run
        assert made() is not None
        del kept
    gc.collect()
    assert made() is None
