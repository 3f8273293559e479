"""``python -m placement.bench serve``: ``placement serve`` under load and under faults, a real
service process on loopback (stopped by the pid this benchmark started).

- **Load** (per cluster size): ``running`` jobs placed and started, each of their workers
  pushing one iteration row every ``row_period_s`` (in batches every 0.1 s), while placement
  requests arrive at ``place_per_s`` (each placed job released at once, so the cluster does
  not fill); for ``duration_s``.  Reported: rows offered and stored (none lost), the ingestion
  lag (how far behind its schedule the last row was acknowledged), placement latency (median,
  p99, max); then a burst of ``burst`` placement requests at once: all answered, the time the
  last took, and no GPU held twice.
- **Faults** (:func:`kill_rounds`): ``kill -9`` at random points of a load of placements,
  transitions and rows, ``rounds`` times; after each restart every acknowledged decision,
  transition and row is in the state and no GPU is held twice.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["bench_serve", "kill_rounds", "start_service", "check_state", "SIZES"]

SIZES = (256, 1024, 4096)
"""GPUs of the clusters the load runs on (8-GPU servers, 16 per rack)."""

ORDER = {"reserved": 0, "running": 1, "finished": 2, "released": 2, "expired": 2}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_service(
    state: Path, cluster: str | None, *more: str, timeout_s: float = 120.0
) -> tuple[subprocess.Popen[bytes], str]:
    """A ``placement serve`` process on a free loopback port, once it answers ``/healthz``."""
    import httpx

    port = _port()
    cmd = [sys.executable, "-c", "from placement.cli.entry import main; main()", "serve"]
    cmd += ([cluster] if cluster else []) + ["--state", str(state), "--port", str(port), *more]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"placement serve exited {proc.returncode}: {err}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"placement serve did not answer /healthz within {timeout_s:g} s")


def stop_service(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def check_state(state: Path, cluster: Any, acked: dict[str, Any]) -> list[str]:
    """What the state lacks of what was acknowledged, and the servers held over their GPUs."""
    problems = []
    with sqlite3.connect(state) as db:
        decisions = {r[0] for r in db.execute("SELECT id FROM decisions")}
        problems += [f"decision {d} acknowledged, not in the state" for d in sorted(acked["decisions"] - decisions)]
        states = dict(db.execute("SELECT id, state FROM jobs"))
        for j, s in acked["jobs"].items():
            if j not in states or ORDER[states[j]] < ORDER[s]:
                problems.append(f"job {j} acknowledged {s}, in the state {states.get(j)}")
        counts = dict(db.execute("SELECT job, count(*) FROM observations GROUP BY job"))
        for j, n in acked["rows"].items():
            if counts.get(j) != n:
                problems.append(f"rows of {j}: {n} acknowledged, {counts.get(j, 0)} in the state")
        held = db.execute(
            "SELECT h.server, sum(h.workers) FROM holdings h JOIN jobs j ON j.id = h.job_id "
            "WHERE j.state IN ('reserved', 'running') GROUP BY h.server"
        ).fetchall()
    for sid, n in held:
        s = cluster.server_by_id[sid]
        if s.used_gpus + n > s.gpus:
            problems.append(f"server {sid}: {n} GPUs held of {s.gpus - s.used_gpus}")
    return problems


def _churn(url: str, rng: random.Random, first: int, acked: dict[str, Any], stop: threading.Event) -> int:
    """Place, start, finish and push rows until the service goes away; record what was
    acknowledged.  Returns the next job number."""
    import httpx

    k = first
    with httpx.Client(base_url=url, timeout=10) as c:
        while not stop.is_set():
            try:
                jid = f"j{k}"
                body = {"jobs": [{"id": jid, "workers": rng.randint(1, 8), "compute_ms": 100, "gradient_mb": 50}]}
                r = c.post("/v1/place", json={**body, "explain": False})
                if r.status_code == 200:
                    out = r.json()
                    acked["decisions"].add(out["decision"])
                    if jid in out["assignment"]:
                        acked["jobs"][jid] = "reserved"
                rows = [
                    {"job": f"r{k}", "worker": w, "server": f"s{w}", "iteration": i, "duration": 1.0}
                    for i in range(20)
                    for w in range(4)
                ]
                if c.post("/v1/observations", json={"rows": rows}).status_code == 200:
                    acked["rows"][f"r{k}"] = len(rows)
                live = [j for j, s in acked["jobs"].items() if s in ("reserved", "running")]
                if live:
                    j = rng.choice(live)
                    verb = "start" if acked["jobs"][j] == "reserved" else "finish"
                    r = c.post(f"/v1/jobs/{j}/{verb}")
                    if r.status_code == 200:
                        acked["jobs"][j] = r.json()["state"]
                k += 1
            except httpx.HTTPError:  # the service went away mid-request: what was in flight
                return k + 1  # may be in the state unacknowledged, so its ids are not used again
    return k


def kill_rounds(state: Path, rounds: int, seed: int = 0, cluster: str = "demo") -> dict[str, Any]:
    """``kill -9`` the service at random points of a churn, ``rounds`` times, restarting it on
    the same state; after each, :func:`check_state`.  Returns the counts acknowledged and the
    problems found (none expected)."""
    from placement.instances import resolve_instance

    inst = resolve_instance(cluster)
    rng = random.Random(seed)
    acked: dict[str, Any] = {"decisions": set(), "jobs": {}, "rows": {}}
    problems: list[str] = []
    k = 0
    for r in range(rounds):
        proc, url = start_service(
            state, cluster if r == 0 else None, "--decision-time-limit", "0.05", "--reservation-s", "86400"
        )
        stop = threading.Event()
        out: dict[str, int] = {}
        t = threading.Thread(target=lambda u=url, k0=k, o=out, s=stop: o.update(k=_churn(u, rng, k0, acked, s)))
        t.start()
        time.sleep(rng.uniform(0.5, 2.0))
        os.kill(proc.pid, signal.SIGKILL)  # the process this function started, and no other
        proc.wait(timeout=30)
        t.join(timeout=60)
        stop.set()
        k = out.get("k", k + 1000)
        problems += [f"round {r}: {p}" for p in check_state(state, inst, acked)]
    return {
        "rounds": rounds,
        "decisions": len(acked["decisions"]),
        "jobs": len(acked["jobs"]),
        "row_batches": len(acked["rows"]),
        "rows": sum(acked["rows"].values()),
        "problems": problems,
    }


def _cluster_file(gpus: int, folder: Path) -> Path:
    from placement.formats import dump_instance
    from placement.instances.generate import generate

    servers = gpus // 8
    racks = max(1, servers // 16)
    inst = generate(
        racks=racks, servers_per_rack=servers // racks, gpus_per_server=8, jobs=1, seed=1, name=f"serve{gpus}"
    )
    path = folder / f"serve{gpus}.json"
    dump_instance(inst, path)
    return path


def load_run(
    gpus: int,
    *,
    running: int,
    duration_s: float,
    row_period_s: float = 0.2,
    place_per_s: float = 2.0,
    burst: int = 100,
    seed: int = 0,
    folder: Path,
) -> dict[str, Any]:
    """One load run on a ``gpus``-GPU cluster (see the module's docstring)."""
    import httpx

    rng = random.Random(seed)
    cluster = _cluster_file(gpus, folder)
    state = folder / f"state-{gpus}.sqlite"
    proc, url = start_service(state, str(cluster))
    try:
        with httpx.Client(base_url=url, timeout=120) as c:
            # the running jobs: two workers each on distinct servers, started
            workers: list[tuple[str, str, int]] = []
            for first in range(0, running, 50):
                jobs = [
                    {"id": f"run{i}", "workers": 2, "compute_ms": 100, "gradient_mb": 50}
                    for i in range(first, min(running, first + 50))
                ]
                out = c.post("/v1/place", json={"jobs": jobs, "explain": False}).json()
                for jid, a in out["assignment"].items():
                    c.post(f"/v1/jobs/{jid}/start")
                    w = 0
                    for sid, n in a.items():
                        for _ in range(n):
                            workers.append((jid, sid, w))
                            w += 1
            rows_offered = rows_acked = 0
            lag_max = 0.0
            latencies: list[float] = []
            stop = threading.Event()
            errors: list[str] = []

            def ingest() -> None:
                nonlocal rows_offered, rows_acked, lag_max
                per_batch = max(1, round(len(workers) * 0.1 / row_period_s))
                t0 = time.monotonic()
                it = 0
                with httpx.Client(base_url=url, timeout=60) as ci:
                    n = 0
                    while not stop.is_set():
                        due = t0 + 0.1 * n
                        now = time.monotonic()
                        if now < due:
                            time.sleep(due - now)
                        batch = []
                        for _ in range(per_batch):
                            jid, sid, w = workers[it % len(workers)]
                            batch.append(
                                {
                                    "job": jid,
                                    "worker": w,
                                    "server": sid,
                                    "iteration": it // len(workers),
                                    "duration": 0.1,
                                }
                            )
                            it += 1
                        rows_offered += len(batch)
                        r = ci.post("/v1/observations", json={"rows": batch})
                        if r.status_code == 200:
                            rows_acked += r.json()["accepted"]
                        else:
                            errors.append(f"rows: {r.status_code} {r.text[:200]}")
                        lag_max = max(lag_max, time.monotonic() - due)
                        n += 1

            def places() -> None:
                with httpx.Client(base_url=url, timeout=60) as cp:
                    k = 0
                    t0 = time.monotonic()
                    while not stop.is_set():
                        due = t0 + k / place_per_s
                        now = time.monotonic()
                        if now < due:
                            time.sleep(due - now)
                        jid = f"p{k}"
                        body = {
                            "jobs": [{"id": jid, "workers": rng.randint(1, 16), "compute_ms": 100, "gradient_mb": 50}]
                        }
                        t = time.perf_counter()
                        r = cp.post("/v1/place", json=body)
                        latencies.append(time.perf_counter() - t)
                        if r.status_code != 200:
                            errors.append(f"place: {r.status_code} {r.text[:200]}")
                        elif jid in r.json()["assignment"]:
                            cp.post(f"/v1/jobs/{jid}/release")
                        k += 1

            threads = [threading.Thread(target=ingest), threading.Thread(target=places)]
            t_load = time.monotonic()
            for t in threads:
                t.start()
            time.sleep(duration_s)
            stop.set()
            for t in threads:
                t.join()
            load_s = time.monotonic() - t_load
            # the burst: many requests at once
            answers: list[tuple[int, float]] = []
            lock = threading.Lock()

            def one(i: int) -> None:
                t = time.perf_counter()
                with httpx.Client(base_url=url, timeout=120) as cb:
                    r = cb.post(
                        "/v1/place",
                        json={"jobs": [{"id": f"b{i}", "workers": 1 + i % 8, "compute_ms": 100, "gradient_mb": 50}]},
                    )
                with lock:
                    answers.append((r.status_code, time.perf_counter() - t))

            t_burst = time.perf_counter()
            bt = [threading.Thread(target=one, args=(i,)) for i in range(burst)]
            for t in bt:
                t.start()
            for t in bt:
                t.join()
            burst_s = time.perf_counter() - t_burst
            state_now = c.get("/v1/state").json()
            with sqlite3.connect(state) as db:
                stored = db.execute("SELECT count(*) FROM observations").fetchone()[0]
    finally:
        stop_service(proc)
    lat = sorted(latencies)
    return {
        "gpus": gpus,
        "servers": gpus // 8,
        "running_jobs": running,
        "workers_reporting": len(workers),
        "load_s": round(load_s, 1),
        "rows_offered_per_s": round(rows_offered / load_s),
        "rows_acknowledged": rows_acked,
        "rows_stored": stored,
        "rows_lost": rows_acked - stored,
        "ingestion_lag_max_s": round(lag_max, 2),
        "placements": len(lat),
        "place_p50_s": round(statistics.median(lat), 3) if lat else None,
        "place_p99_s": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 3) if lat else None,
        "place_max_s": round(lat[-1], 3) if lat else None,
        "burst": burst,
        "burst_answered": sum(1 for s, _ in answers if s == 200),
        "burst_last_s": round(burst_s, 2),
        "gpus_held_twice": sum(1 for n in state_now["free_gpus"].values() if n < 0),
        "errors": errors[:5],
    }


