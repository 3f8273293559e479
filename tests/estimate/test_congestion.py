"""Congested links learnt offline (``placement estimate --steps``, and an op trace's transfers):
a hot rack is found without blaming the calm rack or the spine above it, a hot spine is put on
the spine, jobs that cannot tell are named, bad rows are refused all at once, and the simulator's
learner reads domains by the same rule."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from click.testing import CliRunner

from placement.cli.main import cli
from placement.estimate import (
    EXPLAIN_TOLERANCE,
    domain_looks,
    read_op_trace,
    read_step_log,
    with_congestion,
)
from placement.estimate.congestion import congestion_from_steps
from placement.estimate.optrace import OpTraceError, congestion_from_op_trace
from placement.formats import dump_instance, load_instance
from placement.model import Instance, Link, Server, Slowdown, Switch
from placement.problem.congestion import first_switches
from placement.problem.topology import cluster_of


def two_racks() -> Instance:
    """Two racks of two servers (100 Gbit/s to their switch) under a core (25 Gbit/s)."""
    servers = tuple(Server(f"s{i}", 4, "V100", 300.0) for i in range(4))
    switches = (Switch("core"), Switch("r0"), Switch("r1"))
    links = tuple(Link(f"s{i}", f"r{i // 2}", 100.0) for i in range(4)) + (
        Link("r0", "core", 25.0),
        Link("r1", "core", 25.0),
    )
    return Instance("two-racks", servers, (), switches, links)


JOBS = {"inside0": "s0;s1", "inside1": "s2 s3", "across": "s1;s3"}
"""A job inside each rack and one across both (through the core)."""


def step_rows(
    hot: dict[str, float], hours: float = 6.0, seed: int = 0, noise: dict[str, float] | None = None
) -> list[tuple[str, str, float, float, float]]:
    """Each job's steps (one a minute), communication 0.4 s and compute 1 s with 2% noise (job
    ``j``'s communication ``noise[j]``); in the last third of the time, job ``j``'s communication
    takes ``hot[j]`` times longer."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(int(hours * 60)):
        t = 60.0 * (k + 1)
        for job, servers in JOBS.items():
            slow = hot.get(job, 1.0) if t > hours * 3600 * 2 / 3 else 1.0
            compute = 1.0 * math.exp(0.02 * rng.standard_normal())
            comm = 0.4 * slow * math.exp((noise or {}).get(job, 0.02) * rng.standard_normal())
            rows.append((job, servers, t, compute + comm, compute))
    return rows


def write_steps(path, rows, header=("job", "servers", "time", "duration", "compute")) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def run(tmp_path, *args: str):
    cluster = tmp_path / "cluster.json"
    dump_instance(two_racks(), cluster)
    out = tmp_path / "out.json"
    r = CliRunner().invoke(cli, ["estimate", str(cluster), *args, "-o", str(out)])
    return r, out


def laws_of(path) -> dict[str, Slowdown]:
    return {w.id: w.congestion for w in load_instance(path).switches}


def test_a_hot_rack_is_found_and_neither_the_calm_rack_nor_the_spine_above_it_is_blamed(tmp_path):
    """Rack 0 congests (L = 2) for the last two hours: the job inside it and the job across
    both racks slow down, the job inside rack 1 does not.  Rack 0 gets L ~ 2; rack 1 does not
    (its inside job is calm, if noisy: 20%, under its 4 deviations); the core, crossed only by
    the slow job across, is explained away by rack 0 (least look alone would blame it)."""
    write_steps(tmp_path / "steps.csv", step_rows({"inside0": 2.0, "across": 2.0}, noise={"inside1": 0.2}))
    r, out = run(tmp_path, "--steps", str(tmp_path / "steps.csv"))
    assert r.exit_code == 0, r.output
    assert r.stdout == "" and "congested links per domain" in r.stderr
    laws = laws_of(out)
    assert 1.9 <= max(laws["r0"].values) <= 2.1 and laws["r0"].mean() > 1.3
    assert laws["r1"].mean() < 1.05 and laws["core"].mean() < 1.05
    assert sum(p for v, p in zip(laws["r1"].values, laws["r1"].probs) if v > 1) < 0.1


