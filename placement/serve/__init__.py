"""``placement serve``: the proactive loop as a long-running service that schedulers call
(placements reserved and released, iteration rows pushed, estimates refitted on a period), its
state durable in SQLite (default) or any SQLAlchemy database.  See ``placement/serve/README.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placement.model.records import Instance
    from placement.serve.config import ServeConfig
    from placement.serve.telemetry import Prometheus

__all__ = ["serve", "create_app", "Service", "ServeConfig", "Store", "DEFAULT_STATE"]

DEFAULT_STATE = "placement-state.sqlite"
"""The state file ``placement serve`` uses when no ``--state`` is given."""


def serve(
    cluster: Instance | None,
    state: str = DEFAULT_STATE,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    config: ServeConfig | None = None,
    kubernetes: bool = False,
    telemetry: Prometheus | None = None,
) -> None:
    """Run the service until interrupted (uvicorn); with ``kubernetes``, the extender reads
    gangs' sizes from their PodGroups with the Kubernetes client; with ``telemetry``, the
    estimates also learn from the GPUs' DCGM metrics in Prometheus."""
    import uvicorn

    from placement.serve.app import create_app
    from placement.serve.extender import KubernetesPodGroups
    from placement.serve.service import Service
    from placement.serve.store import Store

    service = Service(Store.open(state), cluster, config, telemetry=telemetry)
    app = create_app(service, KubernetesPodGroups() if kubernetes else None)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from placement.serve.app import create_app

        return create_app
    if name == "Service":
        from placement.serve.service import Service

        return Service
    if name == "ServeConfig":
        from placement.serve.config import ServeConfig

        return ServeConfig
    if name == "Store":
        from placement.serve.store import Store

        return Store
    raise AttributeError(name)
