"""The one validator: every constraint of DESIGN.md, every violation reported.

:func:`placement.solve` calls :func:`validate` on every placement before it returns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Any

from placement.evaluation.evaluate import evaluate
from placement.model.records import Assignment, GpuChoice, Instance, Stages
from placement.problem.gpus import choose_gpus
from placement.problem.rules import RESOURCES, SHARD_RESOURCES, meets_deadline, over_capacity
from placement.problem.topology import cluster_of

__all__ = ["Violation", "validate", "is_valid"]


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``kind`` is a stable keyword, ``message`` names the ids."""

    kind: str
    message: str
    job: str | None = None
    server: str | None = None

    def __str__(self) -> str:
        return self.message


def validate(
    instance: Instance,
    assignment: Assignment,
    unplaced: Any = None,
    shards: Assignment | None = None,
    stages: Stages | None = None,
    gpus: GpuChoice | None = None,
) -> list[Violation]:
    """All violations of ``assignment`` (and ``shards``, ``stages``, ``gpus``) on ``instance``
    (empty list: valid).

    Checks ids and worker counts, gang completeness, free GPUs, CPU and memory (shards'
    included), allowed GPU types and servers, ``max_servers`` and reachability (over the
    workers' and shards' servers together), every placed parameter-server job's shard count
    (and no shards for any other job), every placed hybrid job's stage matrix (pp rows of dp
    servers, each group on a server of the job, ``tp`` workers there per group: the counts
    agree with the assignment; no matrix for any other job), the GPUs ``gpus`` names (a placed
    job's own servers, as many as its workers there, free, no GPU twice), deadlines (on the
    exact expected time) and admission (``all``: every job placed).  If ``unplaced`` is given it must list
    exactly the jobs left out.
    """
    out: list[Violation] = []
    jobs = instance.job_by_id
    servers = instance.server_by_id
    named_gpus = gpus or {}
    taken: dict[str, int] = defaultdict(int)
    demand: dict[str, dict[str, float]] = {field: defaultdict(float) for field, _ in RESOURCES}
    placed: dict[str, Mapping[str, int]] = {}
    for jid, a in assignment.items():
        if jid not in jobs:
            out.append(Violation("unknown_job", f"assignment names unknown job {jid!r}", job=jid))
            continue
        job = jobs[jid]
        bad_counts = _count_problems(jid, a, servers, "workers")
        out += bad_counts
        if bad_counts:
            continue
        a = {s: k for s, k in a.items() if k > 0}
        if not a:
            continue
        total = sum(a.values())
        if total != job.workers:
            out.append(
                Violation(
                    "gang", f"job {jid!r} has {total} of its {job.workers} workers placed (gang: all or none)", jid
                )
            )
        for sid, k in a.items():
            srv = servers[sid]
            taken[sid] += k
            for field, per in RESOURCES:
                if getattr(job, per) is not None:
                    demand[field][sid] += k * getattr(job, per)
            if job.allowed_servers is not None and sid not in job.allowed_servers:
                out.append(Violation("allowed_servers", f"job {jid!r} is not allowed on server {sid!r}", jid, sid))
            if job.speed(srv.gpu_type) is None:
                out.append(
                    Violation(
                        "gpu_type", f"job {jid!r} cannot run on GPU type {srv.gpu_type!r} of server {sid!r}", jid, sid
                    )
                )
        if job.max_servers is not None and len(a) > job.max_servers:
            out.append(
                Violation(
                    "max_servers",
                    f"job {jid!r} spans {len(a)} servers, more than its max_servers {job.max_servers}",
                    jid,
                )
            )
        if len(a) > 1 and cluster_of(instance).bottleneck(list(a)) <= 0.0:
            out.append(
                Violation("unreachable", f"job {jid!r} spans servers that cannot reach each other: {sorted(a)}", jid)
            )
        placed[jid] = a
    # parameter-server shards: counts, servers, CPU and memory; max_servers and reachability
    # over the workers' and the shards' servers together
    shard_sets: dict[str, set[str]] = {}
    for jid, z in (shards or {}).items():
        z = {s: k for s, k in z.items() if not (isinstance(k, int) and not isinstance(k, bool) and k == 0)}
        if jid not in jobs:
            out.append(Violation("unknown_job", f"shards names unknown job {jid!r}", job=jid))
            continue
        job = jobs[jid]
        if not z:
            continue
        if not job.is_ps:
            out.append(Violation("shards", f"job {jid!r} is not a parameter-server job but has shards", jid))
            continue
        if jid not in placed:
            out.append(Violation("shards", f"job {jid!r} has shards but no workers placed", jid))
            continue
        bad = _count_problems(jid, z, servers, "shards")
        out += bad
        for sid, k in z.items():
            if sid in servers and isinstance(k, int) and not isinstance(k, bool) and k >= 0:
                if job.allowed_servers is not None and sid not in job.allowed_servers:
                    out.append(
                        Violation("allowed_servers", f"job {jid!r}'s shards are not allowed on {sid!r}", jid, sid)
                    )
                for field, per in SHARD_RESOURCES:
                    if getattr(job, per) is not None:
                        demand[field][sid] += k * getattr(job, per)
        if bad:
            continue
        if sum(z.values()) != job.shards:
            out.append(Violation("shards", f"job {jid!r} has {sum(z.values())} of its {job.shards} shards placed", jid))
        shard_sets[jid] = set(z)
    for jid, a in placed.items():
        job = jobs[jid]
        if job.is_ps and jid not in shard_sets and not any(v.job == jid and v.kind == "shards" for v in out):
            out.append(
                Violation("shards", f"parameter-server job {jid!r} is placed without its {job.shards} shards", jid)
            )
        if jid in shard_sets:
            together = set(a) | shard_sets[jid]
            if job.max_servers is not None and len(together) > job.max_servers:
                out.append(
                    Violation(
                        "max_servers",
                        f"job {jid!r} spans {len(together)} servers with its shards, more than its max_servers "
                        f"{job.max_servers}",
                        jid,
                    )
                )
            if len(together) > 1 and cluster_of(instance).bottleneck(sorted(together)) <= 0.0:
                out.append(
                    Violation("unreachable", f"job {jid!r}'s shards cannot reach its workers: {sorted(together)}", jid)
                )
    out += _stage_problems(instance, placed, stages or {})
    out += _gpu_problems(instance, placed, named_gpus)
    for sid, k in taken.items():
        srv = servers[sid]
        if k > srv.free_gpus:
            out.append(
                Violation("gpus", f"server {sid!r} gets {k} workers but has {srv.free_gpus} free GPUs", server=sid)
            )
    for sid, c in demand["cpus"].items():
        cap = servers[sid].cpus
        if over_capacity(c, cap):
            out.append(Violation("cpus", f"server {sid!r} gets {c:g} CPUs of work but has {cap:g}", server=sid))
    for sid, m in demand["memory_gb"].items():
        cap = servers[sid].memory_gb
        if over_capacity(m, cap):
            out.append(
                Violation("memory", f"server {sid!r} gets {m:g} GB of memory demand but has {cap:g}", server=sid)
            )
    if unplaced is not None:
        listed = set(unplaced)
        for jid in sorted(listed & set(placed)):
            out.append(Violation("unplaced", f"job {jid!r} is both placed and listed as unplaced", jid))
        for jid in sorted(listed - set(jobs)):
            out.append(Violation("unknown_job", f"unplaced names unknown job {jid!r}", jid))
        for j in instance.jobs:
            if j.id not in placed and j.id not in listed:
                out.append(Violation("unplaced", f"job {j.id!r} is neither placed nor listed as unplaced", j.id))
    if instance.admission == "all":
        for j in instance.jobs:
            if j.id not in placed:
                out.append(Violation("admission", f"job {j.id!r} is not placed, but admission is 'all'", j.id))
    deadline_jobs = [jid for jid in placed if jobs[jid].deadline_s is not None]
    if deadline_jobs and not any(v.kind in ("gang", "unreachable", "gpu_type", "shards", "stages") for v in out):
        held = choose_gpus(instance, placed, named_gpus)  # the whole placement's, as evaluated
        ev = evaluate(instance, {jid: placed[jid] for jid in deadline_jobs}, shards, stages, held)
        for jid in deadline_jobs:
            job = jobs[jid]
            e_ms = ev.jobs[jid].expected_iteration_ms
            if not meets_deadline(job, e_ms):
                t = (job.iterations or 0) * e_ms / 1000.0
                out.append(
                    Violation(
                        "deadline",
                        f"job {jid!r} is expected to take {t:.6g} s, past its deadline {job.deadline_s:g} s",
                        jid,
                    )
                )
    return out


