"""The loop live, without HTTP: what ``placement serve`` does on each request, on the durable
state of :mod:`placement.serve.store`.  :class:`Service` is made of its concerns: the state and
shared rules (:mod:`.base`), placing and a job's life (here), learning (:mod:`.learning`:
iteration rows in, estimates out), moving (:mod:`.moves`).

- :meth:`Service.place`: the jobs given (the instance format's job objects) on the GPUs no
  reserved or running job holds, each server believed at its latest estimate; one
  ``best_effort`` decision through :func:`placement.solve` (validated, every figure from the
  evaluator), the jobs it places reserved until started, released or ``reservation_s`` passes.
- :meth:`Service.start`, :meth:`Service.finish`, :meth:`Service.release`: a job's life.
- :meth:`Service.state`: the holdings as one assignment, the jobs, the free GPUs, the estimates.

Decisions take turns (within a process, a lock; across replicas, see :meth:`Service.place`).
Bad input raises :class:`~placement.errors.InvalidInputError` naming each field; a state
conflict raises :class:`~placement.serve.config.Conflict`, an unknown job
:class:`~placement.serve.config.NotFound`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

try:
    import sqlalchemy as sa
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InstanceError, InvalidInputError, PlacementError
from placement.evaluation import evaluate
from placement.evaluation.explain import explain
from placement.formats.instance import instance_from_dict
from placement.model.records import Instance, Solution
from placement.serve.base import per_server
from placement.serve.config import DEFAULT_JOB, Conflict, NotFound, ServeConfig, gang_job
from placement.serve.learning import ROW_FIELDS, Learning
from placement.serve.moves import Moves
from placement.serve.store import ACTIVE, decisions, estimates, holdings, jobs, observations, pods
from placement.simulation.belief import Belief
from placement.simulation.decisions import waits_until
from placement.simulation.running import running_on, trace_job
from placement.solving.driver import solve


@dataclasses.dataclass(frozen=True)
class Read:
    """What a placement decision read besides the holdings: the belief, when each job of the
    request that waits was first offered, and whether any job holds GPUs."""

    belief: Belief
    first_offer: dict[str, float]
    holding: bool


__all__ = ["ServeConfig", "Service", "Conflict", "NotFound", "ROW_FIELDS", "DEFAULT_JOB", "gang_job"]


class Service(Learning, Moves):
    """The service's logic on a :class:`~placement.serve.store.Store` (see the module)."""

    # ------------------------------------------------------------------ placing
    def parse_jobs(self, body: Any) -> Instance:
        """The request's jobs, checked by the instance loader (every problem with its path)."""
        if not isinstance(body, Mapping) or not isinstance(body.get("jobs"), list) or not body["jobs"]:
            raise InvalidInputError(["jobs must be a non-empty list of jobs in the instance format"])
        if len(body["jobs"]) > self.config.max_jobs:
            raise InvalidInputError([f"jobs has {len(body['jobs'])} entries; at most {self.config.max_jobs}"])
        try:
            return instance_from_dict({**self._doc, "jobs": body["jobs"]}, source="the request")
        except InstanceError as e:
            raise InvalidInputError(list(e.problems), source="the request") from None

    def place(self, body: Any, *, with_explanation: bool = True) -> dict[str, Any]:
        """Place the request's jobs; reserve what is placed.  Returns the solution format's
        ``assignment``, ``shards``, ``stages``, ``unplaced``, ``jobs``, ``objective`` and
        ``bound`` for the jobs given, the decision's id, the reservations' end and, with
        ``with_explanation``, the ``explain`` rows of each placed job.

        Decisions of one process take turns (a lock).  Across replicas: on SQLite a decision
        first reads, solves with no transaction open (rows keep flowing in) and writes only if
        no decision wrote meanwhile (the holdings' version), and after ``optimistic`` such tries
        solves inside its write transaction (``BEGIN IMMEDIATE``: one writer), so it always ends;
        on PostgreSQL every decision holds a transaction-level advisory lock from its read to its
        write, so replicas' decisions take turns there too.  Only decisions take GPUs (other
        writes free them), so a decision that read the holdings under the lock cannot give one
        twice; the write also checks the capacity, and rolls back if it would."""
        parsed = self.parse_jobs(body)
        with self.lock:
            for attempt in range(self.config.retries):
                locked = self.store.has_decision_lock or attempt >= self.config.optimistic
                if locked:
                    with self.store.write() as conn:
                        self.store.decision_lock(conn)
                        now, version, held, read = self._read(conn, parsed)
                        inst, sol, answer = self._decide(parsed, held, read, now, with_explanation)
                        self._write(conn, body, parsed, read, answer, now)
                    return answer
                with self.store.write() as conn:
                    now, version, held, read = self._read(conn, parsed)
                inst, sol, answer = self._decide(parsed, held, read, now, with_explanation)
                with self.store.write() as conn:
                    if self.store.get_meta(conn, "version", lock=True) != version:
                        continue  # another decision wrote meanwhile: take it again
                    self._write(conn, body, parsed, read, answer, now)
                return answer
            raise Conflict(f"the holdings changed under {self.config.retries} decisions in a row; try again")

    def _read(self, conn: sa.Connection, parsed: Instance) -> tuple[float, str | None, dict[str, dict[str, int]], Read]:
        """What a decision reads: the time, the holdings' version, the holdings, the belief and
        when each waiting job was first offered (after ending the reservations that are due);
        a job already held refused."""
        ids = [j.id for j in parsed.jobs]
        now = self.clock()
        self._expire(conn, now)
        rows = conn.execute(sa.select(jobs.c.id, jobs.c.state, jobs.c.placed_at).where(jobs.c.id.in_(ids))).all()
        taken = [(j, state) for j, state, _ in rows if state in ACTIVE]
        if taken:
            raise Conflict(
                "; ".join(
                    f"jobs[{ids.index(j)}].id {j!r} is already {state}: release or finish it first"
                    for j, state in taken
                )
            )
        held = self.store.held(conn)
        read = Read(self.belief(conn), {j: at for j, state, at in rows if state == "waiting"}, bool(held))
        return now, self.store.get_meta(conn, "version"), held, read

    def _decide(
        self,
        parsed: Instance,
        held: Mapping[str, Mapping[str, int]],
        read: Read,
        now: float,
        with_explanation: bool,
    ) -> tuple[Instance, Solution, dict[str, Any]]:
        inst = self._decision_instance(parsed.jobs, held, read.belief)
        sol = solve(
            inst,
            self.config.method,
            time_limit_s=self.config.decision_time_limit_s,
            seed=self.config.seed,
            clock=self.config.decision_clock,
            prove=False,
        )
        if sol.status.value == "error":
            raise PlacementError(f"{self.config.method} failed: {sol.stats.get('message')}")
        waiting = self._patience(parsed, inst, sol, read, now)
        return inst, sol, self._answer(inst, sol, waiting, with_explanation)

    def _patience(self, parsed: Instance, inst: Instance, sol: Solution, read: Read, now: float) -> dict[str, float]:
        """The placed jobs that wait for better GPUs, and until when (the simulator's patience
        rule, :func:`placement.simulation.decisions.waits_until`): each in the request's order,
        while jobs hold GPUs (they will free some), the jobs placed before it counting."""
        out: dict[str, float] = {}
        holding = read.holding
        pos = inst.server_pos
        for job in parsed.jobs:
            if job.id not in sol.assignment:
                continue
            if self.config.patience > 0 and holding and job.iterations is not None:
                tj = trace_job(job)
                r = running_on(
                    self.cluster,
                    tj,
                    {pos[s]: int(k) for s, k in sol.assignment[job.id].items()},
                    {pos[s]: int(k) for s, k in sol.shards.get(job.id, {}).items()},
                    [[pos[s] for s in row] for row in sol.stages.get(job.id, ())],
                )
                first = read.first_offer.get(job.id, now)
                until = waits_until(first, self.config.patience, tj.iterations, r.ideal_ms, self.floors(job))
                if until is not None and now < until:
                    out[job.id] = until
                    continue
            holding = True
        return out

    def _write(
        self, conn: sa.Connection, body: Any, parsed: Instance, read: Read, answer: dict[str, Any], now: float
    ) -> None:
        """Record the decision, reserve what it placed and note when each waiting job was
        first offered (``answer`` gains the decision's id and the reservations' end)."""
        ids = [j.id for j in parsed.jobs]
        until = now + self.config.reservation_s
        answer["reserved_until"] = until
        key = conn.execute(
            decisions.insert().values(at=now, kind="place", request=self.store.dumps(body), response="")
        ).inserted_primary_key
        assert key is not None
        rid = int(key[0])
        answer["decision"] = rid
        conn.execute(decisions.update().where(decisions.c.id == rid).values(response=self.store.dumps(answer)))
        for j in parsed.jobs:
            placed = answer["assignment"].get(j.id)
            waits = answer["waiting"].get(j.id)
            if placed is None and waits is None:  # not placed (one that waited keeps its first offer)
                continue
            conn.execute(holdings.delete().where(holdings.c.job_id == j.id))  # an ended id placed again
            conn.execute(jobs.delete().where(jobs.c.id == j.id))
            spec = self.store.dumps(body["jobs"][ids.index(j.id)])
            if waits is not None:  # no GPUs held: the time it was first offered such a placement
                first = read.first_offer.get(j.id, now)
                conn.execute(
                    jobs.insert().values(
                        id=j.id, spec=spec, state="waiting", placed_at=first, reserved_until=waits, decision_id=rid
                    )
                )
                continue
            conn.execute(
                jobs.insert().values(
                    id=j.id,
                    spec=spec,
                    state="reserved",
                    stages=self.store.dumps(answer["stages"][j.id]) if j.id in answer["stages"] else None,
                    placed_at=now,
                    reserved_until=until,
                    decision_id=rid,
                )
            )
            shards = answer["shards"].get(j.id, {})
            conn.execute(
                holdings.insert(),
                [
                    {
                        "job_id": j.id,
                        "server": sid,
                        "workers": int(placed.get(sid, 0)),
                        "shards": int(shards.get(sid, 0)),
                    }
                    for sid in sorted(set(placed) | set(shards))
                ],
            )
        if answer["assignment"]:
            self._bump(conn)
        self._check_holdings_fit(conn, self.cluster)  # never one GPU twice: else all of it rolls back

    def _answer(
        self, inst: Instance, sol: Solution, waiting: Mapping[str, float], with_explanation: bool
    ) -> dict[str, Any]:
        """The solution format's entries for the jobs placed (less those that wait: they are
        in ``waiting``, with the time their patience ends); with jobs waiting, the objective
        is the evaluator's on what is placed, and no bound is given (it was the decision's)."""
        keep = {j: a for j, a in sol.assignment.items() if j not in waiting}
        shards = {j: dict(a) for j, a in sol.shards.items() if j in keep}
        stages = {j: [list(r) for r in m] for j, m in sol.stages.items() if j in keep}
        objective, bound = sol.objective, sol.bound
        if waiting:
            objective = evaluate(
                inst, keep, shards, {j: tuple(tuple(r) for r in m) for j, m in stages.items()}
            ).objective
            bound = None
        out: dict[str, Any] = {
            "status": sol.status.value,
            "method": sol.method,
            "objective": objective,
            "bound": bound,
            "assignment": {j: dict(a) for j, a in keep.items()},
            "shards": shards,
            "stages": stages,
            "unplaced": list(sol.unplaced),
            "waiting": dict(waiting),
            "jobs": {j: dataclasses.asdict(r) for j, r in sol.jobs.items() if j in keep},
        }
        if with_explanation and keep:
            sub = sol
            if waiting:
                sub = dataclasses.replace(
                    sol,
                    assignment=keep,
                    shards={j: a for j, a in sol.shards.items() if j in keep},
                    stages={j: m for j, m in sol.stages.items() if j in keep},
                )
            out["explanation"] = explain(inst, sub, jobs=list(keep))
        return out

    # ------------------------------------------------------------------ a job's life
    def _transition(self, job_id: str, allowed: Sequence[str], to: str, *, frees: bool) -> dict[str, Any]:
        now = self.clock()
        with self.store.write() as conn:
            self._expire(conn, now)
            row = conn.execute(sa.select(jobs.c.state).where(jobs.c.id == job_id)).scalar_one_or_none()
            if row is None:
                raise NotFound(f"no job {job_id!r}")
            if row == to:
                return {"job": job_id, "state": to}  # said twice: the same answer
            if row not in allowed:
                raise Conflict(f"job {job_id!r} is {row}; it can be {to} only when {' or '.join(allowed)}")
            values: dict[str, Any] = {"state": to}
            if to == "running":
                values.update(self._started(conn, now))
            else:
                values["ended_at"] = now
            conn.execute(jobs.update().where(jobs.c.id == job_id).values(**values))
            if frees:
                conn.execute(holdings.delete().where(holdings.c.job_id == job_id))
                conn.execute(pods.delete().where(pods.c.gang == job_id))  # a gang's pods' nodes
                self._bump(conn)
        return {"job": job_id, "state": to}

    def start(self, job_id: str) -> dict[str, Any]:
        return self._transition(job_id, ("reserved",), "running", frees=False)

    def finish(self, job_id: str) -> dict[str, Any]:
        return self._transition(job_id, ACTIVE, "finished", frees=True)

    def release(self, job_id: str) -> dict[str, Any]:
        return self._transition(job_id, (*ACTIVE, "waiting"), "released", frees=True)

    def state(self) -> dict[str, Any]:
        """The held GPUs as one ``assignment`` (reserved and running), each job's state (those
        that wait for better GPUs too, with when their patience ends), the free GPUs per
        server, and the estimates with their age."""
        now = self.clock()
        with self.store.write() as conn:
            self._expire(conn, now)
            held = self.store.held(conn)
            rows = conn.execute(
                sa.select(
                    jobs.c.id, jobs.c.state, jobs.c.placed_at, jobs.c.reserved_until, jobs.c.started_at, jobs.c.stages
                ).where(jobs.c.state.in_((*ACTIVE, "waiting")))
            ).all()
            est = conn.execute(sa.select(estimates)).all()
            n_obs = conn.execute(sa.select(sa.func.count()).select_from(observations)).scalar_one()
        used = per_server(held)
        fitted = max((r.fitted_at for r in est), default=None)
        return {
            "cluster": self.cluster.name,
            "assignment": held,
            "jobs": {
                r.id: (
                    {"state": r.state, "first_offered_at": r.placed_at, "waits_until": r.reserved_until}
                    if r.state == "waiting"
                    else {
                        "state": r.state,
                        "reserved_until": r.reserved_until,
                        "started_at": r.started_at,
                        **({"stages": json.loads(r.stages)} if r.stages else {}),
                    }
                )
                for r in rows
            },
            "free_gpus": {s.id: s.gpus - s.used_gpus - used.get(s.id, 0) for s in self.cluster.servers},
            "estimates": {
                r.server: {**json.loads(r.slowdown), "samples": r.samples, "fitted_at": r.fitted_at} for r in est
            },
            "estimates_age_s": None if fitted is None else now - fitted,
            "observations": int(n_obs),
        }
