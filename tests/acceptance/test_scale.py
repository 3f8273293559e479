"""Scale features: near-linear greedy, transportation bound, re-planning with a move budget.
(Speed targets are measured by the documented benchmarks, not here.)"""

import dataclasses
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import placement
from placement.cli.main import cli
from placement.evaluation import lower_bound
from placement.evaluation.bounds import class_envelopes, iid_max_means
from placement.formats import checked
from placement.formulations.transport import transport_lower_bound
from placement.instances.generate import generate
from placement.instances.scaling import SCALING
from placement.model import Slowdown, Status
from placement.problem import arrays_of, cluster_of
from placement.solving import moved_workers
from placement.testing import check_solution, instances


@settings(max_examples=25)
@given(instances(max_servers=4, max_jobs=3, max_gpus=3, admission="all"))
def test_transport_bound_is_below_the_optimum(inst):
    opt = placement.solve(inst, "brute_force", time_limit_s=60)
    tb = transport_lower_bound(inst)
    if opt.status == Status.OPTIMAL and tb is not None:
        assert tb <= opt.objective * (1 + 1e-9) + 1e-9


def test_transport_bound_is_tighter_on_a_contended_heterogeneous_fleet():
    inst = generate(
        racks=4, servers_per_rack=8, servers_from="alibaba-v2023", used_fraction=0.5, jobs=60, load=0.7, seed=3
    )
    tb, lb = transport_lower_bound(inst), lower_bound(inst)
    sol = placement.solve(inst, "auto", time_limit_s=5)
    check_solution(inst, sol)
    assert lb <= tb <= sol.objective
    assert tb > lb * 1.01
    assert sol.bound >= tb * (1 - 1e-9)  # auto reports the better bound


def test_greedy_places_type_restricted_jobs_by_retrying_them_first():
    inst = generate(
        topology="multi-pod",
        pods=2,
        racks=4,
        servers_per_rack=10,
        servers_from="alibaba-v2023",
        used_fraction=0.75,
        jobs=150,
        load=0.8,
        seed=1,
    )
    g = placement.solve(inst, "greedy")
    c = placement.solve(inst, "consolidate")
    check_solution(inst, g)
    assert g.status.has_placement
    assert not c.status.has_placement or g.objective < c.objective


def test_cost_density_order_puts_the_workers_that_weigh_most_first():
    from placement.methods.greedy import cost_density_order

    base = generate(racks=2, servers_per_rack=4, jobs=4, seed=2)
    j = base.jobs[0]
    jobs = (
        dataclasses.replace(j, id="light-gang", workers=8, compute_ms=400.0, gradient_mb=1.0, weight=1.0),
        dataclasses.replace(j, id="heavy-gang", workers=8, compute_ms=400.0, gradient_mb=2000.0, weight=1.0),
        dataclasses.replace(j, id="single", workers=1, compute_ms=100.0, gradient_mb=1.0, weight=1.0),
        dataclasses.replace(j, id="weighted-single", workers=1, compute_ms=100.0, gradient_mb=1.0, weight=2.0),
    )
    inst = checked(base.replace(jobs=jobs))
    # ms per worker: 200; 100; (400 + 280 of all-reduce at the rack's 100 Gbit/s) / 8 = 85; about 50
    assert [inst.jobs[jp].id for jp in cost_density_order(inst)] == [
        "weighted-single",
        "single",
        "heavy-gang",
        "light-gang",
    ]


def test_greedy_keeps_the_better_of_its_two_orders():
    from placement.evaluation import evaluate
    from placement.methods.greedy import cost_density_order, greedy_state, job_order

    inst = generate(
        topology="multi-pod", pods=2, racks=4, servers_per_rack=8, servers_from="alibaba-v2023", jobs=60, seed=3
    )
    g = placement.solve(inst, "greedy")
    check_solution(inst, g)
    for order in (cost_density_order(inst), job_order(inst)):
        st = greedy_state(inst, order)
        if st.complete:
            assert g.objective <= evaluate(inst, st.assignment()).objective * (1 + 1e-9)


