import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placement
from placement.errors import MethodUnavailableError, UnknownMethodError
from placement.model import Instance, Status
from placement.solving import REGISTRY
from placement.testing import check_solution, instances

NON_EXACT = [m.name for m in REGISTRY if m.kind in ("heuristic", "baseline")]


@settings(max_examples=25)
@given(instances(max_servers=5, max_jobs=3), st.sampled_from(NON_EXACT + ["auto"]), st.integers(0, 3))
def test_every_method_returns_an_honest_solution(inst, method, seed):
    if method == "saa" and inst.scenarios is not None:
        with pytest.raises(MethodUnavailableError, match="scenario table"):
            placement.solve(inst, method)
        return
    sol = placement.solve(inst, method, time_limit_s=2, seed=seed)
    check_solution(inst, sol)
    assert sol.status in (Status.FEASIBLE, Status.OPTIMAL, Status.NO_SOLUTION)
    if inst.admission == "best_effort":
        assert sol.status.has_placement


@settings(max_examples=30)
@given(instances(max_servers=4, max_jobs=3, max_gpus=3))
def test_heuristics_never_beat_brute_force(inst):
    exact = placement.solve(inst, "brute_force", time_limit_s=30)
    check_solution(inst, exact)
    assert exact.status in (Status.OPTIMAL, Status.INFEASIBLE)
    if exact.status == Status.INFEASIBLE:
        return
    w_opt = exact.stats["placed_weight"]
    for m in NON_EXACT:
        if m == "saa" and inst.scenarios is not None:
            continue
        sol = placement.solve(inst, m, time_limit_s=1)
        if not sol.status.has_placement:
            continue
        w = sol.stats["placed_weight"]
        assert w <= w_opt + 1e-9
        if abs(w - w_opt) <= 1e-9:
            assert sol.objective >= exact.objective * (1 - 1e-9), m
    auto = placement.solve(inst, "auto", time_limit_s=5)
    assert auto.status == Status.OPTIMAL
    assert auto.objective == pytest.approx(exact.objective, rel=1e-9)


def _renamed(inst: Instance, perm_servers, perm_jobs) -> Instance:
    from placement.formats import instance_from_dict, instance_to_dict

    d = instance_to_dict(inst)
    smap = {s.id: f"srv-{k}" for k, s in enumerate(inst.servers)}
    jmap = {j.id: f"job-{k}" for k, j in enumerate(inst.jobs)}
    text = __import__("json").dumps(d)
    for old in sorted(smap, key=len, reverse=True):
        text = text.replace(f'"{old}"', f'"{smap[old]}"')
    for old in sorted(jmap, key=len, reverse=True):
        text = text.replace(f'"{old}"', f'"{jmap[old]}"')
    d = __import__("json").loads(text)
    d.pop("metadata", None)
    servers = [n for n in d["topology"]["nodes"] if n["kind"] == "server"]
    switches = [n for n in d["topology"]["nodes"] if n["kind"] != "server"]
    d["topology"]["nodes"] = [servers[i] for i in perm_servers] + switches
    d["jobs"] = [d["jobs"][i] for i in perm_jobs]
    d["topology"]["edges"] = list(reversed(d["topology"]["edges"]))
    return instance_from_dict(d)


@settings(max_examples=20)
@given(st.data())
def test_renaming_and_reordering_change_no_optimum(data):
    inst = data.draw(instances(max_servers=4, max_jobs=3, max_gpus=3))
    ps = data.draw(st.permutations(range(len(inst.servers))))
    pj = data.draw(st.permutations(range(len(inst.jobs))))
    other = _renamed(inst, ps, pj)
    a = placement.solve(inst, "brute_force", time_limit_s=30)
    b = placement.solve(other, "brute_force", time_limit_s=30)
    assert a.status == b.status
    if a.objective is not None:
        assert b.objective == pytest.approx(a.objective, rel=1e-9)


def test_infeasible_is_a_status_proven_by_brute_force_and_by_check():
    inst = placement.load_bundled("tiny")
    big = inst.replace(jobs=inst.jobs + (inst.jobs[0].__class__(id="huge", workers=64, compute_ms=10, gradient_mb=1),))
    for m in ("auto", "greedy", "brute_force", "first_fit"):
        sol = placement.solve(big, m)
        assert sol.status == Status.INFEASIBLE, m
        assert sol.assignment == {} and sol.objective is None


def test_unknown_method_lists_the_valid_names():
    with pytest.raises(UnknownMethodError) as e:
        placement.solve(placement.load_bundled("tiny"), "simplex")
    for m in REGISTRY:
        assert m.name in str(e.value)


def test_bad_options_are_refused():
    inst = placement.load_bundled("tiny")
    for kw in ({"time_limit_s": 0}, {"seed": -1}, {"threads": 0}, {"time_limit_s": True}):
        with pytest.raises(ValueError):
            placement.solve(inst, "greedy", **kw)


def test_brute_force_refuses_large_instances():
    with pytest.raises(MethodUnavailableError, match="brute_force"):
        placement.solve(placement.load_bundled("pod256"), "brute_force")


def test_auto_on_a_tiny_instance_is_optimal_and_on_a_larger_one_says_its_path():
    t = placement.solve(placement.load_bundled("tiny"), "auto")
    assert t.status == Status.OPTIMAL and t.bound == t.objective
    s = placement.solve(placement.load_bundled("pod256"), "auto", time_limit_s=3)
    assert s.status == Status.FEASIBLE
    assert s.stats["path"][0] == "auto:greedy"
    check_solution(placement.load_bundled("pod256"), s)


@pytest.mark.parametrize("name", ["demo", "pod256", "hetero", "correlated", "overload"])
def test_straggler_aware_methods_beat_oblivious_baselines(name):
    inst = placement.load_bundled(name)
    ls = placement.solve(inst, "local_search", time_limit_s=5, seed=0)
    check_solution(inst, ls)
    for base in ("first_fit", "spread", "random"):
        b = placement.solve(inst, base, seed=0)
        if b.status.has_placement and b.stats["placed_weight"] == ls.stats["placed_weight"]:
            assert ls.objective <= b.objective, base


def test_local_search_is_deterministic_per_seed_and_improves_its_start():
    inst = placement.load_bundled("hetero")
    a = placement.solve(inst, "local_search", seed=4, time_limit_s=5)
    b = placement.solve(inst, "local_search", seed=4, time_limit_s=5)
    assert a.assignment == b.assignment
    start = placement.solve(inst, "spread")
    c = placement.solve(inst, "local_search", seed=1, time_limit_s=5, start=start.assignment)
    assert c.objective <= start.objective


def test_import_placement_imports_no_solver():
    code = (
        "import sys, placement; placement.list_methods(); [m.available for m in placement.REGISTRY]; "
        "bad = [m for m in ('ortools', 'pulp', 'highspy', 'hypothesis') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_registry_is_data():
    names = [m.name for m in REGISTRY]
    assert len(names) == len(set(names))
    assert {m.kind for m in REGISTRY} <= {"auto", "exact", "heuristic", "baseline"}
    for m in REGISTRY:
        assert callable(m.load()), m.name
