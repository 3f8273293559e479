"""`placement export` / `import-placement`: what the manifests pin is the placement, every
object would be accepted by the real schemas, ranks ring through servers then racks."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from support import k8s_schemas  # tests/k8s_schemas.py: the CRD and client-model checks
from support.paths import DATA as TEST_DATA
from support.paths import ROOT as REPO_ROOT

import placement
from placement.cli.main import cli
from placement.errors import InvalidInputError
from placement.export import ExportOptions, export, read_placement, write_files
from placement.instances.generate import generate
from placement.integrations.names import dns_label
from placement.integrations.ranks import rank_order
from placement.integrations.tiers import tiers_of
from placement.problem import cluster_of
from placement.solving import placed
from placement.testing import assignments, instances

K8S_TARGETS = ("volcano", "podgroup", "kueue")


@pytest.fixture(scope="module")
def fleet() -> placement.Instance:
    """Two pods of two racks of three 4-GPU servers, CPU and memory per worker."""
    return generate(
        topology="multi-pod", pods=2, racks=2, servers_per_rack=3, gpus_per_server=4, jobs=8, seed=5, cpu_memory=True
    )


@pytest.fixture(scope="module")
def solved(fleet: placement.Instance) -> placement.Solution:
    sol = placement.solve(fleet, "greedy", seed=0)
    assert sol.status.has_placement and any(len(a) > 1 for a in sol.assignment.values())
    return sol


def objects(files: dict[str, str]) -> list[dict]:
    return [d for name, text in files.items() if name.endswith(".yaml") for d in yaml.safe_load_all(text) if d]


def as_plain(sol: placement.Solution) -> dict[str, dict[str, int]]:
    return {j: dict(a) for j, a in sol.assignment.items()}


@pytest.mark.parametrize("target", K8S_TARGETS)
def test_every_exported_object_is_accepted_by_the_real_schemas(fleet, solved, target):
    docs = objects(export(fleet, solved, target))
    kinds = {(d["apiVersion"], d["kind"]) for d in docs}
    assert kinds, target
    for d in docs:
        custom = "." in d["apiVersion"].split("/")[0] and d["apiVersion"] != "batch/v1"
        problems = k8s_schemas.validate_custom(d) if custom else k8s_schemas.validate_builtin(d)
        assert problems == [], (target, d["kind"], d["metadata"]["name"], problems)


@pytest.mark.parametrize("target", K8S_TARGETS)
def test_manifests_read_back_to_the_same_placement(fleet, solved, target, tmp_path):
    write_files(export(fleet, solved, target), tmp_path)
    assert read_placement(tmp_path) == as_plain(solved)


def test_volcano_job_pins_each_task_and_asks_for_the_lowest_tier(fleet, solved):
    files = export(fleet, solved, "volcano")
    tiers = tiers_of(fleet)
    for jid, alloc in solved.assignment.items():
        (doc,) = list(yaml.safe_load_all(files[f"{jid}.yaml"]))
        spec = doc["spec"]
        assert spec["minAvailable"] == fleet.job_by_id[jid].workers
        assert spec["schedulerName"] == "volcano"
        pinned = {}
        offsets = []
        for task in spec["tasks"]:
            pod = task["template"]["spec"]
            term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            (node,) = term["nodeSelectorTerms"][0]["matchFields"][0]["values"]
            pinned[node] = task["replicas"]
            env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
            offsets.append(int(env["RANK_OFFSET"]))
            assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
        assert pinned == dict(alloc)
        assert offsets == sorted(offsets) and offsets[0] == 0
        want = tiers.job_tier(alloc)
        assert spec["networkTopology"] == {"mode": "hard", "highestTierAllowed": want}
        if len(alloc) > 1:
            d = cluster_of(fleet).domain_of(alloc)
            assert want == tiers.tier[d.index] >= 1


def test_hypernodes_form_the_domain_tree(fleet, solved):
    docs = list(yaml.safe_load_all(export(fleet, solved, "volcano")["hypernodes.yaml"]))
    by_name = {d["metadata"]["name"]: d for d in docs}
    assert len(by_name) == len(docs)
    nodes = []
    for d in docs:
        for m in d["spec"]["members"]:
            name = m["selector"]["exactMatch"]["name"]
            if m["type"] == "Node":
                assert d["spec"]["tier"] == 1
                nodes.append(name)
            else:
                assert by_name[name]["spec"]["tier"] < d["spec"]["tier"]
        assert len({m["type"] for m in d["spec"]["members"]}) == 1
    assert sorted(nodes) == sorted(s.id for s in fleet.servers)
    tops = [d for d in docs if d["spec"]["tier"] == max(x["spec"]["tier"] for x in docs)]
    assert len(tops) == 1 and tops[0]["spec"]["tier"] == 3  # servers < racks < pods < cluster


def test_podgroup_ranks_ring_through_servers_then_racks(fleet, solved):
    files = export(fleet, solved, "podgroup")
    rack = {s.id: next(ln.target for ln in fleet.links if ln.source == s.id) for s in fleet.servers}
    for jid in solved.assignment:
        docs = list(yaml.safe_load_all(files[f"{jid}.yaml"]))
        group = docs[0]
        assert group["kind"] == "PodGroup" and group["spec"]["minMember"] == fleet.job_by_id[jid].workers
        pods = [d for d in docs if d["kind"] == "Pod"]
        ranks = {}
        for p in pods:
            assert p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == group["metadata"]["name"]
            env = {e["name"]: e["value"] for e in p["spec"]["containers"][0]["env"]}
            term = p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ranks[int(env["RANK"])] = term["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
            assert env["WORLD_SIZE"] == str(len(pods)) and env["MASTER_ADDR"].startswith(f"{jid}-0.")
        ring = [ranks[r] for r in range(len(pods))]
        assert sorted(ranks) == list(range(fleet.job_by_id[jid].workers))
        for groups in (ring, [rack[s] for s in ring]):  # each server, then each rack, is one run
            runs = [g for k, g in enumerate(groups) if k == 0 or groups[k - 1] != g]
            assert len(runs) == len(set(runs)), (jid, ring)


def test_kueue_topology_levels_and_required_tier(fleet, solved, tmp_path):
    files = export(fleet, solved, "kueue")
    topo, flavor = list(yaml.safe_load_all(files["topology.yaml"]))
    levels = [lv["nodeLabel"] for lv in topo["spec"]["levels"]]
    # the CEL rules of the CRD, which a JSON Schema validator does not run
    assert levels[-1] == "kubernetes.io/hostname" and len(set(levels)) == len(levels) <= 16
    assert flavor["spec"]["topologyName"] == topo["metadata"]["name"] and len(flavor["spec"]["nodeLabels"]) >= 1
    assert levels[:-1] == ["placement.io/tier-3", "placement.io/tier-2", "placement.io/tier-1"]
    # label-nodes.sh gives every node every level, and the levels nest
    labels: dict[str, dict[str, str]] = {}
    for line in files["label-nodes.sh"].splitlines():
        if line.startswith("kubectl label node"):
            words = line.split()
            labels[words[4]] = dict(w.split("=", 1) for w in words[5:])
    assert sorted(labels) == sorted(s.id for s in fleet.servers)
    for a in labels.values():
        for b in labels.values():
            for k in range(len(levels) - 2):
                if a[levels[k + 1]] == b[levels[k + 1]]:  # same inner group -> same outer group
                    assert a[levels[k]] == b[levels[k]]
    tiers = tiers_of(fleet)
    for jid, alloc in solved.assignment.items():
        job = list(yaml.safe_load_all(files[f"{jid}.yaml"]))[0]
        required = job["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"]
        want = "kubernetes.io/hostname" if len(alloc) == 1 else f"placement.io/tier-{tiers.job_tier(alloc)}"
        assert required == want
        assert job["spec"]["suspend"] is True and job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
        # every pod of a group really shares that group's label value
        values = {labels[s][required] for s in alloc} if required != "kubernetes.io/hostname" else set(alloc)
        assert len(values) == 1


def test_kueue_uses_imported_level_labels_and_refuses_a_wrong_count(fleet, solved):
    labelled = fleet.replace(metadata={"kubernetes": {"level_labels": ["rack", "pod", "zone"]}})
    sol = placed(labelled, solved.assignment, "greedy")
    files = export(labelled, sol, "kueue")
    levels = [lv["nodeLabel"] for lv in yaml.safe_load(files["topology.yaml"].split("---")[0])["spec"]["levels"]]
    assert levels == ["zone", "pod", "rack", "kubernetes.io/hostname"]
    assert "rack=" not in files["label-nodes.sh"]  # the nodes carry their own labels
    # two labels name tiers 1-2; a job across pods (tier 3, the whole cluster) needs none
    job = fleet.jobs[0].__class__(id="x", workers=4, compute_ms=100.0, gradient_mb=10.0)
    for alloc, want in (
        ({"s0": 2, "s11": 2}, {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}),
        ({"s0": 2, "s3": 2}, {"kueue.x-k8s.io/podset-required-topology": "pod"}),
        ({"s0": 2, "s1": 2}, {"kueue.x-k8s.io/podset-required-topology": "rack"}),
    ):
        one = placed(fleet.replace(jobs=(job,)), {"x": alloc}, "by hand")
        assert one.status.has_placement, one.stats
        two = export(fleet.replace(jobs=(job,)), one, "kueue", ExportOptions(level_labels=("rack", "pod")))
        assert next(yaml.safe_load_all(two["x.yaml"]))["spec"]["template"]["metadata"]["annotations"] == want
    with pytest.raises(InvalidInputError, match="3 network tier"):
        export(fleet, solved, "kueue", ExportOptions(level_labels=("a",)))


def test_export_refuses_a_foreign_or_invalid_solution(fleet, solved):
    other = generate(racks=1, servers_per_rack=2, jobs=2, seed=1)
    with pytest.raises(InvalidInputError, match="solution.instance"):
        export(other, solved, "volcano")
    jid = next(iter(solved.assignment))
    bad = placed(fleet, solved.assignment, "greedy")
    object.__setattr__(bad, "assignment", {**solved.assignment, jid: {fleet.servers[0].id: 1000}})
    with pytest.raises(InvalidInputError, match="assignment:"):
        export(fleet, bad, "podgroup")
    with pytest.raises(InvalidInputError, match="--to must be one of"):
        export(fleet, solved, "yarn")


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=80))
def test_dns_labels_are_valid_and_keep_ids_apart(a, b):
    for x in (a, b):
        name = dns_label(x)
        assert len(name) <= 52 and k8s_schemas.is_dns_label(name), (x, name)
    if a != b:
        assert dns_label(a) != dns_label(b)


@given(st.data())
def test_ranks_keep_every_domain_contiguous(data):
    inst = data.draw(instances(max_servers=6, max_jobs=3))
    alloc = data.draw(assignments(inst))
    cluster = cluster_of(inst)
    for servers in alloc.values():
        ring = rank_order(inst, servers)
        assert sorted(ring) == sorted(s for s, k in servers.items() for _ in range(k))
        for d in [None, *cluster.domains]:
            inside = [k for k, s in enumerate(ring) if (s == ring[0] if d is None else s in d.servers)]
            if inside:
                assert inside == list(range(inside[0], inside[-1] + 1)), (ring, d)


@given(st.data())
def test_any_valid_placement_survives_the_round_trip(data):
    inst = data.draw(instances(max_servers=5, max_jobs=3, feasible=True))
    sol = placed(inst, data.draw(assignments(inst, complete=True)), "witness")
    if not sol.status.has_placement:
        return
    from placement.export import read_placement_and_shards

    for target in (*K8S_TARGETS, "slurm") if not sol.shards else K8S_TARGETS:  # Slurm: no shards yet
        files = export(inst, sol, target)
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            write_files(files, d)
            back, shards = read_placement_and_shards(d)
        assert back == as_plain(sol), target
        assert shards == {j: dict(z) for j, z in sol.shards.items()}, target


def test_cli_export_then_import_placement(tmp_path):
    runner = CliRunner()
    inst = tmp_path / "inst.json"
    placement.dump_instance(generate(racks=2, servers_per_rack=3, gpus_per_server=4, jobs=5, seed=2), inst)
    sol = tmp_path / "sol.json"
    r = runner.invoke(cli, ["solve", str(inst), "-m", "greedy", "-q", "-o", str(sol)])
    assert r.exit_code == 0, r.output
    for target in (*K8S_TARGETS, "slurm"):
        r = runner.invoke(cli, ["export", str(sol), "--instance", str(inst), "--to", target])
        assert r.exit_code == 0, r.output
        folder = tmp_path / f"sol-{target}"
        assert folder.is_dir() and list(folder.glob("*.sbatch" if target == "slurm" else "*.yaml"))
        back = tmp_path / f"back-{target}.json"
        r = runner.invoke(cli, ["import-placement", str(folder), "--instance", str(inst), "-o", str(back)])
        assert r.exit_code == 0, r.output
        assert json.loads(back.read_text())["assignment"] == json.loads(sol.read_text())["assignment"]


def test_cli_refusals_exit_2_without_output(tmp_path):
    runner = CliRunner()
    inst = tmp_path / "inst.json"
    placement.dump_instance(generate(racks=1, servers_per_rack=2, gpus_per_server=4, jobs=2, seed=2), inst)
    sol = tmp_path / "sol.json"
    assert runner.invoke(cli, ["solve", str(inst), "-m", "greedy", "-q", "-o", str(sol)]).exit_code == 0
    r = runner.invoke(cli, ["export", str(sol), "--instance", str(inst), "--to", "volcano", "--namespace", "Bad_NS"])
    assert r.exit_code == 2 and "--namespace" in r.output and not (tmp_path / "sol-volcano").exists()
    r = runner.invoke(cli, ["export", str(sol), "--instance", str(inst), "--to", "k8s"])
    assert r.exit_code == 2
    folder = tmp_path / "podgroup"
    assert (
        runner.invoke(
            cli, ["export", str(sol), "--instance", str(inst), "--to", "podgroup", "-o", str(folder)]
        ).exit_code
        == 0
    )
    pod_file = next(folder.glob("j*.yaml"))
    docs = list(yaml.safe_load_all(pod_file.read_text()))
    for d in docs:  # every pod of this job onto one server: over its GPUs
        if d["kind"] == "Pod":
            term = d["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            term["nodeSelectorTerms"][0]["matchFields"][0]["values"] = ["s0"]
    docs += [d for d in docs if d["kind"] == "Pod"]  # and twice as many pods
    pod_file.write_text(yaml.safe_dump_all(docs))
    out = tmp_path / "back.json"
    r = runner.invoke(cli, ["import-placement", str(folder), "--instance", str(inst), "-o", str(out)])
    assert r.exit_code == 2 and "workers" in r.output and not out.exists()
    (folder / "broken.yaml").write_text("kind: [unclosed")
    r = runner.invoke(cli, ["import-placement", str(folder), "--instance", str(inst)])
    assert r.exit_code == 2 and "broken.yaml: not YAML" in r.output
    assert "Traceback" not in r.output


def test_round_trip_from_kubectl_json_to_manifests_and_back(tmp_path):
    """import-k8s a cluster, solve, export to every Kubernetes target, import-placement: the
    same assignment; the Kueue topology uses the nodes' own topology labels."""
    data = TEST_DATA / "k8s"
    runner = CliRunner()
    inst, sol = tmp_path / "cluster.json", tmp_path / "plan.json"
    r = runner.invoke(
        cli,
        ["import-k8s", str(data / "dgx-nodes.json"), "--pods", str(data / "dgx-pods.json"), "--jobs", "3"]
        + ["--job-mix", "large", "--seed", "3", "-o", str(inst)],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["solve", str(inst), "-m", "greedy", "-q", "-o", str(sol)])
    assert r.exit_code == 0, r.output
    planned = json.loads(sol.read_text())["assignment"]
    assert planned and any(len(a) > 1 for a in planned.values())
    for target in K8S_TARGETS:
        folder = tmp_path / target
        r = runner.invoke(cli, ["export", str(sol), "--instance", str(inst), "--to", target, "-o", str(folder)])
        assert r.exit_code == 0, r.output
        for f in folder.glob("*.yaml"):
            for d in yaml.safe_load_all(f.read_text()):
                assert k8s_schemas.validate(d) == [], (target, f.name)
        back = tmp_path / f"back-{target}.json"
        r = runner.invoke(cli, ["import-placement", str(folder), "--instance", str(inst), "-o", str(back)])
        assert r.exit_code == 0, r.output
        assert json.loads(back.read_text())["assignment"] == planned
    topo = next(yaml.safe_load_all((tmp_path / "kueue" / "topology.yaml").read_text()))
    levels = [lv["nodeLabel"] for lv in topo["spec"]["levels"]]
    assert levels == [
        "network.topology.nvidia.com/core",
        "network.topology.nvidia.com/spine",
        "network.topology.nvidia.com/leaf",
        "kubernetes.io/hostname",
    ]


