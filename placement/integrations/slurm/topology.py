"""Slurm's network topology: ``topology.conf`` (the tree plugin) and ``topology.yaml`` (tree and block
plugins, parsed here and tested without the daemon), as ``(switch -> nodes, switch -> child switches)``
with every problem at its line or path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from placement.errors import InvalidInputError
from placement.integrations.slurm.hostlist import compress_hosts, expand_hostlist


def _tree_problems(
    nodes: dict[str, list[str]],
    kids: dict[str, list[str]],
    where: Mapping[str, str],
    suffix: tuple[str, str] = ("", ""),
) -> list[str]:
    """What Slurm's tree plugin refuses ("Switch configuration is not a tree", a switch
    with both child switches and nodes, a node on two switches), each at its switch's
    location ``where[switch]`` (plus ``suffix``: its nodes', its children's)."""
    problems = []
    for sw in nodes:
        if sw in kids:
            problems.append(f"{where[sw]}: switch {sw!r} has both child switches and nodes (Slurm refuses it)")
    parent: dict[str, str] = {}
    for sw, cs in kids.items():
        for c in cs:
            if c not in nodes and c not in kids:
                problems.append(f"{where[sw]}{suffix[1]}: switch {sw!r} lists unknown switch {c!r}")
            elif c in parent and parent[c] != sw:
                problems.append(f"{where[sw]}{suffix[1]}: switch {c!r} is a child of both {parent[c]!r} and {sw!r}")
            else:
                parent[c] = sw
    for sw in kids:
        seen, cur = [sw], parent.get(sw)
        while cur is not None and cur not in seen:
            seen.append(cur)
            cur = parent.get(cur)
        if cur == sw:
            problems.append(f"{where[sw]}{suffix[1]}: switch cycle through {sw!r}")
    on: dict[str, str] = {}
    for sw, ns in nodes.items():
        for n in ns:
            if n in on:
                problems.append(f"{where[sw]}{suffix[0]}: node {n!r} is on both {on[n]!r} and {sw!r}")
            else:
                on[n] = sw
    return problems


def parse_topology_conf(text: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``(switch -> nodes, switch -> child switches)`` of a ``topology.conf`` (tree
    plugin); raises :class:`InvalidInputError` with line numbers for every problem."""
    nodes: dict[str, list[str]] = {}
    kids: dict[str, list[str]] = {}
    where: dict[str, str] = {}
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
        if name in where:
            problems.append(f"topology.conf line {ln}: switch {name!r} defined twice")
            continue
        where[name] = f"topology.conf line {ln}"
        try:
            if "nodes" in kv:
                nodes[name] = expand_hostlist(kv["nodes"])
            if "switches" in kv:
                kids[name] = expand_hostlist(kv["switches"])
        except ValueError as e:
            problems.append(f"topology.conf line {ln}: {e}")
        if "nodes" not in kv and "switches" not in kv:
            problems.append(f"topology.conf line {ln}: switch {name!r} has neither Nodes nor Switches")
    problems += _tree_problems(nodes, kids, where)
    if problems:
        raise InvalidInputError(problems, source="topology.conf")
    return nodes, kids


MAX_YAML_CHARS = 50_000_000
"""Longest ``topology.yaml`` read (a cluster's description, not a disk image)."""


def _yaml_loader() -> type:
    import yaml

    class Loader(yaml.SafeLoader):
        """Safe YAML without aliases (no alias bombs) and without duplicate keys."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, "aliases (*name) are not accepted", mark)
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for knode, _ in node.value:
                k = self.construct_object(knode, deep=deep)
                if isinstance(k, str | int) and k in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {k!r}", knode.start_mark)
                seen.add(k)
            return super().construct_mapping(node, deep=deep)

    return Loader


def _load_yaml(text: str, source: str) -> Any:
    import yaml

    if len(text) > MAX_YAML_CHARS:
        raise InvalidInputError([f"{source} is longer than {MAX_YAML_CHARS:,} characters"], source=source)
    try:
        return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" line {mark.line + 1}" if mark is not None else ""
        what = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InvalidInputError([f"{source}{at}: not YAML ({what})"], source=source) from None


_TOPOLOGY_KEYS = ("topology", "cluster_default", "tree", "block", "flat", "ring", "torus3d")


def _name(value: Any) -> str | None:
    """A YAML scalar used as a name, as Slurm's string parser reads it."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str | int):
        text = str(value).strip()
        return text or None
    return None


