"""A seeded family of fleet shapes nobody tuned for (issue "Proven gaps that hold on fleets nobody
tuned for"): 3,000 to 10,000 servers; racks of 4 to 48 servers; two tiers (leaf-spine) or three
(multi-pod); 1-, 2-, 4- and 8-GPU servers of three to seven speeds (the generator's types, or the
Alibaba v2023 shapes and types); calm, hot, heavy-tailed and all-slow regimes; ElasticFlow gangs of
up to 64 workers; load from 50% to 95%.

``python -m placement.instances.family FOLDER`` writes the members; ``python -m placement.bench
gaps --family`` measures ``auto``'s proven gap on them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FAMILY_SIZE", "family", "write_family"]

FAMILY_SIZE = 12
REGIMES = ("calm", "hot", "heavy-tail", "all-slow")
"""``all-slow``: the hot regime with every server hot."""


def family(seed: int = 0, size: int = FAMILY_SIZE) -> dict[str, dict[str, Any]]:
    """``{name: generator options}`` of ``size`` members drawn with ``seed``; each regime
    appears ``size / 4`` times, the other traits are drawn per member."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, Any]] = {}
    for k in range(size):
        regime = REGIMES[k % len(REGIMES)]
        target = int(rng.integers(3000, 10001))
        spr = int(rng.integers(4, 49))
        three = bool(rng.random() < 0.5)
        racks_total = max(2, round(target / spr))
        if three:
            pods = int(rng.integers(2, 11))
            racks = max(1, round(racks_total / pods))
        else:
            pods, racks = 1, racks_total
        servers = pods * racks * spr
        alibaba = bool(rng.random() < 0.5)
        kw: dict[str, Any] = dict(
            topology="multi-pod" if three else "leaf-spine",
            pods=pods,
            racks=racks,
            servers_per_rack=spr,
            regime="hot" if regime == "all-slow" else regime,
            hot_fraction=1.0 if regime == "all-slow" else float(np.round(rng.uniform(0.1, 0.3), 2)),
            load=float(np.round(rng.uniform(0.5, 0.95), 2)),
            job_mix="elasticflow",
            seed=int(rng.integers(0, 10_000)),
        )
        if alibaba:
            kw.update(servers_from="alibaba-v2023", single_gpu_fraction=float(np.round(rng.uniform(0.0, 0.7), 2)))
        else:
            kw.update(
                gpus_per_server=int(rng.choice([2, 4, 8])),
                gpu_types=",".join(
                    rng.choice(["H100", "A100", "V100", "T4"], size=int(rng.integers(3, 5)), replace=False)
                ),
                single_gpu_fraction=float(np.round(rng.uniform(0.0, 0.5), 2)),
            )
        kw["jobs"] = max(50, servers // 4)
        name = f"family-{k:02d}-{regime}-{servers}"
        kw["name"] = name
        out[name] = kw
    return out


def write_family(folder: str | Path, seed: int = 0, size: int = FAMILY_SIZE) -> list[Path]:
    from placement.instances.scaling import write_specs

    return write_specs(family(seed, size), folder)


if __name__ == "__main__":
    for p in write_family(sys.argv[1] if len(sys.argv) > 1 else "results/family"):
        print(p)
