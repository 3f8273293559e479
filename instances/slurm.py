"""Read a Slurm cluster into the cluster graph: its ``topology.conf`` or ``topology.yaml``
(tree and block plugins) and the nodes ``scontrol show nodes --json`` or ``sinfo --json``
print.

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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from placement.errors import InvalidInputError
from placement.model import Instance, Link, Scenarios, Server, Switch

__all__ = [
    "expand_hostlist",
    "compress_hostlist",
    "parse_topology_conf",
    "parse_topology_yaml",
    "SlurmNode",
    "SlurmNodes",
    "read_slurm_nodes",
    "parse_gres",
    "UNAVAILABLE_STATES",
    "instance_from_slurm",
]


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


_HOST = re.compile(r"[^\s\[\],]+")
_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(hosts: Sequence[str]) -> str:
    """Slurm's compressed host list of ``hosts``, in their order: the inverse of
    :func:`expand_hostlist` (``expand_hostlist(compress_hostlist(h)) == h``).

    Neighbours sharing a prefix share one bracket (unless listing them is shorter);
    consecutive numbers become a range that keeps their zero-padding (``n08, n09, n10`` ->
    ``n[08-10]``, as Slurm writes it).

    >>> compress_hostlist(["tux0", "tux1", "tux2", "tux3", "tux7", "gpu01", "gpu02", "login"])
    'tux[0-3,7],gpu[01-02],login'
    """
    return _compress(hosts, shortest=True)


def _compress(hosts: Sequence[str], *, shortest: bool) -> str:
    """:func:`compress_hostlist`; ``shortest=False`` brackets every run of one prefix, as
    Slurm's ``hostlist_ranged_string`` does (``b[0,2]``, not ``b0,b2``)."""
    bad = [h for h in hosts if not isinstance(h, str) or not _HOST.fullmatch(h)]
    if bad:
        raise ValueError(f"host names must be non-empty, without spaces, ',', '[' or ']': {bad[:5]}")
    groups: list[tuple[str, list[str]]] = []  # (prefix, digit strings) or (name, []) for a plain name
    for h in hosts:
        m = _TRAILING_DIGITS.match(h)
        if m is None:
            groups.append((h, []))
        elif groups and groups[-1][1] and groups[-1][0] == m.group(1):
            groups[-1][1].append(m.group(2))
        else:
            groups.append((m.group(1), [m.group(2)]))
    out = []
    for prefix, digits in groups:
        if not digits:
            out.append(prefix)
        elif len(digits) == 1:
            out.append(prefix + digits[0])
        else:
            bracket = f"{prefix}[{','.join(_ranges(digits))}]"
            plain = ",".join(prefix + d for d in digits)
            out.append(bracket if len(bracket) <= len(plain) or not shortest else plain)
    return ",".join(out)


def _ranges(digits: list[str]) -> Iterator[str]:
    """``["08", "09", "10", "3"]`` -> ``"08-10", "3"``: each range expands back to exactly
    its strings (:func:`expand_hostlist` pads a range to the width of its first number
    when that number starts with 0)."""
    i = 0
    while i < len(digits):
        first = digits[i]
        width = len(first) if first.startswith("0") else 0
        j = i
        while j + 1 < len(digits) and digits[j + 1] == str(int(digits[j]) + 1).zfill(width):
            j += 1
        yield first if j == i else f"{first}-{digits[j]}"
        i = j + 1


# ------------------------------------------------------------------------------ topology


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
            agg = _compress(run, shortest=False)
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


# ------------------------------------------------------------------------------ nodes


@dataclass(frozen=True)
class SlurmNode:
    """A node as Slurm reports it (``scontrol show nodes --json``, ``sinfo --json``).

    ``gpu_type`` is the GRES type (``gpu:a100:8`` -> ``"a100"``, Slurm's spelling kept);
    ``"unknown"`` when the GRES has no type (``gpu:8``); the types joined by ``+``
    (``"a100+v100"``) when a node has several.  ``memory_gb`` is ``RealMemory`` / 1024
    (Slurm's MB are MiB); ``None`` when Slurm reports no CPUs or its default ``RealMemory``
    of 1 MB (not configured).  ``states`` are upper case, base state first (``("IDLE",
    "DRAIN")``)."""

    name: str
    gpus: int
    gpu_type: str
    used_gpus: int = 0
    cpus: int | None = None
    memory_gb: float | None = None
    states: tuple[str, ...] = ()

    @property
    def available(self) -> bool:
        """Whether Slurm would start a new job here (no state of :data:`UNAVAILABLE_STATES`)."""
        return not UNAVAILABLE_STATES.intersection(self.states)


