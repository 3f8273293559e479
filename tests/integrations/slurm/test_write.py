"""Slurm batch scripts, slurm.conf and topology.conf of a placement, and a real slurmctld that takes them (and round trips through it)."""

from __future__ import annotations

import json
import re

import pytest
from support.helpers import problems_of
from support.slurm_data import CONF, TREE_YAML
from support.slurmctld import missing_binaries, running_slurmctld

import placement
from placement.errors import InvalidInputError
from placement.instances.generate import generate
from placement.integrations.names import file_stem
from placement.integrations.ranks import rank_order
from placement.integrations.slurm import (
    compress_hostlist,
    expand_hostlist,
    instance_from_slurm,
    parse_topology_conf,
    read_slurm_nodes,
)
from placement.integrations.slurm.write import gres_type, sbatch_files, slurm_conf, switch_tree, topology_conf
from placement.model import Instance, Job, Link, Server, Solution, Status, Switch
from placement.problem import cluster_of


@pytest.fixture(scope="module")
def cluster():
    """The generated instance of the daemon tests (with CPUs and memory, so that they are
    exported and read back), a greedy solution, and a hand-made one whose job j1 spreads
    3 + 1 workers over two racks."""
    inst = generate(racks=2, servers_per_rack=3, gpus_per_server=4, jobs=4, seed=1, cpu_memory=True)
    sol = placement.solve(inst, "greedy")
    assert sol.status.has_placement
    hand = {"j0": {"s0": 1}, "j1": {"s1": 3, "s4": 1}, "j2": {"s0": 1}, "j3": {"s3": 4, "s5": 4}}
    assert placement.validate(inst, hand) == []
    uneven = Solution(inst.name, "by hand", Status.FEASIBLE, None, None, hand, (), {}, {})
    return inst, sol, uneven


def test_sbatch_scripts_pin_nodes_ranks_and_gpus(cluster):
    inst, sol, uneven = cluster
    files = sbatch_files(inst, uneven, command="torchrun train.py --steps 10", partition="gpu", time_limit="2:00:00")
    assert sorted(files) == sorted(f"{j}.{ext}" for j in ("j0", "j1", "j2", "j3") for ext in ("sbatch", "hosts"))
    j3 = files["j3.sbatch"]
    for line in (
        "#SBATCH --job-name=j3",
        "#SBATCH --nodes=2",
        "#SBATCH --nodelist=s3,s5",
        "#SBATCH --ntasks=8",
        "#SBATCH --ntasks-per-node=4",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --switches=1",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=2:00:00",
        f"#SBATCH --cpus-per-task={int(inst.job_by_id['j3'].cpus_per_worker)}",
        'export SLURM_HOSTFILE="${SLURM_SUBMIT_DIR:-.}/j3.hosts"',
        "srun --distribution=arbitrary torchrun train.py --steps 10",
    ):
        assert line in j3.splitlines()
    j1 = files["j1.sbatch"].splitlines()
    assert "#SBATCH --gpus-per-task=1" in j1 and "#SBATCH --distribution=arbitrary" in j1
    assert "#SBATCH --switches=2" in j1 and not any("--gres" in ln or "--ntasks-per-node" in ln for ln in j1)
    assert files["j1.hosts"].split() == rank_order(inst, {"s1": 3, "s4": 1}) == ["s1", "s1", "s1", "s4"]
    even = sbatch_files(inst, sol, job_name_prefix="exp7-")
    for j, a in sol.assignment.items():
        assert f"#SBATCH --job-name=exp7-{j}" in even[f"{file_stem(j)}.sbatch"]
        assert sorted(even[f"{file_stem(j)}.hosts"].split()) == sorted(s for s, k in a.items() for _ in range(k))


def test_odd_job_names_are_quoted_and_bad_options_refused(cluster):
    inst, _, uneven = cluster
    renamed = inst.replace(
        jobs=tuple(j if j.id != "j1" else type(j)(**{**j.__dict__, "id": "my job $1"}) for j in inst.jobs)
    )
    a = {("my job $1" if j == "j1" else j): dict(v) for j, v in uneven.assignment.items()}
    sol = Solution(renamed.name, "by hand", Status.FEASIBLE, None, None, a, (), {}, {})
    files = sbatch_files(renamed, sol)
    stem = file_stem("my job $1")
    assert '#SBATCH --job-name="my job $1"' in files[f"{stem}.sbatch"] and f"{stem}.hosts" in files
    with pytest.raises(InvalidInputError) as e:
        sbatch_files(inst, uneven, command="a\nb", time_limit="soon", partition="g p")
    msgs = problems_of(e)
    assert "command must be one non-empty line" in msgs and "time_limit must be a Slurm time" in msgs
    assert "partition must be a Slurm partition name" in msgs
    odd = inst.replace(
        servers=tuple(s if s.id != "s1" else type(s)(**{**s.__dict__, "id": "s[1]"}) for s in inst.servers)
    )
    with pytest.raises(InvalidInputError, match=r"server 's\[1\]': not usable as a Slurm node name"):
        topology_conf(odd)


