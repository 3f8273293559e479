import dataclasses

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

import placement
from placement.model import JobReport
from placement.problem import cluster_of
from placement.testing import assignments, check_solution, instances, shard_placements


def test_strategies_reach_the_corner_cases():
    find(instances(), lambda i: i.scenarios is not None and any(j.slowdown for j in i.jobs))
    find(instances(), lambda i: len({s.gpu_type for s in i.servers}) > 1)
    find(instances(), lambda i: any(s.cpus is not None for s in i.servers))
    find(instances(min_servers=2), lambda i: len({int(c) for c in cluster_of(i).component}) > 1)
    find(instances(), lambda i: i.admission == "best_effort")
    find(instances(), lambda i: any(j.max_servers for j in i.jobs) and any(j.allowed_servers for j in i.jobs))
    find(instances(feasible=False, admission="all"), lambda i: placement.solve(i, "auto").status.value == "infeasible")


def test_strategy_checks_its_arguments():
    with pytest.raises(ValueError):
        find(instances(min_servers=3, max_servers=2), lambda i: True)


@settings(max_examples=20)
@given(st.data())
def test_assignments_respect_gpu_capacity(data):
    inst = data.draw(instances())
    asg = data.draw(assignments(inst))
    skip = ("admission", "cpus", "memory", "deadline")
    vs = [v for v in placement.validate(inst, asg) if v.kind not in (*skip, "shards")]
    assert vs == []
    # the shard strategy: every placed parameter-server job gets its count, on reachable servers
    shards = data.draw(shard_placements(inst, asg))
    vs = [v for v in placement.validate(inst, asg, shards=shards) if v.kind not in (*skip, "max_servers")]
    assert vs == []
    assert set(shards) == {j for j in asg if inst.job_by_id[j].is_ps and asg[j]}


def test_check_solution_catches_tampering():
    inst = placement.load_bundled("tiny")
    sol = placement.solve(inst, "greedy")
    check_solution(inst, sol)
    lie = dataclasses.replace(sol, objective=sol.objective * 0.9)
    with pytest.raises(AssertionError, match="evaluator computes"):
        check_solution(inst, lie)
    jid = next(iter(sol.jobs))
    r = sol.jobs[jid]
    lie = dataclasses.replace(
        sol,
        jobs={
            **sol.jobs,
            jid: JobReport(r.expected_iteration_ms, r.ideal_iteration_ms, 0.0, r.bandwidth_gbps, r.servers),
        },
    )
    if r.straggler_probability > 0:
        with pytest.raises(AssertionError, match="straggler_probability"):
            check_solution(inst, lie)
    lie = dataclasses.replace(sol, bound=sol.objective * 2)
    with pytest.raises(AssertionError, match="bound"):
        check_solution(inst, lie)
    first = inst.jobs[0].id
    broken = {**{j: dict(a) for j, a in sol.assignment.items()}, first: {inst.servers[0].id: 99}}
    lie = dataclasses.replace(sol, assignment=broken)
    with pytest.raises(AssertionError, match="invalid placement"):
        check_solution(inst, lie)