UNAVAILABLE_STATES = frozenset(
    {
        "DOWN",
        "DRAIN",
        "DRAINED",
        "DRAINING",
        "FAIL",
        "FAILING",
        "MAINT",
        "FUTURE",
        "NOT_RESPONDING",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "INVALID",
        "INVALID_REG",
    }
)
"""Node states in which Slurm starts no new job: :func:`instance_from_slurm` counts all the
GPUs of such a node as used.  (``UNKNOWN``, a controller that has just started, and the
power-saving states, which Slurm resumes on demand, are not among them.)"""


class SlurmNodes(dict[str, SlurmNode]):
    """``{node name: SlurmNode}`` of the nodes with GPUs, in the order Slurm listed them;
    ``without_gpus`` names the nodes left out for having none."""

    without_gpus: tuple[str, ...] = ()


_GRES_ENTRY = re.compile(r"^(?P<body>[^()]*)(?:\((?P<detail>[^()]*)\))?$")
_GRES_COUNT = re.compile(r"^(?P<n>\d+)(?P<unit>[KMGTP]?)$")
_GRES_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_GRES_NAME = re.compile(r"^[\w.+-]+$")
MAX_GPUS_PER_NODE = 1_000_000
"""Most GPUs a node may report (more is a corrupt count, refused)."""


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses (``gpu:a100:3(IDX:0,2-3),nic:1``)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    out.append(cur)
    return out


def parse_gres(text: str, path: str = "gres") -> tuple[dict[str, int], list[str]]:
    """``({gpu type or "": count}, problems)`` of a Slurm GRES string; GRES other than
    ``gpu`` are skipped.  Accepted: ``gpu``, ``gpu:8``, ``gpu:a100``, ``gpu:a100:8``,
    ``gpu:a100:8(S:0-1)``, ``gpu:a100:2(IDX:0-1)``, ``gpu:(null):0(IDX:N/A)``, a
    ``no_consume`` flag, several comma-separated entries; ``(null)``, ``N/A`` and ``""``
    are no GRES.

    >>> parse_gres("gpu:a100:8(S:0-1),gpu:v100:2,nic:1")
    ({'a100': 8, 'v100': 2}, [])
    >>> parse_gres("gpu:a100:eight", "nodes[3].gres")[1]
    ["nodes[3].gres: malformed GPU entry 'gpu:a100:eight' (expected gpu[:type][:count][(...)])"]
    """
    out: dict[str, int] = {}
    problems: list[str] = []
    if text.strip() in ("", "(null)", "N/A"):
        return out, problems
    if text.count("(") != text.count(")"):
        return out, [f"{path}: unbalanced parentheses in {text!r}"]
    for raw in _split_top(text):
        entry = raw.strip().replace(":(null):", ":")
        if not entry:
            continue
        m = _GRES_ENTRY.match(entry)
        parts = m.group("body").split(":") if m else []
        if m is None or not parts[0]:
            problems.append(f"{path}: malformed GRES entry {raw.strip()!r} (expected name[:type][:count][(...)])")
            continue
        if parts[0] != "gpu":
            continue
        rest = [p for p in parts[1:] if p != "no_consume"]
        count: int | None = 1
        if rest and (c := _GRES_COUNT.match(rest[-1])):
            count = int(c.group("n")) * _GRES_UNITS[c.group("unit")]
            rest = rest[:-1]
        if len(rest) > 1 or (rest and not _GRES_NAME.match(rest[0])):
            count = None
        if count is None:
            problems.append(f"{path}: malformed GPU entry {raw.strip()!r} (expected gpu[:type][:count][(...)])")
            continue
        if count > MAX_GPUS_PER_NODE:
            problems.append(f"{path}: {count:,} GPUs in {raw.strip()!r}, more than {MAX_GPUS_PER_NODE:,}")
            continue
        key = rest[0] if rest else ""
        out[key] = out.get(key, 0) + count
    return out, problems


