"""Non-sticky rounds (``resettle``: PAL's and Blox's simulators' rounds): every round places
every running job again with the queue; a job placed where it runs goes on untouched, one placed
elsewhere moves and pays its restart, one the order leaves out is preempted."""

from __future__ import annotations

import pytest

from placement.errors import InvalidInputError
from placement.model import Instance, Link, Server, Slowdown, Switch
from placement.simulation.engine import simulate
from placement.simulation.workload import TraceJob, Workload


def _fast_and_slow() -> Instance:
    """Two one-GPU servers: s0's GPU at factor 1, s1's at 2 (half speed)."""
    servers = (
        Server("s0", 1, "V100", 2400.0, gpu_slowdowns={"*": (1.0,)}),
        Server("s1", 1, "V100", 2400.0, gpu_slowdowns={"*": (2.0,)}),
    )
    return Instance("fs", servers, (), (Switch("t"),), tuple(Link(s.id, "t", 100.0) for s in servers))


# "a" (100 s) takes the fast GPU at the first round (t=50), "b" (2,000 s at factor 1) the slow one
TWO = Workload(
    (TraceJob("a", 0.0, 1, 1_000, 100.0, 0.0), TraceJob("b", 1.0, 1, 20_000, 100.0, 0.0)),
    "fast and slow",
    {},
)


def _run(**options):
    return simulate(
        _fast_and_slow(), TWO, method="pm_first", knowledge="oracle", dynamics="none", round_s=50.0, **options
    )


def _jct(result, job: str) -> float:
    return next(row["jct_s"] for row in result.jobs if row["job"] == job)


@pytest.mark.parametrize("restart_s", [0.0, 30.0])
def test_a_round_moves_a_running_job_onto_the_fast_gpu_a_finished_job_left(restart_s):
    sticky = _run(restart_s=restart_s)
    # b runs on the slow GPU from t=50 to its end: 20,000 iterations at 200 ms
    assert _jct(sticky, "b") == pytest.approx(50.0 + 4_000.0 - 1.0)
    assert sticky.summary["migrations"] == 0
    moved = _run(restart_s=restart_s, resettle=True)
    # a ends at 150, and the round of that instant moves b (500 iterations done at 200 ms) to
    # the fast GPU: its 19,500 left at 100 ms after its restart
    assert _jct(moved, "b") == pytest.approx(150.0 + restart_s + 1_950.0 - 1.0)
    assert _jct(moved, "a") == pytest.approx(_jct(sticky, "a"))
    assert moved.summary["migrations"] == 1 and moved.summary["preemptions"] == 0
    # b held two placements, a one: the rounds that placed them where they ran left them alone
    assert sorted(h["job"] for h in moved.held) == ["a", "b", "b"]


def test_a_job_the_order_leaves_out_is_preempted_and_resumes_with_its_progress():
    one = Instance(
        "one",
        (Server("s0", 1, "V100", 2400.0, slowdown=Slowdown()),),
        (),
        (Switch("t"),),
        (Link("s0", "t", 100.0),),
    )
    # srtf: the short job that arrives while the long one runs goes first at the next round
    w = Workload(
        (TraceJob("long", 0.0, 1, 10_000, 100.0, 0.0), TraceJob("short", 60.0, 1, 100, 100.0, 0.0)),
        "long then short",
        {},
    )
    r = simulate(one, w, method="greedy", dynamics="none", round_s=50.0, resettle=True, queue="srtf", restart_s=5.0)
    assert r.summary["preemptions"] == 1
    # short runs 100-110; long ran 50-100 (500 iterations) and resumes at the round at 150
    # after a 5 s restart: 9,500 iterations left
    assert _jct(r, "short") == pytest.approx(110.0 - 60.0)
    assert _jct(r, "long") == pytest.approx(150.0 + 5.0 + 950.0)


def test_resettle_needs_rounds():
    with pytest.raises(InvalidInputError, match="resettle needs round_s"):
        simulate(_fast_and_slow(), TWO, method="greedy", dynamics="none", resettle=True)


def test_srpt_weights_give_the_fast_gpu_to_the_job_nearest_its_end():
    # both start at the first round (t=50): "long" (2,000 s of work) arrived first, "short" (100 s)
    # second; srpt gives short the fast GPU, then long moves there once short is done
    w = Workload(
        (TraceJob("long", 0.0, 1, 20_000, 100.0, 0.0), TraceJob("short", 1.0, 1, 1_000, 100.0, 0.0)),
        "long and short",
        {},
    )
    r = simulate(
        _fast_and_slow(),
        w,
        method="auto",
        knowledge="oracle",
        dynamics="none",
        round_s=50.0,
        resettle=True,
        restart_s=0.0,
        decision_weight="srpt",
    )
    assert _jct(r, "short") == pytest.approx(150.0 - 1.0)
    # long: 100 s at 200 ms (500 iterations), then 19,500 at 100 ms from t=150
    assert _jct(r, "long") == pytest.approx(150.0 + 1_950.0)
    with pytest.raises(InvalidInputError, match="decision_weight"):
        simulate(_fast_and_slow(), w, method="greedy", dynamics="none", decision_weight="lifo")
