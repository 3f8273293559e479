"""PAL and PM-First (Jain et al., SC'24, ``hal-uw/blox-pal``, branch ``artifact``): GPU placement
by measured per-GPU performance classes, as peers' methods under the same model.

Both read the per-GPU factors (``gpu_slowdowns``, for each job's ``app_class``) and ignore
slowdown distributions and communication, as the paper's code does:

- **Performance classes** (``placement/pal.py:502-584``): per application class, over every GPU of
  the cluster, the factors above mean + 3 standard deviations are outliers; k-means (scikit-learn,
  Lloyd, k-means++, 10 restarts, ``random_state`` = the seed + 1, PAL's 1 at seed 0) with ``k`` = 2
  + the outliers on all factors; a GPU's class factor ``sf`` is its cluster's centroid over the
  median centroid.
- **PM-First's pick** (``pmfirst.py:295-311``): the free GPUs sorted by ``sf``, then by how far the
  number of free GPUs of that ``sf`` on their server is from the job's size, then by server and
  index; the first ``W``: the fastest class first, locality only a tie-break.
- **PAL** (``pal.py:286-329, 585-606``): for a job that fits one server (2 GPUs up to the largest
  server), ``T_w`` = the least ``sf`` at which some server has ``W`` free GPUs of ``sf <= T_w``,
  ``T_a`` = the least at which the cluster has; if ``T_w < F T_a`` (F the locality penalty: the
  instance's, or PAL's 1.7 when it has none) the job takes the first ``W`` such GPUs of the server
  with most of them (then the lowest), else PM-First's pick among ``sf <= T_a``; other jobs:
  PM-First's pick.
- **Job order** (``pal.py:178-205``, ``pmfirst.py:178-205``): the instance's order (the queue's);
  the prefix of jobs whose GPUs fit in the free ones is re-sorted by application class (names in
  order, jobs without a class last), the rest follow.  A job that does not fit is skipped (the
  paper's FIFO stops there instead: run it with the simulator's ``fifo-strict`` queue).

What differs from the paper's code, and why: servers a job may not use (``allowed_servers``, GPU
type, CPU and memory) are not offered to it; a pick that breaks ``max_servers`` skips the job;
parameter-server jobs get their shards by the driver's shard rule; hybrid-parallel jobs, which
PAL does not run, are refused.  Packed placement (the paper's baseline) is ``consolidate``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from placement.errors import MethodUnavailableError
from placement.model.records import Instance
from placement.problem.state import State
from placement.solving.options import Options, Outcome

__all__ = ["pal", "pm_first", "class_factors", "PAL_DEFAULT_PENALTY"]

PAL_DEFAULT_PENALTY = 1.7
"""PAL's locality penalty when the instance states none (``blox_manager.py``'s default)."""

Pick = Callable[[State, int, list[tuple[int, int]], dict[tuple[int, int], float]], list[tuple[int, int]] | None]


def class_factors(instance: Instance, app_class: str | None, seed: int = 0) -> dict[tuple[int, int], float]:
    """``sf`` of every GPU ``(server position, index)`` for ``app_class`` (the module's rule;
    memoised on the instance)."""
    key = f"pal_sf:{app_class!r}:{seed}"
    got = instance.derived.get(key)
    if got is not None:
        return got
    from sklearn.cluster import KMeans

    gpus = [(sp, g) for sp, s in enumerate(instance.servers) for g in range(s.gpus)]
    f = np.array([instance.servers[sp].gpu_factors(app_class)[g] for sp, g in gpus], dtype=float)
    out: dict[tuple[int, int], float]
    distinct = np.unique(f)
    if len(distinct) <= 2:  # nothing to cluster: each value its own class
        med = float(np.median(distinct))
        out = {gpu: float(v) / med for gpu, v in zip(gpus, f)}
    else:
        outliers = int((f > f.mean() + 3 * f.std(ddof=1)).sum()) if len(f) > 1 else 0
        k = min(2 + outliers, len(distinct))
        km = KMeans(n_clusters=k, init="k-means++", n_init=10, algorithm="lloyd", random_state=seed + 1)
        labels = km.fit_predict(f.reshape(-1, 1))
        centres = km.cluster_centers_.ravel()
        med = float(np.median(centres))
        out = {gpu: float(centres[lab]) / med for gpu, lab in zip(gpus, labels)}
    instance.derived[key] = out
    return out


def _free_gpus(st: State, jp: int, taken: dict[int, set[int]]) -> list[tuple[int, int]]:
    """The free GPUs ``(server, index)`` job ``jp`` may use (none of ``taken``), at most its room
    on each server."""
    inst = st.instance
    out: list[tuple[int, int]] = []
    sps = st.allowed(jp)
    if not len(sps):
        return out
    room = st.room(jp, sps)
    for sp, r in zip(sps, room):
        sp = int(sp)
        free = [g for g in inst.servers[sp].free_gpu_ids if g not in taken.get(sp, set())]
        out += [(sp, g) for g in free[: int(r)]]
    return out


def _pm_first_pick(
    st: State, jp: int, free: list[tuple[int, int]], sf: dict[tuple[int, int], float]
) -> list[tuple[int, int]] | None:
    n = st.instance.jobs[jp].workers
    if len(free) < n:
        return None
    same: dict[tuple[int, float], int] = {}
    for sp, g in free:
        same[(sp, sf[(sp, g)])] = same.get((sp, sf[(sp, g)]), 0) + 1
    order = sorted(free, key=lambda x: (sf[x], abs(same[(x[0], sf[x])] - n), x))
    return order[:n]


def _pal_pick(
    st: State, jp: int, free: list[tuple[int, int]], sf: dict[tuple[int, int], float]
) -> list[tuple[int, int]] | None:
    inst = st.instance
    n = inst.jobs[jp].workers
    if len(free) < n:
        return None
    largest = max(s.gpus for s in inst.servers)
    if n == 1 or n > largest:
        return _pm_first_pick(st, jp, free, sf)
    penalty = inst.locality_penalty if inst.locality_penalty != 1.0 else PAL_DEFAULT_PENALTY
    levels = sorted({sf[x] for x in free})
    t_all = next(t for t in levels if sum(1 for x in free if sf[x] <= t) >= n)
    t_one = None
    for t in levels:
        per: dict[int, int] = {}
        for x in free:
            if sf[x] <= t:
                per[x[0]] = per.get(x[0], 0) + 1
        if max(per.values(), default=0) >= n:
            t_one = t
            break
    if t_one is not None and t_one < penalty * t_all:
        ok = [x for x in free if sf[x] <= t_one]
        per = {}
        for x in ok:
            per[x[0]] = per.get(x[0], 0) + 1
        best = min(per, key=lambda sp: (-per[sp], sp))
        return sorted(x for x in ok if x[0] == best)[:n]
    return _pm_first_pick(st, jp, [x for x in free if sf[x] <= t_all], sf)


def _run(instance: Instance, opts: Options, pick: Pick, name: str) -> Outcome:
    if any(j.is_hybrid for j in instance.jobs):
        raise MethodUnavailableError(f"{name}: hybrid-parallel jobs are not PAL's; use another method")
    st = State(instance)
    taken: dict[int, set[int]] = {}
    free_total = sum(s.free_gpus for s in instance.servers)
    order = list(range(len(instance.jobs)))
    cut, need = 0, 0
    for jp in order:  # the prefix that fits, re-sorted by application class
        need += instance.jobs[jp].workers
        if need > free_total:
            break
        cut += 1
    prefix = sorted(
        order[:cut], key=lambda jp: (instance.jobs[jp].app_class is None, instance.jobs[jp].app_class or "")
    )
    chosen: dict[str, dict[str, tuple[int, ...]]] = {}
    skipped = 0
    for jp in prefix + order[cut:]:
        job = instance.jobs[jp]
        sf = class_factors(instance, job.app_class, opts.seed)
        free = _free_gpus(st, jp, taken)
        parts: dict[int, list[tuple[int, int]]] = {}
        for x in sorted(free, key=lambda x: (sf[x], x)):  # a gang stays in one connected part
            parts.setdefault(int(st.component[x[0]]), []).append(x)
        got = next((g for g in (pick(st, jp, p, sf) for p in parts.values()) if g), None)
        alloc: dict[int, int] = {}
        for sp, _ in got or []:
            alloc[sp] = alloc.get(sp, 0) + 1
        if (
            not got
            or (job.max_servers is not None and len(alloc) > job.max_servers)
            or not st.take(jp, alloc, st.ps_cost(jp, alloc)[1] if job.is_ps else None)
        ):
            skipped += 1
            continue
        for sp, g in got:
            taken.setdefault(sp, set()).add(g)
            sid = instance.servers[sp].id
            chosen.setdefault(job.id, {})[sid] = tuple(sorted(chosen.get(job.id, {}).get(sid, ()) + (g,)))
    path = [name]
    if instance.admission == "all" and skipped:
        return Outcome(None, path=path, message=f"{skipped} job(s) did not fit")
    return Outcome(st.assignment(), path=path, shards=st.shard_assignment(), gpus=chosen)


def pm_first(instance: Instance, opts: Options) -> Outcome:
    """PM-First: the fastest performance class first (the module's rules)."""
    return _run(instance, opts, _pm_first_pick, "pm_first")


def pal(instance: Instance, opts: Options) -> Outcome:
    """PAL: performance classes traversed with the locality penalty (the module's rules)."""
    return _run(instance, opts, _pal_pick, "pal")
