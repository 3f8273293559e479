"""Moves of the running jobs: ``GET /v1/replan`` proposes those that repay their restart,
priced as the simulator prices them (:func:`placement.simulation.replanning.amortized_prices`,
the one home of the rule), and ``POST /v1/jobs/{id}/move`` applies one."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

try:
    import sqlalchemy as sa
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InvalidInputError
from placement.evaluation.validate import validate
from placement.formats.instance import instance_from_dict
from placement.serve.base import ServiceBase, per_server
from placement.serve.config import Conflict, NotFound
from placement.serve.store import holdings, jobs, observations
from placement.simulation.replanning import Mover, price_movers, search_moves

__all__ = ["Moves"]


class Moves(ServiceBase):
    """Priced moves (a part of :class:`~placement.serve.service.Service`)."""

    def replan(self, progress: Any = None, queued: Any = 0) -> dict[str, Any]:
        """Moves of the running jobs that repay their restart, by the simulator's rule
        (:func:`placement.simulation.replanning.price_movers` and ``search_moves``: a job's
        restart spread over the iterations it has left plus the move margin of its expected
        time, the jobs that cannot repay a move of their own kept out of the search); nothing
        is applied.  A job's iterations done are ``progress[job]`` when the caller says
        (a controller that knows them), else the highest iteration its pushed rows reached
        plus one; a running job without ``iterations`` in its spec cannot be priced and stays,
        and so does one still restarting after a move.  ``queued``: how many jobs wait in the
        caller's queue (the margin is :attr:`ServeConfig.queued_move_margin` then).  Returns
        each move with its believed saving per iteration and price, and the jobs kept."""
        progress = self._check_replan(progress, queued)
        now = self.clock()
        with self.store.write() as conn:
            self._expire(conn, now)
            held = self.store.held(conn)
            rows = conn.execute(
                sa.select(jobs.c.id, jobs.c.spec, jobs.c.stages, jobs.c.paused_until)
                .where(jobs.c.state == "running")
                .order_by(jobs.c.started_seq.asc().nulls_first(), jobs.c.started_at, jobs.c.id)
            ).all()
            done = dict(
                conn.execute(
                    sa.select(observations.c.job, sa.func.max(observations.c.iteration)).group_by(observations.c.job)
                ).all()
            )
            shards_of: dict[str, dict[str, int]] = {}
            for jid, sid, k in conn.execute(
                sa.select(holdings.c.job_id, holdings.c.server, holdings.c.shards).where(holdings.c.shards > 0)
            ):
                shards_of.setdefault(jid, {})[sid] = int(k)
            belief = self.belief(conn)
        pos = self.cluster.server_pos
        specs, left, movers, kept = [], {}, [], {}
        for jid, spec, st, paused in rows:
            d = json.loads(spec)
            n = d.get("iterations")
            if not isinstance(n, int) or isinstance(n, bool):
                kept[jid] = "no iterations in its spec: its remaining work is unknown"
                continue
            if paused is not None and paused > now:
                kept[jid] = f"restarting after a move until t={paused:g} s"
                continue
            did = progress.get(jid, int(done.get(jid, -1)) + 1)
            left[jid] = max(1, math.ceil(n - did))
            specs.append(d)
            movers.append(
                Mover(
                    jid,
                    dict(sorted(held[jid].items(), key=lambda kv: pos[kv[0]])),
                    dict(sorted(shards_of.get(jid, {}).items(), key=lambda kv: pos[kv[0]])),
                    tuple(tuple(r) for r in json.loads(st)) if st else (),
                )
            )
        if not movers:
            return {"moves": [], "kept": kept, "priced": 0}
        others = {j: a for j, a in held.items() if j not in left}
        inst = self._decision_instance(
            instance_from_dict({**self._doc, "jobs": specs}, source="the running jobs").jobs, others, belief, left
        )
        used = per_server(held)
        priced = price_movers(
            inst,
            movers,
            left,
            [s.gpus - s.used_gpus - used.get(s.id, 0) for s in self.cluster.servers],
            restart_s=self.config.restart_s,
            margin=self.config.margin(queued=queued > 0),
            scope="movers",
        )
        searched = {m.id for m in priced.movers}
        kept.update(
            {
                m.id: "cannot repay a move: within its price of its best placement"
                for m in movers
                if m.id not in searched
            }
        )
        if priced.settled or not priced.movers:
            return {"moves": [], "kept": kept, "priced": len(movers)}
        found = search_moves(
            priced.instance,
            priced.movers,
            priced.restart,
            method=self.config.method,
            time_limit_s=self.config.decision_time_limit_s,
            seed=self.config.seed,
            prove=False,
            clock=self.config.decision_clock,
        )
        if found is None:
            return {"moves": [], "kept": kept, "priced": len(movers)}
        sol, moved = found
        was, price = priced.was_ms, priced.restart
        moves = []
        for jid in moved:
            saving = was[jid] - sol.jobs[jid].expected_iteration_ms
            moves.append(
                {
                    "job": jid,
                    "from": dict(held[jid]),
                    "to": dict(sol.assignment[jid]),
                    "expected_iteration_ms_now": was[jid],
                    "expected_iteration_ms_after": sol.jobs[jid].expected_iteration_ms,
                    "iterations_left": left[jid],
                    "price_ms_per_iteration": price.get(jid, 0.0),
                    "repaid_alone": saving >= price.get(jid, 0.0),
                    **({"shards": dict(sol.shards[jid])} if jid in sol.shards else {}),
                    **({"stages": [list(r) for r in sol.stages[jid]]} if jid in sol.stages else {}),
                }
            )
        return {"moves": moves, "kept": kept, "priced": len(movers)}

    @staticmethod
    def _check_replan(progress: Any, queued: Any) -> dict[str, float]:
        problems = []
        if progress is None:
            progress = {}
        if not isinstance(progress, Mapping):
            problems.append("progress must be an object {job: iterations done}")
            progress = {}
        for jid, v in progress.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                problems.append(f"progress.{jid} must be a finite number >= 0, got {v!r}")
        if isinstance(queued, bool) or not isinstance(queued, int) or queued < 0:
            problems.append(f"queued must be an integer >= 0, got {queued!r}")
        if problems:
            raise InvalidInputError(problems)
        return {str(j): float(v) for j, v in progress.items()}

    def move(self, job_id: str, to: Any, stages: Any = None) -> dict[str, Any]:
        """Apply one move (:meth:`apply_moves` of one)."""
        self.apply_moves([{"job": job_id, "to": to, **({"stages": stages} if stages is not None else {})}])
        return {"job": job_id, "state": "running", "holds": dict(to)}

    def apply_moves(self, moves: Any) -> dict[str, Any]:
        """Apply moves together, all or none (a re-plan's moves may take the GPUs each other
        frees): each running job ``job`` now holds ``to`` ({server: workers}, the same number
        of workers; a hybrid job also gives its new ``stages``, a parameter-server job may give
        its new ``shards``, else they stay) instead of what it held.  The placements are checked
        by the validator (GPU types, allowed servers, CPU and memory, stage shape: 422 naming
        each problem) and refused with 409 if they would give a GPU twice.  A moved job
        restarts there: no re-plan moves it again for ``restart_s``."""
        wanted = self._check_moves(moves)
        ids = list(wanted)
        with self.lock, self.store.write() as conn:
            self.store.decision_lock(conn)
            now = self.clock()
            self._expire(conn, now)
            rows = {
                r.id: r for r in conn.execute(sa.select(jobs.c.id, jobs.c.state, jobs.c.spec).where(jobs.c.id.in_(ids)))
            }
            missing = [j for j in ids if j not in rows]
            if missing:
                raise NotFound("; ".join(f"no job {j!r}" for j in missing))
            idle = [
                f"job {j!r} is {rows[j].state}; only a running job moves" for j in ids if rows[j].state != "running"
            ]
            if idle:
                raise Conflict("; ".join(idle))
            held = self.store.held(conn)
            shards_now: dict[str, dict[str, int]] = {}
            for jid, sid, k in conn.execute(
                sa.select(holdings.c.job_id, holdings.c.server, holdings.c.shards).where(
                    holdings.c.job_id.in_(ids), holdings.c.shards > 0
                )
            ):
                shards_now.setdefault(jid, {})[sid] = int(k)
            parsed = instance_from_dict(
                {**self._doc, "jobs": [json.loads(rows[j].spec) for j in ids]}, source="the moved jobs"
            ).jobs
            inst = self._decision_instance(
                parsed, {j: a for j, a in held.items() if j not in wanted}, self.belief(conn)
            )
            shards = {j: dict(m.get("shards") or shards_now.get(j, {})) for j, m in wanted.items()}
            stages = {j: m["stages"] for j, m in wanted.items() if m.get("stages") is not None}
            at = {j: i for i, j in enumerate(ids)}
            problems = [
                f"moves[{at[v.job]}]: {v}" if v.job in at else str(v)
                for v in validate(
                    inst,
                    {j: dict(m["to"]) for j, m in wanted.items()},
                    shards={j: z for j, z in shards.items() if z} or None,
                    stages=stages or None,
                )
                # capacity: the holdings' check below, a conflict; a deadline: a running job's
                # whole iterations are not what it has left (the re-plan priced those)
                if v.kind not in ("gpus", "deadline")
            ]
            if problems:
                raise InvalidInputError(problems)
            for j, m in wanted.items():
                to, z = m["to"], shards[j]
                conn.execute(holdings.delete().where(holdings.c.job_id == j))
                conn.execute(
                    holdings.insert(),
                    [
                        {"job_id": j, "server": sid, "workers": int(to.get(sid, 0)), "shards": int(z.get(sid, 0))}
                        for sid in sorted(set(to) | set(z))
                    ],
                )
                moved: dict[str, Any] = {"paused_until": now + self.config.restart_s}  # it restarts there
                if j in stages:
                    moved["stages"] = json.dumps(stages[j])
                conn.execute(jobs.update().where(jobs.c.id == j).values(**moved))
            self._bump(conn)
            try:
                self._check_holdings_fit(conn, self.cluster)
            except InvalidInputError as e:  # rolls the moves back
                raise Conflict("; ".join(e.problems)) from None
        return {"moved": ids, "paused_until": now + self.config.restart_s}

    def _check_moves(self, moves: Any) -> dict[str, dict[str, Any]]:
        """The moves by job, every problem named with its index."""
        if not isinstance(moves, list) or not moves:
            raise InvalidInputError(["moves must be a non-empty list of {job, to[, stages, shards]}"])
        problems: list[str] = []
        out: dict[str, dict[str, Any]] = {}
        servers = self.cluster.server_by_id

        def placement(x: Any, where: str) -> bool:
            if (
                not isinstance(x, Mapping)
                or not x
                or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in x.values())
            ):
                problems.append(f"{where} must be an object {{server: count}} of positive integers")
                return False
            bad = [f"{where}.{sid} is not a server of the cluster" for sid in x if sid not in servers]
            problems.extend(bad)
            return not bad

        for i, m in enumerate(moves):
            where = f"moves[{i}]"
            if not isinstance(m, Mapping) or not isinstance(m.get("job"), str) or not m.get("job"):
                problems.append(f"{where}.job must name a running job")
                continue
            extra = sorted(set(m) - {"job", "to", "stages", "shards"})
            problems += [f"{where}.{k} is not a field of a move" for k in extra]
            ok = placement(m.get("to"), f"{where}.to")
            if m.get("shards") is not None:
                ok = placement(m["shards"], f"{where}.shards") and ok
            if m["job"] in out:
                problems.append(f"{where}.job {m['job']!r} moves twice")
            elif ok:
                out[m["job"]] = dict(m)
        if problems:
            raise InvalidInputError(problems)
        return out