@pytest.mark.parametrize(
    "kw",
    [
        dict(racks=2, servers_per_rack=3),
        dict(topology="multi-pod", pods=2, racks=2, servers_per_rack=2),
        dict(racks=3, servers_per_rack=1),
    ],
)
def test_topology_conf_reads_back_as_the_same_bandwidth_tree(kw):
    inst = generate(jobs=3, seed=3, **kw)
    text = topology_conf(inst)
    nodes, kids = parse_topology_conf(text)
    tree = switch_tree(inst)
    assert (nodes, kids) == (tree.nodes, tree.kids)
    cl = cluster_of(inst)
    for servers in nodes.values():  # a leaf is a domain of the instance: its servers share its bandwidth
        assert len(servers) == 1 or cl.domain_of(servers).servers == tuple(servers)
    assert sorted(n for ns in nodes.values() for n in ns) == sorted(s.id for s in inst.servers)


def _hand_cluster(links: list[tuple[str, str, float]]) -> placement.Instance:
    servers = tuple(Server(sid, 4, "A100", 2400.0) for sid in ("a", "b", "c", "d"))
    switches = tuple(Switch(w) for w in ("tor0", "core") if any(w in (x, y) for x, y, _ in links))
    return Instance(
        name="hand",
        servers=servers,
        jobs=(Job("j", 2, 100.0, 10.0),),
        switches=switches,
        links=tuple(Link(x, y, bw) for x, y, bw in links),
    )


def test_servers_beside_inner_domains_get_their_own_leaf():
    # a, b under tor0; c straight on the core; d linked to nothing
    inst = _hand_cluster([("a", "tor0", 100), ("b", "tor0", 100), ("tor0", "core", 50), ("c", "core", 50)])
    tree = switch_tree(inst)
    assert tree.nodes == {"tor0": ["a", "b"], "tier2-0-nodes": ["c"], "d-switch": ["d"]}
    assert tree.kids == {"tier2-0": ["tor0", "tier2-0-nodes"]}
    assert parse_topology_conf(topology_conf(inst)) == (tree.nodes, tree.kids)  # what Slurm accepts
    sol = Solution(inst.name, "by hand", Status.FEASIBLE, None, None, {"j": {"a": 1, "c": 1}}, (), {}, {})
    assert "#SBATCH --switches=2" in sbatch_files(inst, sol)["j.sbatch"]
    alone = _hand_cluster([])
    assert switch_tree(alone).nodes == {} and topology_conf(alone).count("SwitchName") == 0
    assert "TopologyPlugin" not in slurm_conf(alone)
    sol = Solution(alone.name, "by hand", Status.FEASIBLE, None, None, {"j": {"a": 2}}, (), {}, {})
    assert "--switches" not in sbatch_files(alone, sol)["j.sbatch"]


def test_a_flat_topology_without_nodes_says_what_is_missing():
    with pytest.raises(InvalidInputError, match="a flat topology names no node: give the nodes' JSON"):
        instance_from_slurm(TREE_YAML, [100], topology_format="yaml", topology_name="plain", jobs=2)
    with pytest.raises(InvalidInputError, match="topology_name selects a topology of a topology.yaml"):
        instance_from_slurm(CONF, [100, 50], topology_name="x")


def test_slurm_conf_describes_every_node():
    inst = generate(racks=1, servers_per_rack=3, gpus_per_server=8, gpu_types="H100", jobs=2, seed=1)
    text = slurm_conf(inst, auth="none", port=7000, cluster_name="c1")
    assert "NodeName=s0 Gres=gpu:H100:8 CPUs=8 State=UNKNOWN" in text  # no CPUs in the instance: one per GPU
    assert "PartitionName=gpu Nodes=s[0-2] Default=YES" in text and "SlurmdPort=7001" in text
    assert "TopologyPlugin=topology/tree" in text and "AuthType=auth/none" in text
    assert gres_type("NVIDIA A100 80GB") == "NVIDIA_A100_80GB" and gres_type("unknown") is None
    with pytest.raises(InvalidInputError, match="auth must be 'munge' or 'none'"):
        slurm_conf(inst, auth="jwt")


# ----------------------------------------------------------------------------- real slurmctld


MISSING = missing_binaries()
needs_slurm = pytest.mark.skipif(bool(MISSING), reason=f"Slurm programs not installed: {', '.join(MISSING)}")


