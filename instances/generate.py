"""Seeded generators of placement instances: leaf-spine and multi-pod topologies, GPU
types, slowdown regimes, job mixes.

Every generated instance records in ``source`` the exact ``placement generate`` command
that reproduces it bit for bit (:func:`from_source`).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from placement.model import Instance, Job, Link, Scenarios, Server, Slowdown, Switch
from placement.model.catalog import GPU_TYPES, gpu_profile

__all__ = [
    "GeneratorSpec",
    "generate",
    "populate",
    "gpu_profile",
    "from_source",
    "TOPOLOGIES",
    "REGIMES",
    "JOB_MIXES",
    "GPU_TYPES",
]

TOPOLOGIES = ("leaf-spine", "multi-pod")
REGIMES = ("calm", "hot", "heavy-tail", "correlated", "pai")
SERVER_SOURCES = ("", "alibaba-v2023")
JOB_SOURCES = ("", "elasticflow-cluster03")
JOB_MIXES = ("elasticflow", "small", "large", "llm")


# GPUs per job, ElasticFlow cluster03 (shared/data/README.md): 1->1014, 2->85, 8->1777,
# 16->94, 32->24, 64->17 jobs.
_MIXES: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {
    "elasticflow": ((1, 2, 8, 16, 32, 64), (1014, 85, 1777, 94, 24, 17)),
    "small": ((1, 2, 4), (5, 3, 2)),
    "large": ((8, 16, 32), (5, 3, 2)),
    # large-model training: gangs of 8 to 256 GPUs (with --hybrid-fraction, tp x pp x dp)
    "llm": ((8, 16, 32, 64, 128, 256), (4, 3, 3, 2, 1, 1)),
}


MAX_SERVERS = 100_000
MAX_JOBS = 1_000_000
MAX_SCENARIOS = 10_000
"""Bounds on generated sizes: beyond them a typo, not an instance (refused, not built)."""


@dataclass(frozen=True)
class GeneratorSpec:
    """The parameters of :func:`generate`, one per ``placement generate`` option."""

    topology: str = "leaf-spine"
    pods: int = 1
    racks: int = 2
    servers_per_rack: int = 4
    gpus_per_server: int = 8
    gpu_types: str = "A100"
    nic_gbps: float = 100.0
    uplink_gbps: float = 50.0
    core_gbps: float = 25.0
    regime: str = "hot"
    hot_fraction: float = 0.15
    scenarios: int = 8
    jobs: int = 10
    job_mix: str = "elasticflow"
    load: float = 0.7
    used_fraction: float = 0.0
    single_gpu_fraction: float = 0.0
    cpu_memory: bool = False
    admission: str = "all"
    objective: str = "weighted_expected_iteration_time"
    servers_from: str = ""
    jobs_from: str = ""
    window_start_s: float = 3442393.0
    window_hours: float = 12.0
    prove_optimum: bool = False
    ps_fraction: float = 0.0
    ps_shards: int = 2
    hybrid_fraction: float = 0.0
    seed: int = 0
    name: str = ""

    def problems(self) -> list[str]:
        out = []
        if self.topology not in TOPOLOGIES:
            out.append(f"topology must be one of {', '.join(TOPOLOGIES)}, got {self.topology!r}")
        if self.regime not in REGIMES:
            out.append(f"regime must be one of {', '.join(REGIMES)}, got {self.regime!r}")
        if self.job_mix not in JOB_MIXES:
            out.append(f"job_mix must be one of {', '.join(JOB_MIXES)}, got {self.job_mix!r}")
        if self.servers_from not in SERVER_SOURCES:
            out.append(
                f"servers_from must be one of {', '.join(repr(x) for x in SERVER_SOURCES)}, got {self.servers_from!r}"
            )
        if self.jobs_from not in JOB_SOURCES:
            out.append(f"jobs_from must be one of {', '.join(repr(x) for x in JOB_SOURCES)}, got {self.jobs_from!r}")
        if not self.window_hours > 0:
            out.append(f"window_hours must be > 0, got {self.window_hours}")
        for t in self.gpu_type_list:
            if t not in GPU_TYPES:
                out.append(f"gpu_types: unknown GPU type {t!r} (known: {', '.join(GPU_TYPES)})")
        for f in ("pods", "racks", "servers_per_rack", "gpus_per_server", "jobs", "scenarios"):
            if getattr(self, f) < 1:
                out.append(f"{f} must be an integer >= 1, got {getattr(self, f)}")
        servers = self.pods * self.racks * self.servers_per_rack
        if servers > MAX_SERVERS:
            out.append(f"pods x racks x servers_per_rack = {servers:,} servers, more than {MAX_SERVERS:,}")
        if self.jobs > MAX_JOBS:
            out.append(f"jobs must be at most {MAX_JOBS:,}, got {self.jobs:,}")
        if self.scenarios > MAX_SCENARIOS:
            out.append(f"scenarios must be at most {MAX_SCENARIOS:,}, got {self.scenarios:,}")
        for f in (
            "nic_gbps",
            "uplink_gbps",
            "core_gbps",
            "hot_fraction",
            "used_fraction",
            "single_gpu_fraction",
            "load",
            "window_hours",
            "window_start_s",
        ):
            v = getattr(self, f)
            if isinstance(v, float) and not math.isfinite(v):
                out.append(f"{f} must be a finite number, got {v}")
        for f in ("nic_gbps", "uplink_gbps", "core_gbps"):
            if not getattr(self, f) > 0:
                out.append(f"{f} must be > 0, got {getattr(self, f)}")
        for f in ("hot_fraction", "used_fraction", "single_gpu_fraction"):
            if not 0 <= getattr(self, f) <= 1:
                out.append(f"{f} must be in [0, 1], got {getattr(self, f)}")
        if not 0 < self.load <= 4:
            out.append(f"load must be in (0, 4] (above 1: overload, for best_effort), got {self.load}")
        if self.seed < 0:
            out.append(f"seed must be an integer >= 0, got {self.seed}")
        if not (isinstance(self.ps_fraction, (int, float)) and 0 <= self.ps_fraction <= 1):
            out.append(f"ps_fraction must be in [0, 1], got {self.ps_fraction}")
        if not (isinstance(self.hybrid_fraction, (int, float)) and 0 <= self.hybrid_fraction <= 1):
            out.append(f"hybrid_fraction must be in [0, 1], got {self.hybrid_fraction}")
        if not 1 <= self.ps_shards <= 1024:
            out.append(f"ps_shards must be an integer in [1, 1024], got {self.ps_shards}")
        return out

    @property
    def gpu_type_list(self) -> list[str]:
        return [t for t in self.gpu_types.split(",") if t]

    def command(self) -> str:
        """The ``placement generate`` command line that reproduces this instance."""
        default = GeneratorSpec()
        parts = ["placement", "generate"]
        for f in fields(self):
            v = getattr(self, f.name)
            if v == getattr(default, f.name) and f.name != "seed":
                continue
            opt = "--" + f.name.replace("_", "-")
            if isinstance(v, bool):
                parts.append(opt if v else "--no-" + f.name.replace("_", "-"))
            else:
                parts += [opt, str(v)]
        return shlex.join(parts)


def from_source(source: str) -> Instance:
    """Re-run the ``placement generate`` command recorded in an instance's ``source``."""
    words = shlex.split(source)
    if words[:2] != ["placement", "generate"]:
        raise ValueError(f"source is not a 'placement generate' command: {source!r}")
    kw: dict[str, object] = {}
    types = {f.name: f.type for f in fields(GeneratorSpec)}
    it = iter(words[2:])
    for w in it:
        if w.startswith("--no-"):
            kw[w[5:].replace("-", "_")] = False
            continue
        key = w[2:].replace("-", "_")
        t = types[key]
        if t in ("bool", bool):
            kw[key] = True
            continue
        val = next(it)
        kw[key] = int(val) if t in ("int", int) else float(val) if t in ("float", float) else val
    return generate(GeneratorSpec(**kw))  # type: ignore[arg-type]


