"""Slurm's pending jobs placed by the service: ``squeue --json`` read in both of its shapes, and
on a real ``slurmctld`` (started by the test) pending jobs get their ``ReqNodeList`` from the
service and start there; ``--dry-run`` prints the commands and changes nothing."""

import json
import time

import pytest
from fastapi.testclient import TestClient
from support.slurmctld import missing_binaries, running_slurmctld

import placement
from placement.errors import InvalidInputError
from placement.integrations.slurm.pending import read_squeue_json, update_argv
from placement.serve import ServeConfig, Service, Store, create_app
from placement.serve.slurm import sync


def squeue(*jobs):
    return json.dumps({"meta": {}, "errors": [], "jobs": list(jobs)})


def job(job_id, **kw):
    base = {
        "job_id": job_id,
        "name": f"j{job_id}",
        "job_state": "PENDING",
        "partition": "gpu",
        "tasks": 1,
        "node_count": 1,
        "tres_per_node": "",
        "tres_per_task": "",
        "tres_per_job": "",
        "required_nodes": "",
        "nodes": "",
        "comment": "",
    }
    return {**base, **kw}


def test_squeue_json_gives_each_jobs_gpus_and_shape():
    jobs = read_squeue_json(
        squeue(
            job(
                1,
                node_count=2,
                tasks=16,
                tres_per_node="gres:gpu:8",
                comment="placement:compute_ms=120,gradient_mb=400",
            ),
            job(2, node_count=2, tasks=4, tres_per_node="gres:gpu:8", tres_per_task="gres:gpu:1"),
            job(3, tres_per_job="gres:gpu:a100:3"),
            job(4, job_state=["RUNNING"], node_count={"set": True, "number": 1}, nodes="s[3-4]", required_nodes="s3"),
            job(5),
        )
    )
    by = {j.job_id: j for j in jobs}
    assert (by[1].gpus, by[1].per_node, dict(by[1].model)) == (16, 8, {"compute_ms": 120.0, "gradient_mb": 400.0})
    assert (by[2].gpus, by[2].per_node) == (4, None)  # per task wins: any split
    assert (by[3].gpus, by[3].per_node) == (3, None)
    assert by[4].state == "RUNNING" and by[4].nodes == ("s3", "s4") and by[4].required_nodes == ("s3",)
    assert by[5].gpus == 0 and by[1].pending and not by[4].pending
    assert update_argv(by[1], {"s5": 8, "s3": 8}) == [
        "scontrol",
        "update",
        "JobId=1",
        "NumNodes=2",
        "ReqNodeList=s3,s5",
    ]
    assert update_argv(by[1], {"s5": 16}) is None  # two groups of --gres=gpu:8 on one node: Slurm cannot say it
    with pytest.raises(InvalidInputError) as e:
        read_squeue_json(squeue(job(7, comment="placement:compute_ms=-1,color=blue"), {"name": "x"}))
    assert sorted(e.value.problems) == [
        "job 7: comment names 'color'; it may give compute_ms, gradient_mb, iterations",
        "job 7: comment's compute_ms must be > 0, got '-1'",
        "jobs[1]: a job needs an integer job_id",
    ]


needs_slurm = pytest.mark.skipif(
    bool(missing_binaries()), reason=f"Slurm programs not installed: {', '.join(missing_binaries())}"
)


