"""PAL's setup, head to head (``python -m placement.bench pal``; issue 48).

PAL's simulator (Jain et al., SC'24, ``hal-uw/blox-pal``, branch ``artifact``): 16 servers x 4
V100 under one switch, the eight Sia-Philly workloads (160 jobs each, application classes A-D),
FIFO decided in rounds of 360 s that place every job again (non-sticky: ``resettle``, moves
free), a constant locality penalty (1.7) on a job whose GPUs span servers, each GPU's static
factor for its job's class drawn from the Longhorn profiles (class A: ResNet-50, B and C: BERT,
D: PageRank; a draw from the class's runs, laid out by the seed), no other straggler.

Configurations (each over the layout seeds): ``packed`` (``consolidate``, the paper's Packed
baseline), ``pm_first``, ``pal``, ``auto-known`` (``auto`` given the factors: ``oracle``),
``auto-estimated`` (``auto`` learning from iteration logs, starting from nothing) and
``no-variability`` (packed on GPUs that are all alike: what the workload costs without the
variability, the reference for how much of its cost a placement removes).  With static factors
and free moves, the clairvoyant reference is ``auto-known``.  ``auto`` weighs its decisions'
jobs by ``srpt`` (the job nearest its end gets the fast GPUs): with the trace's weights, on
workload 2 (seed 0) it gave a 32-GPU job the cluster's 2.7x GPU rather than the other 32-GPU
job, which had ten times the work left, and lost 15% to PAL (1.153x); with ``srpt`` its worst
workload was 1.012x.  The locality sweep runs packed,
PM-First and PAL at penalties 1.0-3.0 (on ``sweep_seeds``).

Reported: mean JCT per workload with 95% bootstrap intervals over seeds; each method's gain over
packed, ``1 - geomean over workloads of mean(method) / mean(packed)`` (PAL's README's figure), with
its interval (resampling seeds); ``auto`` against PAL, the same way; and PAL's own simulator's
figures beside ours when its results file is given (``--own``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from placement.bench.online import BOOTSTRAP, bootstrap_mean

__all__ = ["CONFIGS", "PENALTY", "SITES", "SWEEP", "bench_pal", "pal_cluster", "pal_report"]

PENALTY = 1.7
"""PAL's default locality penalty (``blox_manager.py``)."""
SWEEP = (1.0, 1.5, 2.0, 2.5, 3.0)
"""The locality penalties of PAL's sweep (artifact component A2)."""
PROFILES = {"A": "resnet", "B": "bert", "C": "bert", "D": "pagerank"}
"""Sia's application class -> the Longhorn profile PAL's simulator draws its GPUs from
(``gpudf_class{A..D}.csv``)."""
GENERIC_PROFILE = "sgemm-longhorn-agg.csv"
"""The class-free profile every job of another trace draws its GPUs' factors from (Longhorn's sgemm:
a trace without Sia's application classes)."""
SITES: dict[str, dict[str, str]] = {
    "longhorn": {c: f"{p}-longhorn-agg.csv" for c, p in PROFILES.items()},
    "frontera": {c: f"frontera-{p}-agg.csv" for c, p in PROFILES.items()},
    "ls6": dict.fromkeys(PROFILES, "resnet-ls6-agg.csv"),
}
"""The measured fleets whose factors the GPUs are drawn from, class by class: TACC Longhorn (V100,
PAL's setup, in the data folder), Frontera (Quadro RTX 5000) and Lonestar6 (A100; ResNet-50 only,
so every class draws from it), the last two from PAL's repository (``aggregated_data/``, MIT),
bundled in ``instances/gpu_profiles/``.  Each is laid on PAL's 16 x 4 cluster the same way."""


def site_folder(site: str, data: Path) -> Path:
    """Where ``site``'s profiles are: Longhorn's in ``data``, the others bundled."""
    if site == "longhorn":
        return data
    from importlib import resources

    return Path(str(resources.files("placement.instances").joinpath("gpu_profiles")))


CONFIGS: dict[str, dict[str, Any]] = {
    "packed": {"method": "consolidate", "knowledge": "oracle"},
    "pm_first": {"method": "pm_first", "knowledge": "oracle"},
    "pal": {"method": "pal", "knowledge": "oracle"},
    "auto-known": {"method": "auto", "knowledge": "oracle", "decision_weight": "srpt"},
    "auto-estimated": {"method": "auto", "knowledge": "estimated", "decision_weight": "srpt"},
    "no-variability": {"method": "consolidate", "knowledge": "oracle", "variability": ()},
}
SWEPT = ("packed", "pm_first", "pal")
OWN_NAMES = {"PAL": "pal", "PMFirst": "pm_first", "Default-Packed-NS": "packed"}
"""PAL's own simulator's policy names -> ours."""


