"""The service's logic on its durable state, without HTTP: a job's life, reservations that end,
no GPU given twice (one process or two replicas), estimates that steer placements, bad input
named and refused whole, and a restart that finds what was acknowledged."""

import pytest
from support.serving import place_concurrently, two_servers

import placement
from placement.errors import InvalidInputError
from placement.serve.service import Conflict, NotFound, ServeConfig, Service
from placement.serve.store import Store


def job(jid, workers=8, **more):
    return {"id": jid, "workers": workers, "compute_ms": 100, "gradient_mb": 50, **more}


def over_capacity(svc):
    state = svc.state()
    return {s: n for s, n in state["free_gpus"].items() if n < 0}


def test_a_job_is_reserved_started_finished_and_its_gpus_come_back(tmp_path, clock):
    svc = Service(Store.open(tmp_path / "s.db"), placement.load_bundled("demo"), clock=clock)
    out = svc.place({"jobs": [job("a")]})
    assert out["status"] in ("optimal", "feasible") and out["unplaced"] == []
    (servers,) = out["assignment"].values()
    assert sum(servers.values()) == 8
    assert out["jobs"]["a"]["expected_iteration_ms"] >= out["jobs"]["a"]["ideal_iteration_ms"] > 0
    assert out["explanation"]["a"]["servers"]  # the explain rows of the placed job
    assert out["reserved_until"] == clock.t + ServeConfig().reservation_s
    state = svc.state()
    assert state["assignment"] == {"a": servers} and state["jobs"]["a"]["state"] == "reserved"
    assert svc.start("a") == {"job": "a", "state": "running"}
    assert svc.start("a") == {"job": "a", "state": "running"}  # said twice: the same answer
    clock.t += 10 * ServeConfig().reservation_s  # a running job's GPUs do not expire
    assert svc.state()["assignment"] == {"a": servers}
    assert svc.finish("a")["state"] == "finished"
    assert svc.state()["assignment"] == {}
    with pytest.raises(Conflict, match="is finished"):
        svc.release("a")
    with pytest.raises(NotFound):
        svc.start("nope")


def test_a_reservation_that_is_not_started_ends_and_frees_its_gpus(tmp_path, clock):
    svc = Service(Store.open(tmp_path / "s.db"), placement.load_bundled("demo"), ServeConfig(reservation_s=60), clock)
    svc.place({"jobs": [job("a"), job("b", 4)]})
    svc.start("b")
    clock.t += 61
    state = svc.state()
    assert set(state["assignment"]) == {"b"} and "a" not in state["jobs"]
    with pytest.raises(Conflict, match="expired"):
        svc.start("a")
    svc.place({"jobs": [job("a")]})  # an ended job's id may be placed again
    assert svc.state()["jobs"]["a"]["state"] == "reserved"


def test_a_job_already_held_is_refused_and_a_full_cluster_leaves_jobs_unplaced(tmp_path, clock):
    svc = Service(Store.open(tmp_path / "s.db"), placement.instance_from_dict(two_servers()), clock=clock)
    out = svc.place({"jobs": [job("a"), job("b"), job("c")]})
    assert len(out["assignment"]) == 2 and len(out["unplaced"]) == 1
    with pytest.raises(Conflict, match="already reserved"):
        svc.place({"jobs": [job(next(iter(out["assignment"])), 1)]})
    assert svc.place({"jobs": [job("d", 1)]})["unplaced"] == ["d"]
    assert over_capacity(svc) == {}


def test_concurrent_placements_never_give_one_gpu_twice_even_from_two_replicas(tmp_path, clock):
    """Two services on one database (replicas), two threads each, 40 jobs of 4 GPUs asked of
    128 GPUs: exactly 32 placed, no server over its GPUs."""
    cluster = placement.load_bundled("demo")
    path = tmp_path / "s.db"
    replicas = [Service(Store.open(path), cluster, ServeConfig(decision_time_limit_s=0.05), clock) for _ in range(2)]
    placed = place_concurrently(replicas, threads=4, per_thread=10)
    state = replicas[0].state()
    assert sorted(state["assignment"]) == sorted(placed) and len(placed) == 32
    assert all(n == 0 for n in state["free_gpus"].values())
    assert over_capacity(replicas[1]) == {}


