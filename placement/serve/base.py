"""The service's state and the rules every request shares: the cluster and the holdings on the
durable store (:mod:`placement.serve.store`), reservations that end, the holdings' version, the
capacity check, and the instance a decision solves.  :class:`ServiceBase` is the base of the
concerns :class:`~placement.serve.service.Service` is made of (placing, learning, moving)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    import sqlalchemy as sa
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InvalidInputError
from placement.formats.instance import instance_from_dict, instance_to_dict
from placement.model.records import Instance, Job, Slowdown
from placement.serve.config import ServeConfig
from placement.serve.store import Store, estimates, holdings, jobs, pods
from placement.serve.telemetry import Prometheus
from placement.simulation.belief import Belief
from placement.simulation.decisions import Floors, believed_job, decision_instance, forecaster_from_dict

__all__ = ["ServiceBase", "per_server"]


def per_server(held: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """GPUs held on each server, summed over the jobs of ``held`` ({job: {server: workers}})."""
    out: dict[str, int] = {}
    for a in held.values():
        for sid, k in a.items():
            out[sid] = out.get(sid, 0) + k
    return out


class ServiceBase:
    """The service's state on a :class:`Store`; ``clock`` gives the time (seconds)."""

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
                cluster = instance_from_dict(json.loads(stored), source=f"the cluster in {store.url}")
            cluster = cluster.replace(jobs=())
            self._check_holdings_fit(conn, cluster)
            store.set_meta(conn, "cluster", store.dumps(instance_to_dict(cluster)))
            for key, value in (("version", "0"), ("starts", "0"), ("forecaster", "null")):
                if store.get_meta(conn, key) is None:  # made once here: replicas then only update them
                    store.set_meta(conn, key, value)
        self.cluster = cluster
        self._doc = instance_to_dict(cluster)
        self.last_refit: float | None = None
        self.floors = Floors(cluster)
        """Each job shape's straggler-free best on the idle cluster (the patience rule)."""

    # ------------------------------------------------------------------ state
    def _check_holdings_fit(self, conn: sa.Connection, cluster: Instance) -> None:
        """The held GPUs of the stored state fit ``cluster`` (a restart on another cluster
        file must not silently give GPUs twice)."""
        problems = []
        for sid, k in sorted(per_server(self.store.held(conn)).items()):
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
        """Reservations past their time end (their GPUs are freed), and so do jobs that wait
        for better GPUs and were not offered again within ``reservation_s`` of the end of their
        patience (the caller gave them up)."""
        gone = list(
            conn.execute(sa.select(jobs.c.id).where(jobs.c.state == "reserved", jobs.c.reserved_until < now)).scalars()
        )
        stale = sa.and_(jobs.c.state == "waiting", jobs.c.reserved_until < now - self.config.reservation_s)
        conn.execute(jobs.update().where(stale).values(state="expired", ended_at=now))
        if gone:
            conn.execute(jobs.update().where(jobs.c.id.in_(gone)).values(state="expired", ended_at=now))
            conn.execute(holdings.delete().where(holdings.c.job_id.in_(gone)))
            conn.execute(pods.delete().where(pods.c.gang.in_(gone)))
            self._bump(conn)
        return gone

    def _bump(self, conn: sa.Connection) -> None:
        v = int(self.store.get_meta(conn, "version", lock=True) or 0)
        self.store.set_meta(conn, "version", str(v + 1))

    def estimates(self, conn: sa.Connection) -> dict[str, Slowdown]:
        """Each server's latest stored estimate, in cluster order (none before the first refit)."""
        out = {}
        for sid, doc in conn.execute(sa.select(estimates.c.server, estimates.c.slowdown)):
            d = json.loads(doc)
            out[sid] = Slowdown(tuple(d["values"]), tuple(d["probs"]))
        return {s.id: out[s.id] for s in self.cluster.servers if s.id in out}

    def belief(self, conn: sa.Connection) -> Belief:
        """What decisions believe now (:class:`~placement.simulation.belief.Belief`, the
        simulator's): with ``oracle`` knowledge the cluster file's laws; with ``estimated`` the
        stored estimates and forecaster (the cluster file's laws before the first refit)."""
        b = Belief(
            self.cluster,
            knowledge=self.config.knowledge,
            plan_by=self.config.plan_by,
            truthful=True,
            mean_episode_s=None,
        )
        if self.config.knowledge == "estimated":
            laws = self.estimates(conn)
            if not laws:
                b.update({s.id: s.slowdown for s in self.cluster.servers})
                return b
            stored = self.store.get_meta(conn, "forecaster") if self.config.plan_by == "forecast" else None
            b.update(laws, forecaster_from_dict(json.loads(stored), laws) if stored else None)
        return b

    def _decision_instance(
        self,
        jobs_: Sequence[Job],
        held: Mapping[str, Mapping[str, int]],
        belief: Belief,
        iterations: Mapping[str, int] | None = None,
    ) -> Instance:
        """The instance a decision solves (:func:`placement.simulation.decisions.decision_instance`,
        the simulator's): ``jobs_`` as ``belief`` sees them (``iterations`` to go instead of
        their own), on the GPUs neither the cluster file nor ``held`` takes."""
        used = per_server(held)
        free = [s.gpus - s.used_gpus - used.get(s.id, 0) for s in self.cluster.servers]
        left = iterations or {}
        return decision_instance(
            self.cluster,
            belief,
            free,
            [believed_job(j, belief, left.get(j.id)) for j in jobs_],
            name=f"{self.cluster.name}@serve",
            objective=self.cluster.objective,
        )

    def _started(self, conn: sa.Connection, now: float) -> dict[str, Any]:
        """A job's columns once it starts: re-plans see running jobs in the order they started."""
        seq = int(self.store.get_meta(conn, "starts", lock=True) or 0) + 1
        self.store.set_meta(conn, "starts", str(seq))
        return {"state": "running", "started_at": now, "reserved_until": None, "started_seq": seq}
