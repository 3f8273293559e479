"""Parameter-server jobs: the evaluator against an enumeration of joint outcomes and Monte
Carlo, the validator's shard rules, the format, the generator, every method's validity."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import joint_outcomes, widest

import placement
from placement.cli.main import cli
from placement.errors import InstanceError
from placement.formats import instance_from_dict, instance_to_dict, solution_from_dict, solution_to_dict
from placement.instances.generate import from_source, generate
from placement.model import Job, Slowdown
from placement.testing import assignments, check_solution, instances, shard_placements


def enumerate_ps(
    inst: placement.Instance, jid: str, x: dict[str, int], z: dict[str, int]
) -> tuple[float, float, float]:
    """E[T], T° and P(T > T°) of a parameter-server job by enumerating the joint outcomes of
    its servers (one draw per server for both phases), written from DESIGN.md alone."""
    job = inst.job_by_id[jid]
    servers = sorted(set(x) | set(z))
    bw = widest(inst, servers)
    a = {s: job.compute_ms / job.speed(inst.server_by_id[s].gpu_type) for s in x}
    c = {}
    for s, k in z.items():
        local, remote = x.get(s, 0), job.workers - x.get(s, 0)
        per = 8 * 2 * k * job.gradient_mb / job.ps_shards
        c[s] = per * ((remote / bw if remote else 0.0) + local / inst.server_by_id[s].intra_bandwidth_gbps)
    ideal = max(a.values()) + max(c.values())
    outcomes = joint_outcomes(inst, jid, servers)
    e = p_str = 0.0
    for p, S in outcomes:
        t = max(a[s] * S[s] for s in x) + max(c[s] * S[s] for s in z)
        e += p * t
        p_str += p * (t > ideal * (1 + 1e-9))
    return e, ideal, p_str


@given(st.data())
def test_evaluator_matches_the_enumeration_of_joint_outcomes(data):
    inst = data.draw(instances(max_servers=4, max_jobs=3, max_gpus=3, parameter_servers=True))
    x = data.draw(assignments(inst))
    z = data.draw(shard_placements(inst, x))
    ev = placement.evaluate(inst, x, z)
    for jid, shards in z.items():
        e, ideal, strag = enumerate_ps(inst, jid, dict(x[jid]), shards)
        r = ev.jobs[jid]
        assert r.expected_iteration_ms == pytest.approx(e, rel=1e-9, abs=1e-9)
        assert r.ideal_iteration_ms == pytest.approx(ideal, rel=1e-9, abs=1e-9)
        assert r.straggler_probability == pytest.approx(strag, abs=1e-9)
        assert r.servers == len(set(x[jid]) | set(shards))


def ps_instance(**kw: object) -> placement.Instance:
    return generate(racks=2, servers_per_rack=3, gpus_per_server=4, jobs=6, ps_fraction=0.5, ps_shards=3, **kw)


@pytest.mark.parametrize("regime", ["hot", "correlated", "heavy-tail"])
def test_monte_carlo_agrees_with_the_evaluator(regime):
    inst = ps_instance(regime=regime, seed=2)
    assert any(j.is_ps for j in inst.jobs)
    sol = placement.solve(inst, "greedy")
    assert sol.shards and set(sol.shards) == {j.id for j in inst.jobs if j.is_ps}
    mc = placement.monte_carlo(inst, sol.assignment, samples=100_000, seed=3, shards=sol.shards)
    for jid, r in sol.jobs.items():
        mean, ci = mc.jobs[jid]
        assert abs(mean - r.expected_iteration_ms) <= 4 * ci + 1e-9, (jid, mean, r.expected_iteration_ms, ci)


def test_a_server_holding_workers_and_shards_slows_both_phases_with_one_draw():
    inst = ps_instance(seed=4)
    ps = next(j for j in inst.jobs if j.is_ps)
    sid = inst.servers[0].id
    one = inst.replace(
        jobs=(Job(id="p", workers=2, compute_ms=100.0, gradient_mb=400.0, architecture="ps", ps_shards=2),)
    )
    hot = one.replace(
        servers=(
            inst.servers[0].__class__(**{**inst.servers[0].__dict__, "slowdown": Slowdown((1.0, 3.0), (0.5, 0.5))}),
        )
        + inst.servers[1:]
    )
    ev = placement.evaluate(hot, {"p": {sid: 2}}, {"p": {sid: 2}})
    r = ev.jobs["p"]
    c = 8 * 2 * 2 * 400.0 / 2 * (2 / hot.servers[0].intra_bandwidth_gbps)
    # one draw for both phases: E[(100 + c) S] = 2 (100 + c), ideal 100 + c, straggles half the time
    assert r.expected_iteration_ms == pytest.approx(2 * (100 + c))
    assert r.ideal_iteration_ms == pytest.approx(100 + c)
    assert r.straggler_probability == pytest.approx(0.5)
    assert ps.shards == 3


def test_validator_checks_every_shard_rule():
    inst = ps_instance(seed=1, cpu_memory=True)
    sol = placement.solve(inst, "greedy")
    ps = next(j for j in inst.jobs if j.is_ps and j.id in sol.assignment)
    other = next(j for j in inst.jobs if not j.is_ps and j.id in sol.assignment)
    x, z = sol.assignment, {k: dict(v) for k, v in sol.shards.items()}

    def kinds(shards):
        return {v.kind for v in placement.validate(inst, x, shards=shards)}

    assert kinds(z) == set()
    assert "shards" in kinds({k: v for k, v in z.items() if k != ps.id})  # missing
    assert "shards" in kinds({**z, ps.id: {next(iter(z[ps.id])): ps.shards + 1}})  # count
    assert "shards" in kinds({**z, other.id: {inst.servers[0].id: 1}})  # not a PS job
    assert "unknown_server" in kinds({**z, ps.id: {"nowhere": ps.shards}})
    far = [s.id for s in inst.servers if s.id not in x[ps.id]]
    tight = inst.replace(
        jobs=tuple(
            j.__class__(**{**j.__dict__, "max_servers": len(x[j.id])}) if j.id == ps.id else j for j in inst.jobs
        )
    )
    vs = placement.validate(tight, x, shards={**z, ps.id: {far[0]: ps.shards}})
    assert "max_servers" in {v.kind for v in vs}
    # shards' CPUs count: a server's CPUs all taken by shards
    s0 = inst.server_by_id[far[0]]
    many = ps.__class__(**{**ps.__dict__, "ps_cpus": s0.cpus})
    over = inst.replace(jobs=tuple(many if j.id == ps.id else j for j in inst.jobs))
    vs = placement.validate(over, x, shards={**z, ps.id: {far[0]: ps.shards}})
    assert "cpus" in {v.kind for v in vs}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"ps_shards": 2}, 'jobs[0].ps_shards is only for parameter-server jobs (architecture "ps")'),
        ({"architecture": "ps"}, 'jobs[0].ps_shards is required with architecture "ps"'),
        ({"architecture": "ps", "ps_shards": 0}, "jobs[0].ps_shards"),
        ({"architecture": "ps", "ps_shards": 1.5}, "jobs[0].ps_shards"),
        ({"architecture": "ps", "ps_shards": 2, "ps_cpus": -1}, "jobs[0].ps_cpus"),
        ({"architecture": "ps", "ps_shards": 2, "ps_memory_gb": -4}, "jobs[0].ps_memory_gb"),
        ({"architecture": "ring"}, "jobs[0].architecture"),
    ],
)
def test_bad_parameter_server_fields_are_refused_with_their_path(change, words):
    doc = instance_to_dict(placement.load_bundled("tiny"))
    doc["jobs"][0].update(change)
    with pytest.raises(InstanceError) as e:
        instance_from_dict(doc)
    assert any(words in p for p in e.value.problems), e.value.problems


def test_instances_and_solutions_keep_their_shards():
    inst = ps_instance(seed=3, cpu_memory=True)
    assert instance_from_dict(instance_to_dict(inst)) == inst
    assert from_source(inst.source) == inst  # the generator command reproduces it
    sol = placement.solve(inst, "local_search", time_limit_s=5)
    back = solution_from_dict(solution_to_dict(sol), inst)
    assert back.shards == sol.shards and back.assignment == sol.assignment
    assert generate(racks=2, servers_per_rack=3, gpus_per_server=4, jobs=6, seed=3) == generate(
        racks=2, servers_per_rack=3, gpus_per_server=4, jobs=6, seed=3, ps_fraction=0.0
    )


@pytest.mark.parametrize("method", [m.name for m in placement.REGISTRY if m.available])
def test_every_method_places_the_shards(method):
    inst = ps_instance(seed=5, cpu_memory=True)
    if method == "brute_force":  # far beyond its enumeration here; it has its own test below
        inst = generate(
            racks=1, servers_per_rack=2, gpus_per_server=2, jobs=2, job_mix="small", seed=5, ps_fraction=1.0
        )
    sol = placement.solve(inst, method, time_limit_s=5)
    check_solution(inst, sol)
    if sol.status.has_placement:
        assert set(sol.shards) == {j for j in sol.assignment if inst.job_by_id[j].is_ps}


def test_brute_force_enumerates_shards_and_the_heuristics_reach_it():
    base = generate(racks=1, servers_per_rack=3, gpus_per_server=2, jobs=2, job_mix="small", seed=7, ps_fraction=1.0)
    oracle = placement.solve(base, "brute_force", time_limit_s=60)
    assert oracle.status.value == "optimal"
    for m in ("greedy", "local_search", "auto"):
        sol = placement.solve(base, m, time_limit_s=10)
        check_solution(base, sol)
        assert sol.objective >= oracle.objective * (1 - 1e-9)
    # exhaustive over shards: no single shard move of the oracle improves it
    for jid, z in oracle.shards.items():
        for s_from in z:
            for s_to in (s.id for s in base.servers):
                moved = dict(z)
                moved[s_from] -= 1
                moved[s_to] = moved.get(s_to, 0) + 1
                moved = {k: v for k, v in moved.items() if v}
                shards = {**oracle.shards, jid: moved}
                if not placement.validate(base, oracle.assignment, shards=shards):
                    assert placement.evaluate(base, oracle.assignment, shards).objective >= oracle.objective - 1e-9


def test_the_cli_summary_shows_shards(tmp_path):
    runner = CliRunner()
    inst = tmp_path / "ps.json"
    r = runner.invoke(
        cli, ["generate", "--ps-fraction", "0.5", "--ps-shards", "2", "--jobs", "6", "--seed", "2", "-o", str(inst)]
    )
    assert r.exit_code == 0, r.output
    out = tmp_path / "sol.json"
    r = runner.invoke(cli, ["solve", str(inst), "-m", "greedy", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "shards" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["shards"]
    r = runner.invoke(cli, ["evaluate", str(inst), str(out)])
    assert r.exit_code == 0 and json.loads(r.stdout)["objective"] == pytest.approx(doc["objective"])
    assert json.loads(r.stdout)["shards"] == doc["shards"]
    doc["shards"] = {j: {s: k + 1 for s, k in z.items()} for j, z in doc["shards"].items()}
    out.write_text(json.dumps(doc))
    r = runner.invoke(cli, ["validate", str(inst), str(out)])
    assert r.exit_code == 2 and "[shards]" in r.output


def test_max_survival_follows_the_seed_prototype_and_the_others_their_own_order():
    inst = generate(racks=2, servers_per_rack=4, gpus_per_server=4, jobs=5, seed=8, ps_fraction=1.0, ps_shards=3)
    sol = placement.solve(inst, "max_survival")
    check_solution(inst, sol)
    for jid, z in sol.shards.items():
        (server,) = z  # all the shards on one server
        assert z[server] == 3
        if len(sol.assignment[jid]) > 1 or server not in sol.assignment[jid]:
            assert server not in sol.assignment[jid]  # the workers on the others
    ff = placement.solve(inst, "first_fit")
    check_solution(inst, ff)
    for z in ff.shards.values():  # first fit: the first server the job may use (no CPU limits here)
        assert z == {inst.servers[0].id: 3}


@pytest.mark.parametrize("target", ["volcano", "podgroup", "kueue"])
def test_exported_shards_are_their_own_role_and_read_back(target, tmp_path):
    import yaml
    from support import k8s_schemas

    from placement.export import export, read_placement_and_shards, write_files

    inst = ps_instance(seed=7, cpu_memory=True)
    sol = placement.solve(inst, "greedy")
    assert sol.shards
    files = export(inst, sol, target)
    for name, text in files.items():
        if name.endswith(".yaml"):
            for d in yaml.safe_load_all(text):
                assert k8s_schemas.validate(d) == [], (name, d["kind"])
    write_files(files, tmp_path)
    workers, shards = read_placement_and_shards(tmp_path)
    assert workers == {j: dict(a) for j, a in sol.assignment.items()}
    assert shards == {j: dict(z) for j, z in sol.shards.items()}
    if target == "volcano":
        ps = next(j for j in sol.shards)
        job = next(yaml.safe_load_all(files[f"{ps}.yaml"]))
        shard_tasks = [t for t in job["spec"]["tasks"] if t["name"].startswith("ps")]
        assert sum(t["replicas"] for t in shard_tasks) == inst.job_by_id[ps].shards
        assert job["spec"]["minAvailable"] == inst.job_by_id[ps].workers + inst.job_by_id[ps].shards
        limits = shard_tasks[0]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert "nvidia.com/gpu" not in limits and limits["cpu"] == "4"


def test_the_simulator_runs_parameter_server_jobs_with_the_snapshot_formula():
    """With no slowdowns, every job runs at its ideal iteration time: the evaluator's T° of
    the placement and shards the simulator started it on (push/pull phase included)."""
    from placement.simulation import simulate
    from placement.simulation.workload import TraceJob, apply_options

    cluster = generate(racks=2, servers_per_rack=2, gpus_per_server=4, jobs=1, seed=3)
    jobs = [TraceJob(f"t{k}", 10.0 * k, w, 500, 80.0 + 10 * k, 300.0) for k, w in enumerate([2, 4, 3, 6, 1, 5])]
    w = apply_options(jobs, ps_fraction=0.5, ps_shards=2, ps_seed=1)
    ps_ids = {j.id for j in w.jobs if j.architecture == "ps"}
    assert ps_ids and len(ps_ids) < len(w.jobs)
    r = simulate(cluster, w, method="greedy", dynamics="none")
    assert r.summary["jobs_finished"] == len(jobs)
    by_id = {j.id: j for j in w.jobs}
    for row in r.jobs:
        tj = by_id[row["job"]]
        x = {s: int(k) for s, k in (p.split(":") for p in row["placement"].split())}
        z = {s: int(k) for s, k in (p.split(":") for p in row["shards"].split())} if row["shards"] else {}
        assert bool(z) == (tj.id in ps_ids)
        job = Job(
            tj.id, tj.workers, tj.compute_ms, tj.gradient_mb, architecture=tj.architecture, ps_shards=tj.ps_shards
        )
        calm = cluster.replace(
            jobs=(job,), servers=tuple(s.__class__(**{**s.__dict__, "slowdown": Slowdown()}) for s in cluster.servers)
        )
        ideal = placement.evaluate(calm, {tj.id: x}, {tj.id: z} if z else None).jobs[tj.id].ideal_iteration_ms
        assert row["run_s"] == pytest.approx(tj.iterations * ideal / 1000.0, rel=1e-9)


def test_a_csv_trace_may_mark_parameter_server_jobs_row_by_row(tmp_path):
    from placement.simulation.workload import TraceError, read_trace

    good = tmp_path / "t.csv"
    good.write_text(
        "id,submit_s,workers,iterations,model,architecture,ps_shards\na,0,2,100,resnet50,ps,3\nb,5,1,100,resnet50,,\n"
    )
    w = read_trace(good)
    assert [(j.architecture, j.ps_shards) for j in w.jobs] == [("ps", 3), ("allreduce", None)]
    bad = tmp_path / "b.csv"
    bad.write_text(
        "id,submit_s,workers,iterations,model,architecture,ps_shards\n"
        "a,0,2,100,resnet50,ps,\nb,5,1,100,resnet50,,2\nc,6,1,100,resnet50,ring,\nd,7,1,100,resnet50,ps,0\n"
    )
    with pytest.raises(TraceError) as e:
        read_trace(bad)
    text = "\n".join(e.value.problems)
    for row, words in (
        (2, "required"),
        (3, "only for parameter-server"),
        (4, "allreduce, ps or hybrid"),
        (5, "integer >= 1"),
    ):
        assert f"row {row}" in text and words in text, text


def test_re_planning_keeps_parameter_server_jobs_valid():
    inst = ps_instance(seed=9, cpu_memory=True)
    first = placement.solve(inst, "greedy")
    assert first.status.has_placement and any(inst.job_by_id[j].is_ps for j in first.assignment)
    again = placement.solve(inst, "local_search", previous=first.assignment, max_moves=0, time_limit_s=5)
    check_solution(inst, again)
    assert again.assignment == first.assignment and again.stats["moved_workers"] == 0
    assert set(again.shards) == {j for j in again.assignment if inst.job_by_id[j].is_ps}


def test_the_slurm_export_refuses_shards_it_cannot_pin():
    from placement.errors import InvalidInputError
    from placement.export import export

    inst = ps_instance(seed=7)
    sol = placement.solve(inst, "greedy")
    with pytest.raises(InvalidInputError, match="does not place shards yet"):
        export(inst, sol, "slurm")


def hand(servers: list[dict], jobs: list[dict], **top: object) -> placement.Instance:
    """An instance from a few servers on one switch (100 Gbit/s) and jobs, through the loader."""
    nodes = [
        {"id": s["id"], "kind": "server", "gpu_type": "A100", "intra_bandwidth_gbps": 100.0, "gpus": 1, **s}
        for s in servers
    ] + [{"id": "tor", "kind": "switch"}]
    edges = [{"source": s["id"], "target": "tor", "bandwidth_gbps": 100.0} for s in servers]
    doc = {"format": "placement-instance/1", "name": "hand", "topology": {"nodes": nodes, "edges": edges}, "jobs": jobs}
    return instance_from_dict({**doc, **top})


def test_review_cases_every_method_stays_valid():
    # a swap whose trial re-placed a shard on the other job's freed server over-committed CPUs
    swap = hand(
        [{"id": "s0", "cpus": 5, "slowdown": {"values": [1, 3], "probs": [0.5, 0.5]}}, {"id": "s1", "cpus": 4}],
        [
            {"id": "p", "workers": 1, "compute_ms": 100, "gradient_mb": 10, "cpus_per_worker": 2}
            | {"architecture": "ps", "ps_shards": 1, "ps_cpus": 3},
            {"id": "q", "workers": 1, "compute_ms": 1, "gradient_mb": 10, "cpus_per_worker": 4},
        ],
    )
    # a server stating no CPUs takes any number of shards (was an OverflowError)
    unlimited = hand(
        [{"id": "s0", "gpus": 2}],
        [
            {
                "id": "p",
                "workers": 1,
                "compute_ms": 100,
                "gradient_mb": 10,
                "architecture": "ps",
                "ps_shards": 1,
                "ps_cpus": 1,
            }
        ],
    )
    # the only server with room for the shard is far down the candidates, a 0-GPU server
    far = hand(
        [{"id": "s0", "cpus": 1}]
        + [
            {
                "id": f"s{i}",
                "gpus": 0 if i == 17 else 1,
                "cpus": 8,
                "slowdown": {"values": [1, 1 + i / 10], "probs": [0.5, 0.5]},
            }
            for i in range(1, 18)
        ],
        [
            {"id": "p", "workers": 1, "compute_ms": 100, "gradient_mb": 10, "cpus_per_worker": 1}
            | {"architecture": "ps", "ps_shards": 1, "ps_cpus": 1, "allowed_servers": ["s0", "s17"]}
        ],
    )
    # more shard placements than brute force takes: auto goes on without it
    many = hand(
        [{"id": f"s{i}", "cpus": 64} for i in range(8)],
        [{"id": "p", "workers": 1, "compute_ms": 100, "gradient_mb": 100, "architecture": "ps", "ps_shards": 12}],
    )
    for inst in (swap, unlimited, far, many):
        for m in ("greedy", "local_search", "auto", "first_fit", "max_survival"):
            sol = placement.solve(inst, m, time_limit_s=5)
            check_solution(inst, sol)
            # the prototype's rule keeps the shards in its group (s17 is not in it; on `swap`
            # its shard server then lacks the CPUs q needs): it may find no placement
            assert sol.status.has_placement or m == "max_survival", (m, sol.stats)
    assert placement.solve(far, "greedy").shards == {"p": {"s17": 1}}


def test_re_planning_keeps_running_shards_where_the_workers_stay():
    inst = hand(
        [{"id": "s0", "slowdown": {"values": [1, 2], "probs": [0.5, 0.5]}}, {"id": "s1"}, {"id": "s2"}],
        [{"id": "p", "workers": 1, "compute_ms": 100, "gradient_mb": 100, "architecture": "ps", "ps_shards": 1}],
    )
    kept = placement.solve(
        inst, "local_search", previous={"p": {"s0": 1}}, previous_shards={"p": {"s1": 1}}, max_moves=0, time_limit_s=2
    )
    check_solution(inst, kept)
    assert kept.assignment == {"p": {"s0": 1}} and kept.shards == {"p": {"s1": 1}}


def test_exact_models_prove_the_bundled_tiny_optimum_with_their_own_shards():
    inst = placement.load_bundled("ps-tiny")
    optimum = inst.metadata["optimum"]
    for name in ("cpsat", "milp_highs", "milp_cbc"):
        spec = placement.get_method(name)
        if not spec.available:
            continue
        sol = placement.solve(inst, spec.name, time_limit_s=60)
        check_solution(inst, sol)
        assert sol.status.value == "optimal", (spec.name, sol.stats)
        assert sol.objective == pytest.approx(optimum, rel=1e-9), spec.name
        assert sol.bound <= optimum * (1 + 1e-6)
        assert "shards_placed_by" not in sol.stats
        assert not any("shard rule" in p for p in sol.stats["path"]), sol.stats["path"]


def test_past_the_mode_budget_the_push_pull_phase_is_floored_and_said_so():
    from placement.formulations.index import index_instance

    inst = placement.load_bundled("ps256")
    ix = index_instance(inst, aggregate=True)
    assert any("priced by their floor" in n for n in ix.notes)
    assert all(j.shards is None for j in ix.jobs)
    assert ix.units  # classes stay aggregated
    small = placement.load_bundled("ps-tiny")
    tiny = index_instance(small, aggregate=True)
    assert not tiny.units
    assert [j.job_id for j in tiny.jobs if j.shards is not None] == [j.id for j in small.jobs if j.is_ps]


def test_milp_highs_stays_honest_when_handed_a_start_on_shard_modes(monkeypatch):
    """HiGHS 1.16, handed a start on a model with shard modes, has reported an incumbent
    objective below the model's optimum: whatever HiGHS does, the outcome claims only what
    holds (here with the start forced on)."""
    import placement.formulations.milp as milp

    if not placement.get_method("milp_highs").available:
        pytest.skip("highspy not installed")
    monkeypatch.setattr(milp, "HIGHS_START_WITH_MODES", True)
    for seed in (3, 7, 12, 14):
        inst = generate(
            racks=1, servers_per_rack=3, gpus_per_server=2, jobs=3, job_mix="small", seed=seed, ps_fraction=0.67
        )
        oracle = placement.solve(inst, "brute_force")
        sol = placement.solve(inst, "milp_highs", time_limit_s=30)
        check_solution(inst, sol)
        assert sol.objective >= oracle.objective * (1 - 1e-9)
        if sol.bound is not None:
            assert sol.bound <= oracle.objective * (1 + 1e-6)
        if sol.status.value == "optimal":
            assert sol.objective == pytest.approx(oracle.objective, rel=1e-6), sol.stats


def _one_rack(name: str, servers: list[tuple[int, float, float]], jobs: list[dict[str, object]]) -> dict[str, object]:
    """An instance document: servers ``s0, s1, ...`` of (GPUs, CPUs, memory GB) on one rack."""
    server = {"kind": "server", "gpu_type": "A", "intra_bandwidth_gbps": 300.0}
    ids = [f"s{i}" for i in range(len(servers))]
    return {
        "format": "placement-instance/1",
        "name": name,
        "admission": "all",
        "topology": {
            "nodes": [
                *({"id": sid, **server, "gpus": g, "cpus": c, "memory_gb": m} for sid, (g, c, m) in zip(ids, servers)),
                {"id": "core", "kind": "switch"},
                {"id": "r0", "kind": "switch"},
            ],
            "edges": [
                {"source": "r0", "target": "core", "bandwidth_gbps": 25.0},
                *({"source": sid, "target": "r0", "bandwidth_gbps": 25.0} for sid in ids),
            ],
        },
        "jobs": jobs,
    }


def test_pop_and_auto_keep_the_shards_their_steps_found():
    """Where the shard rule, applied job by job to the workers alone, takes the only server
    the other job's shard fits on (j0's shard on s0), the greedy's own shards are the way
    out: ``pop`` (and ``auto``) return them instead of leaving them to the rule (found by
    hypothesis: ``pop`` returned an invalid placement)."""
    doc = _one_rack(
        "shards-clash",
        [(1, 1.0, 1.0), (1, 1.0, 0.0), (2, 0.0, 0.0)],
        [
            {
                "id": "j0",
                "workers": 2,
                "compute_ms": 10.0,
                "gradient_mb": 0.0,
                "architecture": "ps",
                "ps_shards": 1,
                "ps_cpus": 1.0,
            },
            {
                "id": "j1",
                "workers": 1,
                "compute_ms": 10.0,
                "gradient_mb": 0.0,
                "architecture": "ps",
                "ps_shards": 1,
                "ps_cpus": 1.0,
                "ps_memory_gb": 1.0,
            },
        ],
    )
    inst = instance_from_dict(doc)
    for method in ("pop", "auto"):
        sol = placement.solve(inst, method, time_limit_s=5)
        check_solution(inst, sol)
        assert sol.status in (placement.Status.OPTIMAL, placement.Status.FEASIBLE), sol.stats.get("message")
        assert sol.shards["j1"] == {"s0": 1} and sol.shards["j0"] == {"s1": 1}


def test_pop_leaves_to_the_repair_a_part_whose_workers_no_longer_fit_next_to_the_shards():
    """The parts place workers only; stitched, a job's workers may not fit next to the
    shards taken before (here j1's worker memory on s2 after j0's shard): that job is
    repaired instead of stitched into an invalid placement (found by hypothesis)."""
    doc = _one_rack(
        "stitch-clash",
        [(2, 0.0, 2.0), (1, 1.0, 2.0), (2, 1.0, 1.0)],
        [
            {
                "id": "j0",
                "workers": 2,
                "compute_ms": 10.0,
                "gradient_mb": 10.0,
                "cpus_per_worker": 1.0,
                "architecture": "ps",
                "ps_shards": 2,
                "ps_memory_gb": 1.0,
            },
            {
                "id": "j1",
                "workers": 2,
                "compute_ms": 10.0,
                "gradient_mb": 10.0,
                "memory_gb_per_worker": 1.0,
                "architecture": "ps",
                "ps_shards": 1,
                "ps_memory_gb": 1.0,
                "allowed_servers": ["s0", "s2"],
            },
            {"id": "j2", "workers": 1, "compute_ms": 10.0, "gradient_mb": 0.0},
        ],
    )
    inst = instance_from_dict(doc)
    sol = placement.solve(inst, "pop", time_limit_s=5)
    check_solution(inst, sol)
    assert sol.status in (placement.Status.OPTIMAL, placement.Status.FEASIBLE), sol.stats.get("message")


def test_the_push_pull_floor_counts_the_workers_a_shard_server_cannot_hold():
    """``ps_floor_ms`` by hand on ``ps256``'s job j5: 8 workers, 2 shards, G = 1,346.2 MB, 8-GPU
    servers, 2,400 Gbps inside a server and 100 Gbps links.  Shards and workers on one server:
    16 G W / 2,400 = 71.8 ms (what the consolidated placement costs); the shards on two servers:
    one of them has at most 4 workers local, 16 (G/2) (4/100 + 4/2,400) = 448.7 ms.  The floor is
    the lesser, where it was 16 (G/2) 8 / 2,400 = 35.9 ms (every worker local to both shards at
    once); with it ``auto``'s proven gap on ``ps256`` at 30 s went from 1.58% to 0.005%."""
    from placement.evaluation.bounds import ps_floor_of
    from placement.problem.rules import ps_floor_ms

    inst = placement.load_bundled("ps256")
    job = inst.jobs[inst.job_pos["j5"]]
    assert (job.workers, job.shards, job.gradient_mb) == (8, 2, 1346.2)
    G = job.gradient_mb
    assert ps_floor_ms(job, 2400.0, 100.0, 8, 32) == pytest.approx(16 * G * 8 / 2400)
    assert ps_floor_of(inst, inst.job_pos["j5"]) == pytest.approx(16 * G * 8 / 2400)
    # at most 4 workers on a server: on one shard server 4 are remote; on two, as many
    assert ps_floor_ms(job, 2400.0, 100.0, 4, 32) == pytest.approx(16 * G / 2 * (4 / 100 + 4 / 2400))
    assert ps_floor_ms(job, 2400.0, 0.0, 8, 32) == pytest.approx(16 * G * 8 / 2400)  # no link: one server
    assert ps_floor_ms(job, 2400.0, 0.0, 4, 32) == math.inf  # no link, and no server holds them all
    assert ps_floor_ms(job, 2400.0, 100.0, 8, 1) == pytest.approx(16 * G * 8 / 2400)  # one shard server