@pytest.fixture(scope="module")
def ctld(cluster, tmp_path_factory):
    inst, _, _ = cluster
    with running_slurmctld(inst, tmp_path_factory.mktemp("slurmctld")) as c:
        yield c


def _job_record(text: str) -> dict[str, str]:
    return dict(re.findall(r"(\S+?)=(\S*)", text))


def _submit_all(ctld, inst, sol, prefix: str) -> None:
    """Every exported script passes ``sbatch --test-only`` (the scheduler finds its nodes,
    GPUs, CPUs and memory) and is queued by ``sbatch --hold``, recording what it asked."""
    folder = ctld.folder / prefix
    folder.mkdir()
    files = sbatch_files(inst, sol, job_name_prefix=prefix, partition="gpu")
    for name, text in files.items():
        (folder / name).write_text(text)
    tree = switch_tree(inst)
    for j, a in sol.assignment.items():
        a = {s: k for s, k in a.items() if k > 0}
        stem = file_stem(j)
        env = {"SLURM_HOSTFILE": f"{stem}.hosts"}
        test = ctld.run("sbatch", "--test-only", f"{stem}.sbatch", env=env, cwd=folder)
        m = re.search(r"to start at .* on nodes (\S+) in partition gpu", test.stderr)
        assert m and sorted(expand_hostlist(m.group(1))) == sorted(a), test.stderr
        job_id = ctld.run("sbatch", "--hold", "--parsable", f"{stem}.sbatch", env=env, cwd=folder).stdout.strip()
        rec = _job_record(ctld.run("scontrol", "show", "job", "-o", job_id).stdout)
        workers = sum(a.values())
        assert rec["JobName"] == prefix + j and rec["JobState"] == "PENDING" and rec["Reason"] == "JobHeldUser"
        assert sorted(expand_hostlist(rec["ReqNodeList"])) == sorted(a)
        assert rec["NumNodes"].split("-")[0] == str(len(a)) and rec["NumTasks"] == str(workers)
        if len(set(a.values())) == 1:
            assert re.fullmatch(rf"gres[:/]gpu:{next(iter(a.values()))}", rec["TresPerNode"])
        else:
            assert re.fullmatch(r"gres[:/]gpu:1", rec["TresPerTask"])
        job = inst.job_by_id[j]
        assert rec["CPUs/Task"] == str(int(job.cpus_per_worker))
        assert re.fullmatch(rf"gres[:/]gpu:{int(job.memory_gb_per_worker * 1024)}", rec["MemPerTres"])
        assert rec["Switches"].split("@")[0] == str(len({tree.leaf_of[s] for s in a}))


@needs_slurm
def test_slurmctld_accepts_every_exported_script(ctld, cluster):
    inst, sol, uneven = cluster
    _submit_all(ctld, inst, sol, "greedy-")
    _submit_all(ctld, inst, uneven, "uneven-")


@needs_slurm
def test_slurmctld_refuses_a_script_asking_more_gpus_than_its_node_has(ctld, cluster):
    inst, sol, _ = cluster
    j, a = next((j, a) for j, a in sol.assignment.items() if len(a) == 1)
    text = sbatch_files(inst, sol)[f"{file_stem(j)}.sbatch"]
    k = next(iter(a.values()))
    over = re.sub(r"--gres=gpu:\d+", "--gres=gpu:5", text).replace(f"--ntasks={k}", "--ntasks=5")
    over = over.replace(f"--ntasks-per-node={k}", "--ntasks-per-node=5")
    (ctld.folder / "over.sbatch").write_text(over)
    r = ctld.run("sbatch", "--test-only", "over.sbatch", check=False)
    assert r.returncode != 0 and "Requested node configuration is not available" in r.stderr


@needs_slurm
def test_the_daemon_reads_the_exported_topology(ctld, cluster):
    inst, _, _ = cluster
    shown = ctld.run("scontrol", "show", "topology").stdout
    tree = switch_tree(inst)
    for leaf, servers in tree.nodes.items():
        assert re.search(
            rf"SwitchName={re.escape(leaf)} Level=0 .*Nodes={re.escape(compress_hostlist(servers))}", shown
        )
    for sw, cs in tree.kids.items():
        assert re.search(rf"SwitchName={re.escape(sw)} Level=1 .*Switches={re.escape(compress_hostlist(cs))}", shown)


def _check_read_back(nodes, inst) -> None:
    assert list(nodes) == [s.id for s in inst.servers]
    for s in inst.servers:
        n = nodes[s.id]
        assert (n.gpus, n.gpu_type, n.used_gpus) == (s.gpus, gres_type(s.gpu_type), 0)
        assert (n.cpus, n.memory_gb) == (s.cpus, s.memory_gb)


