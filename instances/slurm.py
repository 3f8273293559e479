"""Read a Slurm ``topology.conf`` (tree plugin) into the cluster graph.

    SwitchName=s0 Nodes=tux[0-3]
    SwitchName=s1 Nodes=tux[4-7]
    SwitchName=s2 Switches=s[0-1]

A switch listing ``Nodes`` is at level 0; one listing ``Switches`` is one level above its
highest child.  Bandwidths come per level: ``level_gbps[0]`` for node-to-leaf links,
``level_gbps[L + 1]`` for the link from a level-``L`` switch to its parent.  Host lists
use Slurm's bracket syntax (``tux[0-3,7]``, zero-padded ``n[01-12]``, several brackets).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from placement.errors import InvalidInputError
from placement.model import Instance, Link, Scenarios, Switch

__all__ = ["expand_hostlist", "parse_topology_conf", "instance_from_slurm"]


MAX_HOSTS = 1_000_000
"""Most hosts a host list may expand to (a cluster, not a typo like ``gpu[0-99999999999]``)."""


def expand_hostlist(text: str) -> list[str]:
    """``"tux[0-2,7],gpu01"`` -> ``["tux0", "tux1", "tux2", "tux7", "gpu01"]``."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        if depth < 0:
            raise ValueError(f"unbalanced ']' in host list {text!r}")
        cur += ch
    if depth != 0:
        raise ValueError(f"unbalanced '[' in host list {text!r}")
    parts.append(cur)
    out: list[str] = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        m = re.search(r"\[([^\[\]]*)\]", p)
        if not m:
            out.append(p)
            continue
        head, tail = p[: m.start()], p[m.end() :]
        for item in m.group(1).split(","):
            if "-" in item:
                a, b = item.split("-", 1)
                if not (a.isdigit() and b.isdigit()) or int(b) < int(a):
                    raise ValueError(f"bad range {item!r} in host list {text!r}")
                if int(b) - int(a) + 1 + len(out) > MAX_HOSTS:
                    raise ValueError(f"host list {text!r} names more than {MAX_HOSTS:,} hosts")
                width = len(a) if a.startswith("0") else 0
                out += expand_hostlist(
                    ",".join(f"{head}{str(k).zfill(width)}{tail}" for k in range(int(a), int(b) + 1))
                )
            elif item.isdigit():
                out += expand_hostlist(f"{head}{item}{tail}")
            else:
                raise ValueError(f"bad item {item!r} in host list {text!r}")
    return out


def parse_topology_conf(text: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``(switch -> nodes, switch -> child switches)``; raises :class:`InvalidInputError`
    with line numbers for every problem."""
    nodes: dict[str, list[str]] = {}
    kids: dict[str, list[str]] = {}
    problems = []
    for ln, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kv = {}
        for tok in line.split():
            if "=" not in tok:
                problems.append(f"topology.conf line {ln}: expected Key=Value, got {tok!r}")
                continue
            k, v = tok.split("=", 1)
            kv[k.lower()] = v
        name = kv.get("switchname")
        if not name:
            problems.append(f"topology.conf line {ln}: SwitchName is required")
            continue
        if name in nodes or name in kids:
            problems.append(f"topology.conf line {ln}: switch {name!r} defined twice")
            continue
        try:
            if "nodes" in kv:
                nodes[name] = expand_hostlist(kv["nodes"])
            if "switches" in kv:
                kids[name] = expand_hostlist(kv["switches"])
        except ValueError as e:
            problems.append(f"topology.conf line {ln}: {e}")
        if "nodes" not in kv and "switches" not in kv:
            problems.append(f"topology.conf line {ln}: switch {name!r} has neither Nodes nor Switches")
    for sw, cs in kids.items():
        for c in cs:
            if c not in nodes and c not in kids:
                problems.append(f"topology.conf: switch {sw!r} lists unknown switch {c!r}")
    seen: dict[str, str] = {}
    for sw, ns in nodes.items():
        for n in ns:
            if n in seen:
                problems.append(f"topology.conf: node {n!r} is on both {seen[n]!r} and {sw!r}")
            seen[n] = sw
    if problems:
        raise InvalidInputError(problems, source="topology.conf")
    return nodes, kids


def instance_from_slurm(text: str, level_gbps: Sequence[float], **generate_options: object) -> Instance:
    """An instance on the Slurm topology: servers, slowdowns and jobs come from
    :func:`placement.instances.generate.generate` with ``generate_options`` (GPUs per
    server, GPU types, regime, jobs, seed, ...), placed on the Slurm hosts in file order."""
    from placement.instances.generate import generate

    nodes, kids = parse_topology_conf(text)
    level: dict[str, int] = dict.fromkeys(nodes, 0)

    def lvl(sw: str, stack: tuple[str, ...] = ()) -> int:
        if sw in stack:
            raise InvalidInputError([f"topology.conf: switch cycle through {sw!r}"], source="topology.conf")
        if sw not in level:
            level[sw] = 1 + max(lvl(c, stack + (sw,)) for c in kids[sw])
        return level[sw]

    for sw in kids:
        lvl(sw)
    need = max(level.values(), default=0) + 1
    if len(level_gbps) < need:
        raise InvalidInputError([f"level_gbps: the tree has {need} link levels, got {len(level_gbps)} bandwidth(s)"])
    if any(not (b > 0 and math.isfinite(b)) for b in level_gbps):
        raise InvalidInputError([f"level_gbps must all be finite numbers > 0, got {list(level_gbps)}"])
    hosts = [n for ns in nodes.values() for n in ns]
    if not hosts:
        raise InvalidInputError(["topology.conf lists no nodes"])
    base = generate(racks=1, servers_per_rack=len(hosts), **generate_options)
    rename = {s.id: h for s, h in zip(base.servers, hosts)}
    servers = tuple(replace(s, id=rename[s.id]) for s in base.servers)
    links = [Link(n, sw, float(level_gbps[0])) for sw, ns in nodes.items() for n in ns]
    parent_of = {c: sw for sw, cs in kids.items() for c in cs}
    links += [Link(c, p, float(level_gbps[level[c] + 1])) for c, p in parent_of.items()]
    scen = base.scenarios
    if scen is not None:
        scen = Scenarios(scen.probs, {rename[k]: v for k, v in scen.slowdowns.items()})
    return base.replace(
        servers=servers,
        switches=tuple(Switch(sw) for sw in list(nodes) + [k for k in kids if k not in nodes]),
        links=tuple(links),
        scenarios=scen,
        source=f"Slurm topology.conf ({len(hosts)} nodes, {len(level)} switches), level bandwidths "
        f"{','.join(f'{b:g}' for b in level_gbps[:need])} Gbit/s; servers and jobs: {base.source}",
    )