SCALING_1G = SCALING["fleet1g-1000"]


def _mostly_one_gpu_fleet():
    return generate(
        topology="multi-pod",
        pods=2,
        racks=4,
        servers_per_rack=8,
        servers_from="alibaba-v2023",
        single_gpu_fraction=0.5,
        used_fraction=0.5,
        regime="heavy-tail",
        jobs=80,
        load=0.9,
        seed=3,
    )


def test_the_transport_lp_by_column_generation_is_the_whole_lp(monkeypatch):
    from placement.formulations import transport

    inst = _mostly_one_gpu_fleet()
    priced = transport_lower_bound(inst)
    monkeypatch.setattr(transport, "PRICING_START", 10**5)  # every column in the first LP
    whole = transport_lower_bound(inst)
    assert priced is not None and whole is not None
    assert abs(priced - whole) <= 1e-7 * whole


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_the_transport_lp_cut_short_returns_a_valid_lagrangian_bound(monkeypatch, rounds):
    from placement.formulations import transport

    inst = _mostly_one_gpu_fleet()
    whole = transport_lower_bound(inst)
    monkeypatch.setattr(transport, "PRICING_START", 2)
    real = transport._solve_with_pricing
    monkeypatch.setattr(transport, "_solve_with_pricing", lambda *a, **k: real(*a, **k, rounds=rounds))
    cut = transport_lower_bound(inst)
    assert whole is not None and cut is not None
    assert cut <= whole * (1 + 1e-9)


def _lp_parts(monkeypatch, inst):
    """The transport LP's optimum, its optimal row duals and its jobs' options (Lagrangian)."""
    from placement.formulations import transport

    seen = {}
    real = transport._solve_with_pricing

    def spy(*a, **k):
        out = real(*a, **k)
        seen["dual"], seen["y"] = k["lagrangian"].__self__, out[1]
        return out

    monkeypatch.setattr(transport, "_solve_with_pricing", spy)
    lp = transport.transport_lp(inst)
    return lp, seen["y"], seen["dual"]


def test_the_lagrangian_of_the_optimal_duals_is_the_lp_optimum_and_any_prices_give_a_lower_value(monkeypatch):
    """Dualising the capacity rows alone: at the LP's optimal duals the Lagrangian is the LP
    optimum; at any other prices >= 0 it is lower (weak duality), so a bound from a cut-short
    LP's duals is valid."""
    inst = _mostly_one_gpu_fleet()
    lp, y, dual = _lp_parts(monkeypatch, inst)
    assert lp.solved and lp.bound is not None
    at_opt = dual.bound(y)
    assert at_opt == pytest.approx(lp.bound, rel=1e-6)
    assert at_opt <= lp.bound * (1 + 1e-6)
    rng = np.random.default_rng(0)
    for scale in (0.0, 0.5, 2.0, 10.0):
        noisy = y * scale * rng.uniform(0.0, 2.0, len(y))  # other prices (the sign kept)
        assert dual.bound(noisy) <= lp.bound * (1 + 1e-9)
    assert dual.bound(np.zeros_like(y)) < 0.99 * lp.bound  # free capacity: every job at its best


def test_the_transport_lp_seeded_with_a_placement_has_the_same_optimum(monkeypatch):
    """The first restricted LP holds the columns of a known placement: the optimum is the
    same.  Cut short after its first round, seeded or not, the bound is the Lagrangian of
    that round's prices: valid, and here within 0.2% of the LP."""
    from placement.formulations import transport

    inst = _mostly_one_gpu_fleet()
    start = placement.solve(inst, "greedy", time_limit_s=10, seed=0).assignment
    whole = transport.transport_lp(inst)
    seeded = transport.transport_lp(inst, start=start)
    assert seeded.solved and seeded.bound == pytest.approx(whole.bound, rel=1e-7)
    real = transport._solve_with_pricing
    monkeypatch.setattr(transport, "_solve_with_pricing", lambda *a, **k: real(*a, **k, rounds=1))
    for cut in (transport.transport_lp(inst), transport.transport_lp(inst, start=start)):
        assert not cut.solved and cut.bound is not None
        assert whole.bound * 0.998 <= cut.bound <= whole.bound * (1 + 1e-9)


