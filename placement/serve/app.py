"""The HTTP face of :class:`~placement.serve.service.Service`: a FastAPI application (OpenAPI at
``/openapi.json``, docs at ``/docs``), JSON errors that name the field (4xx, never a traceback),
``/healthz`` and Prometheus' ``/metrics``; estimates refit on a period in the background."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

try:
    from fastapi import FastAPI, Request
    from fastapi.concurrency import run_in_threadpool
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
    from pydantic import BaseModel, ConfigDict, Field, field_validator
    from sqlalchemy.exc import DBAPIError
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InvalidInputError
from placement.serve.config import Conflict, NotFound
from placement.serve.extender import Extender, PodGroups
from placement.serve.service import Service
from placement.serve.telemetry import TelemetryError

__all__ = ["create_app", "PlaceRequest"]

log = logging.getLogger("placement.serve")


class PlaceRequest(BaseModel):
    """Jobs to place, in the instance format (``placement-instance/1``'s ``jobs`` entries)."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[dict[str, Any]] = Field(min_length=1, description="Job objects of the instance format.")
    explain: bool = Field(True, description="Add the explain rows of each placed job.")


def _rows_of(servers: frozenset[str], max_rows: int) -> type[BaseModel]:
    """The body of ``/v1/observations``: rows that must name ``servers`` (so that every
    problem comes in one answer)."""

    class ObservationRow(BaseModel):
        """One worker's iteration time: the columns of ``placement estimate --logs``."""

        model_config = ConfigDict(extra="forbid", strict=True)
        job: str = Field(min_length=1)
        worker: str | int
        server: str = Field(min_length=1, description="A server of the cluster.")
        iteration: int = Field(ge=0, lt=2**62)
        duration: float = Field(gt=0, allow_inf_nan=False, description="Seconds (any unit, the same for a job).")

        @field_validator("server")
        @classmethod
        def _known(cls, v: str) -> str:
            if v not in servers:
                raise ValueError(f"{v!r} is not a server of the cluster")
            return v

    class ObservationBatch(BaseModel):
        model_config = ConfigDict(extra="forbid")
        rows: list[ObservationRow] = Field(min_length=1, max_length=max_rows)

    return ObservationBatch


class GangRequest(BaseModel):
    """A gang's size (its PodGroup's ``minMember``) and its job's fields (compute_ms,
    gradient_mb, ...; not id or workers: the gang sets them)."""

    model_config = ConfigDict(extra="forbid")
    gang: str = Field(description="namespace/name of the PodGroup")
    min_member: int = Field(ge=1)
    job: dict[str, Any] = Field(default_factory=dict)


class MoveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: dict[str, int] = Field(description="{server: workers}: where the job runs after the move")
    stages: list[list[str]] | None = Field(None, description="A hybrid job's new stage matrix (pp rows of dp servers)")


class ReplanRequest(BaseModel):
    """What a controller knows that the service may not: each running job's iterations done,
    and how many jobs wait in its queue (the move margin then is the queued one)."""

    model_config = ConfigDict(extra="forbid")
    progress: dict[str, float] = Field(default_factory=dict, description="{job: iterations done}")
    queued: int = Field(0, ge=0, description="Jobs waiting in the caller's queue")


class Move(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job: str = Field(min_length=1)
    to: dict[str, int] = Field(description="{server: workers}: where the job runs after the move")
    stages: list[list[str]] | None = Field(None, description="A hybrid job's new stage matrix (pp rows of dp servers)")
    shards: dict[str, int] | None = Field(None, description="A parameter-server job's new shards (else they stay)")


class MovesRequest(BaseModel):
    """A re-plan's moves, applied together: one may take the GPUs another frees."""

    model_config = ConfigDict(extra="forbid")
    moves: list[Move] = Field(min_length=1)


class Placed(BaseModel):
    status: str
    method: str
    objective: float | None
    bound: float | None
    assignment: dict[str, dict[str, int]]
    shards: dict[str, dict[str, int]]
    stages: dict[str, list[list[str]]]
    unplaced: list[str]
    waiting: dict[str, float] = Field(
        default_factory=dict,
        description="Jobs placed but waiting for better GPUs (the patience rule), with when to offer them again",
    )
    jobs: dict[str, dict[str, Any]]
    reserved_until: float
    decision: int
    explanation: dict[str, dict[str, Any]] | None = None


class JobState(BaseModel):
    job: str
    state: Literal["reserved", "running", "finished", "released", "expired", "waiting"]


class Errors(BaseModel):
    errors: list[str]


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def create_app(service: Service, podgroups: PodGroups | None = None) -> FastAPI:
    """The application over ``service``; its metrics in a registry of its own; ``podgroups``
    reads a gang's size for the Kubernetes extender (else gangs are posted)."""
    extender = Extender(service, podgroups)
    reg = CollectorRegistry()
    requests = Counter("placement_requests", "HTTP requests", ["method", "path", "status"], registry=reg)
    latency = Histogram(
        "placement_request_seconds",
        "HTTP request latency",
        ["path"],
        buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        registry=reg,
    )
    decided = Counter("placement_decisions", "Placement decisions", ["outcome"], registry=reg)
    rows_in = Counter("placement_observation_rows", "Observation rows stored", registry=reg)
    age = Gauge("placement_estimates_age_seconds", "Seconds since the estimates were last refitted", registry=reg)
    age.set_function(lambda: float("nan") if service.last_refit is None else service.clock() - service.last_refit)
    refit_errors = Counter("placement_refit_errors", "Refits that failed", registry=reg)
    up = Gauge("placement_telemetry_up", "1 when the last read of the telemetry source succeeded", registry=reg)
    up.set_function(lambda: float("nan") if service.telemetry is None else float(service.telemetry_error is None))
    extended = Counter("placement_extender_calls", "kube-scheduler extender calls", ["verb", "result"], registry=reg)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async def refit_loop() -> None:
            while True:
                try:
                    await run_in_threadpool(service.refit)
                except Exception:  # keep serving from the last estimates; say so in /metrics
                    refit_errors.inc()
                    log.exception("refit failed")
                await asyncio.sleep(service.config.refit_every_s)

        task = asyncio.create_task(refit_loop())
        try:
            yield
        finally:
            task.cancel()

    app = FastAPI(
        title="placement serve",
        summary="Straggler-aware placement of gang-scheduled training jobs, live.",
        version="1",
        lifespan=lifespan,
    )

    @app.middleware("http")
    async def measure(request: Request, call_next: Any) -> Any:
        t0 = time.perf_counter()
        route = request.scope.get("route")
        try:
            response = await call_next(request)
        except Exception:  # never a traceback to the client
            log.exception("internal error on %s", request.url.path)
            response = JSONResponse({"errors": ["internal error; see the service's log"]}, status_code=500)
        route = request.scope.get("route") or route
        path = getattr(route, "path", "unmatched")
        requests.labels(request.method, path, str(response.status_code)).inc()
        latency.labels(path).observe(time.perf_counter() - t0)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(_r: Request, e: RequestValidationError) -> JSONResponse:
        errs = [f"{_path(tuple(x.get('loc', ())))}: {x.get('msg')}" for x in e.errors()]
        return JSONResponse({"errors": errs}, status_code=422)

    @app.exception_handler(InvalidInputError)
    async def bad_input(_r: Request, e: InvalidInputError) -> JSONResponse:
        return JSONResponse({"errors": [f"body.{p}" for p in e.problems]}, status_code=422)

    @app.exception_handler(DBAPIError)
    async def database_down(_r: Request, e: DBAPIError) -> JSONResponse:
        # the database went away (restarted, unreachable): fail cleanly, the next request retries
        log.warning("state database error: %s", e.orig)
        return JSONResponse(
            {"errors": [f"the state database is unavailable ({type(e.orig).__name__}); nothing was changed, retry"]},
            status_code=503,
        )

    @app.exception_handler(TelemetryError)
    async def telemetry_down(_r: Request, e: TelemetryError) -> JSONResponse:
        return JSONResponse({"errors": [f"{e}; the estimates stay as they were"]}, status_code=503)

    @app.exception_handler(Conflict)
    async def conflict(_r: Request, e: Conflict) -> JSONResponse:
        return JSONResponse({"errors": [str(e)]}, status_code=409)

    @app.exception_handler(NotFound)
    async def not_found(_r: Request, e: NotFound) -> JSONResponse:
        return JSONResponse({"errors": [str(e)]}, status_code=404)

    Batch = _rows_of(frozenset(service.cluster.server_by_id), service.config.max_rows)
    errors: dict[int | str, dict[str, Any]] = {422: {"model": Errors}, 409: {"model": Errors}, 404: {"model": Errors}}

    @app.post("/v1/place", response_model=Placed, responses=errors, summary="Place jobs and reserve their GPUs")
    def place(req: PlaceRequest) -> dict[str, Any]:
        try:
            out = service.place({"jobs": req.jobs}, with_explanation=req.explain)
        except Exception:
            decided.labels("refused").inc()
            raise
        decided.labels("placed" if out["assignment"] else "none_placed").inc()
        return out

    @app.post(
        "/v1/jobs/{job_id:path}/start", response_model=JobState, responses=errors, summary="A reserved job started"
    )
    def start(job_id: str) -> dict[str, Any]:
        return service.start(job_id)

    @app.post("/v1/jobs/{job_id:path}/finish", response_model=JobState, responses=errors, summary="A job finished")
    def finish(job_id: str) -> dict[str, Any]:
        return service.finish(job_id)

    @app.post(
        "/v1/jobs/{job_id:path}/release", response_model=JobState, responses=errors, summary="Give a job's GPUs back"
    )
    def release(job_id: str) -> dict[str, Any]:
        return service.release(job_id)

    @app.get("/v1/replan", summary="Moves of running jobs that repay their restart (priced as the simulator does)")
    def replan() -> dict[str, Any]:
        return service.replan()

    @app.post(
        "/v1/replan",
        responses=errors,
        summary="The same, with the running jobs' progress and the caller's queue length",
    )
    def replan_with(body: ReplanRequest) -> dict[str, Any]:
        return service.replan(body.progress, body.queued)

    @app.post("/v1/jobs/{job_id:path}/move", responses=errors, summary="Apply a move: the job now holds `to`")
    def move(job_id: str, body: MoveRequest) -> dict[str, Any]:
        return service.move(job_id, body.to, body.stages)

    @app.post("/v1/moves", responses=errors, summary="Apply a re-plan's moves together (all or none)")
    def moves(body: MovesRequest) -> dict[str, Any]:
        return service.apply_moves([m.model_dump(exclude_none=True) for m in body.moves])

    @app.get("/v1/state", summary="Held GPUs (one assignment), jobs, free GPUs, estimates and their age")
    def state() -> dict[str, Any]:
        return service.state()

    def observe(batch: Any) -> dict[str, Any]:
        out = service.ingest([r.model_dump() for r in batch.rows])
        rows_in.inc(out["accepted"])
        return out

    # the body's model checks the rows' servers against this cluster (a class made here: the
    # annotation is set, not written, under ``from __future__ import annotations``)
    observe.__annotations__ = {"batch": Batch, "return": dict[str, Any]}
    app.post("/v1/observations", responses=errors, summary="Per-worker iteration rows (estimate --logs columns)")(
        observe
    )

    @app.post("/v1/estimates/refit", summary="Refit every server's estimate now")
    def refit() -> dict[str, Any]:
        return service.refit()

    @app.post(
        "/v1/gangs", responses=errors, summary="A gang's size (its PodGroup's minMember) and job, for the extender"
    )
    def gang(body: GangRequest) -> dict[str, Any]:
        return extender.register_gang(body.model_dump(exclude_unset=True))

    @app.post("/scheduler/filter", summary="kube-scheduler extender: filter (ExtenderArgs -> ExtenderFilterResult)")
    def scheduler_filter(args: dict[str, Any]) -> dict[str, Any]:
        out = extender.filter(args)
        extended.labels("filter", "error" if out["Error"] else "ok").inc()
        return out

    @app.post("/scheduler/prioritize", summary="kube-scheduler extender: prioritize (ExtenderArgs -> HostPriorityList)")
    def scheduler_prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
        extended.labels("prioritize", "ok").inc()
        return extender.prioritize(args)

    @app.get("/healthz", summary="Liveness and the estimates' age")
    def healthz() -> JSONResponse:
        import sqlalchemy as sa

        body: dict[str, Any] = {"status": "ok", "database": "ok"}
        try:
            with service.store.read() as conn:
                conn.execute(sa.text("SELECT 1"))
        except Exception as e:  # the database is down: not healthy
            body.update(status="unavailable", database=f"{type(e).__name__}")
            return JSONResponse(body, status_code=503)
        last = service.last_refit
        body["estimates_age_s"] = None if last is None else service.clock() - last
        if service.telemetry_error is not None:
            body["status"] = "degraded"
            body["reason"] = (
                f"telemetry unavailable since {service.telemetry_failed_since:.0f}: {service.telemetry_error}; "
                "placing on the last estimates"
            )
        elif last is not None and service.clock() - last > 3 * service.config.refit_every_s:
            body["status"] = "degraded"
            body["reason"] = "estimates are stale: the last refit is older than three periods"
        return JSONResponse(body)

    @app.get("/metrics", summary="Prometheus exposition format")
    def metrics() -> Response:
        return Response(generate_latest(reg), media_type=CONTENT_TYPE_LATEST)

    return app