def _slowdown(rng: np.random.Generator, regime: str, hot: bool) -> Slowdown:
    if regime == "pai":
        from placement.instances.traces import PAI_NORMAL, PAI_STRAGGLER

        return PAI_STRAGGLER if hot else PAI_NORMAL
    if regime == "calm":
        return Slowdown((1.0, 1.2), (0.99, 0.01))
    if regime == "hot" or regime == "correlated":
        if hot:
            p_slow = float(np.round(rng.uniform(0.25, 0.5), 3))
            p_bad = float(np.round(rng.uniform(0.03, 0.1), 3))
            return Slowdown((1.0, 1.5, 3.0), (round(1 - p_slow - p_bad, 3), p_slow, p_bad))
        p = float(np.round(rng.uniform(0.0, 0.03), 3))
        return Slowdown((1.0, 1.2), (round(1 - p, 3), p)) if p > 0 else Slowdown()
    # heavy tail: geometric decay over 1, 1.3, 2, 5, 10 with a per-server rate
    r = rng.uniform(0.05, 0.35) * (2.5 if hot else 1.0)
    r = min(r, 0.9)
    w = np.array([1.0, r, r**2, r**3, r**4])
    p = np.round(w / w.sum(), 4)
    p[0] = round(1.0 - float(p[1:].sum()), 4)
    return Slowdown((1.0, 1.3, 2.0, 5.0, 10.0), tuple(float(x) for x in p))