@needs_slurm
def test_sinfo_json_reads_back_the_instance(ctld, cluster):
    inst, _, _ = cluster
    nodes = read_slurm_nodes(ctld.run("sinfo", "--json").stdout)
    _check_read_back(nodes, inst)
    # and the way in: the daemon's nodes on the exported topology make the same cluster
    back = instance_from_slurm(topology_conf(inst), [100, 50], nodes=nodes, jobs=3, seed=1)
    assert [(s.id, s.gpus, s.cpus, s.memory_gb) for s in back.servers] == [
        (s.id, s.gpus, s.cpus, s.memory_gb) for s in inst.servers
    ]
    a, b = cluster_of(inst), cluster_of(back)
    for x in inst.servers:
        for y in inst.servers:
            assert (a.domain_of([x.id, y.id]) is None) == (b.domain_of([x.id, y.id]) is None)
            if a.domain_of([x.id, y.id]) is not None:
                assert a.domain_of([x.id, y.id]).servers == b.domain_of([x.id, y.id]).servers


@needs_slurm
def test_scontrol_show_nodes_json_reads_back_the_instance(ctld, cluster):
    inst, _, _ = cluster
    r = ctld.run("scontrol", "show", "nodes", "--json", check=False)
    if r.returncode != 0 and "unrecognized option" in r.stderr:
        pytest.skip(f"this scontrol has no --json (Slurm 23.02+): {ctld.run('scontrol', '--version').stdout.strip()}")
    assert r.returncode == 0, r.stderr
    _check_read_back(read_slurm_nodes(r.stdout), inst)


@needs_slurm
def test_slurm_expands_our_host_lists_as_we_do(ctld):
    lists = [
        ["tux0", "tux1", "tux2", "tux3", "tux7", "gpu01", "gpu02"],
        ["n8", "n09", "n10", "n11", "x"],
        ["b010", "b011", "b012", "b9", "a1", "a1"],
        ["r1-n1", "r1-n2", "r2-n1", "r10-n007", "r10-n008"],
    ]
    for hosts in lists:
        shown = ctld.run("scontrol", "show", "hostnames", compress_hostlist(hosts)).stdout.split()
        assert shown == hosts


@needs_slurm
def test_round_trip_sinfo_to_sbatch_and_back(ctld, cluster, tmp_path):
    """The CLI the README shows: the daemon's `sinfo --json` and the topology.conf make a
    cluster (import-slurm), a plan (solve), scripts (export --to slurm) that slurmctld queues
    on the planned nodes, and import-placement reads the same plan back."""
    from click.testing import CliRunner

    from placement.cli.main import cli

    inst, _, _ = cluster
    (tmp_path / "topology.conf").write_text(topology_conf(inst))
    (tmp_path / "sinfo.json").write_text(ctld.run("sinfo", "--json").stdout)
    runner = CliRunner()
    cluster_json, plan = tmp_path / "cluster.json", tmp_path / "plan.json"
    r = runner.invoke(
        cli,
        ["import-slurm", str(tmp_path / "topology.conf"), "--level-gbps", "100,50", "--nodes-json"]
        + [str(tmp_path / "sinfo.json"), "--jobs", "3", "--job-mix", "large", "--seed", "4", "-o", str(cluster_json)],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        cli,
        ["import-slurm", str(tmp_path / "topology.conf"), "--level-gbps", "100,50", "--nodes-json"]
        + [str(tmp_path / "sinfo.json"), "--gpus-per-server", "2"],
    )
    assert r.exit_code == 2 and "--gpus-per-server: the servers come from --nodes-json" in r.output
    assert runner.invoke(cli, ["solve", str(cluster_json), "-m", "greedy", "-q", "-o", str(plan)]).exit_code == 0
    planned = json.loads(plan.read_text())["assignment"]
    assert any(len(a) > 1 for a in planned.values())
    folder = tmp_path / "scripts"
    r = runner.invoke(cli, ["export", str(plan), "--instance", str(cluster_json), "--to", "slurm", "-o", str(folder)])
    assert r.exit_code == 0, r.output
    for j, a in planned.items():
        stem = file_stem(j)
        env = {"SLURM_HOSTFILE": f"{stem}.hosts"}
        job_id = ctld.run("sbatch", "--hold", "--parsable", f"{stem}.sbatch", env=env, cwd=folder).stdout.strip()
        rec = _job_record(ctld.run("scontrol", "show", "job", "-o", job_id).stdout)
        assert sorted(expand_hostlist(rec["ReqNodeList"])) == sorted(a) and rec["JobName"] == j
    back = tmp_path / "back.json"
    r = runner.invoke(cli, ["import-placement", str(folder), "--instance", str(cluster_json), "-o", str(back)])
    assert r.exit_code == 0, r.output
    assert json.loads(back.read_text())["assignment"] == planned