def rows_where_slow(slow: str, fast: str, n=40):
    """One three-worker job's iterations, one worker on ``slow`` at 3x the two on ``fast``."""
    return [
        {"job": "probe", "worker": w, "server": s, "iteration": i, "duration": 3.0 if s == slow else 1.0}
        for i in range(n)
        for w, s in ((0, slow), (1, fast), (2, fast))
    ]


@pytest.mark.parametrize("slow,fast", [("s0", "s1"), ("s1", "s0")])
def test_pushed_iteration_rows_refit_the_estimates_and_steer_the_next_placement(tmp_path, clock, slow, fast):
    svc = Service(Store.open(tmp_path / "s.db"), placement.instance_from_dict(two_servers()), clock=clock)
    rows = rows_where_slow(slow, fast, n=240)
    for k in range(24):  # ten iterations a push, a push each refit period: 24 looks at each server
        assert svc.ingest(rows[30 * k : 30 * (k + 1)]) == {"accepted": 30}
        clock.t += ServeConfig().refit_every_s
    fit = svc.refit()
    assert fit["rows"] == 720
    est = svc.state()["estimates"]
    mean = {s: sum(v * p for v, p in zip(e["values"], e["probs"])) for s, e in est.items()}
    assert mean[slow] > 1.5 > mean[fast]
    out = svc.place({"jobs": [job("a", 4)]})
    assert out["assignment"] == {"a": {fast: 4}}
    # with no new rows the estimates keep what the last ones said (the window ends at the newest
    # row, as the simulator's ends at its last tick); rows a window older than the newest stop counting
    clock.t += ServeConfig().estimate_window_s + 1
    assert svc.refit()["rows"] == 720
    svc.ingest(rows[:30])
    assert svc.refit()["rows"] == 30


def test_bad_input_is_named_field_by_field_and_changes_nothing(tmp_path, clock):
    svc = Service(Store.open(tmp_path / "s.db"), placement.load_bundled("demo"), clock=clock)
    with pytest.raises(InvalidInputError) as e:
        svc.place({"jobs": [{"id": "x", "workers": 0}, job("y", allowed_servers=["s99"])]})
    text = "\n".join(e.value.problems)
    assert "jobs[0].workers" in text and "jobs[0]" in text and "compute_ms" in text and "s99" in text
    with pytest.raises(InvalidInputError, match="non-empty list"):
        svc.place({"jobs": []})
    before = svc.state()
    with pytest.raises(InvalidInputError) as e:
        svc.ingest(
            [
                {"job": "a", "worker": 0, "server": "s0", "iteration": 1, "duration": 1.0},
                {"job": "a", "worker": 1, "server": "s99", "iteration": -1, "duration": float("nan")},
                {"job": "", "worker": True, "server": "s0", "iteration": 1, "duration": 1.0, "gpu": 3},
            ]
        )
    assert e.value.problems == (
        "rows[1].server 's99' is not a server of the cluster",
        "rows[1].iteration must be an integer >= 0, got -1",
        "rows[1].duration must be a finite number > 0, got nan",
        "rows[2].gpu is not a field of a row",
        "rows[2].job must be a non-empty string",
        "rows[2].worker must be a non-empty string or an integer",
    )
    assert svc.state() == before  # all or nothing: the good row was not stored either


