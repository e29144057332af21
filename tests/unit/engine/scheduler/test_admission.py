"""Seed 004's scheduling rules, without Spark or threads."""

import pytest

from sparkpipes.engine.scheduler.admission import Admission


def test_seed_004_example_runs_p1_and_p3_then_p2_then_takes_turns():
    a = Admission(10)
    for name, width in (("P1", 4), ("P2", 8), ("P3", 4)):
        a.ask(name, width)
    assert a.admit() == ["P1", "P3"]  # P2 does not fit beside either
    assert a.waiting == {"P2": 8}
    rounds = []
    for _ in range(3):
        # P1 finishes first and asks again: it may not overtake P2 a second time
        a.release("P1")
        a.ask("P1", 4)
        assert a.admit() == []
        a.release("P3")
        a.ask("P3", 4)
        rounds.append(a.admit())
        assert rounds[-1] == ["P2"] and a.running == {"P2": 8}
        a.release("P2")
        a.ask("P2", 8)
        rounds.append(a.admit())
        assert rounds[-1] == ["P1", "P3"]
    assert rounds == [["P2"], ["P1", "P3"]] * 3


def test_no_pipeline_starves_behind_a_stream_of_narrow_batches():
    a = Admission(4)
    a.ask("narrow1", 2)
    a.ask("wide", 4)
    a.ask("narrow2", 2)
    assert a.admit() == ["narrow1", "narrow2"]  # wide is overtaken once
    started = []
    for _ in range(5):  # the narrow ones keep coming back
        a.release("narrow1")
        a.ask("narrow1", 2)
        started += a.admit()
        a.release("narrow2")
        a.ask("narrow2", 2)
        started += a.admit()
        if "wide" in started:
            break
    assert "wide" in started and started.index("wide") == 0


def test_a_batch_wider_than_the_cluster_runs_alone_capped():
    a = Admission(4)
    a.ask("small", 1)
    assert a.admit() == ["small"]
    a.ask("huge", 100)
    assert a.waiting == {"huge": 4} and a.admit() == []
    a.release("small")
    assert a.admit() == ["huge"] and a.used == 4


def test_the_pipeline_count_cap():
    a = Admission(100, max_pipelines=2)
    for name in "abc":
        a.ask(name, 1)
    assert a.admit() == ["a", "b"]
    a.release("a")
    assert a.admit() == ["c"]


def test_one_batch_per_pipeline_and_withdrawal():
    a = Admission(2)
    a.ask("p", 2)
    with pytest.raises(ValueError, match="already"):
        a.ask("p", 1)
    a.withdraw("p")
    assert a.waiting == {} and a.admit() == []


def test_a_batch_queued_before_the_capacity_went_down_still_runs_capped():
    a = Admission(8)
    a.ask("busy", 2)
    assert a.admit() == ["busy"]
    a.ask("wide", 8)
    assert a.admit() == []
    a.capacity = 4  # SET GLOBAL pipelines_max_concurrent_batch_partitions = 4
    assert a.waiting == {"wide": 4}
    a.release("busy")
    assert a.admit() == ["wide"] and a.running == {"wide": 4}