def _count(value: Any, path: str, problems: list[str]) -> int | None:
    """An integer >= 0 as Slurm's JSON writes it: a number, or (data_parser v0.0.40+)
    ``{"set": true, "infinite": false, "number": n}``; ``None`` when not set."""
    if isinstance(value, Mapping) and "number" in value:
        if value.get("set") is False or value.get("infinite") is True:
            return None
        value = value["number"]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(f"{path}: expected an integer >= 0, got {value!r}")
        return None
    return value


def _string(value: Any, path: str, problems: list[str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"{path}: expected a string, got {value!r}")
        return ""
    return value


def _sub(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, Mapping) else {}


def _states(value: Any, flags: Any, path: str, problems: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v, at in ((value, f"{path}.state"), (flags, f"{path}.state_flags")):
        if v is None:
            continue
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
            problems.append(f"{at}: expected a state name or a list of them, got {v!r}")
            continue
        out += [s.upper() for s in items if s and s.upper() not in out]
    return tuple(out)


def _node(
    name: str,
    gres: str,
    gres_used: str,
    cpus: int | None,
    real_memory: int | None,
    states: tuple[str, ...],
    gres_path: str,
    used_path: str,
    problems: list[str],
) -> SlurmNode:
    total, p1 = parse_gres(gres, gres_path)
    used, p2 = parse_gres(gres_used, used_path)
    problems += p1 + p2
    gpus, used_gpus = sum(total.values()), sum(used.values())
    if used_gpus > gpus and not p1:
        problems.append(f"{used_path}: {used_gpus} GPUs in use, but the node has {gpus} ({gres!r})")
    types = sorted({t or "unknown" for t, k in total.items() if k > 0})
    return SlurmNode(
        name=name,
        gpus=gpus,
        gpu_type="+".join(types) or "unknown",
        used_gpus=min(used_gpus, gpus),
        cpus=cpus or None,
        memory_gb=real_memory / 1024 if real_memory is not None and real_memory > 1 else None,
        states=states,
    )


def read_slurm_nodes(text: str | bytes) -> SlurmNodes:
    """The GPU nodes of a cluster from the JSON of ``scontrol show nodes --json`` (Slurm
    23.02+), ``sinfo --json`` of Slurm 22.05 (openapi v0.0.38: a ``nodes`` list) or
    ``sinfo -N --json`` of Slurm 23.02+ (a ``sinfo`` list of rows).

    Per node: GPUs and their type from ``gres`` (:func:`parse_gres`), GPUs in use from
    ``gres_used``, CPUs, ``real_memory`` (MB, read as GB = MB / 1024) and states.  Nodes
    without a GPU are left out of the result (their names are in ``without_gpus``).  A
    node listed several times (``sinfo -N`` lists it once per partition) must say the same
    each time.  ``sinfo`` without ``-N`` groups nodes whose GRES differ into one row, so a
    row of several nodes is refused.  Every problem (not JSON, a malformed GRES or count, a
    ``gres_used`` above ``gres``) is raised at once with its JSON path:
    ``nodes[3].gres: malformed GPU entry 'gpu:a100:x' ...``.

    >>> n = read_slurm_nodes('{"nodes": [{"name": "g1", "gres": "gpu:a100:8(S:0-1)", '
    ...     '"gres_used": "gpu:a100:2(IDX:0-1)", "cpus": 96, "real_memory": 1048576, "state": ["MIXED"]}]}')
    >>> n["g1"]
    SlurmNode(name='g1', gpus=8, gpu_type='a100', used_gpus=2, cpus=96, memory_gb=1024.0, states=('MIXED',))
    """
    from placement.formats import parse_json

    src = "Slurm nodes JSON"
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInputError([f"not UTF-8 text: {e}"], source=src) from None
    doc, problems = parse_json(text, what="of Slurm's nodes")
    if doc is None and problems:
        raise InvalidInputError(problems, source=src)
    seen: dict[str, tuple[SlurmNode, str]] = {}
    if not isinstance(doc, Mapping) or not (isinstance(doc.get("nodes"), list) or isinstance(doc.get("sinfo"), list)):
        raise InvalidInputError(
            [
                "expected an object with a 'nodes' list (scontrol show nodes --json, sinfo --json of Slurm 22.05) "
                "or a 'sinfo' list (sinfo -N --json of Slurm 23.02+)"
            ],
            source=src,
        )
    for k, err in enumerate(doc.get("errors") or []):
        what = err.get("description") or err.get("error") if isinstance(err, Mapping) else err
        problems.append(f"errors[{k}]: Slurm reported {what!r}")
    records: list[tuple[str, SlurmNode]] = []
    if isinstance(doc.get("nodes"), list):
        for i, rec in enumerate(doc["nodes"]):
            at = f"nodes[{i}]"
            if not isinstance(rec, Mapping):
                problems.append(f"{at}: expected an object")
                continue
            name = rec.get("name")
            if not isinstance(name, str) or not name:
                problems.append(f"{at}.name: expected the node name, got {name!r}")
                continue
            node = _node(
                name,
                _string(rec.get("gres"), f"{at}.gres", problems),
                _string(rec.get("gres_used"), f"{at}.gres_used", problems),
                _count(rec.get("cpus"), f"{at}.cpus", problems),
                _count(rec.get("real_memory"), f"{at}.real_memory", problems),
                _states(rec.get("state"), rec.get("state_flags"), at, problems),
                f"{at}.gres",
                f"{at}.gres_used",
                problems,
            )
            records.append((at, node))
    else:
        for i, row in enumerate(doc["sinfo"]):
            at = f"sinfo[{i}]"
            if not isinstance(row, Mapping):
                problems.append(f"{at}: expected an object")
                continue
            names = _sub(row, "nodes").get("nodes")
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names) or not names:
                problems.append(f"{at}.nodes.nodes: expected a list of node names, got {names!r}")
                continue
            if len(names) > 1:
                problems.append(
                    f"{at}.nodes.nodes: one row for {len(names)} nodes ({compress_hostlist(names)}): sinfo groups "
                    "nodes without comparing their GRES, so each node's GPUs are unknown; use 'sinfo -N --json' "
                    "or 'scontrol show nodes --json'"
                )
                continue
            cpus, mem, gres = _sub(row, "cpus"), _sub(row, "memory"), _sub(row, "gres")
            state = _sub(row, "node").get("state")
            node = _node(
                names[0],
                _string(gres.get("total"), f"{at}.gres.total", problems),
                _string(gres.get("used"), f"{at}.gres.used", problems),
                _count(cpus.get("maximum", cpus.get("total")), f"{at}.cpus.maximum", problems),
                _count(mem.get("maximum"), f"{at}.memory.maximum", problems),
                _states(state, None, f"{at}.node", problems),
                f"{at}.gres.total",
                f"{at}.gres.used",
                problems,
            )
            records.append((at, node))
    for at, node in records:
        if node.name in seen:
            first, first_at = seen[node.name]
            if replace(first, states=()) != replace(node, states=()):
                problems.append(f"{at}: node {node.name!r} differs from {first_at}: {node} vs {first}")
            continue
        seen[node.name] = (node, at)
    if problems:
        raise InvalidInputError(problems, source=src)
    out = SlurmNodes((n, v) for n, (v, _) in seen.items() if v.gpus > 0)
    out.without_gpus = tuple(n for n, (v, _) in seen.items() if v.gpus == 0)
    return out


# ------------------------------------------------------------------------------ instance


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
    from placement.instances.generate import generate, gpu_profile, populate

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
    need = max(level.values(), default=0) + 1
    if len(level_gbps) < need:
        raise InvalidInputError([f"level_gbps: the tree has {need} link levels, got {len(level_gbps)} bandwidth(s)"])
    if any(not (b > 0 and math.isfinite(b)) for b in level_gbps):
        raise InvalidInputError([f"level_gbps must all be finite numbers > 0, got {list(level_gbps)}"])
    hosts = [n for ns in sw_nodes.values() for n in ns]
    if not hosts:
        hint = " (a flat topology names no node: give the nodes' JSON)" if not sw_nodes and not kids else ""
        raise InvalidInputError([f"{src} lists no nodes{hint}"])
    links = [Link(n, sw, float(level_gbps[0])) for sw, ns in sw_nodes.items() for n in ns]
    parent_of = {c: sw for sw, cs in kids.items() for c in cs}
    links += [Link(c, p, float(level_gbps[level[c] + 1])) for c, p in parent_of.items()]
    switches = tuple(Switch(sw) for sw in list(sw_nodes) + [k for k in kids if k not in sw_nodes])
    levels_text = ",".join(f"{b:g}" for b in level_gbps[:need])
    where = f"Slurm {src} ({len(hosts)} nodes, {len(level)} switches), level bandwidths {levels_text} Gbit/s"
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