def test_coarser_classes_give_a_smaller_lp_and_a_lower_bound_which_bound_then_improve_refines(monkeypatch):
    from placement.formulations import transport
    from placement.methods import local_search as ls_module
    from placement.solving.options import Options

    inst = _mostly_one_gpu_fleet()
    fine = transport.transport_lp(inst)
    coarse = transport.transport_lp(inst, class_step=0.2)
    assert fine.solved and coarse.solved and coarse.bound < fine.bound
    start = placement.solve(inst, "greedy", time_limit_s=5, seed=0)
    path: list[str] = []
    best, _, bound = ls_module.bound_then_improve(
        inst, Options(time_limit_s=5), start.assignment, path, label="x:", class_step=0.2
    )
    assert "x:transport_bound(refined)" in path and bound == pytest.approx(fine.bound, rel=1e-9)
    monkeypatch.setattr(ls_module, "REFINE_ROOM", 1e9)  # no time to refine
    path = []
    _, _, bound = ls_module.bound_then_improve(
        inst, Options(time_limit_s=5), start.assignment, path, label="x:", class_step=0.2
    )
    assert "x:transport_bound(refined)" not in path and bound == pytest.approx(coarse.bound, rel=1e-9)


def test_the_transport_lp_raises_its_artificial_options_until_the_optimum_does_not_use_them(monkeypatch):
    from placement.formulations import transport

    inst = generate(**SCALING["fleet-0064"])
    lp = transport_lower_bound(inst)
    with monkeypatch.context() as m:  # every column in the first LP: no artificial option used
        m.setattr(transport, "PRICING_START", 10**5)
        whole = transport_lower_bound(inst)
    assert lp is not None and whole is not None
    assert lp == pytest.approx(whole, rel=1e-7)
    monkeypatch.setattr(transport, "ARTIFICIAL_ROUNDS", 0)
    assert transport_lower_bound(inst) is None  # at their first price the optimum used one


def _changed(inst, share=0.1, seed=1):
    rng = np.random.default_rng(seed)
    servers = list(inst.servers)
    for i in rng.choice(len(servers), size=max(1, int(len(servers) * share)), replace=False):
        s = servers[i]
        hot = s.slowdown.mean() < 1.05
        servers[i] = dataclasses.replace(
            s, slowdown=Slowdown((1.0, 1.5, 3.0), (0.5, 0.35, 0.15)) if hot else Slowdown()
        )
    return checked(inst.replace(servers=tuple(servers)))


@pytest.mark.parametrize("budget", [0, 8, 40])
def test_replanning_keeps_the_move_budget_and_never_gets_worse(budget):
    old = generate(racks=4, servers_per_rack=4, jobs=16, hot_fraction=0.3, load=0.8, seed=2)
    prev = placement.solve(old, "auto", time_limit_s=5)
    new = _changed(old)
    stale = placement.evaluate(new, prev.assignment).objective
    rp = placement.solve(new, "local_search", time_limit_s=3, previous=prev.assignment, max_moves=budget)
    check_solution(new, rp)
    assert rp.stats["moved_workers"] == moved_workers(prev.assignment, rp.assignment) <= budget
    assert rp.objective <= stale * (1 + 1e-12)
    if budget == 0:
        assert rp.assignment == {j: dict(a) for j, a in prev.assignment.items()}