def populate(
    servers: Sequence[Server],
    switches: Sequence[Switch],
    links: Sequence[Link],
    spec: GeneratorSpec | None = None,
    **kw: object,
) -> Instance:
    """An instance on a real cluster (servers, switches and links read from Slurm or
    Kubernetes) with seeded slowdowns and jobs from the generator's options: each server is
    hot with probability ``hot_fraction`` and draws its slowdown from ``regime`` (for
    ``correlated``, a rack is the switch a server links to); jobs follow ``job_mix`` (or
    ``jobs_from``), sized to ``load`` x the free GPUs, with the speeds of the GPU types
    present (:func:`gpu_profile`). The topology options of the spec are not used."""
    if spec is None:
        spec = GeneratorSpec(**kw)  # type: ignore[arg-type]
    elif kw:
        spec = GeneratorSpec(**{**asdict(spec), **kw})
    bad = [p for p in spec.problems() if not p.startswith(("pods x racks", "gpu_types"))]
    if bad:
        raise ValueError("; ".join(bad))
    if not servers:
        raise ValueError("the cluster has no server with a GPU")
    rng = np.random.default_rng(spec.seed)
    hot_fraction = spec.hot_fraction
    if spec.regime == "pai":
        from placement.instances.traces import PAI_STRAGGLER_SHARE

        hot_fraction = PAI_STRAGGLER_SHARE
    drawn: list[Server] = []
    for s in servers:
        hot = bool(rng.random() < hot_fraction)
        sd = _slowdown(rng, spec.regime, hot)
        drawn.append(replace(s, slowdown=Slowdown() if spec.regime == "correlated" else sd))
    switch_pos = {w.id: k for k, w in enumerate(switches)}
    uplink: dict[str, int] = {}
    for ln in links:
        for a, b in ((ln.source, ln.target), (ln.target, ln.source)):
            if b in switch_pos:
                uplink.setdefault(a, switch_pos[b])
    rack_of = [uplink.get(s.id, 0) for s in drawn]
    scenarios = None
    if spec.regime == "correlated":
        scenarios = _correlated(rng, spec, drawn, rack_of, max(1, len(switches)), hot_fraction)
    speeds = {s.gpu_type: gpu_profile(s.gpu_type) for s in drawn}
    jobs = _jobs(rng, spec, drawn, speeds, per_worker_resources=False)
    return Instance(
        name=spec.name or f"cluster-{len(drawn)}-{spec.regime}-{spec.jobs}j-s{spec.seed}",
        servers=tuple(drawn),
        jobs=tuple(jobs),
        switches=tuple(switches),
        links=tuple(links),
        scenarios=scenarios,
        objective=spec.objective,
        admission=spec.admission,
        source=f"slowdowns and jobs: {spec.command().replace('placement generate', 'generator options', 1)}",
    )


