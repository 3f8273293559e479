"""Hybrid-parallel jobs (tensor x pipeline x data parallel): the evaluator against an
enumeration of joint outcomes written from DESIGN.md alone and against Monte Carlo, the
all-reduce special case, the validator's stage rules, the formats, the generator, and every
method's validity and its distance to the brute-force oracle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import joint_outcomes, widest

import placement
from placement.errors import InstanceError, SolutionFormatError
from placement.formats import instance_from_dict, instance_to_dict, solution_from_dict, solution_to_dict
from placement.instances.generate import from_source, generate
from placement.model import Job, Slowdown
from placement.testing import check_solution, instances


def enumerate_hybrid(inst: placement.Instance, jid: str, stages) -> tuple[float, float, float]:
    """E[T], T° and P(T > T°) of a hybrid job mapped as ``stages``, by enumerating the joint
    outcomes of its servers: ``(m + pp - 1) max over groups (a S + p_g) + max over stages D_s``."""
    job = inst.job_by_id[jid]
    pp, dp = len(stages), len(stages[0])
    servers = sorted({s for row in stages for s in row})
    a = {s: job.compute_ms / job.speed(inst.server_by_id[s].gpu_type) for s in servers}

    def p2p(s: int, r: int) -> float:
        if s == pp - 1 or job.activation_mb == 0:
            return 0.0
        return 2 * 8 * job.activation_mb / widest(inst, [stages[s][r], stages[s + 1][r]])

    def sync(s: int) -> float:
        if dp == 1 or job.gradient_mb == 0:
            return 0.0
        return 2 * (dp - 1) / dp * 8 * (job.gradient_mb / pp) / widest(inst, sorted(set(stages[s])))

    cells = [(s, r) for s in range(pp) for r in range(dp)]
    slots = job.microbatches + pp - 1
    d = max(sync(s) for s in range(pp))

    def t(S):
        return slots * max(a[stages[s][r]] * S[stages[s][r]] + p2p(s, r) for s, r in cells) + d

    ideal = t(dict.fromkeys(servers, 1.0))
    outcomes = joint_outcomes(inst, jid, servers)
    e = p_str = 0.0
    for p, S in outcomes:
        tk = t(S)
        e += p * tk
        p_str += p * (tk > ideal * (1 + 1e-9))
    return e, ideal, p_str


@st.composite
def hybrid_placements(draw, inst: placement.Instance):
    """A valid-looking placement of the hybrid jobs of ``inst`` on their planted servers, with
    a random stage matrix (any arrangement of the planted groups)."""
    witness = inst.metadata["witness"]
    x, stages = {}, {}
    for j in inst.jobs:
        if j.is_hybrid and j.id in witness:
            x[j.id] = dict(witness[j.id])
            cells = [s for row in inst.metadata["witness_stages"][j.id] for s in row]
            cells = draw(st.permutations(cells))
            dp = int(j.dp)
            stages[j.id] = tuple(tuple(cells[s * dp : (s + 1) * dp]) for s in range(int(j.pp)))
    return x, stages


@given(st.data())
def test_evaluator_matches_the_enumeration_of_joint_outcomes(data):
    inst = data.draw(instances(max_servers=4, max_jobs=3, max_gpus=4, hybrid=True, parameter_servers=False))
    x, stages = data.draw(hybrid_placements(inst))
    ev = placement.evaluate(inst, x, stages=stages)
    for jid, m in stages.items():
        e, ideal, strag = enumerate_hybrid(inst, jid, m)
        r = ev.jobs[jid]
        assert r.expected_iteration_ms == pytest.approx(e, rel=1e-9, abs=1e-9)
        assert r.ideal_iteration_ms == pytest.approx(ideal, rel=1e-9, abs=1e-9)
        assert r.straggler_probability == pytest.approx(strag, abs=1e-9)
        compute, p2p, sync = ev.hybrid_parts[jid]
        assert compute + p2p + sync == pytest.approx(r.ideal_iteration_ms, rel=1e-12)
        assert min(compute, p2p, sync) >= 0


@given(st.data())
def test_with_one_group_per_worker_and_no_pipeline_the_model_is_the_all_reduce_model(data):
    # the plain ring: fitted terms (comm_terms) are the all-reduce jobs', a hybrid job's sync keeps its ring
    inst = data.draw(instances(max_servers=4, max_jobs=3, max_gpus=4, parameter_servers=False, comm_terms=False))
    witness = inst.metadata["witness"]
    jid = next(iter(witness))
    job = inst.job_by_id[jid]
    x = {jid: dict(witness[jid])}
    hybrid = Job(**{**job.__dict__, "architecture": "hybrid", "tp": 1, "pp": 1, "dp": job.workers})
    other = inst.replace(jobs=tuple(hybrid if j.id == jid else j for j in inst.jobs))
    a, b = placement.evaluate(inst, x).jobs[jid], placement.evaluate(other, x).jobs[jid]
    assert b.expected_iteration_ms == pytest.approx(a.expected_iteration_ms, rel=1e-12)
    assert b.ideal_iteration_ms == pytest.approx(a.ideal_iteration_ms, rel=1e-12)
    assert b.straggler_probability == pytest.approx(a.straggler_probability, abs=1e-12)


def llm_instance(**kw: object) -> placement.Instance:
    base = {
        "racks": 2,
        "servers_per_rack": 4,
        "gpus_per_server": 8,
        "jobs": 6,
        "job_mix": "llm",
        "load": 0.8,
        "hybrid_fraction": 0.7,
        "hot_fraction": 0.3,
    }
    return generate(**{**base, **kw})


@pytest.mark.parametrize("regime", ["hot", "correlated", "heavy-tail"])
def test_monte_carlo_runs_the_literal_per_group_formula_and_agrees(regime):
    inst = llm_instance(regime=regime, seed=2)
    assert any(j.is_hybrid and j.pp > 1 and j.dp > 1 for j in inst.jobs)
    sol = placement.solve(inst, "greedy")
    assert set(sol.stages) == {j for j in sol.assignment if inst.job_by_id[j].is_hybrid}
    mc = placement.monte_carlo(inst, sol.assignment, samples=100_000, seed=3, stages=sol.stages)
    for jid, r in sol.jobs.items():
        mean, ci = mc.jobs[jid]
        assert abs(mean - r.expected_iteration_ms) <= 4 * ci + 1e-9, (jid, mean, r.expected_iteration_ms, ci)


def test_validator_checks_every_stage_rule():
    inst = placement.load_bundled("hybrid-tiny")
    sol = placement.solve(inst, "brute_force")
    (hid,) = sol.stages
    other = next(j.id for j in inst.jobs if not inst.job_by_id[j.id].is_hybrid)
    x, m = sol.assignment, sol.stages[hid]

    def kinds(stages):
        return {v.kind for v in placement.validate(inst, x, stages=stages)}

    assert kinds(sol.stages) == set()
    assert kinds({}) == {"stages"}  # missing
    assert kinds({hid: m[:-1]}) == {"stages"}  # a stage short
    assert kinds({hid: tuple(row[:-1] for row in m)}) == {"stages"}  # a replica short
    outside = next(s.id for s in inst.servers if s.id not in x[hid])
    assert kinds({hid: ((outside,) + m[0][1:],) + m[1:]}) == {"stages"}  # not one of its servers
    used = sorted(x[hid])
    if len(used) > 1:  # two groups moved onto one server: the counts disagree
        moved = tuple(tuple(used[0] for _ in row) for row in m)
        assert kinds({hid: moved}) == {"stages"}
    assert "stages" in kinds({**sol.stages, other: m})  # not a hybrid job
    assert "unknown_job" in kinds({**sol.stages, "nobody": m})
    # whole groups: a server with one worker of a tp = 2 job breaks the matrix's count
    odd = {**x, hid: {**x[hid]}}
    s0 = next(iter(odd[hid]))
    odd[hid][s0] -= 1
    odd[hid][outside] = 1
    assert "stages" in {v.kind for v in placement.validate(inst, odd, stages=sol.stages)}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"tp": 2}, 'jobs[1].tp is only for hybrid-parallel jobs (architecture "hybrid")'),
        ({"microbatches": 4}, "jobs[1].microbatches is only for hybrid-parallel jobs"),
        ({"architecture": "hybrid"}, 'jobs[1].tp is required with architecture "hybrid"'),
        ({"architecture": "hybrid", "tp": 1, "pp": 1, "dp": 1}, "jobs[1].workers must equal tp * pp * dp"),
        ({"architecture": "hybrid", "tp": 2, "pp": 1, "dp": 1.5}, "jobs[1].dp"),
        ({"architecture": "hybrid", "tp": 0, "pp": 1, "dp": 2}, "jobs[1].tp"),
        ({"architecture": "hybrid", "tp": 2, "pp": 1, "dp": 1, "microbatches": 0}, "jobs[1].microbatches"),
        ({"architecture": "hybrid", "tp": 2, "pp": 1, "dp": 1, "activation_mb": -1}, "jobs[1].activation_mb"),
        ({"architecture": "hybrid", "tp": 2, "pp": 1, "dp": 1, "activation_mb": "big"}, "jobs[1].activation_mb"),
    ],
)
def test_bad_hybrid_fields_are_refused_with_their_path(change, words):
    doc = instance_to_dict(placement.load_bundled("tiny"))
    assert doc["jobs"][1]["workers"] == 2
    doc["jobs"][1].update(change)
    with pytest.raises(InstanceError) as e:
        instance_from_dict(doc)
    assert any(words in p for p in e.value.problems), e.value.problems


def test_a_tensor_group_larger_than_every_allowed_server_is_refused():
    doc = instance_to_dict(placement.load_bundled("tiny"))  # servers of 4 GPUs
    doc["jobs"][1].update(architecture="hybrid", workers=8, tp=8, pp=1, dp=1)
    with pytest.raises(InstanceError) as e:
        instance_from_dict(doc)
    assert any(
        "jobs[1].tp is 8, more than the GPUs of every server the job may use (at most 4)" in p for p in e.value.problems
    )
    doc["jobs"][1].update(tp=4, pp=1, dp=2, allowed_servers=["s0"])
    instance_from_dict(doc)  # a server of 4 GPUs holds a group of 4


def test_instances_and_solutions_keep_their_stages(tmp_path):
    inst = llm_instance(seed=3)
    assert instance_from_dict(instance_to_dict(inst)) == inst
    assert from_source(inst.source) == inst  # the generator command reproduces it
    sol = placement.solve(inst, "local_search", time_limit_s=3)
    back = solution_from_dict(solution_to_dict(sol), inst)
    assert back.stages == sol.stages and back.assignment == sol.assignment
    doc = solution_to_dict(sol)
    hid = next(iter(doc["stages"]))
    doc["stages"][hid][0][0] = "nowhere"
    with pytest.raises(SolutionFormatError) as e:
        solution_from_dict(doc, inst)
    assert any(f"stages.{hid}[0][0] names unknown server 'nowhere'" in p for p in e.value.problems)
    # the generator leaves the rest of the instance as without hybrid jobs
    plain = llm_instance(seed=3, hybrid_fraction=0.0)
    assert [j.workers for j in plain.jobs] == [j.workers for j in inst.jobs]
    assert plain.servers == inst.servers


def test_generated_shapes_are_realistic():
    inst = placement.load_bundled("llm512")
    hybrid = [j for j in inst.jobs if j.is_hybrid]
    assert hybrid and len(hybrid) < len(inst.jobs)  # a mix
    assert sum(s.gpus for s in inst.servers) == 512
    for j in hybrid:
        assert j.tp in (1, 2, 4, 8) and j.tp * j.pp * j.dp == j.workers
        assert 4 <= j.microbatches <= 32 and j.microbatches >= j.pp
        assert j.activation_mb > 0 and j.gradient_mb > 0


@settings(deadline=None, max_examples=15)
@given(inst=instances(max_servers=4, max_jobs=3, max_gpus=4, hybrid=True))
def test_every_method_is_valid_on_random_hybrid_instances(inst):
    for spec in placement.REGISTRY:
        if not spec.available or spec.name in ("brute_force",):
            continue
        try:
            sol = placement.solve(inst, spec.name, time_limit_s=2)
        except placement.MethodUnavailableError:  # e.g. saa on a scenario table
            continue
        check_solution(inst, sol)


def test_local_search_never_spreads_a_job_with_nothing_to_send_over_an_unlinked_server():
    # found by hypothesis: s0 has no link; a pure data-parallel job with 0 MB gradients cost
    # the same anywhere, and local search moved a group onto s0 (the validator refused it)
    from placement.model import Instance, Link, Server, Switch

    servers = tuple(Server(f"s{i}", 1, "A", 300.0) for i in range(3)) + (
        Server("s3", 1, "A", 300.0, slowdown=Slowdown((1.0, 1.1), (0.5, 0.5))),
    )
    links = (Link("r0", "core", 25.0),) + tuple(Link(f"s{i}", "r0", 25.0) for i in (1, 2, 3))
    # and the same with a ring all-reduce job (found by hypothesis too): its ring costs nothing
    # with nothing to send, so only reachability may keep it off s0
    for job in (
        Job("j0", 3, 10.0, 0.0, architecture="hybrid", tp=1, pp=1, dp=3),
        Job("j0", 3, 10.0, 0.0, iterations=1),
    ):
        inst = Instance("unlinked", servers, (job,), (Switch("core"), Switch("r0")), links, admission="all")
        for method in ("local_search", "greedy", "auto"):
            sol = placement.solve(inst, method, time_limit_s=2)
            check_solution(inst, sol)
            assert "s0" not in sol.assignment["j0"], (job.architecture, method)


@given(inst=instances(max_servers=3, max_jobs=2, max_gpus=4, hybrid=True, admission="all"))
@settings(deadline=None, max_examples=25)
def test_no_method_beats_the_oracle_and_auto_reaches_it(inst):
    try:
        oracle = placement.solve(inst, "brute_force", time_limit_s=30)
    except placement.MethodUnavailableError:
        return
    if oracle.status.value != "optimal":
        return
    for name in ("auto", "greedy", "local_search", "cpsat", "milp_highs", "consolidate"):
        spec = placement.get_method(name)
        if not spec.available:
            continue
        sol = placement.solve(inst, name, time_limit_s=5)
        check_solution(inst, sol)
        if sol.status.has_placement:
            assert sol.objective >= oracle.objective * (1 - 1e-9) - 1e-9, (name, sol.objective, oracle.objective)
            if sol.bound is not None:
                assert sol.bound <= oracle.objective * (1 + 1e-9) + 1e-9, (name, sol.bound, oracle.objective)
        if name == "auto":  # within its enumeration size, auto is brute force: proven optimal
            from placement.methods.auto import AUTO_BRUTE_FORCE_SIZE
            from placement.methods.bruteforce import estimate_size

            if estimate_size(inst) <= AUTO_BRUTE_FORCE_SIZE:
                assert sol.status.value == "optimal", sol.stats
            if sol.status.value == "optimal":
                assert sol.objective == pytest.approx(oracle.objective, rel=1e-9)


def test_auto_proves_the_bundled_hybrid_tiny_optimum():
    inst = placement.load_bundled("hybrid-tiny")
    sol = placement.solve(inst, "auto", time_limit_s=10)
    assert sol.status.value == "optimal"
    assert sol.objective == pytest.approx(inst.metadata["optimum"], rel=1e-12)
    assert sol.stages  # its groups' mapping


def test_the_mapping_is_chosen_not_fixed():
    """On two servers of 4 GPUs, a tp 2 x pp 2 x dp 2 job: a replica's stages together keep the
    activations inside a server, a stage's replicas together keep the all-reduce inside one.
    Heavy activations favour the first, heavy gradients the second; the methods find each."""
    doc = instance_to_dict(placement.load_bundled("tiny"))
    doc["jobs"] = [
        {
            "id": "llm",
            "workers": 8,
            "compute_ms": 10.0,
            "gradient_mb": 0.0,
            "architecture": "hybrid",
            "tp": 2,
            "pp": 2,
            "dp": 2,
            "microbatches": 8,
            "activation_mb": 0.0,
        }
    ]
    for n in doc["topology"]["nodes"]:
        n.pop("slowdown", None)
    for grad, act, together in ((0.0, 200.0, "replica"), (20000.0, 1.0, "stage")):
        doc["jobs"][0].update(gradient_mb=grad, activation_mb=act)
        inst = instance_from_dict(doc)
        for method in ("brute_force", "greedy", "auto"):
            sol = placement.solve(inst, method, time_limit_s=5)
            m = sol.stages["llm"]
            replica_on_one = all(m[0][r] == m[1][r] for r in range(2))
            stage_on_one = all(len(set(row)) == 1 for row in m)
            assert replica_on_one if together == "replica" else stage_on_one, (method, grad, act, m)
        # Megatron's default order placed by consolidation: a stage's replicas together
        cons = placement.solve(inst, "consolidate").stages["llm"]
        assert all(len(set(row)) == 1 for row in cons), cons


def _write_and_read(inst, sol, target, options=None):
    import tempfile

    from placement.export import ExportOptions, export, read_export, stages_read_back, write_files

    files = export(inst, sol, target, options or ExportOptions())
    with tempfile.TemporaryDirectory() as d:
        write_files(files, d)
        back = read_export(d)
    return files, back, stages_read_back(inst, back)


@settings(deadline=None, max_examples=30)
@given(st.data())
def test_any_valid_stage_matrix_survives_export_and_read_back(data):
    inst = data.draw(instances(max_servers=4, max_jobs=3, max_gpus=4, hybrid=True, parameter_servers=False))
    x, stages = data.draw(hybrid_placements(inst))
    if not stages:
        return
    sol = placement.solving.placed(inst, x, "witness", stages=stages)
    if not sol.status.has_placement:
        return
    for target in ("volcano", "podgroup", "kueue", "slurm"):
        for pod_per in ("worker", "server") if target in ("volcano", "podgroup") else ("worker",):
            from placement.export import ExportOptions

            _, back, got = _write_and_read(inst, sol, target, ExportOptions(pod_per=pod_per))
            assert back.assignment == {j: dict(a) for j, a in sol.assignment.items()}, (target, pod_per)
            assert got == dict(sol.stages), (target, pod_per)


@pytest.mark.parametrize("pod_per", ["worker", "server"])
def test_megatron_ranks_land_on_their_groups_and_the_schemas_accept_them(pod_per, tmp_path):
    import yaml
    from support import k8s_schemas

    from placement.export import ExportOptions, export

    inst = placement.load_bundled("llm512")
    sol = placement.solve(inst, "greedy")
    job = max((j for j in inst.jobs if j.is_hybrid), key=lambda j: j.workers)
    m = sol.stages[job.id]
    files = export(inst, sol, "podgroup", ExportOptions(pod_per=pod_per))
    pods = [d for d in yaml.safe_load_all(files[f"{job.id}.yaml"]) if d and d["kind"] == "Pod"]
    for d in pods:
        assert k8s_schemas.validate(d) == []
        env = {e["name"]: e["value"] for e in d["spec"]["containers"][0]["env"]}
        node = d["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]["matchFields"][0]["values"][0]
        first = int(env["RANK"]) if "RANK" in env else int(env["RANK_OFFSET"])
        if pod_per == "server":  # one pod per tensor-parallel group: torchrun's node rank is the group
            assert int(env["NPROC_PER_NODE"]) == job.tp and int(env["NNODES"]) == job.pp * job.dp
            assert first == int(env["NODE_RANK"]) * job.tp
        g = first // job.tp  # rank t + tp (r + dp s)
        s, r = divmod(g, job.dp)
        assert node == m[s][r], (first, node, m[s][r])
    hosts = export(inst, sol, "slurm")[f"{job.id}.hosts"].split()
    for rank, node in enumerate(hosts):
        s, r = divmod(rank // job.tp, job.dp)
        assert node == m[s][r]


def test_import_placement_reads_the_matrix_back_and_refuses_a_split_group(tmp_path):
    import json

    from click.testing import CliRunner

    from placement.cli.main import cli

    runner = CliRunner()
    sol = tmp_path / "sol.json"
    r = runner.invoke(cli, ["solve", "hybrid-tiny", "-m", "auto", "-q", "-o", str(sol)])
    assert r.exit_code == 0, r.output
    for target in ("volcano", "podgroup", "kueue", "slurm"):
        folder = tmp_path / target
        r = runner.invoke(cli, ["export", str(sol), "--instance", "hybrid-tiny", "--to", target, "-o", str(folder)])
        assert r.exit_code == 0, r.output
        back = tmp_path / f"back-{target}.json"
        r = runner.invoke(cli, ["import-placement", str(folder), "--instance", "hybrid-tiny", "-o", str(back)])
        assert r.exit_code == 0, r.output
        got, want = json.loads(back.read_text()), json.loads(sol.read_text())
        assert got["stages"] == want["stages"] and got["objective"] == pytest.approx(want["objective"])
    # a hostfile whose tensor group straddles two nodes is not a hybrid placement
    (hid,) = json.loads(sol.read_text())["stages"]
    hosts = tmp_path / "slurm" / f"{hid}.hosts"
    lines = hosts.read_text().split()
    other = next(n for n in lines if n != lines[0])
    lines[1] = other
    hosts.write_text("\n".join(lines) + "\n")
    r = runner.invoke(cli, ["import-placement", str(tmp_path / "slurm"), "--instance", "hybrid-tiny"])
    assert r.exit_code == 2 and "split over" in r.output and "Traceback" not in r.output


def test_explanations_split_a_hybrid_jobs_ideal_time_and_its_tail():
    inst = placement.load_bundled("hybrid-tiny")
    sol = placement.solve(inst, "auto", time_limit_s=10)
    (hid,) = sol.stages
    e = placement.explain(inst, sol)[hid]
    parts = e["communication"]
    assert set(parts) == {"pipeline_p2p", "data_parallel_sync"}
    assert e["compute_ms"] + parts["pipeline_p2p"] + parts["data_parallel_sync"] == pytest.approx(
        e["ideal_iteration_ms"], rel=1e-12
    )
    assert e["communication_ms"] == pytest.approx(sum(parts.values()), rel=1e-12)
    # a tail share is E[T] minus E[T] with that server held at its lowest value (the mapping kept)
    job = inst.job_by_id[hid]
    alone = inst.replace(jobs=(job,), admission="best_effort")
    base = placement.evaluate(alone, {hid: sol.assignment[hid]}, stages={hid: sol.stages[hid]}).jobs[hid]
    for sid, row in e["servers"].items():
        s = alone.server_by_id[sid]
        held = alone.replace(
            servers=tuple(
                x
                if x.id != sid
                else x.__class__(**{**x.__dict__, "slowdown": Slowdown((min(s.slowdown.values),), (1.0,))})
                for x in alone.servers
            )
        )
        e_held = placement.evaluate(held, {hid: sol.assignment[hid]}, stages={hid: sol.stages[hid]}).jobs[hid]
        assert row["tail_share_ms"] == pytest.approx(
            base.expected_iteration_ms - e_held.expected_iteration_ms, abs=1e-9
        )
        assert row["workers"] % job.tp == 0
    # an optimal placement: no group move or swap the evaluator finds lowers the objective
    for alt in e["alternatives"].values():
        assert alt is None or alt["delta_objective"] >= -1e-9


@pytest.mark.parametrize("dynamics", ["none", "static"])
def test_the_simulator_runs_hybrid_jobs_with_the_snapshot_formula(dynamics):
    """Each hybrid job runs at the snapshot model's iteration time on the stage matrix it was
    started on: with no slowdowns its ideal time; with static draws, the per-group formula at
    the drawn slowdowns (the evaluator of an instance whose servers hold those values)."""
    from placement.simulation import simulate
    from placement.simulation.dynamics import hidden_truth
    from placement.simulation.workload import TraceJob, apply_options

    cluster = generate(racks=2, servers_per_rack=2, gpus_per_server=4, jobs=1, seed=3, hot_fraction=0.5)
    jobs = [TraceJob(f"t{k}", 10.0 * k, w, 500, 80.0 + 10 * k, 300.0) for k, w in enumerate([8, 4, 2, 8, 1, 4])]
    w = apply_options(jobs, hybrid_fraction=1.0, hybrid_seed=2, most_gpus=4)
    hybrid = {j.id for j in w.jobs if j.architecture == "hybrid"}
    assert hybrid and any(j.pp * j.dp > 1 for j in w.jobs if j.architecture == "hybrid")
    r = simulate(cluster, w, method="greedy", dynamics=dynamics, seed=4)
    assert r.summary["jobs_finished"] == len(jobs)
    S = {s.id: 1.0 for s in cluster.servers}
    if dynamics == "static":
        drawn = hidden_truth(cluster, "static", seed=4).start()  # drawn once, kept
        S = {s.id: float(v) for s, v in zip(cluster.servers, drawn)}
        assert len(set(S.values())) > 1
    fixed = cluster.replace(
        servers=tuple(s.__class__(**{**s.__dict__, "slowdown": Slowdown((S[s.id],), (1.0,))}) for s in cluster.servers)
    )
    by_id = {j.id: j for j in w.jobs}
    for row in r.jobs:
        tj = by_id[row["job"]]
        x = {s: int(k) for s, k in (p.split(":") for p in row["placement"].split())}
        stages = tuple(tuple(row_.split(",")) for row_ in row["stages"].split("|")) if row["stages"] else None
        assert bool(stages) == (tj.id in hybrid)
        fields = {k: getattr(tj, k) for k in ("tp", "pp", "dp", "microbatches", "activation_mb")}
        job = Job(tj.id, tj.workers, tj.compute_ms, tj.gradient_mb, architecture=tj.architecture, **fields)
        one = fixed.replace(jobs=(job,))
        t = placement.evaluate(one, {tj.id: x}, stages={tj.id: stages} if stages else None).jobs[tj.id]
        assert row["run_s"] == pytest.approx(tj.iterations * t.expected_iteration_ms / 1000.0, rel=1e-9)
    if dynamics == "static":  # the draws reached the hybrid jobs, not only the others
        assert any(row["slowdown"] > 1 + 1e-9 for row in r.jobs if row["job"] in hybrid)


def test_a_csv_trace_may_give_hybrid_shapes_row_by_row(tmp_path):
    from placement.simulation.workload import TraceError, read_trace

    p = tmp_path / "t.csv"
    p.write_text(
        "id,submit_s,workers,iterations,compute_ms,gradient_mb,architecture,tp,pp,dp,microbatches,activation_mb\n"
        "a,0,8,100,5,2000,hybrid,2,2,2,8,16\n"
        "b,1,4,100,50,300,,,,,,\n"
    )
    w = read_trace(p)
    a, b = w.jobs
    assert (a.architecture, a.tp, a.pp, a.dp, a.microbatches, a.activation_mb) == ("hybrid", 2, 2, 2, 8, 16.0)
    assert b.architecture == "allreduce" and b.tp is None
    p.write_text(
        "id,submit_s,workers,iterations,compute_ms,gradient_mb,architecture,tp,pp,dp,microbatches,activation_mb\n"
        "a,0,8,100,5,2000,hybrid,2,2,3,8,16\n"
        "b,1,4,100,50,300,,2,,,,\n"
        "c,2,4,100,50,300,hybrid,,2,2,,\n"
    )
    with pytest.raises(TraceError) as e:
        read_trace(p)
    text = "\n".join(e.value.problems)
    assert "row 2, workers: must equal tp * pp * dp = 12, got 8" in text
    assert "row 3, tp: is only for hybrid-parallel jobs" in text
    assert "row 4, tp: is required for a hybrid-parallel job" in text