def test_replanning_adds_new_jobs_drops_finished_ones_and_prices_moves():
    old = generate(racks=2, servers_per_rack=4, jobs=10, load=0.6, seed=4)
    prev = placement.solve(old, "auto", time_limit_s=3)
    gone = old.jobs[0].id
    extra = dataclasses.replace(old.jobs[1], id="newcomer")
    new = _changed(old.replace(jobs=old.jobs[1:] + (extra,)))
    rp = placement.solve(new, "auto", time_limit_s=3, previous=prev.assignment, max_moves=4)
    check_solution(new, rp)
    assert "newcomer" in rp.assignment and gone not in rp.assignment
    assert rp.stats["moved_workers"] <= 4
    priced = placement.solve(new, "local_search", time_limit_s=3, previous=prev.assignment, move_cost=1e9)
    assert priced.stats["moved_workers"] == 0


def test_a_restart_price_moves_a_job_only_when_its_remaining_work_repays_it():
    """One running 4-worker job on a server that turned slow, an idle healthy one beside it:
    with the JCT objective over its remaining iterations, a move saves
    ``w R (E[T_old] - E[T_new]) / 1000`` seconds; it moves exactly when that exceeds its
    restart price."""
    doc = placement.instance_to_dict(placement.load_bundled("tiny"))
    doc["objective"] = "weighted_expected_jct"
    doc["jobs"] = [{"id": "run", "workers": 4, "compute_ms": 100.0, "gradient_mb": 10.0, "iterations": 10_000}]
    for n in doc["topology"]["nodes"]:
        if n.get("kind") == "server":
            n["slowdown"] = (
                {"values": [1.0, 3.0], "probs": [0.2, 0.8]} if n["id"] == "s0" else {"values": [1.0], "probs": [1.0]}
            )
    inst = placement.instance_from_dict(doc)
    prev = {"run": {"s0": 4}}
    stay = placement.evaluate(inst, prev).objective
    best = min(placement.evaluate(inst, {"run": {s: 4}}).objective for s in ("s1", "s2"))
    saving = stay - best  # seconds over the 10,000 iterations left
    assert saving > 1000
    for price, moves in ((0.5 * saving, True), (2.0 * saving, False)):
        for method in ("local_search", "auto"):
            sol = placement.solve(inst, method, time_limit_s=3, previous=prev, restart_cost={"run": price})
            check_solution(inst, sol)
            assert (sol.stats["moved_jobs"] == 1) == moves, (method, price, saving, sol.assignment)
            assert sol.stats["moved_workers"] == (4 if moves else 0)
    with pytest.raises(ValueError, match="restart_cost"):
        placement.solve(inst, "local_search", previous=prev, restart_cost={"nobody": 1.0})
    with pytest.raises(ValueError, match="restart_cost"):
        placement.solve(inst, "local_search", restart_cost={"run": 1.0})


def test_replanning_refuses_methods_without_a_budget_and_bad_budgets():
    inst = placement.load_bundled("tiny")
    prev = placement.solve(inst, "greedy").assignment
    with pytest.raises(ValueError, match="previous"):
        placement.solve(inst, "greedy", previous=prev)
    with pytest.raises(ValueError, match="max_moves"):
        placement.solve(inst, "auto", previous=prev, max_moves=-1)


