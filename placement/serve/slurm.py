"""Slurm's pending jobs placed by the service (``placement slurm-sync SERVICE_URL``): one pass
reads ``squeue --json``; every pending GPU job that names no nodes is placed by the service and
pinned there with ``scontrol update JobId=N NumNodes=k ReqNodeList=...`` (``--dry-run``:
printed, not run, and the reservation given back), its GPUs then held for it as started; a held
job that Slurm started counts as running, and one that ended, or is gone from ``squeue``, gives
its GPUs back.  The service is reached over HTTP (any ``httpx.Client``-like object with a
``base_url``), Slurm through its client programs (``run``)."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from placement.integrations.slurm.pending import ENDED, STARTED, SlurmJob, read_squeue_json, update_argv
from placement.serve.config import gang_job

__all__ = ["sync", "job_id_of", "run_slurm"]

PREFIX = "slurm-"


def job_id_of(job: SlurmJob) -> str:
    """The service's id of a Slurm job."""
    return f"{PREFIX}{job.job_id}"


def run_slurm(argv: Sequence[str]) -> str:
    """Run a Slurm client program; its stdout (a failure raises with its stderr)."""
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def _service_job(job: SlurmJob) -> dict[str, Any]:
    if job.per_node is not None:
        return gang_job(job_id_of(job), job.gpus // job.per_node, job.per_node, dict(job.model))
    return gang_job(job_id_of(job), job.gpus, 1, dict(job.model))


def sync(
    client: Any,
    run: Callable[[Sequence[str]], str] = run_slurm,
    *,
    dry_run: bool = False,
    partition: str | None = None,
    say: Callable[[str], None] = print,
) -> dict[str, int]:
    """One pass (see the module's docstring); returns how many jobs were pinned, started,
    ended, left pending (no room now), and skipped (a shape Slurm cannot be told)."""
    state = client.get("/v1/state").json()
    jobs = read_squeue_json(run(["squeue", "--json"]))
    by_id = {job_id_of(j): j for j in jobs}
    held = {  # a job that waits for better GPUs (patience) holds none: it is offered again
        jid: s["state"] for jid, s in state["jobs"].items() if jid.startswith(PREFIX) and s["state"] != "waiting"
    }
    counts = dict.fromkeys(("pinned", "started", "ended", "waiting", "skipped"), 0)
    for jid, s in sorted(state["jobs"].items()):  # a waiting job Slurm ended or forgot: given up
        j = by_id.get(jid)
        if jid.startswith(PREFIX) and s["state"] == "waiting" and (j is None or j.state in ENDED):
            client.post(f"/v1/jobs/{jid}/release")
    for jid, s in sorted(held.items()):
        j = by_id.get(jid)
        if j is None or j.state in ENDED:
            client.post(f"/v1/jobs/{jid}/finish")
            counts["ended"] += 1
            say(f"{jid}: {'gone from squeue' if j is None else j.state}; its GPUs are back")
        elif j.state in STARTED and s == "reserved":
            client.post(f"/v1/jobs/{jid}/start")
            counts["started"] += 1
    for j in jobs:
        jid = job_id_of(j)
        if not j.pending or j.gpus == 0 or j.required_nodes or jid in held:
            continue
        if partition is not None and j.partition != partition:
            continue
        r = client.post("/v1/place", json={"jobs": [_service_job(j)], "explain": False})
        if r.status_code != 200:
            counts["skipped"] += 1
            say(f"{jid}: refused by the service: {'; '.join(r.json().get('errors', [r.text]))}")
            continue
        placed = r.json()["assignment"].get(jid)
        if placed is None:
            counts["waiting"] += 1
            until = r.json().get("waiting", {}).get(jid)
            why = (
                f"waits for better GPUs (patience) until t={until:.0f} s"
                if until is not None
                else f"{j.gpus} GPU(s) do not fit the free GPUs now"
            )
            say(f"{jid}: {why}; it stays pending")
            continue
        argv = update_argv(j, placed)
        if argv is None:
            client.post(f"/v1/jobs/{jid}/release")
            counts["skipped"] += 1
            say(f"{jid}: placed {placed}, which --gres=gpu:{j.per_node} per node cannot say; left to Slurm")
            continue
        if dry_run:
            client.post(f"/v1/jobs/{jid}/release")
            say(shlex.join(argv))
            counts["pinned"] += 1
            continue
        try:
            run(argv)
        except RuntimeError as e:
            client.post(f"/v1/jobs/{jid}/release")
            counts["skipped"] += 1
            say(f"{jid}: {e}")
            continue
        client.post(f"/v1/jobs/{jid}/start")  # its GPUs are promised to it from now on
        counts["pinned"] += 1
        say(f"{jid}: {shlex.join(argv)}")
    return counts