def test_a_restart_finds_what_was_acknowledged_and_refuses_a_cluster_it_does_not_fit(tmp_path, clock):
    path = tmp_path / "s.db"
    svc = Service(Store.open(path), placement.load_bundled("demo"), clock=clock)
    out = svc.place({"jobs": [job("a"), job("b", 3)]})
    svc.start("a")
    svc.ingest(rows_where_slow("s0", "s1"))
    again = Service(Store.open(path), None, clock=clock)  # the cluster from the state
    state = again.state()
    assert state["assignment"] == out["assignment"] and state["observations"] == 120
    assert state["jobs"]["a"]["state"] == "running" and state["jobs"]["b"]["state"] == "reserved"
    held = {s for a in out["assignment"].values() for s in a}
    with pytest.raises(InvalidInputError, match="does not have"):
        Service(Store.open(path), placement.instance_from_dict(two_servers()), clock=clock)
    assert held  # and the state is untouched by the refusal
    assert Service(Store.open(path), None, clock=clock).state()["assignment"] == out["assignment"]
    with pytest.raises(InvalidInputError, match="no cluster"):
        Service(Store.open(tmp_path / "empty.db"), None, clock=clock)


def test_replan_proposes_the_moves_that_repay_their_restart_and_a_move_is_applied(tmp_path, clock):
    """A long job on a server the rows show slow is moved (its saving repays 300 s spread over
    what it has left); a nearly finished one and one without iterations stay; applying a move
    changes the holdings, and a move that would give a GPU twice is refused."""
    svc = Service(Store.open(tmp_path / "s.db"), placement.instance_from_dict(two_servers()), clock=clock)
    out = svc.place({"jobs": [job("long", 4, iterations=100_000), job("short", 2, iterations=50), job("free", 1)]})
    for j in out["assignment"]:
        svc.start(j)
    (slow,) = out["assignment"]["long"]
    fast = {"s0": "s1", "s1": "s0"}[slow]
    rows = rows_where_slow(slow, fast)
    # each job's progress: one row at its latest iteration (a single worker's row says nothing of a server)
    rows += [{"job": "long", "worker": 0, "server": slow, "iteration": 40, "duration": 1.0}]
    rows += [
        {
            "job": "short",
            "worker": 0,
            "server": next(iter(out["assignment"]["short"])),
            "iteration": 45,
            "duration": 1.0,
        }
    ]
    svc.ingest(rows)
    svc.refit()
    plan = svc.replan()
    (move,) = plan["moves"]
    assert move["job"] == "long" and move["from"] == {slow: 4} and move["to"] == {fast: 4}
    assert move["iterations_left"] == 100_000 - 41 and move["repaid_alone"]
    assert move["expected_iteration_ms_now"] - move["expected_iteration_ms_after"] > move["price_ms_per_iteration"]
    assert "no iterations" in plan["kept"]["free"]
    assert plan["kept"]["short"].startswith("cannot repay")  # 4 iterations left: 75 s each to repay
    with pytest.raises(InvalidInputError, match="4"):
        svc.move("long", {fast: 3})
    svc.release("short")
    assert svc.move("long", {fast: 4}) == {"job": "long", "state": "running", "holds": {fast: 4}}
    assert svc.state()["assignment"]["long"] == {fast: 4}
    with pytest.raises(Conflict, match="only a running job"):
        svc.move("short", {slow: 2})
    svc.place({"jobs": [job("filler", 8)]})  # fills the slow server
    with pytest.raises(Conflict):
        svc.move("long", {slow: 4})
    assert svc.state()["assignment"]["long"] == {fast: 4}  # refused: nothing changed


def test_a_move_is_checked_by_the_validator(tmp_path, clock):
    """A move that breaks the job's own limits (here ``max_servers``) is refused naming the
    rule, and the holdings stay; one that keeps them is applied."""
    svc = Service(Store.open(tmp_path / "s.db"), placement.instance_from_dict(two_servers()), clock=clock)
    out = svc.place({"jobs": [job("a", 4, max_servers=1)]})
    svc.start("a")
    (here,) = out["assignment"]["a"]
    there = {"s0": "s1", "s1": "s0"}[here]
    with pytest.raises(InvalidInputError, match="max_servers"):
        svc.move("a", {here: 2, there: 2})
    assert svc.state()["assignment"]["a"] == {here: 4}
    assert svc.move("a", {there: 4})["holds"] == {there: 4}


