"""Why an instance has no placement of every job: necessary conditions, checked fast."""

from __future__ import annotations

import math

import numpy as np

from placement.evaluation.bounds import job_lower_bound
from placement.model.records import Instance
from placement.problem.rules import meets_deadline, over_capacity
from placement.problem.state import State

__all__ = ["infeasibility_reason"]


def infeasibility_reason(instance: Instance) -> str | None:
    """A short proof that no placement places every job, or ``None`` if none is found.

    Necessary conditions only (admission ``all``): a job with no usable server set
    (allowed servers, one connected component, ``max_servers``), total GPU/CPU/memory
    demand above supply, or a deadline that even the job's lower bound misses.
    """
    if instance.admission != "all" or not instance.jobs:
        return None
    st = State(instance)
    for jp, job in enumerate(instance.jobs):
        allowed = st.allowed(jp)
        rooms = st.room(jp, allowed) if len(allowed) else np.zeros(0, dtype=np.int64)
        best = 0
        for comp in set(st.component[allowed].tolist()):
            r = np.sort(rooms[st.component[allowed] == comp])[::-1]
            if job.max_servers is not None:
                r = r[: job.max_servers]
            best = max(best, int(r.sum()))
        if best < job.workers:
            return (
                f"job {job.id!r} needs {job.workers} GPUs but at most {best} fit on the servers it may use "
                "together (allowed types/servers, one connected component, max_servers, CPU/memory)"
            )
        lb = job_lower_bound(instance, jp) if job.deadline_s is not None else 0.0
        if not meets_deadline(job, lb):
            return (
                f"job {job.id!r} cannot meet its deadline {job.deadline_s:g} s: even its lower bound takes "
                f"{lb * (job.iterations or 0) / 1000.0:.6g} s"
            )
    need = sum(j.workers for j in instance.jobs)
    have = int(st.gpus.sum())
    if need > have:
        return f"the jobs need {need} GPUs, the cluster has {have} free"
    for attr, per, cap in (("CPUs", "cpus_per_worker", st.cpus), ("GB of memory", "memory_gb_per_worker", st.mem)):
        demand = sum(j.workers * (getattr(j, per) or 0.0) for j in instance.jobs)
        supply = float(cap.sum())
        if math.isfinite(supply) and over_capacity(demand, supply):
            return f"the jobs need {demand:g} {attr}, the cluster has {supply:g}"
    return None