def pal_cluster() -> Any:
    """PAL's cluster: 16 servers x 4 V100 (300 GB/s within a server) under one 25 Gbit/s switch."""
    from placement.model import Instance, Link, Server, Switch

    servers = tuple(Server(f"n{i}", 4, "V100", 300.0) for i in range(16))
    return Instance("pal16x4", servers, (), (Switch("sw"),), tuple(Link(s.id, "sw", 25.0) for s in servers))


def setup(profiles: Path, penalty: float, site: str = "longhorn") -> dict[str, Any]:
    """The :class:`~placement.simulation.config.SimConfig` fields of PAL's setup, the GPUs drawn
    from ``site``'s profiles (in the folder ``profiles``)."""
    return {
        "dynamics": "none",
        "comm": f"penalty:{penalty:g}",
        "round_s": 360.0,
        "resettle": True,
        "restart_s": 0.0,
        "replan": "off",
        "queue": "fifo-strict",
        "variability": tuple(f"{c}={(profiles / f).resolve()}" for c, f in SITES[site].items()),
        "variability_draw": "runs",
        "decision_clock": "work",
    }


def _runs(
    data: Path,
    profiles: Path,
    site: str,
    out: Path,
    workloads: Sequence[int],
    configs: Sequence[str],
    penalties: Sequence[float],
    seeds: Sequence[int],
    sweep_seeds: Sequence[int],
    sweep_workloads: Sequence[int],
    trace: tuple[Path, dict[str, Any]] | None = None,
) -> list[tuple[tuple[Any, str, float], Path, list[Any]]]:
    from placement.formats import dump_instance
    from placement.simulation.runner import SimRun

    cluster = out / "clusters" / "pal16x4.json"
    if not cluster.is_file():
        cluster.parent.mkdir(parents=True, exist_ok=True)
        dump_instance(pal_cluster(), cluster)
    todo = []
    for w in workloads:
        path, options = (data / f"sia-philly-workload-{w}.csv", {}) if trace is None else trace
        extra = {} if trace is None else {"variability": (str((data / GENERIC_PROFILE).resolve()),)}
        for f in penalties:
            for c in configs:
                if f != penalties[0] and (c not in SWEPT or w not in sweep_workloads):
                    continue
                folder = out / f"workload-{w}" / f"penalty{f:g}" / c
                runs = [
                    SimRun(
                        str(cluster.resolve()),
                        str(path.resolve()),
                        dict(options),
                        {**setup(profiles, f, site), **extra, **CONFIGS[c], "seed": s},
                        str(folder),
                    )
                    for s in (seeds if f == penalties[0] else sweep_seeds)
                ]
                todo.append(((w, c, f), folder, runs))
    return todo