def _unknown_keys(doc: Mapping[Any, Any], allowed: Sequence[str], path: str) -> list[str]:
    return [f"{path}: unknown key {k!r} (known: {', '.join(allowed)})" for k in doc if k not in allowed]


def parse_topology_yaml(text: str, name: str | None = None) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``(switch -> nodes, switch -> child switches)`` of one topology of a Slurm
    ``topology.yaml``, the same shape as :func:`parse_topology_conf`.

    The file lists topologies (``- topology: <name>`` with one of ``tree``, ``block``,
    ``flat``); the one read is ``name``, else the first with ``cluster_default: true``,
    else the first listed (Slurm's default).  A ``tree`` gives its switches (``switch``,
    ``nodes`` or ``children``).  A ``block`` gives its blocks as leaf switches and the
    aggregated blocks Slurm builds from ``block_sizes`` as the levels above them: at each
    level, runs of 2^k consecutive base blocks (in file order) form one block, named like
    Slurm names it (``b[1-4]``); a run too short to be larger than the level below is left
    out, as Slurm leaves it out.  ``flat`` has no switch (``({}, {})``).  Every problem
    (bad YAML, an unknown key, an unknown switch, a bad host list, a node on two switches)
    is raised at once, each with its path: ``topology.yaml[1].tree.switches[2].children``.

    >>> parse_topology_yaml('''
    ... - topology: t
    ...   tree:
    ...     switches:
    ...       - {switch: leaf0, nodes: "n[0-1]"}
    ...       - {switch: leaf1, nodes: "n[2-3]"}
    ...       - {switch: spine, children: "leaf[0-1]"}
    ... ''')
    ({'leaf0': ['n0', 'n1'], 'leaf1': ['n2', 'n3']}, {'spine': ['leaf0', 'leaf1']})
    """
    src = "topology.yaml"
    doc = _load_yaml(text, src)
    if not isinstance(doc, list) or not doc:
        raise InvalidInputError([f"{src}: expected a list of topologies (- topology: <name> ...)"], source=src)
    problems: list[str] = []
    names: list[str | None] = []
    for i, t in enumerate(doc):
        if not isinstance(t, Mapping):
            problems.append(f"{src}[{i}]: expected a mapping with 'topology' and one of tree, block, flat")
            names.append(None)
            continue
        problems += _unknown_keys(t, _TOPOLOGY_KEYS, f"{src}[{i}]")
        n = _name(t.get("topology"))
        if n is None:
            problems.append(f"{src}[{i}].topology: a name is required")
        elif n in names:
            problems.append(f"{src}[{i}].topology: topology {n!r} defined twice")
        names.append(n)
        if "cluster_default" in t and not isinstance(t["cluster_default"], bool):
            problems.append(f"{src}[{i}].cluster_default: expected true or false, got {t['cluster_default']!r}")
        kinds = [k for k in ("tree", "block", "flat", "ring", "torus3d") if k in t]
        if len(kinds) != 1:
            problems.append(f"{src}[{i}]: expected exactly one of tree, block, flat, got {kinds or 'none'}")
    if problems:
        raise InvalidInputError(problems, source=src)
    if name is not None:
        if name not in names:
            raise InvalidInputError(
                [f"{src}: no topology {name!r} (topologies: {', '.join(str(n) for n in names)})"], source=src
            )
        pick = names.index(name)
    else:
        pick = next((i for i, t in enumerate(doc) if t.get("cluster_default") is True), 0)
    t = doc[pick]
    path = f"{src}[{pick}]"
    if "tree" in t:
        nodes, kids, where = _yaml_tree(t["tree"], f"{path}.tree", problems)
    elif "block" in t:
        nodes, kids, where = _yaml_block(t["block"], f"{path}.block", problems)
    elif "flat" in t:
        flat = t["flat"]
        if flat is not True and not isinstance(flat, Mapping):
            problems.append(f"{path}.flat: expected true, got {flat!r}")
        elif isinstance(flat, Mapping):
            problems += _unknown_keys(flat, ("alpha_step_rank",), f"{path}.flat")
        nodes, kids, where = {}, {}, {}
    else:
        kind = "ring" if "ring" in t else "torus3d"
        problems.append(f"{path}.{kind}: the {kind} topology is not a tree; supported: tree, block, flat")
        nodes, kids, where = {}, {}, {}
    problems += _tree_problems(nodes, kids, where, (".nodes", ".children"))
    if problems:
        raise InvalidInputError(problems, source=src)
    return nodes, kids


def _hosts(value: Any, path: str, problems: list[str]) -> list[str] | None:
    text = _name(value)
    if text is None:
        problems.append(f"{path}: expected a host list such as 'n[0-3]', got {value!r}")
        return None
    try:
        return expand_hostlist(text)
    except ValueError as e:
        problems.append(f"{path}: {e}")
        return None


def _items(doc: Any, key: str, item_keys: Sequence[str], path: str, problems: list[str]) -> list[Mapping[str, Any]]:
    """The list ``doc[key]`` of mappings with ``item_keys``, problems noted."""
    if not isinstance(doc, Mapping):
        problems.append(f"{path}: expected a mapping with {key!r}")
        return []
    items = doc.get(key)
    if not isinstance(items, list) or not items:
        problems.append(f"{path}.{key}: expected a non-empty list")
        return []
    out: list[Mapping[str, Any]] = []
    for j, it in enumerate(items):
        if not isinstance(it, Mapping):
            problems.append(f"{path}.{key}[{j}]: expected a mapping with {', '.join(item_keys)}")
            out.append({})
            continue
        problems += _unknown_keys(it, item_keys, f"{path}.{key}[{j}]")
        out.append(it)
    return out


def _yaml_tree(
    tree: Any, path: str, problems: list[str]
) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str]]:
    nodes: dict[str, list[str]] = {}
    kids: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    if isinstance(tree, Mapping):
        problems += _unknown_keys(tree, ("switches",), path)
    for j, sw in enumerate(_items(tree, "switches", ("switch", "nodes", "children", "link_speed"), path, problems)):
        at = f"{path}.switches[{j}]"
        if not sw:
            continue
        n = _name(sw.get("switch"))
        if n is None:
            problems.append(f"{at}.switch: a name is required")
            continue
        if len(n) >= 64:
            problems.append(f"{at}.switch: Slurm switch names are shorter than 64 characters, got {len(n)}")
        if n in where:
            problems.append(f"{at}.switch: switch {n!r} defined twice (first at {where[n]})")
            continue
        where[n] = at
        if "nodes" in sw:
            hosts = _hosts(sw["nodes"], f"{at}.nodes", problems)
            if hosts is not None:
                nodes[n] = hosts
        if "children" in sw:
            cs = _hosts(sw["children"], f"{at}.children", problems)
            if cs is not None:
                kids[n] = cs
        if "nodes" not in sw and "children" not in sw:
            problems.append(f"{at}: switch {n!r} has neither nodes nor children")
    return nodes, kids, where


MAX_BLOCK_LEVEL = 15
"""Highest aggregation level Slurm's block plugin accepts (2^15 base blocks)."""


