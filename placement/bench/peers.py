"""The peers' schedulers, head to head (``python -m placement.bench peers``).

A *peer* is a queue policy with its own placement rule, as its code runs it, blind to
stragglers (:data:`PEERS`).  For each peer and cell the benchmark runs three configurations on
the same seeds: the peer itself (``<peer>``), the peer with no stragglers at all
(``<peer>-none``: its straggler inflation is the difference) and the peer's queue with our
proactive loop placing (``<peer>+loop``: ``auto``, estimated knowledge, the defaults of
``placement simulate -m auto --knowledge estimated``); and the clairvoyant reference (FIFO,
``auto`` with the hidden state, free moves).  Reported per cell: mean, median and p99 JCT with
95% bootstrap intervals over seeds, Themis's finish-time fairness (``rho``, its median and p95),
GPU utilisation, preemptions and moves, decision time; per peer, the paired change of its queue
with our loop against the peer and the share of the peer's straggler inflation it removes; and
a ranking of every configuration by mean JCT.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from placement.bench.online import (
    CELLS,
    CONFIGS,
    GRID,
    PROACTIVE,
    _metric,
    bootstrap_mean,
    paired_change,
    run_cells,
)
from placement.bench.online_report import _ci, _mean
from placement.simulation.config import DECISION_TIME_LIMIT_S

__all__ = ["PEERS", "PEER_CELLS", "peer_configs", "bench_peers"]

PEERS: dict[str, tuple[str, str, str]] = {
    "kueue": ("fifo", "consolidate", "FIFO with backfill, consolidated, as Kueue and Volcano run it"),
    "fifo-strict": ("fifo-strict", "consolidate", "strict FIFO (the head blocks), consolidated"),
    "srtf": ("srtf", "consolidate", "preemptive shortest remaining time first, consolidated"),
    "tiresias": ("tiresias", "whole_servers", "2D-LAS; one server, else whole servers within one switch"),
    "gavel": ("gavel", "first_fit", "max-min fairness in 360 s rounds; previous servers, else server by server"),
}
"""Each peer: its queue policy, its own placement rule (a registered method) and what it is."""
PEER_CELLS: tuple[str, ...] = ("cluster04-pod256-markov", "cluster03-pod256-markov", "grid-c04d50-hot192")
"""The README window, cluster03's and a loaded window (the benchmark's default cells)."""
README_CELL = "cluster04-pod256-markov"


def peer_configs(peers: Sequence[str], *, ceiling: bool = False) -> dict[str, dict[str, Any]]:
    """The configurations of ``peers``: each peer, its straggler-free twin and its queue with
    our loop; and the clairvoyant reference.  With ``ceiling``, also each peer's queue with
    the clairvoyant placement (``<peer>+clairvoyant``: the hidden state known, moves free):
    how much of the peer's straggler inflation any placement could remove under that queue."""
    out: dict[str, dict[str, Any]] = {}
    for p in peers:
        queue, method, _ = PEERS[p]
        own = {"method": method, "knowledge": "oblivious", "queue": queue}
        out[p] = own
        out[f"{p}-none"] = {**own, "dynamics": "none"}
        out[f"{p}+loop"] = {**PROACTIVE, "queue": queue}
        if ceiling:
            out[f"{p}+clairvoyant"] = {**CONFIGS["clairvoyant"], "queue": queue}
    out["clairvoyant"] = CONFIGS["clairvoyant"]
    return out


SHOWN = (
    "avg_jct_s",
    "p50_jct_s",
    "p99_jct_s",
    "rho_p50",
    "rho_p95",
    "gpu_utilization",
    "preemptions",
    "migrations",
    "decision_time_p99_s",
    "wall_s",
)


def running_s(row: dict[str, Any]) -> float:
    """A run's mean JCT less its mean queueing: the part of JCT a placement acts on directly
    (the seconds jobs spend placed: running, restarting after moves and preemptions)."""
    return float(row["avg_jct_s"]) - float(row["avg_queue_s"])