def _readme_commands(heading: str) -> list[list[str]]:
    """The `placement ...` lines of the first code block after ``heading`` in the README."""
    import shlex

    text = (REPO_ROOT / "README.md").read_text()
    block = text[text.index(heading) :].split("```", 2)[1]
    lines = block.replace("\\\n", " ").splitlines()
    return [shlex.split(ln)[1:] for ln in lines if ln.startswith("placement ")]


@pytest.mark.parametrize(
    ("heading", "job", "servers", "script"),
    [
        ("**Kubernetes**, from", "j2", {"dgx-b02": 5, "dgx-c02": 3}, None),
        ("**Slurm**, from", "j1", {"s2": 8, "s3": 8}, "--nodes=2 --nodelist=s2,s3 --ntasks=16 --ntasks-per-node=8"),
    ],
)
def test_the_readme_workflows_run_as_written(heading, job, servers, script, tmp_path, monkeypatch):
    root = REPO_ROOT
    commands = _readme_commands(heading)
    assert [c[0] for c in commands][:1] in (["import-k8s"], ["import-slurm"]) and len(commands) == 3
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in commands:
        args = [str(root / a) if a.startswith("tests/data/") else a for a in args]
        r = runner.invoke(cli, args)
        assert r.exit_code == 0, (args, r.output)
    assert json.loads((tmp_path / "plan.json").read_text())["assignment"][job] == servers
    if script:
        options = " ".join(
            ln.split(" ", 1)[1]
            for ln in (tmp_path / "jobs" / f"{job}.sbatch").read_text().splitlines()
            if ln.startswith("#SBATCH")
        )
        assert script in options


