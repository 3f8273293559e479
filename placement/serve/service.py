"""The loop live, without HTTP: what ``placement serve`` does on each request, on the durable
state of :mod:`placement.serve.store`.

- :meth:`Service.place`: the jobs given (the instance format's job objects) on the GPUs no
  reserved or running job holds, each server believed at its latest estimate; one
  ``best_effort`` decision through :func:`placement.solve` (validated, every figure from the
  evaluator), the jobs it places reserved until started, released or ``reservation_s`` passes.
- :meth:`Service.start`, :meth:`Service.finish`, :meth:`Service.release`: a job's life.
- :meth:`Service.ingest`: per-worker iteration rows (``job, worker, server, iteration,
  duration``: the format ``placement estimate --logs`` reads), stored once acknowledged.
- :meth:`Service.refit`: each server's distribution from the rows of the last
  ``estimate_window_s``, by the estimator of ``placement estimate`` (the same function).

A decision is taken under a process lock and written only if no other decision (of this
process or of another replica on the same database) changed the holdings since it read them;
else it is taken again.  Bad input raises :class:`~placement.errors.InvalidInputError` naming
each field; a state conflict raises :class:`Conflict`, an unknown job :class:`NotFound`.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import sqlalchemy as sa
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InstanceError, InvalidInputError, PlacementError
from placement.estimate.logs import LogData, estimate_from_ratios, ratios
from placement.evaluation.explain import explain
from placement.formats.instance import instance_from_dict, instance_to_dict
from placement.model.records import Instance, Slowdown, Solution
from placement.serve.store import ACTIVE, Store, decisions, estimates, holdings, jobs, observations, pods
from placement.serve.telemetry import Prometheus, TelemetryError, looks
from placement.simulation.config import DECISION_TIME_LIMIT_S, MOVE_MARGIN
from placement.simulation.replanning import amortized_prices
from placement.solving.driver import solve

__all__ = ["ServeConfig", "Service", "Conflict", "NotFound", "ROW_FIELDS", "DEFAULT_JOB", "gang_job"]

ROW_FIELDS = ("job", "worker", "server", "iteration", "duration")
"""The fields of an observation row (the columns of ``placement estimate --logs``)."""


DEFAULT_JOB: dict[str, float] = {"compute_ms": 100.0, "gradient_mb": 100.0}
"""A job's per-iteration compute and gradient when the scheduler that hands it over does not
say (a pod's annotations, a Slurm job's comment)."""


def gang_job(job_id: str, groups: int, per_group: int, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The instance format's job of a gang that a scheduler hands over: ``groups`` units (pods,
    Slurm nodes) of ``per_group`` GPUs each, a unit's GPUs on one server.  One GPU a unit: a
    data-parallel job of ``groups`` workers; more: a hybrid job of ``tp = per_group`` (so a
    unit's GPUs share a server), ``pp = 1``, ``dp = groups``.  ``fields`` adds the model
    (:data:`DEFAULT_JOB` where it is silent)."""
    job: dict[str, Any] = {**DEFAULT_JOB, **fields, "id": job_id, "workers": groups * per_group}
    if per_group > 1:
        job.update(architecture="hybrid", tp=per_group, pp=1, dp=groups, microbatches=1, activation_mb=0)
    return job


class Conflict(PlacementError):
    """The request does not fit the state (a job in the wrong state, an id already held)."""


class NotFound(PlacementError):
    """No such job."""


@dataclass(frozen=True)
class ServeConfig:
    """How the service decides (``placement serve`` options)."""

    method: str = "auto"
    decision_time_limit_s: float = DECISION_TIME_LIMIT_S
    """The simulator's per-decision limit, so that a decision here is one the simulator makes."""
    decision_clock: str = "work"
    """``work``: a decision stops after the same steps on any machine (repeatable)."""
    seed: int = 0
    reservation_s: float = 600.0
    """A placed job's GPUs are held this long unless it starts (or is released)."""
    refit_every_s: float = 600.0
    estimate_window_s: float = 86_400.0
    max_rows: int = 100_000
    """Observation rows in one request at most."""
    max_jobs: int = 1_000
    """Jobs in one placement request at most."""
    restart_s: float = 300.0
    """Seconds a moved job loses (the simulator's default ``restart_s``): what a move must repay."""
    move_margin: float = MOVE_MARGIN["estimated"]
    """A move must also beat this share of the job's expected iteration time (the simulator's
    default with estimated knowledge: estimates refitted from logs differ by a few percent)."""
    retries: int = 8
    """Tries of a decision in all (see :meth:`Service.place`)."""
    optimistic: int = 2
    """Tries that solve outside a write transaction (SQLite) before one solves inside it."""


