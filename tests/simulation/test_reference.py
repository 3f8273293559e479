"""A trace's duration is a measurement: each job runs it exactly at its reference placement,
communication included (DESIGN.md), and ``comm="off"`` makes communication free everywhere."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from placement.errors import InvalidInputError
from placement.instances import load_bundled
from placement.model.records import Job
from placement.problem.rules import comm_ms
from placement.problem.topology import cluster_of
from placement.simulation import SimConfig, simulate
from placement.simulation.workload import TraceJob, Workload, read_plain, read_trace
from placement.simulation.workload.reference import COMM_SHARE_MAX, as_measured, reference_level

README_WINDOW = {"window_start_s": 2_419_200.0, "window_s": 48 * 3600.0}
ELASTICFLOW_FIFO_MEAN_JCT_S = 23_698.0
"""ElasticFlow's own simulator (pkusys/ElasticFlow 04a0109, its ``dlas`` engine with one queue:
FIFO with backfill, no overhead, 32 servers x 8 GPUs) on the README window (DESIGN.md)."""


@pytest.fixture(scope="module")
def pod256():  # type: ignore[no-untyped-def]
    return load_bundled("pod256")


@pytest.fixture(scope="module")
def window() -> Workload:
    return read_trace("elasticflow-cluster04", **README_WINDOW)


def alone(jobs: list[TraceJob]) -> Workload:
    """The jobs one at a time: each submitted after the one before has surely finished."""
    t, out = 0.0, []
    for j in jobs:
        out.append(replace(j, submit_s=t))
        t += 100.0 * (j.duration_s or 1.0) + 1.0
    return Workload(tuple(out), "one at a time", {})


def test_the_reference_level_is_the_narrowest_domain_of_the_fewest_servers(pod256) -> None:  # type: ignore[no-untyped-def]
    cl = cluster_of(pod256)
    one = TraceJob("a", 0.0, 8, 10, 1.0, 1.0)
    assert reference_level(pod256, one) == (pod256.servers[0].intra_bandwidth_gbps, 1)
    for workers in (9, 32, 64):
        b, servers = reference_level(pod256, replace(one, workers=workers))
        k = math.ceil(workers / 8)
        # the widest domain that holds k whole servers
        assert b == max(d.bandwidth_gbps for d in cl.domains if len(d.servers) >= k) and servers == k
    assert reference_level(pod256, replace(one, workers=257)) == (0.0, 0)
    # a job that may not use the cluster's GPUs has no reference placement
    assert reference_level(pod256, replace(one, gpu_speed={"T4": 1.0})) == (0.0, 0)


def test_every_trace_job_runs_its_duration_at_its_reference_placement(pod256, window: Workload) -> None:  # type: ignore[no-untyped-def]
    # a few jobs of every width the window has, each alone on the idle cluster, consolidated
    picked: list[TraceJob] = []
    for w in sorted({j.workers for j in window.jobs}):
        picked += [j for j in window.jobs if j.workers == w][:3]
    assert {j.workers for j in picked} >= {1, 8, 32, 64}
    res = simulate(pod256, alone(picked), method="consolidate", knowledge="oblivious", dynamics="none")
    by_id = {j.id: j for j in picked}
    for row in res.jobs:
        assert row["run_s"] == pytest.approx(by_id[row["job"]].duration_s, rel=1e-9), row
    assert res.summary["jobs_comm_scaled"] >= 1  # the 32-GPU vgg16 jobs, at least


def test_the_gradient_is_scaled_to_the_cap_and_other_placements_pay_their_communication(pod256) -> None:  # type: ignore[no-untyped-def]
    # vgg16 on 32 GPUs: the model's all-reduce at the rack's bandwidth would be 1.8x the
    # measured iteration; capped, the rest is compute
    j = TraceJob("v", 0.0, 32, 1000, 1.0, 528.0, model="vgg16", duration_s=40.0)
    (k,), scaled, _ = as_measured(pod256, [j])
    b, _ = reference_level(pod256, j)
    t_ref = 40.0
    assert scaled == 1
    assert comm_ms(Job("x", 32, 1.0, k.gradient_mb), b, 4, {}) == pytest.approx(COMM_SHARE_MAX * t_ref, rel=1e-12)
    assert k.compute_ms == pytest.approx((1 - COMM_SHARE_MAX) * t_ref, rel=1e-12)
    # one job on one server: its NVLink all-reduce is below the cap and kept
    small = TraceJob("s", 0.0, 8, 1000, 1.0, 100.0, model="resnet50", duration_s=60.0)
    (ks,), scaled, _ = as_measured(pod256, [small])
    assert scaled == 0 and ks.gradient_mb == 100.0
    assert ks.compute_ms + comm_ms(Job("x", 8, 1.0, 100.0), 2400.0, 1, {}) == pytest.approx(60.0, rel=1e-12)
    # a job without a measurement keeps its own model
    own = TraceJob("o", 0.0, 8, 1000, 50.0, 100.0)
    assert as_measured(pod256, [own]) == ([own], 0, 0)
    # s0 whole, s1 and s2 half free: a first job takes s0, the same job then runs on s1 and
    # s2 and pays its all-reduce at their link; its reference is still one whole server
    free = {"s0": 0, "s1": 4, "s2": 4}
    part = pod256.replace(servers=tuple(replace(s, used_gpus=free.get(s.id, 8)) for s in pod256.servers))
    first = replace(small, id="first", duration_s=1e6)
    later = replace(small, submit_s=1.0)
    res = simulate(
        part, Workload((first, later), "two", {}), method="consolidate", knowledge="oblivious", dynamics="none"
    )
    row = next(r for r in res.jobs if r["job"] == "s")
    assert row["servers"] == 2
    spread_ms = ks.compute_ms + comm_ms(Job("x", 8, 1.0, 100.0), 100.0, 2, {})
    assert row["run_s"] == pytest.approx(small.iterations * spread_ms / 1000, rel=1e-9)
    assert row["run_s"] > 60.0


def test_comm_off_and_the_elasticflow_cross_check(pod256, window: Workload) -> None:  # type: ignore[no-untyped-def]
    """Communication free: every job runs its trace duration wherever it runs, and FIFO with
    backfill without stragglers is ElasticFlow's own simulator within 1% (its 60 s scheduling
    slot and restart overheads are not modelled)."""
    res = simulate(pod256, window, method="consolidate", knowledge="oblivious", dynamics="none", comm="off")
    assert len(window.jobs) == 606
    by_id = {j.id: j for j in window.jobs}
    assert any(r["servers"] > -(-r["workers"] // 8) for r in res.jobs)  # some ran spread
    for row in res.jobs:
        assert row["run_s"] == pytest.approx(by_id[row["job"]].duration_s, rel=1e-9), row
    assert res.summary["jobs_comm_scaled"] == 0
    assert res.summary["avg_jct_s"] == pytest.approx(ELASTICFLOW_FIFO_MEAN_JCT_S, rel=0.01)


def test_summary_splits_jct_by_size_class(pod256, window: Workload) -> None:  # type: ignore[no-untyped-def]
    res = simulate(
        pod256, Workload(window.jobs[:120], "w", {}), method="consolidate", knowledge="oblivious", dynamics="none"
    )
    s = res.summary
    total = 0.0
    for name in ("w1", "w2_8", "w9_32", "w33up"):
        n = s[f"jobs_{name}"]
        if n:
            assert s[f"avg_jct_{name}_s"] == pytest.approx(s[f"avg_queue_{name}_s"] + s[f"avg_run_{name}_s"])
            total += n * s[f"avg_jct_{name}_s"]
        else:
            assert s[f"avg_jct_{name}_s"] is None
    assert sum(s[f"jobs_{n}"] for n in ("w1", "w2_8", "w9_32", "w33up")) == 120
    assert total / 120 == pytest.approx(s["avg_jct_s"])


def test_readers_mark_measured_durations(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text(
        "submit_s,workers,duration_s,iterations,compute_ms,gradient_mb,model\n"
        "0,4,600,,,,vgg16\n"  # a measurement
        "0,4,600,,50,10,\n"  # the row's own model
        "0,4,,100,,,\n"  # no duration: the model table's job
        "0,4,600,300,,,\n"  # a measured duration over given iterations
    )
    jobs = read_plain(p)
    assert [j.duration_s for j in jobs] == [600.0, None, None, 600.0]
    window = read_trace("elasticflow-cluster04", max_jobs=5)
    assert all(j.duration_s is not None and j.duration_s > 0 for j in window.jobs)
    # transforms that change a job's architecture make it a model of its own
    ps = read_trace("elasticflow-cluster04", max_jobs=20, ps_fraction=1.0)
    assert all(j.duration_s is None for j in ps.jobs)


def test_comm_options_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="comm must be on, off or penalty:F"):
        SimConfig(comm="maybe")
    with pytest.raises(InvalidInputError, match="comm_share_max"):
        SimConfig(comm_share_max=1.0)


def test_the_gradient_cap_never_leaves_a_job_below_a_negative_gammas_floor() -> None:
    """Scaling a trace job's gradient down to the cap would make its all-reduce negative under a
    fitted negative gamma (at least -8 G / B): it then all-reduces nothing."""
    from placement.model import CommTerm, Instance, Link, Server, Switch

    servers = tuple(Server(f"n{i}", 2, "A", 2400.0) for i in range(4))
    links = tuple(Link(s.id, "tor", 25.0) for s in servers)
    cl = Instance("c", servers, (), (Switch("tor"),), links, comm_terms=(CommTerm(25.0, gamma_ms=-28.8),))
    (k,), scaled, _ = as_measured(cl, [TraceJob("a", 0.0, 4, 1000, 0.0, 100.0, duration_s=20.0)])
    assert scaled == 1 and k.gradient_mb == 0.0 and k.compute_ms == pytest.approx(20.0)
    for n in (2, 4):
        assert comm_ms(Job("x", 4, 1.0, k.gradient_mb), 25.0, n, cl.terms_by_bandwidth) >= 0.0


def test_a_job_whose_gradient_a_negative_gamma_does_not_allow_is_refused() -> None:
    from placement.errors import InvalidInputError
    from placement.model import CommTerm, Instance, Link, Server, Switch
    from placement.simulation import simulate
    from placement.simulation.workload import Workload

    servers = tuple(Server(f"n{i}", 2, "A", 2400.0) for i in range(4))
    links = tuple(Link(s.id, "tor", 25.0) for s in servers)
    cl = Instance("c", servers, (), (Switch("tor"),), links, comm_terms=(CommTerm(25.0, gamma_ms=-28.8),))
    small = TraceJob("small", 0.0, 4, 100, 10.0, 10.0)  # its own model: 8 G / B = 3.2 ms
    with pytest.raises(InvalidInputError, match="job 'small'.*would make its all-reduce negative"):
        simulate(cl, Workload((small,), "one", {}), method="greedy", dynamics="none")