def _correlated(
    rng: np.random.Generator,
    spec: GeneratorSpec,
    servers: list[Server],
    rack_of: list[int],
    n_racks: int,
    hot_fraction: float,
) -> Scenarios:
    """Joint scenarios: scenario 0 is nominal; in each other one a rack's switch congests
    (every server of that rack slows by one factor) and random hot servers slow down."""
    S = spec.scenarios
    base = float(np.round(rng.uniform(0.55, 0.75), 3))
    rest = rng.dirichlet(np.ones(S - 1)) * (1 - base) if S > 1 else np.zeros(0)
    probs = [base] + [float(x) for x in np.round(rest, 4)]
    probs[0] = round(1.0 - sum(probs[1:]), 4)
    table = {s.id: [1.0] * S for s in servers}
    for s in range(1, S):
        rack = int(rng.integers(n_racks))
        factor = float(np.round(rng.uniform(1.3, 2.5), 2))
        for i, s_ in enumerate(servers):
            if rack_of[i] == rack:
                table[s_.id][s] = factor
            elif rng.random() < hot_fraction / 2:
                table[s_.id][s] = float(np.round(rng.uniform(1.2, 3.0), 2))
    table = {k: v for k, v in table.items() if any(x != 1.0 for x in v)}
    return Scenarios(tuple(probs), {k: tuple(v) for k, v in table.items()})


