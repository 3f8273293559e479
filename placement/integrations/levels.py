"""The one rule that turns a cluster system's switch tree and its per-level bandwidths into the
cluster graph's links, for every importer (Slurm, Kubernetes).

A tree is each server's first switch (``uplink``), each switch's parent (``parent``, ``None``
at the top) and each switch's level (0 nearest the servers).  The rule:

- **a link has the bandwidth of the level of the switch it goes up into**: a server into its
  level-``k`` switch, or a switch into its level-``k`` parent, gets ``level_gbps[k]`` (a
  switch's ports run at its tier's speed, so a leaf wired straight to a level-2 switch gets
  level 2's bandwidth);
- several top switches are joined by one ``root`` switch one level above the tree's levels,
  whose links take the next bandwidth;
- ``level_gbps`` must hold finite numbers > 0, at least one per level the tree needs
  (:func:`levels_needed`); extra ones are ignored, and :func:`level_problems` says so in
  :func:`describe_levels`' text, so one command line serves clusters of different depths.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from placement.model import Link, Switch

__all__ = ["levels_needed", "level_problems", "level_links", "describe_levels"]


def _tops(parent: Mapping[str, str | None], switches: Sequence[str]) -> list[str]:
    return [s for s in switches if parent.get(s) is None]


def _depth(level: Mapping[str, int], switches: Sequence[str], depth: int | None) -> int:
    return max((level[s] for s in switches), default=0) + 1 if depth is None else depth


def levels_needed(
    level: Mapping[str, int],
    parent: Mapping[str, str | None],
    switches: Sequence[str],
    *,
    joined: bool = True,
    depth: int | None = None,
) -> int:
    """Bandwidths the tree needs: one per level (``depth`` levels, by default the highest
    switch's level + 1), and one more when a root joins several tops (``joined``; Slurm leaves
    separate trees separate)."""
    return _depth(level, switches, depth) + (1 if joined and len(_tops(parent, switches)) > 1 else 0)


def level_problems(level_gbps: Sequence[Any], need: int, shape: str, what: str) -> list[str]:
    """What is wrong with ``level_gbps`` for a tree needing ``need`` bandwidths (``shape`` and
    ``what`` describe the tree in the message)."""
    gbps = list(level_gbps)
    if not all(isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b) and b > 0 for b in gbps):
        return [f"level_gbps must all be finite numbers > 0, got {gbps}"]
    if len(gbps) < need:
        return [f"level_gbps: the topology ({shape}) has {what}, so {need} bandwidth(s); got {len(gbps)}"]
    return []


def level_links(
    uplink: Mapping[str, str],
    parent: Mapping[str, str | None],
    level: Mapping[str, int],
    switches: Sequence[str],
    level_gbps: Sequence[float],
    root: str | None = None,
    *,
    depth: int | None = None,
) -> tuple[list[Switch], list[Link]]:
    """The switches (in ``switches``' order, then ``root`` if it joins several tops) and the
    links: servers in ``uplink``'s order, then switches in ``switches``' order.  Without a
    ``root``, several tops stay separate trees."""
    links = [Link(n, sw, float(level_gbps[level[sw]])) for n, sw in uplink.items()]
    links += [Link(s, p, float(level_gbps[level[p]])) for s in switches if (p := parent.get(s)) is not None]
    out = [Switch(s) for s in switches]
    tops = _tops(parent, switches)
    if len(tops) > 1 and root is not None:
        top = _depth(level, switches, depth)
        out.append(Switch(root))
        links += [Link(s, root, float(level_gbps[top])) for s in tops]
    return out, links


def describe_levels(level_gbps: Sequence[float], need: int) -> str:
    """``"100,50 Gbit/s"``, noting the bandwidths given beyond those the tree needs."""
    text = ",".join(f"{b:g}" for b in level_gbps[:need]) + " Gbit/s"
    extra = len(level_gbps) - need
    return text + (f" ({extra} more given than the tree's {need} levels: ignored)" if extra > 0 else "")