def test_replan_cli(tmp_path):
    old = generate(racks=2, servers_per_rack=4, jobs=8, load=0.6, seed=6)
    ip, sp, np_ = tmp_path / "old.json", tmp_path / "prev.json", tmp_path / "new.json"
    placement.dump_instance(old, ip)
    placement.dump_solution(placement.solve(old, "auto", time_limit_s=2), sp)
    placement.dump_instance(_changed(old, 0.3), np_)
    r = CliRunner().invoke(cli, ["solve", str(np_), "--previous", str(sp), "--max-moves", "3", "--time-limit", "2"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["stats"]["moved_workers"] <= 3 and "re-planned" in r.stderr
    r = CliRunner().invoke(cli, ["solve", str(np_), "--max-moves", "3"])
    assert r.exit_code == 2 and "need --previous" in r.stderr
    r = CliRunner().invoke(cli, ["solve", str(np_), "--previous", str(sp), "-m", "greedy"])
    assert r.exit_code == 2


def test_pop_decomposes_solves_parts_in_parallel_and_keeps_a_whole_bound(monkeypatch):
    import placement.methods.pop as pop_mod

    monkeypatch.setattr(pop_mod, "PART_SIZE", 10)
    inst = placement.load_bundled("library/small/hetero")
    parts = pop_mod.partition(inst, 2)
    assert len(parts) == 2 and not set(parts[0][0]) & set(parts[1][0])
    assert sorted(parts[0][1] + parts[1][1]) == list(range(len(inst.jobs)))
    sol = placement.solve(inst, "pop", time_limit_s=10, threads=2)
    check_solution(inst, sol)
    assert sol.stats["path"][0].startswith("pop(") and "2 in parallel" in sol.stats["path"][0]
    assert sol.bound is not None and sol.bound <= sol.objective
    assert sol.objective <= placement.solve(inst, "greedy").objective * (1 + 1e-12)


def test_a_part_document_holds_only_its_servers_and_their_rows():
    import time

    import placement.methods.pop as pop_mod
    from placement.formats import instance_from_dict, instance_to_dict

    inst = placement.load_bundled("library/small/correlated")
    assert inst.scenarios is not None
    (servers, jobs), *_ = pop_mod.partition(inst, 2)
    doc = pop_mod.part_document(instance_to_dict(inst), inst, servers, jobs)
    part = instance_from_dict(doc)  # valid: no unknown server anywhere
    ids = {inst.servers[sp].id for sp in servers}
    assert {s.id for s in part.servers} == ids
    assert set(part.scenarios.slowdowns) <= ids
    assert part.admission == "best_effort" and {j.id for j in part.jobs} <= {inst.jobs[jp].id for jp in jobs}
    # a part that would start after the parts' deadline is left to the repair
    asg, path = pop_mod.solve_part((doc, "greedy", 5.0, time.monotonic(), 0))
    assert asg is None and path[0].startswith("skipped")
    asg, path = pop_mod.solve_part((doc, "greedy", 5.0, time.monotonic() + 5, 0))
    assert asg is not None and not placement.validate(part, asg)


def test_pop_splits_servers_and_jobs_so_parts_shrink_quadratically(monkeypatch):
    import placement.methods.pop as pop_mod

    monkeypatch.setattr(pop_mod, "PART_SIZE", 40)
    inst = placement.load_bundled("library/medium/correlated")
    sol = placement.solve(inst, "pop", time_limit_s=10)
    check_solution(inst, sol)
    free = cluster_of(inst).free_gpus > 0
    pairs = sum(int((np.isfinite(arrays_of(inst).job_a(jp)) & free).sum()) for jp in range(len(inst.jobs)))
    k = int(sol.stats["path"][0].split("(")[1].split()[0])
    assert 2 <= k <= math.ceil(math.sqrt(pairs / 40)) < pairs / 40  # parts without jobs are dropped


def test_the_home_aware_bound_charges_gangs_that_cannot_all_have_whole_servers():
    """Four 8-GPU servers in a rack, two of them half used, and three 8-worker jobs: at most
    two gangs sit on a whole server; the third pays the rack's all-reduce.  The plain LP
    gives every job a whole server's bandwidth; the home-aware one does not, and stays
    below the proven optimum."""
    inst = generate(racks=1, servers_per_rack=4, gpus_per_server=8, jobs=3, job_mix="small", regime="hot", seed=2)
    servers = tuple(s.__class__(**{**s.__dict__, "used_gpus": 4 if k >= 2 else 0}) for k, s in enumerate(inst.servers))
    jobs = tuple(j.__class__(**{**j.__dict__, "workers": 8, "gradient_mb": 400.0}) for j in inst.jobs)
    inst = inst.replace(servers=servers, jobs=jobs)
    opt = placement.solve(inst, "milp_highs", time_limit_s=30)
    assert opt.status == Status.OPTIMAL
    plain = transport_lower_bound(inst, home_aware=False)
    home = transport_lower_bound(inst)
    assert plain is not None and home is not None
    assert plain * 1.05 < home <= opt.objective * (1 + 1e-9)


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1))
def test_a_class_envelope_bounds_the_expected_maximum_of_any_of_its_servers(seed):
    """``iid_max_means`` of a group's envelope at ``k`` is at most ``E[max S]`` of every ``k``
    of its servers (exact: the product of their CDFs), and grows with ``k``."""
    inst = _mostly_one_gpu_fleet()
    idx = arrays_of(inst)
    rng = np.random.default_rng(seed)
    group = rng.choice(len(inst.servers), size=int(rng.integers(1, 12)), replace=False)
    env = class_envelopes(inst, [group])
    assert env is not None
    means = [float(iid_max_means(env, np.array([k]))[0]) for k in range(1, len(group) + 1)]
    assert all(a <= b + 1e-12 for a, b in zip(means, means[1:]))
    for k in range(1, len(group) + 1):
        chosen = rng.choice(group, size=k, replace=False)
        t = np.unique(np.concatenate([idx.dists[q][0] for q in chosen]))
        below = np.ones(len(t))  # P(max <= t)
        for q in chosen:
            v, p = idx.dists[q]
            below *= np.concatenate(([0.0], np.cumsum(p)))[np.searchsorted(v, t, side="right")]
        exact = float(t @ np.diff(np.concatenate(([0.0], below))))
        assert means[k - 1] <= exact * (1 + 1e-9)


