"""Read a Slurm cluster into the cluster graph: its ``topology.conf`` or ``topology.yaml``
(tree and block plugins) and the nodes ``scontrol show nodes --json`` or ``sinfo --json``
print.

    SwitchName=s0 Nodes=tux[0-3]
    SwitchName=s1 Nodes=tux[4-7]
    SwitchName=s2 Switches=s[0-1]

A switch listing ``Nodes`` is at level 0; one listing ``Switches`` is one level above its
highest child.  Bandwidths come per level, by the rule of :mod:`placement.integrations.levels`:
``level_gbps[k]`` for a link into a level-``k`` switch (``level_gbps[0]`` for node-to-leaf
links); extra bandwidths are ignored and said so in the instance's source.  Host lists use
Slurm's bracket syntax (``tux[0-3,7]``, zero-padded ``n[01-12]``, several brackets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from placement.errors import InvalidInputError
from placement.integrations.levels import describe_levels, level_links, level_problems, levels_needed
from placement.integrations.slurm.hostlist import compress_hostlist
from placement.integrations.slurm.nodes import SlurmNode
from placement.integrations.slurm.topology import parse_topology_conf, parse_topology_yaml
from placement.model import Instance, Scenarios, Server


def _levels(nodes: Mapping[str, list[str]], kids: Mapping[str, list[str]]) -> dict[str, int]:
    """Level of each switch: 0 for a leaf, 1 + its highest child's otherwise (a checked tree)."""
    level: dict[str, int] = dict.fromkeys(nodes, 0)

    def lvl(sw: str) -> int:
        if sw not in level:
            level[sw] = 1 + max((lvl(c) for c in kids[sw]), default=-1)
        return level[sw]

    for sw in kids:
        lvl(sw)
    return level


TOPOLOGY_FORMATS = ("conf", "yaml")
"""The topology files read: ``topology.conf`` (tree plugin) and ``topology.yaml`` (tree, block, flat)."""


def topology_format_of(path: str, given: str = "auto") -> str:
    """The format of the topology file ``path``: ``given`` unless it is ``auto``, else by the
    file's extension (``.yaml``/``.yml``: ``yaml``; anything else: ``conf``)."""
    if given != "auto":
        if given not in TOPOLOGY_FORMATS:
            raise InvalidInputError([f"--format must be auto or one of {', '.join(TOPOLOGY_FORMATS)}, got {given!r}"])
        return given
    return "yaml" if path.lower().endswith((".yaml", ".yml")) else "conf"