def test_a_hot_spine_is_put_on_the_spine(tmp_path):
    """Only the job across racks slows down (L = 2.5): the racks' inside jobs say they are calm,
    so the core is blamed."""
    inst = two_racks()
    write_steps(tmp_path / "steps.csv", step_rows({"across": 2.5}, seed=1))
    got = congestion_from_steps(read_step_log([tmp_path / "steps.csv"], inst), inst)
    assert got.domains["core"].mean > 1.4 and 2.4 <= max(got.domains["core"].law.values) <= 2.6
    assert got.domains["r0"].mean < 1.05 and got.domains["r1"].mean < 1.05
    assert {w: d.jobs for w, d in got.domains.items()} == {"core": 1, "r0": 2, "r1": 2}


def test_jobs_that_cannot_tell_are_named_with_why(tmp_path):
    rows = step_rows({})
    for k in range(30):
        t = 60.0 * (k + 1)
        rows.append(("alone", "s0", t, 1.4, 1.0))  # one server
        rows.append(("tiny", "s0;s2", t, 1.01, 1.0))  # communication 1% of its step
        rows.append(("moved", "s0;s2" if k < 15 else "s1;s3", t, 1.4, 1.0))  # servers change
    rows.append(("short", "s0;s2", 60.0, 1.4, 1.0))  # one step: no baseline
    write_steps(tmp_path / "steps.csv", rows)
    r, out = run(tmp_path, "--steps", str(tmp_path / "steps.csv"))
    assert r.exit_code == 0, r.output
    for job, why in [
        ("alone", "one server: no links"),
        ("tiny", "too little to tell"),
        ("moved", "servers change"),
        ("short", "too few steps"),
    ]:
        assert f"cannot tell: job {job}: {why}" in r.stderr
    assert out.exists() and r.stdout == ""


def test_bad_rows_are_refused_all_at_once_with_their_row_numbers(tmp_path):
    rows = step_rows({}, hours=0.1)  # 6 minutes: rows 2-19 good
    rows += [
        ("a", "s0;s1", "nan", 1.4, 1.0),  # row 20
        ("a", "s0;s1", 60.0, 1.4, -1.0),  # row 21
        ("a", "s0;s1", 60.0, 1.0, 1.4),  # row 22: compute longer than the step
        ("a", "s0;s9", 60.0, 1.4, 1.0),  # row 23: no server s9
        ("", "s0;s1", 60.0, "inf", 1.0),  # row 24
    ]
    write_steps(tmp_path / "steps.csv", rows)
    write_steps(tmp_path / "nocol.csv", [("a", "s0", 1.0, 1.0)], header=("job", "servers", "time", "duration"))
    r, out = run(tmp_path, "--steps", str(tmp_path / "steps.csv"), "--steps", str(tmp_path / "nocol.csv"))
    assert r.exit_code == 2, r.output
    assert r.stdout == "" and "Traceback" not in r.output and not out.exists()
    err = r.stderr
    for row, what in [
        (20, "time must be a number >= 0"),
        (21, "compute must be a number >= 0"),
        (22, "longer than the step"),
        (23, "'s9' not in the instance"),
        (24, "empty job"),
    ]:
        assert f"steps.csv row {row}: " in err and what in err, (row, err)
    assert "steps.csv row 24: empty job; duration must be a number > 0" in err
    assert "nocol.csv: missing column(s) compute" in err
    assert not any(f"steps.csv row {k}:" in err for k in range(2, 20))