def test_the_envelope_row_raises_the_transport_bound_on_mostly_one_gpu_servers(monkeypatch):
    """Gangs spread over one-GPU servers wait for the slowest of many: the envelope row
    prices that, the average alone does not (the sweep in test_transport_bound_is_below_the
    optimum keeps it valid)."""
    from placement.formulations import transport

    inst = generate(**dict(SCALING_1G, pods=2, racks=4, servers_per_rack=8, jobs=40))
    with_env = transport_lower_bound(inst)
    sol = placement.solve(inst, "greedy")
    monkeypatch.setattr(transport, "class_envelopes", lambda *a: None)
    average = transport_lower_bound(inst)
    assert with_env is not None and average is not None
    assert average * 1.05 < with_env <= sol.objective  # 8,604.3 -> 9,486.4 when written


def test_the_transport_lp_solves_again_from_scratch_when_a_run_stops_short(monkeypatch):
    """A warm run that ends neither optimal nor out of time (here: an iteration limit of 0
    on the first warm simplex run) is solved again from scratch: the same LP value."""
    from placement.formulations import transport

    inst = _mostly_one_gpu_fleet()
    whole = transport_lower_bound(inst)
    real = transport.interruptible_run
    calls = []

    def stalling(h):
        calls.append(h)
        if len(calls) == 2:  # the first run after the first interior-point solve
            h.setOptionValue("simplex_iteration_limit", 0)
            h.setOptionValue("solver", "simplex")
        real(h)

    monkeypatch.setattr(transport, "interruptible_run", stalling)
    monkeypatch.setattr(transport, "PRICING_START", 2)  # so that pricing rounds follow
    again = transport_lower_bound(inst)
    assert whole is not None and again is not None
    assert len(calls) > 3
    assert again == pytest.approx(whole, rel=1e-7)
    monkeypatch.setattr(transport, "RETRY_SOLVERS", ())
    calls.clear()
    assert transport_lower_bound(inst) < whole * (1 - 1e-4)  # without retries: cut short