def _stage_problems(instance: Instance, placed: Mapping[str, Mapping[str, int]], stages: Stages) -> list[Violation]:
    """The stage matrices: one for every placed hybrid job and for no other job, pp rows of dp
    known servers of the job, ``tp`` workers on a server per group it holds there."""
    out = []
    jobs = instance.job_by_id
    for jid, m in stages.items():
        if jid not in jobs:
            out.append(Violation("unknown_job", f"stages names unknown job {jid!r}", job=jid))
        elif not m:
            continue
        elif not jobs[jid].is_hybrid:
            out.append(Violation("stages", f"job {jid!r} is not a hybrid job but has a stage matrix", jid))
        elif jid not in placed:
            out.append(Violation("stages", f"job {jid!r} has a stage matrix but no workers placed", jid))
    for jid, a in placed.items():
        job = jobs[jid]
        if not job.is_hybrid:
            continue
        pp, dp = int(job.pp or 1), int(job.dp or 1)
        matrix = stages.get(jid)
        if matrix is None or not matrix:
            out.append(Violation("stages", f"hybrid job {jid!r} is placed without its stage matrix", jid))
            continue
        if (
            isinstance(matrix, (str, bytes))
            or len(matrix) != pp
            or any(isinstance(row, (str, bytes)) or len(row) != dp for row in matrix)
        ):
            out.append(
                Violation("stages", f"job {jid!r}'s stage matrix is not {pp} rows (pp) of {dp} servers (dp)", jid)
            )
            continue
        held: dict[str, int] = defaultdict(int)
        for s, row in enumerate(matrix):
            for r, sid in enumerate(row):
                if not isinstance(sid, str) or sid not in a:
                    out.append(
                        Violation(
                            "stages",
                            f"job {jid!r}'s group (stage {s}, replica {r}) is on {sid!r}, not one of its servers",
                            jid,
                        )
                    )
                else:
                    held[sid] += 1
        for sid, k in sorted(a.items()):
            if held.get(sid, 0) * job.unit != k:
                out.append(
                    Violation(
                        "stages",
                        f"job {jid!r} has {k} workers on {sid!r} but {held.get(sid, 0)} groups of tp={job.unit} there",
                        jid,
                        sid,
                    )
                )
    return out


