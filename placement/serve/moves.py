"""Moves of the running jobs: ``GET /v1/replan`` proposes those that repay their restart,
priced as the simulator prices them (:func:`placement.simulation.replanning.amortized_prices`,
the one home of the rule), and ``POST /v1/jobs/{id}/move`` applies one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

try:
    import sqlalchemy as sa
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InvalidInputError
from placement.evaluation.validate import validate
from placement.formats.instance import instance_from_dict
from placement.serve.base import ServiceBase
from placement.serve.config import Conflict, NotFound
from placement.serve.store import holdings, jobs, observations
from placement.simulation.replanning import amortized_prices
from placement.solving.driver import solve

__all__ = ["Moves"]


class Moves(ServiceBase):
    """Priced moves (a part of :class:`~placement.serve.service.Service`)."""

    def replan(self) -> dict[str, Any]:
        """Moves of the running jobs that repay their restart, priced as the simulator prices
        them (:func:`placement.simulation.replanning.amortized_prices`: a job's restart spread
        over the iterations it has left, plus the move margin of its expected time), searched
        with ``previous`` = where they run; nothing is applied.  A job's iterations left are
        its spec's ``iterations`` less the highest iteration its pushed rows reached; a running
        job without ``iterations`` cannot be priced and stays.  Returns each move with its
        believed saving per iteration and price, and the jobs kept where they are."""
        now = self.clock()
        with self.store.write() as conn:
            self._expire(conn, now)
            held = self.store.held(conn)
            rows = conn.execute(sa.select(jobs.c.id, jobs.c.spec, jobs.c.stages).where(jobs.c.state == "running")).all()
            done = dict(
                conn.execute(
                    sa.select(observations.c.job, sa.func.max(observations.c.iteration)).group_by(observations.c.job)
                ).all()
            )
            belief = self.believed(conn)
        specs, left, stages, kept = [], {}, {}, {}
        for jid, spec, st in rows:
            d = json.loads(spec)
            n = d.get("iterations")
            if not isinstance(n, int) or isinstance(n, bool):
                kept[jid] = "no iterations in its spec: its remaining work is unknown"
                continue
            left[jid] = max(1, n - (int(done.get(jid, -1)) + 1))
            specs.append({**d, "iterations": left[jid]})
            if st:
                stages[jid] = tuple(tuple(r) for r in json.loads(st))
        if not specs:
            return {"moves": [], "kept": kept, "priced": 0}
        movable = {j: held[j] for j in left}
        others = {j: a for j, a in held.items() if j not in movable}
        inst = self._decision_instance(
            instance_from_dict({**self._doc, "jobs": specs}, source="the running jobs").jobs, others, belief
        )
        price, stay, was = amortized_prices(
            inst, movable, left, self.config.restart_s, self.config.move_margin, None, stages
        )
        kept.update(dict.fromkeys(stay, "cannot repay a move: within its price of its best placement"))
        search = {j: a for j, a in movable.items() if j not in stay}
        if not search:
            return {"moves": [], "kept": kept, "priced": len(movable)}
        # the jobs that cannot repay a move keep their GPUs and leave the search (the simulator's movers scope)
        inst = self._decision_instance(
            tuple(j for j in inst.jobs if j.id in search), {**others, **{j: movable[j] for j in stay}}, belief
        )
        sol = solve(
            inst,
            self.config.method,
            time_limit_s=self.config.decision_time_limit_s,
            seed=self.config.seed,
            previous=search,
            restart_cost={j: price[j] for j in search},
            clock=self.config.decision_clock,
            prove=False,
        )
        moves = []
        for jid, before in sorted(search.items()):
            after = sol.assignment.get(jid)
            if after is None or dict(after) == before:
                continue
            saving = was[jid] - sol.jobs[jid].expected_iteration_ms
            moves.append(
                {
                    "job": jid,
                    "from": before,
                    "to": dict(after),
                    "expected_iteration_ms_now": was[jid],
                    "expected_iteration_ms_after": sol.jobs[jid].expected_iteration_ms,
                    "iterations_left": left[jid],
                    "price_ms_per_iteration": price[jid],
                    "repaid_alone": saving >= price[jid],
                    **({"stages": [list(r) for r in sol.stages[jid]]} if jid in sol.stages else {}),
                }
            )
        return {"moves": moves, "kept": kept, "priced": len(movable)}

    def move(self, job_id: str, to: Any, stages: Any = None) -> dict[str, Any]:
        """Apply a move: running job ``job_id`` now holds ``to`` ({server: workers}, the same
        number of workers; a hybrid job also gives its new ``stages``; a parameter-server job's
        shards stay where they are) instead of what it held.  The placement is checked by the
        validator (GPU types, allowed servers, CPU and memory, stage shape: 422 naming each
        problem) and refused with 409 if it would give a GPU twice."""
        if (
            not isinstance(to, Mapping)
            or not to
            or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in to.values())
        ):
            raise InvalidInputError(["to must be an object {server: workers} of positive integers"])
        unknown = [sid for sid in to if sid not in self.cluster.server_by_id]
        if unknown:
            raise InvalidInputError([f"to.{sid} is not a server of the cluster" for sid in unknown])
        with self.lock, self.store.write() as conn:
            self.store.decision_lock(conn)
            self._expire(conn, self.clock())
            row = conn.execute(sa.select(jobs.c.state, jobs.c.spec).where(jobs.c.id == job_id)).first()
            if row is None:
                raise NotFound(f"no job {job_id!r}")
            if row.state != "running":
                raise Conflict(f"job {job_id!r} is {row.state}; only a running job moves")
            held = self.store.held(conn)
            shards = dict(
                conn.execute(
                    sa.select(holdings.c.server, holdings.c.shards).where(
                        holdings.c.job_id == job_id, holdings.c.shards > 0
                    )
                ).all()
            )
            job = instance_from_dict({**self._doc, "jobs": [json.loads(row.spec)]}, source=f"job {job_id!r}").jobs[0]
            inst = self._decision_instance([job], {j: a for j, a in held.items() if j != job_id}, {})
            problems = [
                str(v)
                for v in validate(
                    inst,
                    {job_id: dict(to)},
                    shards={job_id: shards} if shards else None,
                    stages={job_id: stages} if stages is not None else None,
                )
                if v.kind != "gpus"  # capacity: the holdings' check below, a conflict
            ]
            if problems:
                raise InvalidInputError(problems)
            conn.execute(holdings.delete().where(holdings.c.job_id == job_id))
            conn.execute(
                holdings.insert(),
                [
                    {"job_id": job_id, "server": sid, "workers": int(to.get(sid, 0)), "shards": int(shards.get(sid, 0))}
                    for sid in sorted(set(to) | set(shards))
                ],
            )
            if stages is not None:
                conn.execute(jobs.update().where(jobs.c.id == job_id).values(stages=json.dumps(stages)))
            self._bump(conn)
            try:
                self._check_holdings_fit(conn, self.cluster)
            except InvalidInputError as e:  # rolls the move back
                raise Conflict("; ".join(e.problems)) from None
        return {"job": job_id, "state": "running", "holds": dict(to)}