def _yaml_block(
    block: Any, path: str, problems: list[str]
) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str]]:
    nodes: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    if isinstance(block, Mapping):
        problems += _unknown_keys(block, ("block_sizes", "blocks"), path)
    order: list[str] = []
    for j, b in enumerate(_items(block, "blocks", ("block", "nodes"), path, problems)):
        at = f"{path}.blocks[{j}]"
        if not b:
            continue
        n = _name(b.get("block"))
        if n is None:
            problems.append(f"{at}.block: a name is required")
            continue
        if n in where:
            problems.append(f"{at}.block: block {n!r} defined twice (first at {where[n]})")
            continue
        where[n] = at
        order.append(n)
        if "nodes" not in b:
            problems.append(f"{at}: block {n!r} has no nodes")
            continue
        hosts = _hosts(b["nodes"], f"{at}.nodes", problems)
        if hosts is not None:
            nodes[n] = hosts
    if not isinstance(block, Mapping) or problems:
        return nodes, {}, where
    levels = _block_levels(block.get("block_sizes"), f"{path}.block_sizes", nodes, order, where, problems)
    if problems:
        return nodes, {}, where
    # Slurm's aggregation (topology/block, block_record_validate): the levels in base blocks,
    # up to the first that holds every block; at level j, runs of levels[j] consecutive
    # base blocks, except a short last run no larger than a level j-1 block.
    sizes: list[int] = []
    for lv in levels:
        sizes.append(1 << lv)
        if sizes[-1] >= len(order):
            break
    kids: dict[str, list[str]] = {}
    parent: dict[str, str] = {}
    for j in range(1, len(sizes)):
        for start in range(0, len(order), sizes[j]):
            run = order[start : start + sizes[j]]
            if len(run) < sizes[j] and sizes[j - 1] >= len(run):
                continue
            agg = compress_hosts(run, shortest=False)
            while agg in where:
                agg += "+"
            where[agg] = f"{path} (aggregated block {agg})"
            # children: the largest blocks below this one not yet claimed by a parent
            direct: list[str] = []
            for base_block in run:
                top = base_block
                while top in parent:
                    top = parent[top]
                if top not in direct:
                    direct.append(top)
            for c in direct:
                parent[c] = agg
            kids[agg] = direct
    return nodes, kids, where