@pytest.mark.parametrize("target", ["volcano", "podgroup"])
def test_one_pod_per_server_holds_its_workers_gpus(fleet, solved, target, tmp_path):
    files = export(fleet, solved, target, ExportOptions(pod_per="server"))
    for d in objects(files):
        assert k8s_schemas.validate(d) == [], (d["kind"], d["metadata"]["name"])
    write_files(files, tmp_path)
    assert read_placement(tmp_path) == as_plain(solved)
    for jid, alloc in solved.assignment.items():
        docs = list(yaml.safe_load_all(files[f"{jid}.yaml"]))
        if target == "volcano":
            pods = [(t["replicas"], t["template"]["spec"]) for t in docs[0]["spec"]["tasks"]]
            assert docs[0]["spec"]["minAvailable"] == len(alloc) and all(r == 1 for r, _ in pods)
            specs = [p for _, p in pods]
        else:
            specs = [d["spec"] for d in docs if d["kind"] == "Pod"]
            assert docs[0]["spec"]["minMember"] == len(alloc) == len(specs)
        envs = [{e["name"]: e["value"] for e in p["containers"][0]["env"]} for p in specs]
        gpus = [int(p["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]) for p in specs]
        assert [int(e["NPROC_PER_NODE"]) for e in envs] == gpus and sum(gpus) == fleet.job_by_id[jid].workers
        assert [int(e["NODE_RANK"]) for e in envs] == list(range(len(specs)))
        assert [int(e["RANK_OFFSET"]) for e in envs] == [sum(gpus[:k]) for k in range(len(gpus))]
        job = fleet.job_by_id[jid]
        limits = specs[0]["containers"][0]["resources"]["limits"]
        assert limits["memory"] == f"{int(job.memory_gb_per_worker * gpus[0] * 1024)}Mi"


def test_job_ids_never_clash_with_cluster_files_or_start_a_service_name_with_a_digit(fleet, solved, tmp_path):
    ids = ["hypernodes", "topology", "7", "label-nodes"]
    rename = dict(zip(list(solved.assignment)[: len(ids)], ids))
    jobs = tuple(j.__class__(**{**j.__dict__, "id": rename.get(j.id, j.id)}) for j in fleet.jobs)
    inst = fleet.replace(jobs=jobs)
    sol = placed(inst, {rename.get(j, j): a for j, a in solved.assignment.items()}, "greedy")
    for target in (*K8S_TARGETS, "slurm"):
        files = export(inst, sol, target)
        stems = {n.rsplit(".", 1)[0] for n in files}
        assert (
            len(files)
            == (2 if target == "slurm" else 1) * len(sol.assignment)
            + {
                "volcano": 1,
                "kueue": 2,
                "podgroup": 0,
                "slurm": 0,
            }[target]
        ), sorted(files)
        assert all(s[0].isalpha() for s in stems)
        folder = tmp_path / target
        write_files(files, folder)
        assert read_placement(folder) == as_plain(sol)


def test_kueue_requires_the_innermost_label_the_nodes_share():
    """A leaf switch with one schedulable node is no bandwidth domain: the required level is
    read off the nodes' label values, not the domain's height."""
    from placement.integrations.kubernetes import instance_from_kubernetes

    data = TEST_DATA / "k8s"
    nodes = json.loads((data / "dgx-nodes.json").read_text())
    for n in nodes["items"]:
        if n["metadata"]["name"] == "dgx-c02":
            n["metadata"]["labels"]["network.topology.nvidia.com/leaf"] = "leaf-d"
    inst = instance_from_kubernetes(nodes, jobs=1, job_mix="large", seed=1)
    job = inst.jobs[0]
    inst = inst.replace(jobs=(job.__class__(**{**job.__dict__, "workers": 4, "gpu_speed": None}),))
    sol = placed(inst, {job.id: {"dgx-c01": 2, "dgx-c02": 2}}, "by hand")
    assert sol.status.has_placement, sol.stats
    for api in ("v1beta2", "v1beta1"):
        files = export(inst, sol, "kueue", ExportOptions(kueue_api=api))
        for d in objects(files):
            assert k8s_schemas.validate(d) == [], d["kind"]
        tmpl = next(yaml.safe_load_all(files[f"{job.id}.yaml"]))["spec"]["template"]["metadata"]
        assert tmpl["annotations"] == {"kueue.x-k8s.io/podset-required-topology": "network.topology.nvidia.com/spine"}
    # across spines only the core label is shared; with labels that stop below it, unconstrained
    sol = placed(inst, {job.id: {"dgx-a01": 2, "dgx-c01": 2}}, "by hand")
    assert sol.status.has_placement, sol.stats
    tmpl = next(yaml.safe_load_all(export(inst, sol, "kueue")[f"{job.id}.yaml"]))["spec"]["template"]["metadata"]
    assert tmpl["annotations"] == {"kueue.x-k8s.io/podset-required-topology": "network.topology.nvidia.com/core"}
    two = ExportOptions(level_labels=("network.topology.nvidia.com/leaf", "network.topology.nvidia.com/spine"))
    tmpl = next(yaml.safe_load_all(export(inst, sol, "kueue", two)[f"{job.id}.yaml"]))["spec"]["template"]["metadata"]
    assert tmpl["annotations"] == {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}


def test_read_placement_refuses_malformed_and_doubled_manifests(fleet, solved, tmp_path):
    write_files(export(fleet, solved, "volcano"), tmp_path / "a")
    jid = next(iter(solved.assignment))
    doc = yaml.safe_load((tmp_path / "a" / f"{jid}.yaml").read_text())
    doc["spec"]["tasks"] = ["not a task"]
    (tmp_path / "a" / f"{jid}.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(InvalidInputError, match=r"spec.tasks\[0\] needs"):
        read_placement(tmp_path / "a")
    write_files(export(fleet, solved, "volcano"), tmp_path / "b")
    (tmp_path / "b" / "copy.yaml").write_text((tmp_path / "b" / f"{jid}.yaml").read_text())
    with pytest.raises(InvalidInputError, match="placed in .* too"):
        read_placement(tmp_path / "b")


def test_servers_that_cannot_be_node_names_are_refused_for_kubernetes(fleet, solved):
    bad = {s.id: f"S_{s.id}" for s in fleet.servers}
    servers = tuple(s.__class__(**{**s.__dict__, "id": bad[s.id]}) for s in fleet.servers)
    links = tuple(
        ln.__class__(bad.get(ln.source, ln.source), bad.get(ln.target, ln.target), ln.bandwidth_gbps)
        for ln in fleet.links
    )
    inst = fleet.replace(servers=servers, links=links)
    sol = placed(inst, {j: {bad[s]: k for s, k in a.items()} for j, a in solved.assignment.items()}, "greedy")
    assert sol.status.has_placement
    with pytest.raises(InvalidInputError, match="cannot be a Kubernetes node name"):
        export(inst, sol, "podgroup")
