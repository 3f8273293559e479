"""Driving ``placement serve`` with a simulation's events (the parity test): a run of the simulator
writes its decisions (``simulate(decisions_path=...)``) and what its scheduler observed
(``log_path``); :func:`replay` plays them through the service's HTTP API on a test clock, the
way a controller would (rows pushed at each estimate tick, refits when the simulator refitted,
the simulator's offers posted, placed jobs started, finished jobs finished, re-plans asked with
the running jobs' progress and applied), and returns the first decision where the two differ
(after it their states differ too, and so would every comparison)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def events(decisions: Path, logs: Path | None) -> list[tuple[float, int, dict[str, Any]]]:
    """The simulation's events in time order: at one time the rows its scheduler logged come
    first (they are logged by the estimate tick, before the instant's decisions), then its
    decisions in the order it made them."""
    out: list[tuple[float, int, dict[str, Any]]] = []
    if logs is not None and logs.is_file():
        rows: dict[float, list[dict[str, Any]]] = defaultdict(list)
        with open(logs, newline="") as f:
            for r in csv.DictReader(f):
                rows[float(r["time_s"])].append(
                    {
                        "job": r["job"],
                        "worker": int(r["worker"]),
                        "server": r["server"],
                        "iteration": int(r["iteration"]),
                        "duration": float(r["duration"]),
                    }
                )
        out += [(t, 0, {"kind": "rows", "rows": rs}) for t, rs in rows.items()]
    with open(decisions) as f:
        out += [(rec["t"], 1, rec) for rec in map(json.loads, f)]
    return sorted(out, key=lambda e: (e[0], e[1]))  # stable: decisions keep their order


def replay(client: TestClient, clock: Clock, evs: list[tuple[float, int, dict[str, Any]]]) -> dict[str, Any]:
    """Play ``evs`` through the service behind ``client`` until the first difference; the counts
    of each kind of event played, and the differences found at that decision (with the time
    and the two answers)."""
    diffs: list[str] = []
    seen: dict[str, int] = defaultdict(int)
    iterations: dict[str, int] = {}

    def ok(r: Any) -> Any:
        assert r.status_code == 200, (clock.t, r.status_code, r.text[:2000])
        return r.json()

    for t, _, rec in evs:
        if diffs:
            break
        clock.t = t
        kind = rec["kind"]
        seen[kind] += 1
        if kind == "rows":
            ok(client.post("/v1/observations", json={"rows": rec["rows"]}))
        elif kind == "refit":
            ok(client.post("/v1/estimates/refit"))
        elif kind == "place":
            free = {s: k for s, k in ok(client.get("/v1/state"))["free_gpus"].items() if k}
            if free != rec["free"]:
                diffs.append(f"t={t}: free GPUs before placing differ: {free} != {rec['free']}")
            for j in rec["jobs"]:
                iterations[j["id"]] = j["iterations"]
            out = ok(client.post("/v1/place", json={"jobs": rec["jobs"], "explain": False}))
            want = {j: a for j, a in rec["placed"].items() if j not in rec["waits"]}
            if out["assignment"] != want or sorted(out["waiting"]) != rec["waits"]:
                diffs.append(
                    f"t={t}: placed {out['assignment']} waiting {sorted(out['waiting'])}; "
                    f"the simulator placed {want} waiting {rec['waits']}"
                )
            for key in ("shards", "stages"):  # parameter-server shards, hybrid stage matrices
                if out[key] != {j: v for j, v in rec[key].items() if j in want}:
                    diffs.append(f"t={t}: {key} differ: {out[key]} != {rec[key]}")
            for j in out["assignment"]:
                ok(client.post(f"/v1/jobs/{j}/start"))
        elif kind == "finish":
            ok(client.post(f"/v1/jobs/{rec['job']}/finish"))
        elif kind == "replan":
            progress = {j: iterations[j] - n for j, n in rec["left"].items()}
            out = ok(client.post("/v1/replan", json={"progress": progress, "queued": rec["queued"]}))
            got = {m["job"]: m["to"] for m in out["moves"]}
            if got != rec["moves"]:
                diffs.append(f"t={t}: moves {got}; the simulator moved {rec['moves']}")
            for key in ("shards", "stages"):
                mine = {m["job"]: m[key] for m in out["moves"] if key in m}
                if mine != rec[key]:
                    diffs.append(f"t={t}: moved {key} {mine}; the simulator's {rec[key]}")
            if out["moves"]:
                keys = ("job", "to", "stages", "shards")
                ok(client.post("/v1/moves", json={"moves": [{k: m[k] for k in keys if k in m} for m in out["moves"]]}))
        elif kind == "preempt":
            diffs.append(f"t={t}: the simulator preempted {rec['job']} (a preemptive queue: not the service's)")
    return {"seen": dict(seen), "diffs": diffs, "differences": len(diffs)}