def _block_levels(
    sizes: Any,
    path: str,
    nodes: Mapping[str, list[str]],
    order: Sequence[str],
    where: Mapping[str, str],
    problems: list[str],
) -> list[int]:
    """The aggregation levels (log2 of base blocks) of ``block_sizes`` (node counts), Slurm's
    rules: the first is the base block size, each next one the base times a power of two,
    every block holds at least the base size; without ``block_sizes`` the base is the first
    block's node count and the levels are 0-4."""
    if sizes is None:
        base = len(nodes[order[0]]) if order else 1
        levels = [0, 1, 2, 3, 4]
    else:
        if isinstance(sizes, str):
            try:
                sizes = [int(x) for x in sizes.split(",")]
            except ValueError:
                problems.append(f"{path}: expected a list of node counts, got {sizes!r}")
                return []
        if not isinstance(sizes, list) or not sizes:
            problems.append(f"{path}: expected a non-empty list of node counts, got {sizes!r}")
            return []
        bad = [s for s in sizes if isinstance(s, bool) or not isinstance(s, int) or s <= 0]
        if bad:
            problems.append(f"{path}: node counts must be integers > 0, got {bad}")
            return []
        base = sizes[0]
        levels = []
        for k, s in enumerate(sizes):
            ratio = s // base
            if s % base or ratio & (ratio - 1):
                problems.append(f"{path}[{k}]: {s} is not the base size {base} times a power of two")
            elif ratio.bit_length() - 1 > MAX_BLOCK_LEVEL:
                problems.append(f"{path}[{k}]: {s} is more than 2^{MAX_BLOCK_LEVEL} base blocks")
            elif levels and ratio.bit_length() - 1 <= levels[-1]:
                problems.append(f"{path}[{k}]: block sizes must grow, got {s} after {sizes[k - 1]}")
            else:
                levels.append(ratio.bit_length() - 1)
    for b in order:
        if len(nodes.get(b, ())) < base:
            problems.append(f"{where[b]}.nodes: block {b!r} has {len(nodes[b])} nodes, fewer than the base size {base}")
    return levels
