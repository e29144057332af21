"""When a pipeline's commits checkpoint: the rent-or-buy rule, on simulated costs."""

import itertools
import math

from sparkpipes.sinks.delta.checkpoints import MIN_COMMITS, CheckpointPolicy


def run(policy: CheckpointPolicy, commits: int, *, base: float, slope: float, cost: float):
    """Commits whose duration grows by ``slope`` per commit since the last checkpoint (what
    delta-rs re-reads), each checkpoint costing ``cost``; the versions checkpointed."""
    written = []
    for version in range(1, commits + 1):
        since = version - policy.checkpoint
        if policy.due(version, base + slope * since):
            policy.written(version, cost)
            written.append(version)
    return written


def gaps(versions):
    return [b - a for a, b in itertools.pairwise(versions)]


def test_a_checkpoint_comes_when_the_rereading_paid_for_one():
    """Re-reading growing by ``a`` a commit and a checkpoint costing ``C``: one every
    ~sqrt(2C/a) commits, the interval of least total cost; dearer checkpoints come
    rarer."""
    for cost, expected in ((0.05, 10), (0.2, 20), (0.8, 40)):
        policy = CheckpointPolicy(interval=100, checkpoint=0)
        policy.cost = cost
        steady = gaps(run(policy, 400, base=0.005, slope=0.001, cost=cost))[1:]
        assert steady, cost
        assert all(abs(g - math.sqrt(2 * cost / 0.001)) <= 2 for g in steady), (cost, steady)
        assert abs(steady[0] - expected) <= 2


def test_the_table_interval_is_the_most_and_min_commits_the_fewest():
    dear = CheckpointPolicy(interval=50, checkpoint=0)
    assert gaps(run(dear, 300, base=0.005, slope=0.0001, cost=30.0)) == [50] * 5
    free = CheckpointPolicy(interval=100, checkpoint=0)
    assert set(gaps(run(free, 300, base=0.005, slope=0.01, cost=0.0))) == {MIN_COMMITS}


def test_an_unknown_cost_checkpoints_after_the_fewest_commits():
    """A writer that never wrote a checkpoint (a restarted pipeline) writes one after
    ``MIN_COMMITS`` and learns its cost; a table without any counts from its start."""
    policy = CheckpointPolicy(interval=100)
    policy.seen(-1)
    assert [v for v in range(1, 30) if policy.due(v, 0.005)][:1] == [MIN_COMMITS - 1]
    policy = CheckpointPolicy(interval=100)
    policy.seen(500)
    assert not any(policy.due(v, 0.005) for v in range(501, 500 + MIN_COMMITS))
    assert policy.due(500 + MIN_COMMITS, 0.005)


def test_another_writers_checkpoint_restarts_the_count():
    policy = CheckpointPolicy(interval=100, checkpoint=0, cost=1.0)
    for v in range(1, 60):
        policy.due(v, 0.005 + 0.001 * v)
    assert policy.paid > 0
    policy.seen(55)
    assert (policy.checkpoint, policy.paid) == (55, 0.0)
    policy.seen(40)  # older than the one known: nothing changes
    assert policy.checkpoint == 55
    assert not policy.due(60, 0.01)


def test_a_failed_checkpoint_is_tried_again_after_a_full_count_not_every_commit():
    policy = CheckpointPolicy(interval=100, checkpoint=0, cost=0.001)
    assert [v for v in range(1, MIN_COMMITS + 1) if policy.due(v, 0.005 + 0.002 * v)] == [
        MIN_COMMITS
    ]
    policy.written(MIN_COMMITS, None)  # it failed
    assert policy.cost == 0.001 and policy.checkpoint == MIN_COMMITS
    later = range(MIN_COMMITS + 1, 2 * MIN_COMMITS + 1)
    assert [v for v in later if policy.due(v, 0.005 + 0.002 * v)] == [2 * MIN_COMMITS]


def test_a_table_made_anew_at_its_location_checkpoints_at_once():
    """A version at or below the last checkpoint known: the table was replaced."""
    policy = CheckpointPolicy(interval=100, checkpoint=300, cost=0.01)
    assert policy.due(3, 0.005)