def _gpu_problems(instance: Instance, placed: Mapping[str, Mapping[str, int]], gpus: GpuChoice) -> list[Violation]:
    """The GPUs named: of a placed job on one of its servers, as many as its workers there,
    indices of the server's free GPUs, none held by two jobs."""
    out = []
    servers = instance.server_by_id
    owner: dict[tuple[str, int], str] = {}
    for jid, per in gpus.items():
        if jid not in placed:
            out.append(Violation("gpus", f"gpus names job {jid!r}, which has no workers placed", jid))
            continue
        for sid, ids in per.items():
            k = placed[jid].get(sid, 0)
            if sid not in servers or k == 0:
                out.append(Violation("gpus", f"gpus names {sid!r} for job {jid!r}, which has no workers there", jid))
                continue
            srv = servers[sid]
            ok = [g for g in ids if isinstance(g, int) and not isinstance(g, bool) and 0 <= g < srv.gpus]
            if len(ok) != len(ids):
                bad = [g for g in ids if g not in ok]
                out.append(
                    Violation(
                        "gpus", f"job {jid!r} names GPUs {bad} of {sid!r}, which has GPUs 0-{srv.gpus - 1}", jid, sid
                    )
                )
            if len(ids) != k:
                out.append(
                    Violation("gpus", f"job {jid!r} has {k} workers on {sid!r} but names {len(ids)} GPUs", jid, sid)
                )
            held = set(srv.held)
            for g in ok:
                if g in held:
                    out.append(Violation("gpus", f"job {jid!r} names GPU {g} of {sid!r}, which is held", jid, sid))
                elif (sid, g) in owner:
                    out.append(
                        Violation(
                            "gpus", f"GPU {g} of {sid!r} is named by jobs {owner[(sid, g)]!r} and {jid!r}", jid, sid
                        )
                    )
                else:
                    owner[(sid, g)] = jid
    return out


def _count_problems(jid: str, counts: Mapping[str, Any], servers: Container[str], what: str) -> list[Violation]:
    """Unknown servers and counts that are not integers >= 0 in one job's ``{server: count}``
    (``what``: "workers" or "shards")."""
    out = []
    for sid, k in counts.items():
        if sid not in servers:
            where = "is assigned to" if what == "workers" else "has shards on"
            out.append(Violation("unknown_server", f"job {jid!r} {where} unknown server {sid!r}", jid, sid))
        elif not isinstance(k, int) or isinstance(k, bool) or k < 0:
            msg = f"job {jid!r} has {k!r} {what} on {sid!r}; counts are integers >= 0"
            out.append(Violation("bad_count", msg, jid, sid))
    return out


def is_valid(
    instance: Instance,
    assignment: Assignment,
    shards: Assignment | None = None,
    stages: Stages | None = None,
    gpus: GpuChoice | None = None,
) -> bool:
    return not validate(instance, assignment, shards=shards, stages=stages, gpus=gpus)
