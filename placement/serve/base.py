"""The service's state and the rules every request shares: the cluster and the holdings on the
durable store (:mod:`placement.serve.store`), reservations that end, the holdings' version, the
capacity check, and the instance a decision solves.  :class:`ServiceBase` is the base of the
concerns :class:`~placement.serve.service.Service` is made of (placing, learning, moving)."""

from __future__ import annotations

import dataclasses
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
from placement.model.records import Instance, Slowdown
from placement.serve.config import ServeConfig
from placement.serve.store import Store, estimates, holdings, jobs, pods
from placement.serve.telemetry import Prometheus

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
            if store.get_meta(conn, "version") is None:
                store.set_meta(conn, "version", "0")
        self.cluster = cluster
        self._doc = instance_to_dict(cluster)
        self.last_refit: float | None = None

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
            d = json.loads(doc)
            out[sid] = Slowdown(tuple(d["values"]), tuple(d["probs"]))
        return out

    def _decision_instance(
        self, jobs_: Sequence[Any], held: Mapping[str, Mapping[str, int]], belief: Mapping[str, Slowdown]
    ) -> Instance:
        used = per_server(held)
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