def op_trace_csv(path, *, hot_shortest: float = 1.0, hot_waiting: float = 1.0, extra=()) -> None:
    """2 data-parallel replicas x 2 stages (rank = dp + 2 stage), 30 steps; per step each rank
    computes 1 s and runs both data-parallel collectives.  In each stage's group one rank
    transfers in 0.2 s / 0.1 s (the pure transfer) and the other waits 0.1-0.3 s longer; in the
    last 10 steps the pure transfer takes ``hot_shortest`` times longer and the wait
    ``hot_waiting`` times longer."""
    rng = np.random.default_rng(3)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dp_rank", "stage", "rank", "step", "optype", "duration", "mc", "mb_id"])
        for step in range(30):
            late = step >= 20
            for stage in range(2):
                for dp in range(2):
                    rank = dp + 2 * stage
                    w.writerow([dp, stage, rank, step, "forward-compute", 0.3 * rng.uniform(0.95, 1.05), 0, 0])
                    w.writerow([dp, stage, rank, step, "backward-compute", 0.7 * rng.uniform(0.95, 1.05), 0, 0])
                for op, base in (("grads-reduce-scatter", 0.2), ("params-all-gather", 0.1)):
                    pure = base * rng.uniform(0.99, 1.01) * (hot_shortest if late else 1.0)
                    wait = rng.uniform(0.1, 0.3) * (hot_waiting if late else 1.0)
                    for dp in range(2):
                        w.writerow(
                            [dp, stage, dp + 2 * stage, step, op, pure + (wait if dp == step % 2 else 0.0), 0, -1]
                        )
        w.writerows(extra)


RANKS = {r: f"s{r}" for r in range(4)}
"""Stage 0 on rack 0, stage 1 on rack 1: the job crosses both racks and the core."""


def test_op_trace_transfers_read_the_shortest_rank_drop_bad_collectives_and_still_check_compute(tmp_path):
    inst = two_racks()
    bad_collectives = [
        (0, 0, 0, 5, "grads-reduce-scatter", "nan", 0, -1),
        (1, 0, 1, 6, "params-all-gather", -1.0, 0, -1),
    ]
    # ranks that wait 3x longer at the end say nothing: the shortest rank is the transfer
    op_trace_csv(tmp_path / "wait.csv", hot_waiting=3.0, extra=bad_collectives)
    got = congestion_from_op_trace(read_op_trace(tmp_path / "wait.csv"), RANKS, inst)
    assert max(d.mean for d in got.domains.values()) < 1.1, got
    # the pure transfer 2x longer at the end: both racks (the job's narrowest domains), not the core
    op_trace_csv(tmp_path / "hot.csv", hot_shortest=2.0, extra=bad_collectives)
    got = congestion_from_op_trace(read_op_trace(tmp_path / "hot.csv"), RANKS, inst)
    assert set(got.domains) == {"core", "r0", "r1"}
    assert got.domains["r0"].mean > 1.3 and 1.9 <= max(got.domains["r0"].law.values) <= 2.1
    assert got.domains["r1"].mean == pytest.approx(got.domains["r0"].mean)
    assert got.domains["core"].mean < 1.1
    # a zero-length collective is no error; a compute row's bad duration still is
    op_trace_csv(tmp_path / "zero.csv", extra=[(0, 0, 0, 5, "params-all-gather", 0.0, 0, -1)])
    read_op_trace(tmp_path / "zero.csv")
    op_trace_csv(tmp_path / "bad.csv", extra=[*bad_collectives, (0, 0, 0, 5, "forward-compute", 0.0, 0, 1)])
    with pytest.raises(OpTraceError) as e:
        read_op_trace(tmp_path / "bad.csv")
    line = 1 + 30 * 2 * 8 + 3  # the header, 8 rows a stage a step, then the extra rows
    assert e.value.problems == (f"bad.csv line {line}: duration must be a number > 0",)
    # one server for the whole job: no links
    one = congestion_from_op_trace(read_op_trace(tmp_path / "hot.csv"), dict.fromkeys(range(4), "s0"), inst)
    assert one.domains == {} and one.silent == {"op-trace": "one server: no links"}


