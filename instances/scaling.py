"""The scaling series: Alibaba-v2023-shaped fleets from 16 to 4,000 servers (about 80 to
20,700 GPUs, a quarter to three quarters of them already used by running jobs), with
ElasticFlow-shaped job mixes at 80% of the free GPUs; the largest is the 4,000-server /
1,600-job fleet of the production-scale targets.  The ``fleet1g`` series is made of mostly
one-GPU servers of seven GPU types with hot, heavy-tailed slowdowns (1,000 and 4,278 servers).

    python -m placement.instances.scaling results/scaling     # writes the instances
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["SCALING", "write_scaling"]


def _fleet(prefix: str, pods: int, racks: int, spr: int, **kw: Any) -> tuple[str, dict[str, Any]]:
    """A multi-pod fleet of Alibaba-v2023 server shapes, a fifth of its servers hot."""
    n = pods * racks * spr
    spec = dict(
        topology="multi-pod",
        pods=pods,
        racks=racks,
        servers_per_rack=spr,
        servers_from="alibaba-v2023",
        hot_fraction=0.2,
    )
    return f"{prefix}-{n:04d}", {**spec, **kw, "name": f"{prefix}-{n}"}


# servers = pods x racks x servers_per_rack; seed 1 leaves a job of the 1,000-server fleet
# with no usable GPU (its GPU types are all taken by running jobs): that size uses seed 2
SCALING: dict[str, dict[str, Any]] = dict(
    _fleet(
        "fleet",
        pods,
        racks,
        spr,
        regime="hot",
        used_fraction=0.75,
        jobs=max(4, pods * racks * spr * 2 // 5),
        load=0.8,
        seed=2 if pods * racks * spr == 1000 else 1,
    )
    for pods, racks, spr in ((1, 2, 8), (1, 4, 16), (2, 8, 16), (5, 10, 20), (10, 10, 20), (10, 20, 20))
)
# fleets of mostly one-GPU servers (two in three are one-GPU slices of the Alibaba shapes:
# seven GPU types), nothing running yet, heavy-tailed slowdowns, ElasticFlow gang sizes of up
# to 64 workers demanding about 90% of the GPUs; the largest has 4,278 servers, 10,605 GPUs
# and 1,600 jobs
SCALING.update(
    _fleet("fleet1g", pods, racks, spr, single_gpu_fraction=0.65, regime="heavy-tail", jobs=jobs, load=0.95, seed=1)
    for pods, racks, spr, jobs in ((5, 10, 20, 400), (6, 23, 31, 1600))
)


def write_specs(specs: dict[str, dict[str, Any]], folder: str | Path) -> list[Path]:
    """Generate each ``{name: generator options}`` into ``folder/<name>.json``; returns the paths."""
    from placement.formats import dump_instance
    from placement.instances.generate import generate

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, kw in specs.items():
        p = out / f"{name}.json"
        dump_instance(generate(**kw), p)
        paths.append(p)
    return paths


def write_scaling(folder: str | Path) -> list[Path]:
    return write_specs(SCALING, folder)


if __name__ == "__main__":
    for p in write_scaling(sys.argv[1] if len(sys.argv) > 1 else "results/scaling"):
        print(p)