def removed_share(
    own: dict[int, dict[str, Any]],
    loop: dict[int, dict[str, Any]],
    none: dict[int, dict[str, Any]],
    seed: int = 0,
    metric: Callable[[dict[str, Any]], float] = lambda r: float(r["avg_jct_s"]),
) -> tuple[float, float, float] | None:
    """The share of a peer's straggler inflation its queue with our loop removes, as a ratio of
    means over the seeds all three ran, ``(own - loop) / (own - none)``, with a percentile
    bootstrap interval over those seeds (a per-seed ratio is unstable where one seed's
    inflation is near zero).  Above 1: the loop also cuts what the peer pays without
    stragglers (its placement's communication).  ``metric``: of each run's mean JCT by
    default, or e.g. of its :func:`running_s`."""
    import numpy as np

    from placement.bench.online import BOOTSTRAP

    seeds = sorted(set(own) & set(loop) & set(none))
    if not seeds:
        return None
    o, lp, n = (np.array([metric(d[s]) for s in seeds]) for d in (own, loop, none))

    def ratio(i: np.ndarray) -> np.ndarray:
        gap = o[i].mean(axis=-1) - n[i].mean(axis=-1)
        return np.where(gap != 0, (o[i].mean(axis=-1) - lp[i].mean(axis=-1)) / np.where(gap != 0, gap, 1.0), np.nan)

    m = float(ratio(np.arange(len(seeds))))
    rng = np.random.default_rng(seed)
    boot = ratio(rng.integers(0, len(seeds), size=(BOOTSTRAP, len(seeds))))
    boot = boot[np.isfinite(boot)]
    if not np.isfinite(m) or not len(boot):
        return None
    return m, float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def _summary(per: dict[str, dict[int, dict[str, Any]]], peers: Sequence[str]) -> dict[str, Any]:
    configs = {}
    for name, by_seed in per.items():
        stats: dict[str, Any] = {"seeds": sorted(by_seed)}
        for m in SHOWN:
            vals = [float(r[m]) for r in by_seed.values() if r.get(m) is not None]
            stats[m] = bootstrap_mean(vals) if vals else None
        configs[name] = stats
    versus = {}
    for p in peers:
        own, none, loop = per.get(p, {}), per.get(f"{p}-none", {}), per.get(f"{p}+loop", {})
        if not own or not loop:
            continue
        versus[p] = {
            "loop_mean": list(paired_change(_metric(loop, "avg_jct_s"), _metric(own, "avg_jct_s"))[:3]),
            "loop_p99": list(paired_change(_metric(loop, "p99_jct_s"), _metric(own, "p99_jct_s"))[:3]),
            "inflation": list(paired_change(_metric(own, "avg_jct_s"), _metric(none, "avg_jct_s"))[:3])
            if none
            else None,
            "removed": removed_share(own, loop, none) if none else None,
            "removed_running": removed_share(own, loop, none, metric=running_s) if none else None,
        }
        oracle = per.get(f"{p}+clairvoyant", {})
        if oracle and none:
            versus[p]["ceiling"] = removed_share(own, oracle, none)
    return {"configs": configs, "versus": versus}