def racks() -> dict:
    """Four 4-GPU servers, two racks of two (100 Gbit/s within a rack, 10 between)."""
    node = {"kind": "server", "gpus": 4, "gpu_type": "A100", "intra_bandwidth_gbps": 2400}
    servers = [{"id": f"s{i}", **node} for i in range(4)]
    switches = [{"id": x, "kind": "switch"} for x in ("tor0", "tor1", "core")]
    edges = [{"source": f"s{i}", "target": f"tor{i // 2}", "bandwidth_gbps": 100} for i in range(4)]
    edges += [{"source": f"tor{r}", "target": "core", "bandwidth_gbps": 10} for r in (0, 1)]
    return {
        "format": "placement-instance/1",
        "name": "racks",
        "topology": {"nodes": servers + switches, "edges": edges},
        "jobs": [],
    }


def test_patience_waits_for_a_better_placement_and_judges_a_job_by_the_servers_it_may_use(tmp_path, clock):
    """A job spread over two racks while a rack could hold it waits (while jobs hold GPUs),
    comes back in ``waiting`` with the end of its patience, holds nothing, keeps its first
    offer when offered again, and is placed once a rack frees up; a job allowed only on two
    servers of different racks is judged against its best there, and does not wait; a
    waiting job nobody offers again ends a reservation time after its patience."""
    svc = Service(Store.open(tmp_path / "s.db"), placement.instance_from_dict(racks()), ServeConfig(), clock)
    spec = {"compute_ms": 100, "gradient_mb": 400, "iterations": 20_000}
    for jid, server in (("a", "s0"), ("b", "s1"), ("c", "s2"), ("d", "s3")):  # two GPUs free on each
        svc.place({"jobs": [{"id": jid, "workers": 2, **spec, "allowed_servers": [server]}]})
        svc.start(jid)
    out = svc.place({"jobs": [{"id": "x", "workers": 4, **spec}]})  # its best: one whole server
    until = out["waiting"]["x"]
    assert until > clock.t and out["assignment"] == {} and over_capacity(svc) == {}
    state = svc.state()
    assert state["jobs"]["x"] == {"state": "waiting", "first_offered_at": clock.t, "waits_until": until}
    assert "x" not in state["assignment"]
    clock.t += 10
    again = svc.place({"jobs": [{"id": "x", "workers": 4, **spec}]})
    assert again["waiting"]["x"] == until  # patience counts from the first offer
    # six workers allowed on s1 and s3 only (two racks): 4 + 2 across the racks is the best it
    # can ever have, so it does not wait (against the whole cluster's best, within a rack, it would)
    svc.finish("b")
    cross = svc.place({"jobs": [{"id": "y", "workers": 6, **spec, "allowed_servers": ["s1", "s3"]}]})
    assert cross["waiting"] == {} and cross["assignment"]["y"] == {"s1": 4, "s3": 2}
    svc.release("y")
    placed = svc.place({"jobs": [{"id": "x", "workers": 4, **spec}]})  # s1 is whole again
    assert placed["waiting"] == {} and placed["assignment"]["x"] == {"s1": 4}
    # offered, waiting, never offered again: it ends after its patience and a reservation time
    out = svc.place({"jobs": [{"id": "z", "workers": 4, **spec}]})  # 2 + 2 only
    assert sorted(out["waiting"]) == ["z"]
    clock.t = out["waiting"]["z"] + ServeConfig().reservation_s + 1
    assert "z" not in svc.state()["jobs"]


def test_the_move_margin_falls_back_as_the_simulators_does():
    from placement.simulation.config import SimConfig

    for given in ({}, {"move_margin": 0.1}, {"move_margin": 0.1, "queued_move_margin": 0.02}):
        mine = ServeConfig(**given)
        sim = SimConfig(method="auto", knowledge="estimated", **given)
        assert (mine.margin(True), mine.margin(False)) == (sim.margin(True), sim.margin(False)), given