def test_the_domain_rule_explains_away_and_is_the_simulators():
    """The one rule, shared with the simulator's learner: least looks first, then a domain whose
    every crossing job also crosses a narrower domain looking at least its look over 1.1 reads
    1; the least looks (not what explaining away left) are what explain."""
    from placement.simulation import congestion_book

    assert congestion_book.domain_looks is domain_looks
    inst = two_racks()
    cl = cluster_of(inst)
    d = {w: cl.switch_domain[w] for w in ("core", "r0", "r1")}
    across = (d["core"], d["r0"], d["r1"])
    # a hot rack 0: the job inside it and the job across show it
    got = domain_looks([(2.0, (d["r0"],)), (1.0, (d["r1"],)), (2.0, across)], cl)
    assert got == {d["r0"]: 2.0, d["r1"]: 1.0, d["core"]: 1.0}
    # a hot core: only the job across shows it
    got = domain_looks([(1.0, (d["r0"],)), (1.0, (d["r1"],)), (2.0, across)], cl)
    assert got == {d["r0"]: 1.0, d["r1"]: 1.0, d["core"]: 2.0}
    # the tolerance: rack 0 at 2.0 explains a core at 2.2, not at 2.3
    for core, kept in ((2.0 * EXPLAIN_TOLERANCE, 1.0), (2.3, 2.3)):
        got = domain_looks([(2.0, (d["r0"],)), (1.0, (d["r1"],)), (core, across)], cl)
        assert got[d["core"]] == pytest.approx(kept)
    # one job across, alone: both racks show it, the core is explained away
    assert domain_looks([(2.5, across)], cl) == {d["core"]: 1.0, d["r0"]: 2.5, d["r1"]: 2.5}


def test_unseen_domains_get_the_fleets_law_shrunk_and_old_looks_fade_from_now():
    """What the simulator's learner plans by: a domain no job crossed is given the fleet's
    congested share times ``looked / (looked + 1)`` (not calm: else a domain never crossed looks
    better than one crossed and seen calm; not the fleet's whole: one hot domain seen does not make
    all hot), and with ``from_now`` a domain's looks age from the last bin of all, so one not
    crossed for a while falls back towards the fleet."""
    from placement.estimate.congestion import domain_laws, unseen_law

    hot = [(float(b), 0, 3.0) for b in range(10)]  # domain 0 hot in bins 0-9, then not crossed
    calm = [(float(b), 1, 1.0) for b in range(40)]  # domain 1 calm through bin 39
    own = domain_laws(hot + calm)
    assert set(own) == {0, 1}  # no domain list: only the looked ones
    now = domain_laws(hot + calm, domains=(0, 1, 2), from_now=True)
    assert 1.0 < now[0].mean() < own[0].mean() - 0.3
    assert now[1].mean() == pytest.approx(own[1].mean())  # looked at up to now: the same
    # the fleet: domain 0 slow in all its looks, domain 1 in none, so a rate of 1/2; two looked
    p_unseen = sum(p for v, p in zip(now[2].values, now[2].probs) if v > 1.0)
    assert p_unseen == pytest.approx(0.5 * 2 / 3, abs=1e-6)
    assert now[2].values[0] == 1.0 and max(now[2].values) == pytest.approx(3.0, rel=0.2)
    assert unseen_law(Slowdown((3.0,), (1.0,)), 0).is_trivial  # nothing looked at: calm
    assert unseen_law(Slowdown((3.0,), (1.0,)), 1).probs == (0.5, 0.5)
    assert domain_laws([], domains=(0, 1)) == {}


def test_a_law_goes_on_its_domains_first_switch_and_the_others_are_cleared():
    from placement.instances.generate import generate

    inst = generate(racks=2, servers_per_rack=2, gpus_per_server=2, jobs=1, seed=0, regime="calm")
    hot = Slowdown((1.0, 2.0), (0.5, 0.5))
    inst = inst.replace(
        switches=tuple(Switch(w.id, hot) for w in inst.switches)  # every switch congested at first
    )
    first = first_switches(inst)
    spine = cluster_of(inst).switch_domain["spine0"]
    assert first[spine] == "spine0" and cluster_of(inst).switch_domain["spine1"] == spine
    learnt = Slowdown((1.0, 3.0), (0.9, 0.1))
    got = {w.id: w.congestion for w in with_congestion(inst, {"spine0": learnt}).switches}
    assert got == {"spine0": learnt, "spine1": Slowdown(), "tor0": hot, "tor1": hot}
