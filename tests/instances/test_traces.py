import glob

import pytest
from click.testing import CliRunner
from support.paths import SHARED_DATA

import placement
from placement.cli.main import cli
from placement.errors import InvalidInputError
from placement.instances import bundled_names, load_bundled
from placement.instances.traces import (
    ALIBABA_V2023_SHAPES,
    PAI_NORMAL,
    PAI_STRAGGLER,
    PAI_STRAGGLER_SHARE,
    alibaba_shapes,
    calibrate_pai,
    elasticflow_jobs,
)
from placement.integrations.slurm import expand_hostlist, instance_from_slurm, parse_topology_conf
from placement.model import Status
from placement.problem import cluster_of

DATA = SHARED_DATA
needs_data = pytest.mark.skipif(
    not DATA.is_dir(),
    reason=f"needs the public traces (Alibaba v2023 servers, PAI per-worker logs) in {DATA}; "
    "set PLACEMENT_DATA to the folder holding them",
)


@needs_data
def test_alibaba_shapes_are_derived_from_the_trace():
    assert alibaba_shapes(DATA / "alibaba-gpu-v2023" / "openb_node_list_gpu_node.csv") == list(ALIBABA_V2023_SHAPES)
    assert sum(s[4] for s in ALIBABA_V2023_SHAPES) == 1213


@needs_data
def test_pai_calibration_is_reproduced_from_the_trace():
    fit = calibrate_pai(sorted(glob.glob(str(DATA / "alibaba-pai-minibatch" / "job_*_norm.csv"))))
    assert fit["normal"] == PAI_NORMAL and fit["straggler"] == PAI_STRAGGLER
    assert fit["straggler_share"] == PAI_STRAGGLER_SHARE and fit["workers"] == 40
    # the README's figure: the slowest of 10 workers is typically ~1.1x the median
    assert 1.0 < PAI_NORMAL.mean() < 1.02 and 1.5 < PAI_STRAGGLER.mean() < 2.5


def test_elasticflow_window_reads_the_bundled_trace():
    jobs = elasticflow_jobs(window_start_s=3442393, window_s=12 * 3600, max_gpus=64)
    assert len(jobs) == 131
    assert {j["workers"] for j in jobs} == {1, 8, 16}
    assert all(j["compute_ms"] > 0 and j["iterations"] > 0 for j in jobs)
    assert [j["submission_s"] for j in jobs] == sorted(j["submission_s"] for j in jobs)


def test_trace_instances_cite_their_traces():
    inst = load_bundled("library/medium/trace")
    assert any("Alibaba" in t for t in inst.metadata["traces"])
    assert any("ElasticFlow" in t for t in inst.metadata["traces"])
    assert {s.gpu_type for s in inst.servers} <= {s[0] for s in ALIBABA_V2023_SHAPES}


def test_library_covers_every_size_and_regime():
    names = [n for n in bundled_names() if n.startswith("library/")]
    sizes = {n.split("/")[1] for n in names}
    regimes = {n.split("/")[2] for n in names}
    assert sizes == {"tiny", "small", "medium", "large"}
    assert regimes == {"calm", "hot", "heavy-tail", "correlated", "hetero", "cpu-memory", "overload", "trace"}
    assert load_bundled("library/medium/correlated").scenarios is not None
    assert load_bundled("library/small/overload").admission == "best_effort"


@pytest.mark.parametrize("name", [n for n in bundled_names() if n.startswith("library/tiny/")])
def test_tiny_library_records_a_proven_optimum_that_exact_methods_reach(name):
    inst = load_bundled(name)
    assert inst.metadata["optimum_status"] == "optimal" and "brute_force" in inst.metadata["proven_by"]
    sol = placement.solve(inst, "milp_highs", time_limit_s=30)
    assert sol.status == Status.OPTIMAL
    assert sol.objective == pytest.approx(inst.metadata["optimum"], rel=1e-4)


def test_hostlists():
    assert expand_hostlist("tux[0-2,7],gpu01") == ["tux0", "tux1", "tux2", "tux7", "gpu01"]
    assert expand_hostlist("n[08-10]") == ["n08", "n09", "n10"]
    assert expand_hostlist("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    for bad in ("tux[1-", "tux[3-1]", "tux[a]"):
        with pytest.raises(ValueError):
            expand_hostlist(bad)


CONF = """
# a two-level tree
SwitchName=leaf0 Nodes=gpu[0-3]
SwitchName=leaf1 Nodes=gpu[4-7]
SwitchName=spine Switches=leaf[0-1]
"""


def test_slurm_topology_becomes_the_cluster_graph():
    inst = instance_from_slurm(CONF, [200, 50], jobs=4, seed=1)
    assert [s.id for s in inst.servers] == [f"gpu{k}" for k in range(8)]
    cl = cluster_of(inst)
    assert cl.bottleneck(["gpu0", "gpu3"]) == 200 and cl.bottleneck(["gpu0", "gpu4"]) == 50
    assert placement.instance_from_dict(placement.instance_to_dict(inst)) == inst
    sol = placement.solve(inst, "greedy")
    assert sol.status.has_placement


def test_slurm_errors_name_their_lines():
    with pytest.raises(InvalidInputError) as e:
        parse_topology_conf("SwitchName=a Nodes=x[0-1]\nSwitchName=b Switches=zz\nNodes=q\nSwitchName=a Nodes=y")
    msgs = "\n".join(e.value.problems)
    assert "line 3: SwitchName is required" in msgs and "line 4: switch 'a' defined twice" in msgs
    assert "unknown switch 'zz'" in msgs
    with pytest.raises(InvalidInputError, match="2 link levels"):
        instance_from_slurm(CONF, [100])


def test_import_slurm_cli(tmp_path):
    conf = tmp_path / "topology.conf"
    conf.write_text(CONF)
    out = tmp_path / "i.json"
    r = CliRunner().invoke(cli, ["import-slurm", str(conf), "--level-gbps", "100,25", "--jobs", "3", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert len(placement.load_instance(out).servers) == 8
    r = CliRunner().invoke(cli, ["import-slurm", str(conf), "--level-gbps", "100"])
    assert r.exit_code == 2 and "link levels" in r.stderr


def test_import_slurm_refuses_topology_options_and_names_the_import_after_its_file(tmp_path):
    conf = tmp_path / "cluster-a.conf"
    conf.write_text(CONF)
    r = CliRunner().invoke(cli, ["import-slurm", str(conf), "--level-gbps", "100,25", "--racks", "7"])
    assert r.exit_code == 2 and "No such option '--racks'" in r.output
    out = tmp_path / "i.json"
    r = CliRunner().invoke(
        cli, ["import-slurm", str(conf), "--level-gbps", "100,25", "--jobs", "3", "--seed", "4", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    inst = placement.load_instance(out)
    assert inst.name == "slurm-cluster-a"
    assert inst.source.startswith("placement import-slurm cluster-a.conf --level-gbps 100,25")
    assert "--jobs 3" in inst.source and "--seed 4" in inst.source