def bench_serve(
    sizes: Sequence[int] = SIZES,
    *,
    duration_s: float = 60.0,
    faults: int = 20,
    out: Path | None = None,
) -> dict[str, Any]:
    """The load runs at each size (running jobs in proportion: 500 at 1,024 GPUs) and the
    fault rounds; written to ``out/serve.json`` and ``out/serve.md``."""
    with tempfile.TemporaryDirectory(prefix="placement-bench-serve-") as tmp:
        folder = Path(tmp)
        loads = [
            load_run(g, running=max(1, round(500 * g / 1024)), duration_s=duration_s, folder=folder) for g in sizes
        ]
        fault = kill_rounds(folder / "faults.sqlite", faults) if faults else None
    result = {"load": loads, "faults": fault}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "serve.json").write_text(json.dumps(result, indent=1) + "\n")
        (out / "serve.md").write_text(report(result))
    return result


def report(result: dict[str, Any]) -> str:
    cols = [
        ("gpus", "GPUs"),
        ("running_jobs", "running jobs"),
        ("rows_offered_per_s", "rows/s offered"),
        ("rows_lost", "rows lost"),
        ("ingestion_lag_max_s", "max lag (s)"),
        ("placements", "placements"),
        ("place_p50_s", "place p50 (s)"),
        ("place_p99_s", "place p99 (s)"),
        ("burst_answered", "burst answered"),
        ("burst_last_s", "burst, last answer (s)"),
        ("gpus_held_twice", "servers over capacity"),
    ]
    lines = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
    for r in result["load"]:
        lines.append("| " + " | ".join(str(r[k]) for k, _ in cols) + " |")
    f = result.get("faults")
    if f:
        lines += [
            "",
            f"kill -9 at random points, {f['rounds']} times: {f['decisions']} decisions, {f['jobs']} jobs, "
            f"{f['rows']} rows acknowledged; problems after the restarts: {len(f['problems'])}"
            + ("" if not f["problems"] else " (" + "; ".join(f["problems"][:5]) + ")"),
        ]
    return "\n".join(lines) + "\n"