def instance_from_slurm(
    text: str,
    level_gbps: Sequence[float],
    *,
    nodes: Mapping[str, SlurmNode] | None = None,
    topology_format: str = "conf",
    topology_name: str | None = None,
    **generate_options: object,
) -> Instance:
    """An instance on a Slurm cluster's topology (``topology.conf``, or ``topology.yaml``
    with ``topology_format="yaml"`` and optionally ``topology_name``).

    Without ``nodes``, servers, slowdowns and jobs come from
    :func:`placement.instances.generate.generate` with ``generate_options`` (GPUs per
    server, GPU types, regime, jobs, seed, ...), placed on the Slurm hosts in file order.

    With ``nodes`` (:func:`read_slurm_nodes`), the servers are the cluster's GPU nodes as
    Slurm reports them: GPUs, GPU type (its speed and GPU-to-GPU bandwidth from
    :func:`~placement.instances.generate.gpu_profile`), GPUs in use (all of them on a node
    in a state of :data:`UNAVAILABLE_STATES`), CPUs and memory; slowdowns and jobs come
    from :func:`~placement.instances.generate.populate` with ``generate_options`` (regime,
    hot_fraction, jobs, job_mix, load, seed, ...).  Nodes without GPUs are left off the
    graph; a node on a switch but not in ``nodes``, or in ``nodes`` but on no switch, is a
    problem.  A ``flat`` topology puts every node on one switch, ``flat``.
    """
    from placement.instances.generate import generate, populate
    from placement.model.catalog import gpu_profile

    if topology_name is not None and topology_format != "yaml":
        raise InvalidInputError(["topology_name selects a topology of a topology.yaml (topology_format='yaml')"])
    if topology_format == "conf":
        sw_nodes, kids = parse_topology_conf(text)
        src = "topology.conf"
    elif topology_format == "yaml":
        sw_nodes, kids = parse_topology_yaml(text, topology_name)
        src = "topology.yaml"
    else:
        raise InvalidInputError([f"topology_format must be 'conf' or 'yaml', got {topology_format!r}"])
    if nodes is not None:
        sw_nodes, kids = _on_nodes(sw_nodes, kids, nodes, src)
    level = _levels(sw_nodes, kids)
    order = list(sw_nodes) + [k for k in kids if k not in sw_nodes]
    parent_of: dict[str, str | None] = {c: sw for sw, cs in kids.items() for c in cs}
    need = levels_needed(level, parent_of, order, joined=False)
    shape = f"Slurm {src}"
    problems = level_problems(level_gbps, need, shape, f"{need} link levels")
    if problems:
        raise InvalidInputError(problems)
    hosts = [n for ns in sw_nodes.values() for n in ns]
    if not hosts:
        hint = " (a flat topology names no node: give the nodes' JSON)" if not sw_nodes and not kids else ""
        raise InvalidInputError([f"{src} lists no nodes{hint}"])
    uplink = {n: sw for sw, ns in sw_nodes.items() for n in ns}
    switch_list, links = level_links(uplink, parent_of, level, order, level_gbps)
    switches = tuple(switch_list)
    where = (
        f"Slurm {src} ({len(hosts)} nodes, {len(level)} switches), level bandwidths {describe_levels(level_gbps, need)}"
    )
    if nodes is not None:
        servers = []
        for h in hosts:
            n = nodes[h]
            servers.append(
                Server(
                    id=h,
                    gpus=n.gpus,
                    gpu_type=n.gpu_type,
                    intra_bandwidth_gbps=gpu_profile(n.gpu_type)[1],
                    used_gpus=n.used_gpus if n.available else n.gpus,
                    cpus=None if n.cpus is None else float(n.cpus),
                    memory_gb=n.memory_gb,
                )
            )
        down = [h for h in hosts if not nodes[h].available]
        inst = populate(servers, switches, links, **generate_options)
        note = f"; {len(down)} unavailable node(s), all GPUs counted used: {compress_hostlist(down)}" if down else ""
        return inst.replace(source=f"{where}; nodes: Slurm's node JSON{note}; {inst.source}")
    base = generate(racks=1, servers_per_rack=len(hosts), **generate_options)
    rename = {s.id: h for s, h in zip(base.servers, hosts)}
    scen = base.scenarios
    if scen is not None:
        scen = Scenarios(scen.probs, {rename[k]: v for k, v in scen.slowdowns.items()})
    return base.replace(
        servers=tuple(replace(s, id=rename[s.id]) for s in base.servers),
        switches=switches,
        links=tuple(links),
        scenarios=scen,
        source=f"{where}; servers and jobs: {base.source}",
    )


def _on_nodes(
    sw_nodes: dict[str, list[str]], kids: dict[str, list[str]], nodes: Mapping[str, SlurmNode], src: str
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The tree restricted to the GPU nodes of ``nodes``; switches left without a node
    below them are dropped.  Nodes on a switch but unknown to ``nodes``, and GPU nodes on
    no switch, are problems."""
    if not sw_nodes and not kids:
        return ({"flat": list(nodes)} if nodes else {}), {}
    cpu_only = set(getattr(nodes, "without_gpus", ()))
    placed = {n for ns in sw_nodes.values() for n in ns}
    problems = []
    missing = [n for ns in sw_nodes.values() for n in ns if n not in nodes and n not in cpu_only]
    if missing:
        problems.append(f"{src} lists node(s) the nodes JSON does not: {compress_hostlist(missing)}")
    stray = [n for n in nodes if n not in placed]
    if stray:
        problems.append(f"the nodes JSON lists GPU node(s) on no switch of {src}: {compress_hostlist(stray)}")
    if problems:
        raise InvalidInputError(problems, source=src)
    kept = {sw: [n for n in ns if n in nodes] for sw, ns in sw_nodes.items()}
    kept = {sw: ns for sw, ns in kept.items() if ns}
    level = _levels(sw_nodes, kids)
    kept_kids: dict[str, list[str]] = {}
    for sw in sorted(kids, key=level.__getitem__):
        cs = [c for c in kids[sw] if c in kept or c in kept_kids]
        if cs:
            kept_kids[sw] = cs
    return kept, {sw: kept_kids[sw] for sw in kids if sw in kept_kids}