class Service:
    """The service's logic on a :class:`Store`; ``clock`` gives the time (seconds)."""

    def __init__(
        self,
        store: Store,
        cluster: Instance | None = None,
        config: ServeConfig | None = None,
        clock: Callable[[], float] = time.time,
        telemetry: Prometheus | None = None,
    ) -> None:
        self.store = store
        self.config = config or ServeConfig()
        self.telemetry = telemetry
        self.telemetry_error: str | None = None
        self.telemetry_failed_since: float | None = None
        self.clock = clock
        self.lock = threading.Lock()
        with store.write() as conn:
            stored = store.get_meta(conn, "cluster")
            if cluster is None:
                if stored is None:
                    raise InvalidInputError(["no cluster: give one (the state database holds none yet)"])
                cluster = instance_from_dict(_loads(stored), source=f"the cluster in {store.url}")
            cluster = cluster.replace(jobs=())
            self._check_holdings_fit(conn, cluster)
            store.set_meta(conn, "cluster", store.dumps(instance_to_dict(cluster)))
            if store.get_meta(conn, "version") is None:
                store.set_meta(conn, "version", "0")
        self.cluster = cluster
        self._doc = instance_to_dict(cluster)
        self.decisions_made = 0
        self.last_refit: float | None = None

    # ------------------------------------------------------------------ state
    def _check_holdings_fit(self, conn: sa.Connection, cluster: Instance) -> None:
        """The held GPUs of the stored state fit ``cluster`` (a restart on another cluster
        file must not silently give GPUs twice)."""
        held = self.store.held(conn)
        per: dict[str, int] = {}
        for a in held.values():
            for sid, k in a.items():
                per[sid] = per.get(sid, 0) + k
        problems = []
        for sid, k in sorted(per.items()):
            s = cluster.server_by_id.get(sid)
            if s is None:
                problems.append(f"the state holds {k} GPU(s) on server {sid!r}, which the cluster does not have")
            elif s.used_gpus + k > s.gpus:
                problems.append(
                    f"the state holds {k} GPU(s) on server {sid!r}, which has {s.gpus - s.used_gpus} free in the cluster"
                )
        if problems:
            raise InvalidInputError(problems, source=self.store.url)

    def _expire(self, conn: sa.Connection, now: float) -> list[str]:
        """Reservations past their time end (their GPUs are freed)."""
        gone = list(
            conn.execute(sa.select(jobs.c.id).where(jobs.c.state == "reserved", jobs.c.reserved_until < now)).scalars()
        )
        if gone:
            conn.execute(jobs.update().where(jobs.c.id.in_(gone)).values(state="expired", ended_at=now))
            conn.execute(holdings.delete().where(holdings.c.job_id.in_(gone)))
            conn.execute(pods.delete().where(pods.c.gang.in_(gone)))
            self._bump(conn)
        return gone

    def _bump(self, conn: sa.Connection) -> None:
        v = int(self.store.get_meta(conn, "version", lock=True) or 0)
        self.store.set_meta(conn, "version", str(v + 1))

    def believed(self, conn: sa.Connection) -> dict[str, Slowdown]:
        """Each server's latest estimate (servers never estimated: the cluster's own law)."""
        out = {}
        for sid, doc in conn.execute(sa.select(estimates.c.server, estimates.c.slowdown)):
            d = _loads(doc)
            out[sid] = Slowdown(tuple(d["values"]), tuple(d["probs"]))
        return out

    def _decision_instance(
        self, jobs_: Sequence[Any], held: Mapping[str, Mapping[str, int]], belief: Mapping[str, Slowdown]
    ) -> Instance:
        used: dict[str, int] = {}
        for a in held.values():
            for sid, k in a.items():
                used[sid] = used.get(sid, 0) + k
        servers = tuple(
            dataclasses.replace(
                s,
                used_gpus=s.used_gpus + used.get(s.id, 0),
                slowdown=belief.get(s.id, s.slowdown) if self.cluster.scenarios is None else s.slowdown,
            )
            for s in self.cluster.servers
        )
        return self.cluster.replace(
            name=f"{self.cluster.name}@serve", servers=servers, jobs=tuple(jobs_), admission="best_effort"
        )

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
                        now, version, held, belief = self._read(conn, parsed)
                        inst, sol, answer = self._decide(parsed, held, belief, with_explanation)
                        self._write(conn, body, parsed, sol, answer, now)
                    return answer
                with self.store.write() as conn:
                    now, version, held, belief = self._read(conn, parsed)
                inst, sol, answer = self._decide(parsed, held, belief, with_explanation)
                with self.store.write() as conn:
                    if self.store.get_meta(conn, "version", lock=True) != version:
                        continue  # another decision wrote meanwhile: take it again
                    self._write(conn, body, parsed, sol, answer, now)
                return answer
            raise Conflict(f"the holdings changed under {self.config.retries} decisions in a row; try again")

    def _read(
        self, conn: sa.Connection, parsed: Instance
    ) -> tuple[float, str | None, dict[str, dict[str, int]], dict[str, Slowdown]]:
        """What a decision reads: the time, the holdings' version, the holdings and the
        estimates (after ending the reservations that are due); a job already held refused."""
        ids = [j.id for j in parsed.jobs]
        now = self.clock()
        self._expire(conn, now)
        taken = conn.execute(
            sa.select(jobs.c.id, jobs.c.state).where(jobs.c.id.in_(ids), jobs.c.state.in_(ACTIVE))
        ).all()
        if taken:
            raise Conflict(
                "; ".join(
                    f"jobs[{ids.index(j)}].id {j!r} is already {state}: release or finish it first"
                    for j, state in taken
                )
            )
        return now, self.store.get_meta(conn, "version"), self.store.held(conn), self.believed(conn)

    def _decide(
        self,
        parsed: Instance,
        held: Mapping[str, Mapping[str, int]],
        belief: Mapping[str, Slowdown],
        with_explanation: bool,
    ) -> tuple[Instance, Solution, dict[str, Any]]:
        inst = self._decision_instance(parsed.jobs, held, belief)
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
        return inst, sol, self._answer(inst, sol, with_explanation)

    def _write(
        self, conn: sa.Connection, body: Any, parsed: Instance, sol: Solution, answer: dict[str, Any], now: float
    ) -> None:
        """Record the decision and reserve what it placed (``answer`` gains the decision's id
        and the reservations' end)."""
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
            if j.id not in sol.assignment:
                continue
            conn.execute(holdings.delete().where(holdings.c.job_id == j.id))  # an ended id placed again
            conn.execute(jobs.delete().where(jobs.c.id == j.id))
            conn.execute(
                jobs.insert().values(
                    id=j.id,
                    spec=self.store.dumps(body["jobs"][ids.index(j.id)]),
                    state="reserved",
                    stages=self.store.dumps(answer["stages"][j.id]) if j.id in answer["stages"] else None,
                    placed_at=now,
                    reserved_until=until,
                    decision_id=rid,
                )
            )
            shards = sol.shards.get(j.id, {})
            conn.execute(
                holdings.insert(),
                [
                    {
                        "job_id": j.id,
                        "server": sid,
                        "workers": int(sol.assignment[j.id].get(sid, 0)),
                        "shards": int(shards.get(sid, 0)),
                    }
                    for sid in sorted(set(sol.assignment[j.id]) | set(shards))
                ],
            )
        if sol.assignment:
            self._bump(conn)
        self._check_holdings_fit(conn, self.cluster)  # never one GPU twice: else all of it rolls back
        self.decisions_made += 1

    def _answer(self, inst: Instance, sol: Solution, with_explanation: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": sol.status.value,
            "method": sol.method,
            "objective": sol.objective,
            "bound": sol.bound,
            "assignment": {j: dict(a) for j, a in sol.assignment.items()},
            "shards": {j: dict(a) for j, a in sol.shards.items()},
            "stages": {j: [list(r) for r in m] for j, m in sol.stages.items()},
            "unplaced": list(sol.unplaced),
            "jobs": {j: dataclasses.asdict(r) for j, r in sol.jobs.items()},
        }
        if with_explanation and sol.assignment:
            out["explanation"] = explain(inst, sol, jobs=list(sol.assignment))
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
                values["started_at"] = now
                values["reserved_until"] = None
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
        return self._transition(job_id, ACTIVE, "released", frees=True)

    # ------------------------------------------------------------------ moves
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
            d = _loads(spec)
            n = d.get("iterations")
            if not isinstance(n, int) or isinstance(n, bool):
                kept[jid] = "no iterations in its spec: its remaining work is unknown"
                continue
            left[jid] = max(1, n - (int(done.get(jid, -1)) + 1))
            specs.append({**d, "iterations": left[jid]})
            if st:
                stages[jid] = tuple(tuple(r) for r in _loads(st))
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
                }
            )
        return {"moves": moves, "kept": kept, "priced": len(movable)}

    def move(self, job_id: str, to: Any) -> dict[str, Any]:
        """Apply a move: running job ``job_id`` now holds ``to`` ({server: workers}, the same
        number of workers) instead of what it held; refused if that would give a GPU twice."""
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
            state = conn.execute(sa.select(jobs.c.state).where(jobs.c.id == job_id)).scalar_one_or_none()
            if state is None:
                raise NotFound(f"no job {job_id!r}")
            if state != "running":
                raise Conflict(f"job {job_id!r} is {state}; only a running job moves")
            now_held = self.store.held(conn).get(job_id, {})
            if sum(to.values()) != sum(now_held.values()):
                raise InvalidInputError(
                    [f"to places {sum(to.values())} workers; job {job_id!r} has {sum(now_held.values())}"]
                )
            conn.execute(holdings.delete().where(holdings.c.job_id == job_id))
            conn.execute(
                holdings.insert(), [{"job_id": job_id, "server": sid, "workers": int(k)} for sid, k in to.items()]
            )
            self._bump(conn)
            try:
                self._check_holdings_fit(conn, self.cluster)
            except InvalidInputError as e:  # rolls the move back
                raise Conflict("; ".join(e.problems)) from None
        return {"job": job_id, "state": "running", "holds": dict(to)}

    def state(self) -> dict[str, Any]:
        """The held GPUs as one ``assignment`` (reserved and running), each job's state, the
        free GPUs per server, and the estimates with their age."""
        now = self.clock()
        with self.store.write() as conn:
            self._expire(conn, now)
            held = self.store.held(conn)
            rows = conn.execute(
                sa.select(jobs.c.id, jobs.c.state, jobs.c.reserved_until, jobs.c.started_at, jobs.c.stages).where(
                    jobs.c.state.in_(ACTIVE)
                )
            ).all()
            est = conn.execute(sa.select(estimates)).all()
            n_obs = conn.execute(sa.select(sa.func.count()).select_from(observations)).scalar_one()
        used: dict[str, int] = {}
        for a in held.values():
            for sid, k in a.items():
                used[sid] = used.get(sid, 0) + k
        fitted = max((r.fitted_at for r in est), default=None)
        return {
            "cluster": self.cluster.name,
            "assignment": held,
            "jobs": {
                r.id: {
                    "state": r.state,
                    "reserved_until": r.reserved_until,
                    "started_at": r.started_at,
                    **({"stages": _loads(r.stages)} if r.stages else {}),
                }
                for r in rows
            },
            "free_gpus": {s.id: s.gpus - s.used_gpus - used.get(s.id, 0) for s in self.cluster.servers},
            "estimates": {
                r.server: {**_loads(r.slowdown), "samples": r.samples, "fitted_at": r.fitted_at} for r in est
            },
            "estimates_age_s": None if fitted is None else now - fitted,
            "observations": int(n_obs),
        }

    # ------------------------------------------------------------------ observations
    def ingest(self, rows: Any) -> dict[str, Any]:
        """Store per-worker iteration rows (all or none: every bad row named by its index)."""
        if not isinstance(rows, list) or not rows:
            raise InvalidInputError(["rows must be a non-empty list of {job, worker, server, iteration, duration}"])
        if len(rows) > self.config.max_rows:
            raise InvalidInputError([f"rows has {len(rows)} entries; at most {self.config.max_rows} a request"])
        problems: list[str] = []
        clean = []
        servers = self.cluster.server_by_id
        for i, r in enumerate(rows):
            where = f"rows[{i}]"
            if not isinstance(r, Mapping):
                problems.append(f"{where} must be an object with {', '.join(ROW_FIELDS)}")
                continue
            bad = [f"{where}.{k} is required" for k in ROW_FIELDS if k not in r]
            extra = sorted(set(r) - set(ROW_FIELDS))
            bad += [f"{where}.{k} is not a field of a row" for k in extra]
            job, worker, server = r.get("job"), r.get("worker"), r.get("server")
            if "job" in r and (not isinstance(job, str) or not job):
                bad.append(f"{where}.job must be a non-empty string")
            if "worker" in r and (isinstance(worker, bool) or not isinstance(worker, (str, int)) or worker == ""):
                bad.append(f"{where}.worker must be a non-empty string or an integer")
            if "server" in r and (not isinstance(server, str) or server not in servers):
                bad.append(f"{where}.server {server!r} is not a server of the cluster")
            it, d = r.get("iteration"), r.get("duration")
            if "iteration" in r and (isinstance(it, bool) or not isinstance(it, int) or it < 0 or it >= 2**62):
                bad.append(f"{where}.iteration must be an integer >= 0, got {it!r}")
            if "duration" in r and (
                isinstance(d, bool) or not isinstance(d, (int, float)) or not math.isfinite(d) or d <= 0
            ):
                bad.append(f"{where}.duration must be a finite number > 0, got {d!r}")
            if bad:
                problems += bad
                continue
            assert isinstance(it, int) and isinstance(d, (int, float))
            clean.append((job, str(worker), server, it, float(d)))
        if problems:
            raise InvalidInputError(problems, source="the rows")
        now = self.clock()
        with self.store.write() as conn:
            self.store.insert_rows(
                conn,
                observations,
                [
                    {"job": j, "worker": w, "server": s, "iteration": it, "duration": d, "received_at": now}
                    for j, w, s, it, d in clean
                ],
            )
        return {"accepted": len(clean)}

    def refit(self) -> dict[str, Any]:
        """Each server's distribution from the rows of the last ``estimate_window_s`` and, with
        a telemetry source, its GPUs' clocks over the same window (the estimator of
        ``placement estimate``, :func:`placement.estimate.logs.estimate_from_ratios`); servers
        with neither get the fleet's.  Replaces the stored estimates; when the telemetry
        source fails it raises :class:`~placement.serve.telemetry.TelemetryError` and the
        estimates stay as they were."""
        now = self.clock()
        start = now - self.config.estimate_window_s
        with self.store.read() as conn:
            rows = conn.execute(
                sa.select(
                    observations.c.job, observations.c.server, observations.c.iteration, observations.c.duration
                ).where(observations.c.received_at >= start)
            ).all()
        parts = []
        if rows:
            log = LogData(
                np.array([r[0] for r in rows]),
                np.array([r[1] for r in rows]),
                np.array([r[2] for r in rows], dtype=np.int64),
                np.array([r[3] for r in rows], dtype=float),
            )
            parts.append(ratios(log))
        seen: dict[str, int] = {}
        if self.telemetry is not None:
            try:
                clocks, reasons = self.telemetry.series(start, now)
            except TelemetryError as e:
                self.telemetry_error = str(e)
                self.telemetry_failed_since = self.telemetry_failed_since or now
                raise
            self.telemetry_error, self.telemetry_failed_since = None, None
            tj, ts, tit, tr, seen = looks(
                clocks, reasons, set(self.cluster.server_by_id), self.telemetry.hosts, start, self.telemetry.step_s
            )
            parts.append((tj, ts, tit, tr))
        looked = sum(len(p[0]) for p in parts)
        out = {"servers": 0, "rows": len(rows), "telemetry_looks": looked - (len(parts[0][0]) if rows else 0), **seen}
        if not looked:
            self.last_refit = now
            return {**out, "fitted_at": now}
        job, server, it, r = (np.concatenate([p[k] for p in parts]) for k in range(4))
        per, fleet = estimate_from_ratios(job, server, it, r, servers=[s.id for s in self.cluster.servers])
        with self.store.write() as conn:
            conn.execute(estimates.delete())
            conn.execute(
                estimates.insert(),
                [
                    {
                        "server": s.id,
                        "slowdown": self.store.dumps(_dist(per[s.id].slowdown if s.id in per else fleet)),
                        "samples": int(per[s.id].samples) if s.id in per else 0,
                        "fitted_at": now,
                    }
                    for s in self.cluster.servers
                ],
            )
        self.last_refit = now
        return {**out, "servers": sum(1 for e in per.values() if e.samples), "fitted_at": now}


def _dist(s: Slowdown) -> dict[str, list[float]]:
    return {"values": [float(v) for v in s.values], "probs": [float(p) for p in s.probs]}


def _loads(s: str) -> Any:
    import json

    return json.loads(s)
