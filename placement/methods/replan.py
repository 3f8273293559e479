"""Re-planning: re-optimise a running placement after the slowdown estimates change,
moving at most ``max_moves`` workers (and/or paying ``move_cost`` per moved worker, and each
running job's ``restart_cost`` once if it moves at all).

A worker *moves* when its job has fewer workers on a server than in the previous
placement: ``moves = sum_j sum_n max(0, prev[j][n] - new[j][n])`` over the jobs of the
previous placement still in the instance.  Jobs that are new are placed without counting
moves; jobs that finished are dropped.  A previous allocation that is no longer valid
(its server is gone or full, its type no longer allowed) is re-placed: those moves are
*forced* and counted too (a budget smaller than them cannot be kept, and the solution says
so).
"""

from __future__ import annotations

from collections.abc import Mapping

from placement.methods.greedy import greedy_job, job_order
from placement.model.records import Assignment, Instance
from placement.problem.state import State

__all__ = ["start_from_previous"]


def start_from_previous(
    instance: Instance,
    previous: Assignment,
    max_moves: int | None,
    move_cost: float,
    previous_shards: Assignment | None = None,
    restart_cost: Mapping[str, float] | None = None,
) -> tuple[State, str]:
    """The previous placement on the current instance, repaired, with new jobs inserted:
    the local search's start, with its moves counted."""
    st = State(instance)
    prev: dict[int, dict[int, int]] = {}
    for jid, was in previous.items():
        if jid in instance.job_pos:
            prev[instance.job_pos[jid]] = {
                instance.server_pos[s]: int(k) for s, k in was.items() if s in instance.server_pos and k > 0
            }
    restart = {instance.job_pos[j]: float(c) for j, c in (restart_cost or {}).items() if j in instance.job_pos}
    st.set_previous(prev, max_moves, move_cost, restart)
    # lost servers: their workers are moves already
    vanished = sum(
        int(k)
        for jid, a in previous.items()
        if jid in instance.job_pos
        for s, k in a.items()
        if s not in instance.server_pos
    )
    repaired = []
    for jp in sorted(prev):
        kept = prev[jp]
        job = instance.jobs[jp]
        ok = (
            sum(kept.values()) == job.workers
            and all(job.allows(instance.servers[sp]) for sp in kept)
            and all(st.room(jp, [sp])[0] >= k for sp, k in kept.items())
            and (job.max_servers is None or len(kept) <= job.max_servers)
        )
        if ok:
            st.take(jp, kept, {})  # shards after every kept job's workers (below)
        else:
            repaired.append(jp)
    for jp in sorted(st.x):
        was = (previous_shards or {}).get(instance.jobs[jp].id) or {}
        kept_z = {instance.server_pos[s]: int(k) for s, k in was.items() if s in instance.server_pos and k > 0}
        if not (kept_z and st.place_job_shards(jp, kept_z)) and not st.place_job_shards(jp):
            repaired.append(jp)  # its shards no longer fit beside its workers: re-place it
            st.release(jp)
    forced_before = st.moved
    for jp in [j for j in job_order(instance) if j in repaired or j not in prev]:
        new, _ = greedy_job(st, jp)
        if new is not None:
            st.take(jp, new)
    new_jobs = sum(1 for jp in range(len(instance.jobs)) if jp not in prev)
    note = (
        f"replan(previous: {len(prev)} jobs kept, {len(repaired)} re-placed, {new_jobs} new, "
        f"{len(previous) - len(prev)} finished; budget {max_moves if max_moves is not None else 'none'}, "
        f"forced moves {st.moved - forced_before + vanished if repaired else vanished})"
    )
    return st, note