def bench_pal(
    data: Path,
    out: Path,
    *,
    site: str = "longhorn",
    workloads: Sequence[int] = tuple(range(1, 9)),
    configs: Sequence[str] = tuple(CONFIGS),
    seeds: Sequence[int] = (0, 1, 2),
    penalties: Sequence[float] = (PENALTY, *SWEEP),
    sweep_seeds: Sequence[int] | None = None,
    sweep_workloads: Sequence[int] | None = None,
    own: Path | None = None,
    trace: Path | None = None,
    trace_options: dict[str, Any] | None = None,
    parallel: int = 1,
    report_only: bool = False,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (resuming) every workload x configuration x seed at the first of ``penalties`` (PAL's),
    and packed, PM-First and PAL at the others on ``sweep_seeds`` and ``sweep_workloads``
    (default: ``seeds``, ``workloads``), the GPUs drawn from ``site``'s profiles (:data:`SITES`);
    write ``out/pal.json`` and ``out/pal.md``.  With
    ``report_only``, nothing runs: the report covers the runs already there."""
    from placement.compare.harness import read_rows
    from placement.simulation.runner import simulate_sweep

    if site not in SITES:
        raise ValueError(f"unknown site {site!r} (one of {', '.join(SITES)})")
    profiles = site_folder(site, data)
    if trace is not None:  # another trace: one workload, every job on Longhorn's class-free profile
        workloads = sweep_workloads = ["trace"]  # type: ignore[list-item]
        missing = [str(trace), str(data / GENERIC_PROFILE)]
    else:
        missing = [str(data / f"sia-philly-workload-{w}.csv") for w in workloads]
        missing += [str(profiles / f) for f in sorted(set(SITES[site].values()))]
    missing = [m for m in missing if not Path(m).is_file()]
    if missing:
        raise FileNotFoundError(f"PAL's data is not there: {', '.join(missing)}")
    runs: dict[str, dict[str, dict[str, dict[int, float]]]] = {}
    failed: list[str] = []
    ranks: dict[str, dict[str, list[float]]] = {}
    sweep = tuple(seeds if sweep_seeds is None else sweep_seeds)
    swept = tuple(workloads if sweep_workloads is None else sweep_workloads)
    for (w, c, f), folder, todo in _runs(
        data,
        profiles,
        site,
        out,
        sorted(set(workloads) | set(swept)),
        configs,
        tuple(dict.fromkeys(penalties)),
        seeds,
        sweep,
        swept,
        None if trace is None else (trace, dict(trace_options or {})),
    ):
        if report_only:
            labels = {r.label for r in todo}
            rows = [r for r in read_rows(folder / "runs.jsonl") if r.get("label") in labels]
        else:
            rows = simulate_sweep(todo, folder, progress=False, parallel=parallel, say=say)
        got = {int(r["seed"]): float(r["avg_jct_s"]) for r in rows if r.get("status") == "finished"}
        for r in rows:
            if r.get("status") != "finished":
                failed.append(
                    f"workload {w} {c} penalty {f:g} seed {r.get('seed')}: {r.get('status')}: {r.get('error')}"
                )
        runs.setdefault(f"{f:g}", {}).setdefault(str(w), {})[c] = got
        for r in rows:  # learning the factors: how the learnt ones rank the GPUs
            for k in ("gpu_rank_corr_day1", "gpu_rank_corr"):
                if r.get("status") == "finished" and r.get(k) is not None:
                    ranks.setdefault(c, {}).setdefault(k, []).append(float(r[k]))
    result = summarise(runs, seeds)
    result["site"] = site
    result["sweep_seeds"] = list(sweep)
    result["rank_corr"] = {c: {k: bootstrap_mean(v) for k, v in by.items()} for c, by in ranks.items()}
    result["failed"] = failed
    for line in failed:
        say(f"not finished: {line}")
    if own is not None and own.is_file() and site == "longhorn" and trace is None:  # PAL's own: Longhorn, Sia
        result["own"] = own_figures(json.loads(own.read_text()))
    out.mkdir(parents=True, exist_ok=True)
    (out / "pal.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "pal.md").write_text(pal_report(result))
    return result


def geomean_ratio(
    per: dict[str, dict[str, dict[int, float]]], num: str, den: str, seed: int = 0
) -> tuple[float, float, float] | None:
    """``geomean over workloads of mean(num) / mean(den)`` over the seeds both ran on every
    workload, with a 95% bootstrap interval (the same seeds resampled for every workload: a seed
    is one GPU layout)."""
    ws = [w for w in per if per[w].get(num) and per[w].get(den)]
    if not ws:
        return None
    seeds = sorted(set.intersection(*(set(per[w][num]) & set(per[w][den]) for w in ws)))
    if not seeds:
        return None
    a = np.array([[per[w][num][s] for s in seeds] for w in ws])
    b = np.array([[per[w][den][s] for s in seeds] for w in ws])

    def g(idx: np.ndarray) -> np.ndarray:
        return np.exp(np.log(a[:, idx].mean(axis=1) / b[:, idx].mean(axis=1)).mean(axis=0))

    rng = np.random.default_rng(seed)
    boot = g(rng.integers(0, len(seeds), size=(len(seeds), BOOTSTRAP)))
    return float(g(np.arange(len(seeds)))), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def summarise(runs: dict[str, dict[str, dict[str, dict[int, float]]]], seeds: Sequence[int]) -> dict[str, Any]:
    """Per penalty: each workload's mean JCT per configuration (with its interval) and the
    geomean ratios (each method over packed, ``auto`` over PAL)."""
    out: dict[str, Any] = {"seeds": list(seeds), "penalties": {}}
    for f, per in runs.items():
        table = {
            w: {c: {"mean": bootstrap_mean(list(v.values())), "seeds": sorted(v)} for c, v in cs.items() if v}
            for w, cs in per.items()
        }
        ratios: dict[str, Any] = {}
        for c in CONFIGS:
            if c not in ("packed", "no-variability"):
                ratios[f"{c}/packed"] = geomean_ratio(per, c, "packed")
            if c.startswith("auto"):
                ratios[f"{c}/pal"] = geomean_ratio(per, c, "pal")
        for c in CONFIGS:  # what the GPUs' variability costs each: its JCT over the uniform GPUs'
            if c != "no-variability":
                ratios[f"{c}/no-variability"] = geomean_ratio(per, c, "no-variability")
        worst = {}
        for c in ("auto-known", "auto-estimated"):  # on the seeds both ran
            r = []
            for w, cs in per.items():
                both = sorted(set(cs.get(c, {})) & set(cs.get("pal", {})))
                if both:
                    r.append((float(np.mean([cs[c][k] for k in both]) / np.mean([cs["pal"][k] for k in both])), w))
            if r:
                worst[c] = max(r)
        out["penalties"][f] = {"workloads": table, "geomean": ratios, "worst_vs_pal": worst}
    return out


def own_figures(own: dict[str, Any]) -> dict[str, Any]:
    """PAL's own simulator's mean JCT by penalty, workload and configuration (our names), from
    the cross-check's results file (``benchmarks/pal-crosscheck/pal-own.json``)."""
    got: dict[str, dict[str, dict[str, float]]] = {}
    rows = list(own.get("runs_default_penalty_1_7", [])) + list(own.get("locality_penalty_sweep", {}).get("runs", []))
    for r in rows:
        name = OWN_NAMES.get(r.get("policy", ""))
        if name is None or r.get("mean_jct_s") is None:
            continue
        w = str(r["workload"]).rsplit("-", 1)[-1]
        got.setdefault(f"{float(r.get('locality_penalty', PENALTY)):g}", {}).setdefault(w, {})[name] = float(
            r["mean_jct_s"]
        )
    return got


def _ci(x: Sequence[float] | None, pct: bool = False) -> str:
    if not x:
        return "-"
    if pct:
        return f"{100 * (1 - x[0]):.1f}% [{100 * (1 - x[2]):.1f}, {100 * (1 - x[1]):.1f}]"
    return f"{x[0]:.3f} [{x[1]:.3f}, {x[2]:.3f}]"


def pal_report(result: dict[str, Any]) -> str:
    """``pal.md``: per penalty the workloads' mean JCT, the geomean gains and ratios, PAL's own
    simulator's figures where known."""
    own = result.get("own", {})
    lines = [
        f"GPU factors drawn from {result.get('site', 'longhorn')}'s profiles. "
        f"Seeds (GPU layouts) {', '.join(map(str, result['seeds']))} (the sweep's: "
        f"{', '.join(map(str, result.get('sweep_seeds', result['seeds'])))}); mean JCT in seconds, mean over seeds "
        "[95% bootstrap interval]; ratio: geomean over workloads of mean(method) / mean(other); gain: 1 - ratio; "
        "against no-variability, the ratio less 1 is what the GPUs' variability costs the method.",
        "",
    ]
    for f, part in sorted(result["penalties"].items(), key=lambda kv: float(kv[0])):
        table = part["workloads"]
        configs = [c for c in CONFIGS if any(c in cs for cs in table.values())]
        mine = own.get(f, {})
        theirs = [c for c in SWEPT if any(c in v for v in mine.values())]
        lines += [
            f"## Locality penalty {f}",
            "",
            "| workload | " + " | ".join(configs) + "".join(f" | {c} (PAL's sim)" for c in theirs) + " |",
            "|---|" + "---|" * (len(configs) + len(theirs)),
        ]
        for w in sorted(table, key=lambda w: (not w.isdigit(), int(w) if w.isdigit() else 0, w)):
            cells = []
            for c in configs:
                m = table[w].get(c)
                cells.append(f"{m['mean'][0]:,.0f} [{m['mean'][1]:,.0f}, {m['mean'][2]:,.0f}]" if m else "-")
            cells += [f"{mine[w][c]:,.0f}" if c in mine.get(w, {}) else "-" for c in theirs]
            lines.append(f"| {w} | " + " | ".join(cells) + " |")
        lines += ["", "| ratio (geomean over workloads) | ours | gain | PAL's simulator |", "|---|---|---|---|"]
        for k, v in part["geomean"].items():
            if v is None:
                continue
            num, den = k.split("/")
            ref = "-"
            ws = [w for w in mine if w in table and num in mine[w] and den in mine[w]]
            if ws:
                g = float(np.exp(np.mean([np.log(mine[w][num] / mine[w][den]) for w in ws])))
                ref = f"{g:.3f} ({len(ws)} workloads)"
            gain = f"cost {100 * (v[0] - 1):+.1f}%" if den == "no-variability" else _ci(v, pct=True)
            lines.append(f"| {k} | {_ci(v)} | {gain} | {ref} |")
        for c, (r, w) in part.get("worst_vs_pal", {}).items():
            lines.append(f"\n{c}: worst workload against PAL: {r:.3f}x (workload {w})")
        lines.append("")
    for c, by in result.get("rank_corr", {}).items():
        for k, label in (("gpu_rank_corr_day1", "after one simulated day"), ("gpu_rank_corr", "at the end")):
            if k in by:
                lines.append(
                    f"- {c}: Spearman correlation of the learnt per-GPU factors with the hidden ones {label} "
                    f"(GPUs and classes that ran jobs): {_ci(by[k])} over runs"
                )
    lines += [f"- not finished: {x}" for x in result.get("failed", [])]
    return "\n".join(lines) + "\n"
