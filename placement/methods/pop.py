"""POP-style decomposition (after Narayanan et al., SOSP'21): split the cluster into parts
along its bandwidth domains and the jobs among the parts in proportion to their free
GPUs, solve every part exactly and in parallel (each warm-started by its own greedy),
stitch the parts' placements, repair what a part could not place on the capacity left, and
improve the whole with local search.

The parts' bounds are bounds of the *restricted* problem, not of the whole, so the
solution's bound is the whole instance's transportation-LP bound
(:mod:`placement.formulations.transport`) or the simple bound, whichever is higher.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from placement.errors import MethodUnavailableError
from placement.formats.instance import instance_from_dict, instance_to_dict
from placement.methods.greedy import greedy, greedy_job, job_order
from placement.methods.local_search import bound_then_improve
from placement.model.records import Assignment, Instance
from placement.problem.arrays import arrays_of
from placement.problem.state import State
from placement.problem.topology import cluster_of
from placement.solving.budget import Budget
from placement.solving.options import Options, Outcome
from placement.solving.registry import first_available, get_method

__all__ = ["PART_SIZE", "part_document", "partition", "pop"]

PART_SIZE = 4_000
"""Target number of (job, server) pairs per part, so that each exact model can finish."""


def _leaf_groups(instance: Instance, k: int) -> list[list[int]]:
    """``k`` groups of server positions made of whole innermost domains, contiguous in the
    domain tree (locality kept), with about equal free GPUs."""
    cl = cluster_of(instance)
    seen: set[int] = set()
    blocks: list[list[int]] = []
    # innermost domains in depth-first order of the tree
    roots = [d.index for d in cl.domains if d.parent is None]
    stack = list(reversed(roots))
    while stack:
        d = cl.domains[stack.pop()]
        if not d.children:
            blocks.append([instance.server_pos[s] for s in d.servers])
            seen.update(blocks[-1])
        stack.extend(reversed(d.children))
    blocks += [[sp] for sp in range(len(instance.servers)) if sp not in seen]  # isolated servers
    free = cl.free_gpus
    total = float(free.sum()) or 1.0
    groups: list[list[int]] = [[]]
    acc = 0.0
    for b in blocks:
        if acc >= total / k * len(groups) and len(groups) < k:
            groups.append([])
        groups[-1] += b
        acc += float(free[b].sum())
    return [g for g in groups if g]


def partition(instance: Instance, parts: int) -> list[tuple[list[int], list[int]]]:
    """``parts`` pairs (server positions, job positions): jobs largest first to the part
    with the most free GPUs left that they may use."""
    groups = _leaf_groups(instance, parts)
    idx = arrays_of(instance)
    free = cluster_of(instance).free_gpus
    left = [float(free[g].sum()) for g in groups]
    jobs: list[list[int]] = [[] for _ in groups]
    order = sorted(range(len(instance.jobs)), key=lambda jp: -instance.jobs[jp].workers)
    masks = []
    for g in groups:
        m = np.zeros(len(free), dtype=bool)
        m[g] = True
        masks.append(m)
    for jp in order:
        ok = np.isfinite(idx.job_a(jp))
        usable = [float(free[ok & masks[k]].sum()) for k in range(len(groups))]
        cands = [k for k in range(len(groups)) if usable[k] >= instance.jobs[jp].workers]
        if not cands:
            cands = list(range(len(groups)))
        k = max(cands, key=lambda c: (left[c], -c))
        jobs[k].append(jp)
        left[k] -= instance.jobs[jp].workers
    return list(zip(groups, jobs))


def solve_part(
    args: tuple[dict[str, Any], str, float, float, int],
) -> tuple[dict[str, dict[str, int]] | None, list[str]]:
    doc, method, limit, phase_end, seed = args
    # the parts' phase has an absolute end (CLOCK_MONOTONIC is shared by the processes):
    # a part that starts too late is left to the repair
    left = min(limit, phase_end - time.monotonic())
    if left < 0.3:
        return None, ["skipped: no time left"]
    inst = instance_from_dict(doc)
    left = min(limit, phase_end - time.monotonic())
    if left < 0.2:
        return None, ["skipped: no time left"]
    out = get_method(method).load()(inst, Options(time_limit_s=left, seed=seed, threads=1, budget=Budget.seconds(left)))
    return (None if out.assignment is None else {j: dict(a) for j, a in out.assignment.items()}), out.path


def part_document(base: dict[str, Any], instance: Instance, servers: list[int], jobs: list[int]) -> dict[str, Any]:
    """The instance document of one part: its servers, every switch and the links among
    them, its jobs restricted to its servers, the scenario rows and per-job estimates of
    its servers; admission ``best_effort`` (a job the part cannot place goes to the repair)."""
    ids = {instance.servers[sp].id for sp in servers}
    topo = base["topology"]
    nodes = [n for n in topo["nodes"] if n.get("kind") != "server" or n["id"] in ids]
    kept = {n["id"] for n in nodes}
    edges = [e for e in topo["edges"] if e["source"] in kept and e["target"] in kept]
    d = {k: v for k, v in base.items() if k not in ("topology", "jobs", "scenarios", "metadata")}
    d["topology"] = {**topo, "nodes": nodes, "edges": edges}
    d["jobs"] = []
    for jp in jobs:
        jd = dict(base["jobs"][jp])
        if "allowed_servers" in jd:
            jd["allowed_servers"] = [sid for sid in jd["allowed_servers"] if sid in ids]
            if not jd["allowed_servers"]:
                continue
        if "slowdown" in jd:
            jd["slowdown"] = {sid: v for sid, v in jd["slowdown"].items() if sid in ids}
            if not jd["slowdown"]:
                del jd["slowdown"]
        d["jobs"].append(jd)
    if "scenarios" in base:
        sc = base["scenarios"]
        d["scenarios"] = {**sc, "slowdowns": {sid: v for sid, v in sc["slowdowns"].items() if sid in ids}}
    d["admission"] = "best_effort"
    return d


def pop(instance: Instance, opts: Options) -> Outcome:
    spec = first_available()
    if spec is None:
        raise MethodUnavailableError("pop needs an exact backend: install pulp with highspy, or ortools")
    idx = arrays_of(instance)
    free = cluster_of(instance).free_gpus > 0
    pairs = sum(int((np.isfinite(idx.job_a(jp)) & free).sum()) for jp in range(len(instance.jobs)))
    # k parts split both the servers and the jobs, so a part has about pairs / k^2 pairs
    k = max(1, min(len(instance.jobs), math.ceil(math.sqrt(pairs / PART_SIZE))))
    split = partition(instance, k)
    base = instance_to_dict(instance)
    docs = [part_document(base, instance, servers, jobs) for servers, jobs in split]
    docs = [d for d in docs if d["jobs"]]
    workers = max(1, min(len(docs), opts.threads, os.cpu_count() or 1))
    rounds = math.ceil(len(docs) / workers) if docs else 1
    phase_end = time.monotonic() + 0.55 * opts.budget.left()  # parts run on the wall clock, in processes
    backend = spec.name
    per_part = max(0.5, (phase_end - time.monotonic()) / rounds)
    path = [f"pop({len(docs)} parts, {workers} in parallel, {backend})"]
    results: list[tuple[dict[str, dict[str, int]] | None, list[str]]]
    args = [(d, backend, per_part, phase_end, opts.seed) for d in docs]
    if workers == 1:
        results = [solve_part(a) for a in args]
    else:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            results = list(ex.map(solve_part, args))
    skipped = sum(1 for _, p in results if p and p[0].startswith("skipped"))
    if skipped:
        path.append(f"{skipped} part(s) skipped: out of time")
    st = State(instance)
    for asg, _ in results:
        for jid, placed in (asg or {}).items():
            jp = instance.job_pos[jid]
            part_alloc = {instance.server_pos[s]: int(k) for s, k in placed.items()}
            # the parts place workers only: a part's job whose workers no longer fit next to
            # the shards taken so far (or whose shards do not fit) is left to the repair
            if all(st.room(jp, list(part_alloc)) >= list(part_alloc.values())):
                st.take(jp, part_alloc)
    missing = [jp for jp in job_order(instance) if jp not in st.x]
    for jp in missing:
        alloc, _ = greedy_job(st, jp)
        if alloc is not None:
            st.take(jp, alloc)
    path.append(f"stitched, repaired {len(missing)} job(s)")
    stitched: Assignment | None = st.assignment()
    shards: Assignment | None = st.shard_assignment()
    if not st.complete:
        g = greedy(instance, opts)
        path.append("repair failed: greedy start")
        stitched, shards = g.assignment, g.shards
    if stitched is None:
        return Outcome(None, path=path, message="no complete placement after stitching and repair")
    found, shards, bound = bound_then_improve(instance, opts, stitched, path, shards=shards)
    return Outcome(found, bound=bound, path=path, shards=shards)