def bench_peers(
    cells: Sequence[str],
    peers: Sequence[str],
    seeds: Sequence[int],
    out: Path,
    *,
    decision_time_limit_s: float = DECISION_TIME_LIMIT_S,
    parallel: int = 1,
    ceiling: bool = False,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (resuming) every cell x peer configuration x seed (with ``ceiling``, each peer's
    queue with the clairvoyant placement too); write ``out/peers.json`` and ``out/peers.md``
    (per cell the table and the ranking, then the goals' worst cells)."""
    common = {"decision_time_limit_s": decision_time_limit_s}
    per_cell = run_cells(cells, peer_configs(peers, ceiling=ceiling), seeds, common, out, parallel, say)
    result = {"seeds": list(seeds), "peers": list(peers), "cells": {c: _summary(p, peers) for c, p in per_cell.items()}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "peers.md").write_text(peers_report(result))
    return result


def _num(x: Any, nd: int = 2) -> str:
    return "-" if not x else f"{x[0]:,.{nd}f}"


def peers_report(result: dict[str, Any]) -> str:
    """``peers.md``: per cell every configuration's figures and its rank by mean JCT, each
    peer's queue with our loop against the peer; then the goals, each at its worst cell."""
    seeds = ", ".join(map(str, result["seeds"]))
    lines = [
        f"Seeds {seeds}; each figure is the mean over seeds [95% bootstrap interval]; times in seconds; "
        "rho: Themis's finish-time fairness (JCT over the job's run alone on its fair share of the cluster).",
        "",
    ]
    worst: dict[str, tuple[float, str]] = {}
    for cname, cell in result["cells"].items():
        cf = cell["configs"]
        ranked = sorted(
            (c for c in cf if cf[c].get("avg_jct_s") and not c.endswith("-none")), key=lambda c: cf[c]["avg_jct_s"][0]
        )
        lines += [
            f"## {cname}",
            "",
            "| rank | configuration | mean JCT | median JCT | p99 JCT | rho p50 | rho p95 | GPU util | preemptions "
            "| moves | decision p99 s |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for k, c in enumerate(ranked + [c for c in cf if c.endswith("-none")]):
            st = cf[c]
            lines.append(
                f"| {k + 1 if c in ranked else '-'} | {c} | {_ci(st['avg_jct_s'])} | {_mean(st['p50_jct_s'])} "
                f"| {_ci(st['p99_jct_s'])} | {_num(st['rho_p50'])} | {_num(st['rho_p95'])} "
                f"| {_num(st['gpu_utilization'], 3)} | {_mean(st['preemptions'])} | {_mean(st['migrations'])} "
                f"| {_num(st['decision_time_p99_s'], 3)} |"
            )
        ceil = any("ceiling" in v for v in cell["versus"].values())
        lines += [
            "",
            "| peer | its queue with our loop: mean JCT | p99 JCT | the peer's straggler inflation | share of it removed "
            "| share removed of its running part (JCT less queueing) |"
            + (" removed by the clairvoyant placement, same queue |" if ceil else ""),
            "|---|---|---|---|---|---|" + ("---|" if ceil else ""),
        ]
        for p, v in cell["versus"].items():
            lines.append(
                f"| {p} | {_ci(v['loop_mean'], pct=True)} | {_ci(v['loop_p99'], pct=True)} "
                f"| {_ci(v['inflation'], pct=True)} | {_ci(v['removed'], pct=True)} "
                f"| {_ci(v.get('removed_running'), pct=True)} |"
                + (f" {_ci(v.get('ceiling'), pct=True)} |" if ceil else "")
            )
            key = f"{p}: its queue with our loop, mean JCT against the peer's (upper end of the interval)"
            if key not in worst or v["loop_mean"][2] > worst[key][0]:
                worst[key] = (v["loop_mean"][2], cname)
            if v["inflation"] and v["inflation"][0] >= 0.05:
                for part, label in (("removed", ""), ("removed_running", " in running time")):
                    key = f"{p}: share of its inflation{label} removed (where it is >= 5%)"
                    if v.get(part) and (key not in worst or -v[part][0] > worst[key][0]):
                        worst[key] = (-v[part][0], cname)
        lines.append("")
        best = ranked[0] if ranked else None
        if best:
            lines += [f"Best: `{best}`.", ""]
    lines += ["## Goals, each at its worst cell", ""]
    for key, (v, cname) in sorted(worst.items()):
        shown = -v if "removed" in key else v
        lines.append(f"- {key}: {100 * shown:+.1f}% ({cname})")
    if README_CELL in result["cells"]:
        cf = result["cells"][README_CELL]["configs"]
        ours = [c for c in cf if c.endswith("+loop") and cf[c].get("avg_jct_s")]
        theirs = [c for c in result["peers"] if cf.get(c, {}).get("avg_jct_s")]
        if ours and theirs:
            o = min(ours, key=lambda c: cf[c]["avg_jct_s"][0])
            t = min(theirs, key=lambda c: cf[c]["avg_jct_s"][0])
            lines += [
                "",
                f"README window: our best `{o}` {cf[o]['avg_jct_s'][0]:,.0f} s against the best peer `{t}` "
                f"{cf[t]['avg_jct_s'][0]:,.0f} s: {cf[o]['avg_jct_s'][0] / cf[t]['avg_jct_s'][0]:.3f}x; "
                f"p99 {cf[o]['p99_jct_s'][0]:,.0f} against {cf[t]['p99_jct_s'][0]:,.0f}; rho p95 {_num(cf[o]['rho_p95'])}"
                + (
                    f" against Tiresias's {_num(cf['tiresias']['rho_p95'])}"
                    if cf.get("tiresias", {}).get("rho_p95")
                    else ""
                ),
            ]
    return "\n".join(lines) + "\n"


def cells_of(grid: bool) -> tuple[str, ...]:
    """The default cells, and with ``grid`` the online grid's too."""
    return tuple(dict.fromkeys(PEER_CELLS + GRID)) if grid else PEER_CELLS


assert all(c in CELLS for c in PEER_CELLS)