def _jobs(
    rng: np.random.Generator,
    spec: GeneratorSpec,
    servers: list[Server],
    speeds: dict[str, tuple[float, float]],
    *,
    per_worker_resources: bool,
) -> list[Job]:
    """Jobs of the spec's mix (or trace), gang sizes scaled so that the demand is about
    ``load`` x the free GPUs of ``servers``."""
    free = sum(s.free_gpus for s in servers)
    sizes_all, weights = _MIXES[spec.job_mix]
    cap = max(1, min(max(sizes_all), free // 2 if free >= 2 else 1))
    choices = [(s, w) for s, w in zip(sizes_all, weights) if s <= cap] or [(1, 1.0)]
    cs = np.array([c[0] for c in choices])
    ws = np.array([c[1] for c in choices], dtype=float)
    sizes = rng.choice(cs, size=spec.jobs, p=ws / ws.sum())
    target = max(spec.jobs, int(spec.load * free))
    while sizes.sum() > target and sizes.max() > 1:
        i = int(np.argmax(sizes))
        sizes[i] = max(1, sizes[i] // 2)
    present = sorted({s.gpu_type for s in servers})
    jobs = []
    if spec.jobs_from == "elasticflow-cluster03":
        from placement.instances.traces import elasticflow_jobs

        rows = elasticflow_jobs(
            window_start_s=spec.window_start_s,
            window_s=spec.window_hours * 3600.0,
            max_gpus=max(1, free // 2),
            limit=spec.jobs,
        )
        if not rows:
            raise ValueError(
                f"no ElasticFlow job of at most {max(1, free // 2)} GPUs in the window "
                f"[{spec.window_start_s:g} s, +{spec.window_hours:g} h)"
            )
        for r in rows:
            speed = {t: speeds[t][0] for t in present} if len(present) > 1 else None
            jobs.append(
                Job(
                    id=f"ef-{r['id']}",
                    workers=r["workers"],
                    compute_ms=max(r["compute_ms"], 0.001),
                    gradient_mb=r["gradient_mb"],
                    iterations=r["iterations"],
                    gpu_speed=speed,
                    cpus_per_worker=4.0 if per_worker_resources else None,
                    memory_gb_per_worker=16.0 if per_worker_resources else None,
                )
            )
        sizes = np.zeros(0, dtype=np.int64)
    for k, w in enumerate(sizes):
        compute = float(np.round(rng.lognormal(np.log(120), 0.5), 1))
        grad = float(np.round(rng.choice([25, 100, 350, 1300]) * rng.uniform(0.8, 1.2), 1))
        iters = int(rng.choice([1000, 5000, 20000, 100000]))
        speed = None
        if len(present) > 1:
            allowed = [t for t in present if rng.random() < 0.8] or [present[0]]
            speed = {t: speeds[t][0] for t in allowed}
        jobs.append(
            Job(
                id=f"j{k}",
                workers=int(w),
                compute_ms=compute,
                gradient_mb=grad,
                iterations=iters,
                weight=float(rng.choice([1.0, 1.0, 2.0])),
                gpu_speed=speed,
                cpus_per_worker=float(rng.choice([4.0, 8.0, 12.0])) if spec.cpu_memory else None,
                memory_gb_per_worker=float(rng.choice([32.0, 64.0, 96.0])) if spec.cpu_memory else None,
            )
        )
    return _as_hybrid(spec, _as_ps(spec, jobs), max(s.gpus for s in servers))


HYBRID_MODELS = ((2048, 24), (4096, 32), (5120, 40), (8192, 48), (8192, 80))
"""(hidden size, layers) of the transformer models hybrid jobs train (GPT-style, 1.2B to 64B
parameters, ``12 L h^2``)."""
HYBRID_STATE_BYTES = 16
"""Bytes of training state per parameter (bf16 weights and gradients, fp32 Adam moments and
master weights): a model is trained on enough GPUs to hold it at 40 GB each."""
HYBRID_SEQ = 4096
"""Tokens per sequence; one sequence per microbatch."""
HYBRID_BYTES = 2
"""bf16 activations and gradients."""


def hybrid_shape(rng: np.random.Generator, workers: int, most_gpus: int) -> dict[str, Any] | None:
    """A realistic tp x pp x dp shape for a gang of ``workers`` on servers of at most
    ``most_gpus`` GPUs, with its microbatches, activations and gradients (``None`` when the gang
    has one worker).  ``tp`` is 2-8 within a server (Megatron keeps tensor parallelism on
    NVLink), ``pp`` up to 8 stages, ``dp`` the rest; activations are one microbatch's
    ``seq x hidden`` in bf16 at a stage boundary; gradients the model's ``12 L h^2`` parameters in
    bf16, of a model whose training state fits the gang at 40 GB a GPU; ``microbatches`` 4-32
    and at least ``pp`` (1F1B)."""
    if workers < 2:
        return None
    tps = [t for t in (2, 4, 8) if t <= most_gpus and workers % t == 0] or [1]
    tp = int(rng.choice(tps))
    groups = workers // tp
    pps = [p for p in (2, 4, 8) if groups % p == 0] or [1]  # a pipeline where the groups allow one
    pp = int(rng.choice(pps))
    fits = [(h, n) for h, n in HYBRID_MODELS if 12 * n * h * h * HYBRID_STATE_BYTES <= 40e9 * workers]
    h, layers = fits[int(rng.integers(len(fits)))] if fits else HYBRID_MODELS[0]
    return {
        "architecture": "hybrid",
        "tp": tp,
        "pp": pp,
        "dp": groups // pp,
        "microbatches": max(pp, int(rng.choice([4, 8, 16, 32]))),
        "activation_mb": round(HYBRID_SEQ * h * HYBRID_BYTES / 1e6, 3),
        "gradient_mb": round(12 * layers * h * h * HYBRID_BYTES / 1e6, 1),
    }


def _as_hybrid(spec: GeneratorSpec, jobs: list[Job], most_gpus: int) -> list[Job]:
    """Make a ``hybrid_fraction`` share of the all-reduce jobs of two or more workers
    hybrid-parallel (:func:`hybrid_shape`; ``compute_ms`` becomes one stage's share of a
    microbatch, the job's compute over ``pp x microbatches``), drawn from their own seeded
    stream so that the rest of the instance is the same as without them."""
    if spec.hybrid_fraction <= 0:
        return jobs
    rng = np.random.default_rng([spec.seed, 18])
    out = []
    for j in jobs:
        shape = hybrid_shape(rng, j.workers, most_gpus) if rng.random() < spec.hybrid_fraction else None
        if shape is None or j.is_ps:
            out.append(j)
            continue
        per = max(0.001, round(j.compute_ms / (shape["pp"] * shape["microbatches"]), 3))
        out.append(replace(j, compute_ms=per, **shape))
    return out


def _as_ps(spec: GeneratorSpec, jobs: list[Job]) -> list[Job]:
    """Make a ``ps_fraction`` share of the jobs parameter-server jobs with ``ps_shards``
    shards (4 CPUs and 16 GB each with ``cpu_memory``), drawn from their own seeded stream so
    that the rest of the instance is the same as without them."""
    if spec.ps_fraction <= 0:
        return jobs
    rng = np.random.default_rng([spec.seed, 14])
    pick = rng.random(len(jobs)) < spec.ps_fraction
    return [
        replace(
            j,
            architecture="ps",
            ps_shards=spec.ps_shards,
            ps_cpus=4.0 if spec.cpu_memory else None,
            ps_memory_gb=16.0 if spec.cpu_memory else None,
        )
        if p
        else j
        for j, p in zip(jobs, pick)
    ]


def generate(spec: GeneratorSpec | None = None, **kw: object) -> Instance:
    """A seeded instance; ``generate(racks=4, seed=3)`` or ``generate(GeneratorSpec(...))``.

    >>> inst = generate(racks=2, servers_per_rack=2, jobs=3, seed=1)
    >>> len(inst.servers), len(inst.jobs)
    (4, 3)
    """
    if spec is None:
        spec = GeneratorSpec(**kw)  # type: ignore[arg-type]
    elif kw:
        spec = GeneratorSpec(**{**asdict(spec), **kw})
    bad = spec.problems()
    if bad:
        raise ValueError("; ".join(bad))
    rng = np.random.default_rng(spec.seed)
    types = spec.gpu_type_list
    speeds = dict(GPU_TYPES.items())
    shapes = None
    if spec.servers_from == "alibaba-v2023":
        from placement.instances.traces import ALIBABA_V2023_SHAPES
        from placement.model.catalog import ALIBABA_GPU_TYPES

        shapes = ALIBABA_V2023_SHAPES
        speeds.update(ALIBABA_GPU_TYPES)
        shape_p = np.array([c[4] for c in shapes], dtype=float)
        shape_p /= shape_p.sum()
    hot_fraction = spec.hot_fraction
    if spec.regime == "pai":
        from placement.instances.traces import PAI_STRAGGLER_SHARE

        hot_fraction = PAI_STRAGGLER_SHARE
    # its own stream, so that the rest of the instance is drawn as without the option
    single_rng = np.random.default_rng([spec.seed, 16])
    servers: list[Server] = []
    switches: list[Switch] = []
    links: list[Link] = []
    rack_of: list[int] = []
    n_racks = spec.pods * spec.racks
    spines = [Switch(f"spine{k}") for k in range(2 if spec.topology == "leaf-spine" else 1)]
    if spec.topology == "multi-pod":
        switches.append(Switch("core"))
    for p in range(spec.pods):
        agg = None
        if spec.topology == "multi-pod":
            agg = Switch(f"agg{p}")
            switches.append(agg)
            links.append(Link(agg.id, "core", spec.core_gbps))
        for r in range(spec.racks):
            rack = p * spec.racks + r
            tor = Switch(f"tor{rack}")
            switches.append(tor)
            if agg is not None:
                links.append(Link(tor.id, agg.id, spec.uplink_gbps))
            gtype = types[rack % len(types)]
            for _ in range(spec.servers_per_rack):
                sid = f"s{len(servers)}"
                gpus, cpus, mem = (
                    spec.gpus_per_server,
                    float(spec.gpus_per_server * 12),
                    float(spec.gpus_per_server * 96),
                )
                if shapes is not None:
                    gtype, gpus, cpus, mem, _ = shapes[int(rng.choice(len(shapes), p=shape_p))]
                hot = bool(rng.random() < hot_fraction)
                used = 0
                if spec.used_fraction > 0 and rng.random() < spec.used_fraction:
                    used = int(rng.integers(1, gpus + 1)) // 2 * 2 or 1
                    used = min(used, gpus)
                if spec.single_gpu_fraction > 0 and single_rng.random() < spec.single_gpu_fraction:
                    # a one-GPU slice of the shape (a cloud one-GPU instance of that type);
                    # drawn last so that every other draw is as without the option
                    gpus, cpus, mem, used = 1, cpus / gpus, mem / gpus, min(used, 1)
                sd = _slowdown(rng, spec.regime, hot) if spec.regime != "correlated" else Slowdown()
                if spec.regime == "correlated":
                    _ = _slowdown(rng, spec.regime, hot)  # keep the random stream aligned with 'hot'
                servers.append(
                    Server(
                        id=sid,
                        gpus=gpus,
                        gpu_type=gtype,
                        intra_bandwidth_gbps=speeds[gtype][1],
                        used_gpus=used,
                        cpus=cpus if (spec.cpu_memory or shapes is not None) else None,
                        memory_gb=mem if (spec.cpu_memory or shapes is not None) else None,
                        slowdown=sd,
                    )
                )
                rack_of.append(rack)
                links.append(Link(sid, tor.id, spec.nic_gbps))
    if spec.topology == "leaf-spine":
        switches = spines + switches
        for k in range(n_racks):
            for sp in spines:
                links.append(Link(f"tor{k}", sp.id, spec.uplink_gbps))
    scenarios = None
    if spec.regime == "correlated":
        scenarios = _correlated(rng, spec, servers, rack_of, n_racks, hot_fraction)
    jobs = _jobs(rng, spec, servers, speeds, per_worker_resources=shapes is not None)
    name = spec.name or (
        f"{spec.topology}-{n_racks}x{spec.servers_per_rack}-{spec.servers_from}-{spec.regime}-{spec.jobs}j-s{spec.seed}"
        if spec.servers_from
        else f"{spec.topology}-{n_racks}x{spec.servers_per_rack}x{spec.gpus_per_server}-{spec.regime}-{spec.jobs}j-s{spec.seed}"
    )
    sources = []
    if spec.servers_from:
        sources.append("server shapes: Alibaba cluster-trace-gpu-v2023 (ATC'23)")
    if spec.regime == "pai":
        sources.append("slowdowns: calibrated on Alibaba PAI cluster-trace-gpu-v2020 per-worker mini-batch times")
    if spec.jobs_from:
        sources.append("jobs: Microsoft ElasticFlow cluster03 trace (ASPLOS'23, MIT)")
    metadata: dict[str, Any] = {"traces": sources} if sources else {}
    inst = Instance(
        name=name,
        servers=tuple(servers),
        jobs=tuple(jobs),
        switches=tuple(switches),
        links=tuple(links),
        scenarios=scenarios,
        objective=spec.objective,
        admission=spec.admission,
        source=spec.command(),
        metadata=metadata,
    )
    if spec.prove_optimum:
        from placement.solving.driver import solve

        sol = solve(inst, "brute_force", time_limit_s=600)
        if sol.status.value not in ("optimal", "infeasible"):
            raise ValueError(f"--prove-optimum: brute force ended {sol.status.value}")
        metadata = {
            **metadata,
            "optimum": sol.objective,
            "optimum_status": sol.status.value,
            "proven_by": "brute_force: exhaustive enumeration of every gang allocation, exact evaluator",
        }
        inst = inst.replace(metadata=metadata)
    return inst