def test_a_warm_highs_run_gets_its_own_time_not_the_object_s_total():
    """HiGHS compares ``time_limit`` with the run time its object has accumulated over all
    its runs: after a first run, a limit below that total stops the next run at once (which
    cut the transport LP's pricing short on large fleets); ``_limit`` counts from now."""
    import highspy

    from placement.formulations import transport

    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = 2, 1
    lp.col_cost_ = np.array([1.0, 2.0])
    lp.col_lower_, lp.col_upper_ = np.zeros(2), np.full(2, 10.0)
    lp.row_lower_, lp.row_upper_ = np.array([1.0]), np.array([highspy.kHighsInf])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array([0, 1, 2], dtype=np.int32)
    lp.a_matrix_.index_ = np.array([0, 0], dtype=np.int32)
    lp.a_matrix_.value_ = np.array([1.0, 1.0])
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    h.run()
    spent = h.getRunTime()
    assert spent > 0
    h.changeColCost(0, 3.0)
    h.setOptionValue("time_limit", spent / 2)  # "half the time the first run took"
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
    transport._limit(h, 10.0)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(2.0)


def test_auto_on_a_fleet_too_large_for_the_exact_model_starts_from_the_quick_greedy(monkeypatch):
    """Past the exact model's reach, ``auto`` builds its first placement by the quick greedy
    (no plain greedy pass), seeds the LP with it, then builds by the LP's prices; the plain
    greedy is the fallback only when the quick one leaves a job out, and without LP prices
    there is no price-guided pass."""
    from placement.formulations.transport import TransportLP
    from placement.methods import auto as auto_module
    from placement.methods import local_search as ls_module
    from placement.problem.state import State

    inst = generate(**dict(SCALING_1G, pods=2, racks=4, servers_per_rack=8, jobs=40))
    monkeypatch.setattr(auto_module, "AUTO_EXACT_SIZE", 10)
    monkeypatch.setattr(auto_module, "AUTO_QUICK_SIZE", 40)
    sol = placement.solve(inst, "auto", time_limit_s=3)
    check_solution(inst, sol)
    path = sol.stats["path"]
    assert path[0] == "auto:quick_greedy" and path[1].startswith("auto:exact skipped")
    assert path[2:4] == ["auto:transport_bound", "auto:price_guided_greedy"] and "auto:greedy" not in path
    assert sol.bound == pytest.approx(transport_lower_bound(inst), rel=1e-9)
    with monkeypatch.context() as m:  # the quick greedy leaves every job out
        m.setattr(auto_module, "quick_greedy", lambda instance, opts: (State(instance), 1))
        sol = placement.solve(inst, "auto", time_limit_s=3)
    check_solution(inst, sol)
    assert sol.stats["path"][:2] == ["auto:quick_greedy", "auto:greedy"]
    monkeypatch.setattr(ls_module, "transport_lp", lambda *a, **k: TransportLP(None))
    sol = placement.solve(inst, "auto", time_limit_s=3)
    check_solution(inst, sol)
    assert "auto:price_guided_greedy" not in sol.stats["path"]


def test_the_transport_lp_says_whether_it_was_solved(monkeypatch):
    """Its prices guide construction only when the LP was solved: cut short, the duals are a
    restricted LP's (LP first with 9.5 s, they led the greedy to 407,536 on fleet-4000 and
    630,980 on fleet1g-4278, against the plain greedy's 349,567 and 412,861)."""
    from placement.formulations import transport
    from placement.formulations.transport import transport_lp

    inst = _mostly_one_gpu_fleet()
    full = transport_lp(inst)
    assert full.solved and full.gpu_price is not None and (full.gpu_price >= 0).all()
    assert (full.whole_price >= full.gpu_price).all()
    monkeypatch.setattr(transport, "PRICING_START", 2)
    real = transport._solve_with_pricing
    monkeypatch.setattr(transport, "_solve_with_pricing", lambda *a, **k: real(*a, **k, rounds=1))
    cut = transport_lp(inst)
    assert not cut.solved and cut.bound is not None and cut.bound <= full.bound * (1 + 1e-9)