@needs_slurm
def test_pending_jobs_get_their_nodes_from_the_service_and_start_there(tmp_path, clock):
    cluster = placement.load_bundled("demo")
    svc = Service(Store.open(tmp_path / "s.db"), cluster, ServeConfig(), clock)
    with running_slurmctld(cluster, tmp_path / "slurm") as ctld, TestClient(create_app(svc)) as client:
        script = tmp_path / "job.sh"
        script.write_text("#!/bin/bash\nsrun hostname\n")
        submit = [
            ("--nodes=2", "--gres=gpu:8", "--ntasks-per-node=8", "--comment=placement:compute_ms=120,gradient_mb=400"),
            ("--ntasks=4", "--gpus-per-task=1"),
            ("--ntasks=1",),  # no GPU: not the service's
        ]
        ids = []
        for opts in submit:
            out = ctld.run("sbatch", "--hold", "--parsable", *opts, str(script)).stdout
            ids.append(int(out.strip().split(";")[0]))

        def run(argv):
            return ctld.run(*argv).stdout

        said = []
        counts = sync(client, run, dry_run=True, say=said.append)
        assert counts["pinned"] == 2 and any(line.startswith("scontrol update JobId=") for line in said)
        assert all(not j.required_nodes for j in read_squeue_json(run(["squeue", "--json"])))
        assert client.get("/v1/state").json()["assignment"] == {}  # a dry run holds nothing

        counts = sync(client, run, say=said.append)
        assert counts["pinned"] == 2, said
        state = client.get("/v1/state").json()
        planned = {jid: sorted(a) for jid, a in state["assignment"].items()}
        assert set(planned) == {f"slurm-{ids[0]}", f"slurm-{ids[1]}"}
        assert all(state["jobs"][j]["state"] == "running" for j in planned)
        jobs = {j.job_id: j for j in read_squeue_json(run(["squeue", "--json"]))}
        for i in ids[:2]:
            assert sorted(jobs[i].required_nodes) == planned[f"slurm-{i}"]
        assert not jobs[ids[2]].required_nodes
        assert sync(client, run, say=said.append)["pinned"] == 0  # pinned once

        ctld.run("scontrol", "release", ",".join(map(str, ids[:2])))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            jobs = {j.job_id: j for j in read_squeue_json(run(["squeue", "--json"]))}
            if all(jobs[i].nodes for i in ids[:2]):
                break
            time.sleep(1)
        for i in ids[:2]:  # Slurm started each where the service put it
            assert sorted(jobs[i].nodes) == planned[f"slurm-{i}"], ctld.output()

        ctld.run("scancel", str(ids[0]))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sync(client, run, say=said.append)["ended"] == 0:
            time.sleep(1)
        assert f"slurm-{ids[0]}" not in client.get("/v1/state").json()["assignment"]


def test_slurm_sync_says_when_the_service_does_not_answer():
    from click.testing import CliRunner

    from placement.cli.main import cli

    r = CliRunner().invoke(cli, ["slurm-sync", "http://127.0.0.1:9", "--dry-run"])
    assert r.exit_code == 1 and "did not answer" in r.stderr and "Traceback" not in r.output


def test_a_job_that_waits_for_better_gpus_stays_pending_and_is_offered_again(tmp_path, clock):
    """Patience through Slurm: a pending job whose only placement now spreads it over two
    half-busy servers waits (it stays pending, the service holds nothing for it), is offered
    again on the next pass, and is pinned to one whole server once one frees up."""
    from support.serving import two_servers

    svc = Service(Store.open(tmp_path / "s.db"), placement.instance_from_dict(two_servers()), ServeConfig(), clock)
    for jid, server in (("a", "s0"), ("b", "s1")):
        spec = {"id": jid, "workers": 4, "compute_ms": 100, "gradient_mb": 400, "iterations": 10_000}
        svc.place({"jobs": [{**spec, "allowed_servers": [server]}]})
        svc.start(jid)
    queue = [
        job(
            7, tasks=8, tres_per_task="gres/gpu:1", comment="placement:compute_ms=100,gradient_mb=400,iterations=100000"
        )
    ]
    ran = []

    def run(argv):
        ran.append(list(argv))
        return squeue(*queue) if argv[0] == "squeue" else ""

    said: list[str] = []
    with TestClient(create_app(svc)) as client:
        assert sync(client, run, say=said.append)["waiting"] == 1
        assert "waits for better GPUs" in said[-1], said
        assert client.get("/v1/state").json()["jobs"]["slurm-7"]["state"] == "waiting"
        clock.t += 60
        assert sync(client, run, say=said.append)["waiting"] == 1  # offered again, not taken for held
        held, queue[:] = queue[:], []  # cancelled while it waited: the service gives it up
        sync(client, run, say=said.append)
        assert "slurm-7" not in client.get("/v1/state").json()["jobs"]
        queue[:] = held
        assert sync(client, run, say=said.append)["waiting"] == 1
        svc.finish("a")
        assert sync(client, run, say=said.append)["pinned"] == 1, said
        assert client.get("/v1/state").json()["assignment"]["slurm-7"] == {"s0": 8}
        assert any(a[:2] == ["scontrol", "update"] for a in ran)
