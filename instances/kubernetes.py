"""Read a Kubernetes cluster into the cluster graph: ``kubectl get nodes -o json``, optionally
``kubectl get pods -A -o json`` (the GPUs already in use) and ``kubectl get hypernodes -o json``
(Volcano ``topology.volcano.sh/v1alpha1`` HyperNodes, the network tree).

>>> inst = instance_from_kubernetes(json.load(open("nodes.json")), pods=json.load(open("pods.json")),
...                                 jobs=8, seed=1)  # doctest: +SKIP

What is read, and how:

- **Servers** are the nodes whose ``status.allocatable["nvidia.com/gpu"]`` is above 0, named
  exactly as the nodes; ``cpu`` and ``memory`` come from ``status.allocatable`` (memory in GiB,
  the unit of ``64Gi`` in a manifest, as ``memory_gb``). The GPU type is the first of the labels
  :data:`GPU_TYPE_LABELS` present (GPU feature discovery's ``nvidia.com/gpu.product``, GKE's
  ``cloud.google.com/gke-accelerator``, ``nvidia.com/gpu.family``), else ``"unknown"``; the GPUs'
  bandwidth inside a server comes from the type (:func:`~placement.instances.generate.gpu_profile`).
  Quantities (``"8"``, ``"500m"``, ``"1056Gi"``, ``"129e6"``) are read by the official client's
  ``kubernetes.utils.parse_quantity`` (``pip install 'placement[kubernetes]'``).
- **Left out**, and listed in the instance's ``source`` and ``metadata``: nodes without GPUs;
  cordoned nodes (``spec.unschedulable``) and nodes whose ``Ready`` condition is not ``"True"``,
  since no new pod can be placed there (a node without a ``Ready`` condition is kept: nothing
  says it is down).
- **GPUs in use**: for each pod bound to a server (``spec.nodeName``) that has not ended
  (``status.phase`` not ``Succeeded``/``Failed``), its effective ``nvidia.com/gpu`` request by
  Kubernetes' rule: the larger of the app containers' sum (plus restartable sidecar init
  containers) and the largest init container (plus the sidecars started before it), plus
  ``spec.overhead``. A container's request is its ``requests`` entry, else its ``limits`` one
  (Kubernetes defaults one to the other for extended resources and refuses them unequal). Pods
  holding more GPUs than a node now offers (a GPU went unhealthy under a running pod) leave that
  node with no free GPU; the excess is recorded in ``metadata`` and ``source``, not refused.
- **Topology from node labels** (``level_labels``, innermost first): each value of a level
  label is a switch ``"<label>=<value>"``; a node links to its innermost level's switch, each
  switch to its node's switch of the next level. Without ``level_labels``, the first family
  of :data:`LEVEL_FAMILIES` with a label on a GPU node gives the levels (those of its labels
  present on some GPU node). NVLink-domain labels (``network.topology.nvidia.com/accelerator``,
  ``nvidia.com/gpu.clique``) are no switch tier of the network tree and are not used unless
  named in ``level_labels``. With no level at all, one switch ``cluster`` joins every server.
- **Topology from HyperNodes** (``hypernodes``, instead of labels): HyperNode ``h`` is switch
  ``"hypernode/<h>"``; its ``Node`` members (``exactMatch`` names, ``regexMatch`` patterns
  searched in node names as Volcano does, ``labelMatch`` label selectors) link to it, and so do
  its ``HyperNode`` members (by ``exactMatch``). Levels are the HyperNodes' distinct tiers.
- **Bandwidths**: ``level_gbps[k]`` is the bandwidth of every link into a level-``k`` switch
  (node to level 0, level 0 to level 1, ...), as ``placement import-slurm --level-gbps``. When
  the top level has several switches (two blocks, two spines, two zones), a root switch
  ``cluster`` joins them and ``level_gbps`` needs one more value, for the links into it.
  Default: :data:`FIRST_LEVEL_GBPS` (200) for the first links, halved at each level up
  (200, 100, 50, ...).
- **Slowdowns and jobs** come from :func:`~placement.instances.generate.populate` with the
  generator options.

Every problem of the input (a quantity that does not parse, fractional GPUs, labels that form no
tree, a HyperNode member that does not exist, ...) is reported at once with its path, e.g.
``nodes.items[3].status.allocatable["nvidia.com/gpu"]``, in one
:class:`~placement.errors.InvalidInputError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from placement.errors import InvalidInputError, MethodUnavailableError
from placement.model import Instance, Link, Server, Switch

__all__ = [
    "instance_from_kubernetes",
    "default_level_gbps",
    "GPU_RESOURCE",
    "GPU_TYPE_LABELS",
    "LEVEL_FAMILIES",
    "FIRST_LEVEL_GBPS",
    "ROOT_SWITCH",
]

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource that counts a node's GPUs (the NVIDIA device plugin's)."""

GPU_TYPE_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "nvidia.com/gpu.family")
"""Node labels naming the GPU type, in order of preference."""

LEVEL_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "NVIDIA Topograph",
        (
            "network.topology.nvidia.com/leaf",
            "network.topology.nvidia.com/block",
            "network.topology.nvidia.com/spine",
            "network.topology.nvidia.com/core",
            "network.topology.nvidia.com/datacenter",
        ),
    ),
    ("Topograph fabric tiers", tuple(f"fabric.topograph.run/tier-{k}" for k in range(8))),
    (
        "GKE",
        (
            "cloud.google.com/gce-topology-subblock",
            "cloud.google.com/gce-topology-block",
            "cloud.google.com/gce-topology-cluster",
        ),
    ),
    (
        "Amazon EKS",
        (
            "topology.k8s.aws/network-node-layer-4",
            "topology.k8s.aws/network-node-layer-3",
            "topology.k8s.aws/network-node-layer-2",
            "topology.k8s.aws/network-node-layer-1",
        ),
    ),
    ("zone", ("topology.kubernetes.io/zone",)),
)
"""Known families of network-topology node labels, innermost first: NVIDIA Topograph (``leaf``
and its older name ``block``, ``spine``, ``core`` and its older name ``datacenter``), Topograph's
``fabric.topograph.run/tier-N`` (tier 0 nearest the node), GKE's ``gce-topology-*``, EKS's
``network-node-layer-N`` (layer 1 is the top of the AWS network; layer 4 exists on some
instance types only) and the availability zone."""

FIRST_LEVEL_GBPS = 200.0
"""Default bandwidth of the links from nodes to their first switch; halved at each level up."""

ROOT_SWITCH = "cluster"
"""The switch that joins several top-level switches, or every server when there is no topology."""

MAX_GPUS_PER_NODE = 4096
"""The instance format's bound on a server's GPUs."""

_ENDED_PHASES = ("Succeeded", "Failed")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def default_level_gbps(levels: int) -> list[float]:
    """``[200, 100, 50, ...]``: ``levels`` bandwidths, halving from :data:`FIRST_LEVEL_GBPS`."""
    return [FIRST_LEVEL_GBPS / 2**k for k in range(levels)]


def _key(k: str) -> str:
    return "[" + json.dumps(k) + "]"


def _quantity_parser() -> Callable[[Any], Decimal]:
    try:
        from kubernetes.utils import parse_quantity
    except ImportError:
        raise MethodUnavailableError(
            "reading Kubernetes objects needs the official Kubernetes client: pip install 'placement[kubernetes]'"
        ) from None
    return parse_quantity


class _Reader:
    """Collects every problem of the documents while reading them."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.parse = _quantity_parser()

    def quantity(self, value: Any, where: str, *, whole: bool = False) -> Decimal | None:
        """A non-negative, finite Kubernetes quantity (a whole number if ``whole``), else a problem."""
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            self.problems.append(f'{where} must be a Kubernetes quantity such as "8", "500m" or "64Gi", got {value!r}')
            return None
        try:
            q = self.parse(value) if str(value) == str(value).strip() else None
        except (ValueError, ArithmeticError):
            q = None
        if q is None or not q.is_finite() or not math.isfinite(float(q)):
            self.problems.append(f"{where} is not a Kubernetes quantity: {value!r}")
            return None
        if q < 0:
            self.problems.append(f"{where} must not be negative, got {value!r}")
            return None
        if whole and q != q.to_integral_value():
            self.problems.append(f"{where} must be a whole number of GPUs, got {value!r}")
            return None
        return q

    def mapping(self, d: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
        """``d[key]`` when it is an object (``{}`` when absent or null), else a problem."""
        v = d.get(key)
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.problems.append(f"{where}.{key} must be an object, got {type(v).__name__}")
            return {}
        return v

    def items(self, doc: Any, what: str, kind: str, command: str) -> list[tuple[int, dict[str, Any]]]:
        """The objects of a ``List`` (or ``<kind>List``) document, each with its index."""
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            self.problems.append(
                f"{what} must be a Kubernetes {kind}List (the JSON of `{command}`), got "
                + (f"kind {doc.get('kind')!r} without an items list" if isinstance(doc, dict) else type(doc).__name__)
            )
            return []
        if doc.get("kind") not in (None, "List", f"{kind}List"):
            self.problems.append(f"{what}.kind must be 'List' or '{kind}List', got {doc.get('kind')!r}")
        out = []
        for i, item in enumerate(doc["items"]):
            where = f"{what}.items[{i}]"
            if not isinstance(item, dict):
                self.problems.append(f"{where} must be a {kind} object, got {type(item).__name__}")
                continue
            if item.get("kind") not in (None, kind):
                self.problems.append(f"{where}.kind must be {kind!r}, got {item.get('kind')!r}")
                continue
            out.append((i, item))
        return out

    def name(self, item: Mapping[str, Any], where: str) -> str | None:
        name = self.mapping(item, "metadata", where).get("name")
        if not isinstance(name, str) or not name:
            self.problems.append(f"{where}.metadata.name must be a non-empty string, got {name!r}")
            return None
        return name


# ----------------------------------------------------------------------------- nodes
@dataclass
class _Node:
    index: int
    name: str
    labels: dict[str, str]
    gpus: int = 0
    gpu_type: str = "unknown"
    cpus: float | None = None
    memory_gb: float | None = None
    used: int = 0
    pods: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"nodes.items[{self.index}]"


@dataclass
class _Nodes:
    all: list[_Node]
    servers: list[_Node]
    no_gpu: list[str]
    unschedulable: list[str]
    not_ready: list[str]


def _read_nodes(r: _Reader, doc: Any) -> _Nodes:
    out = _Nodes([], [], [], [], [])
    seen: dict[str, int] = {}
    for i, item in r.items(doc, "nodes", "Node", "kubectl get nodes -o json"):
        where = f"nodes.items[{i}]"
        name = r.name(item, where)
        if name is None:
            continue
        if name in seen:
            r.problems.append(f"{where}.metadata.name duplicates node {name!r} of nodes.items[{seen[name]}]")
            continue
        seen[name] = i
        labels = r.mapping(item["metadata"], "labels", f"{where}.metadata")
        bad = [k for k, v in labels.items() if not isinstance(v, str)]
        for k in bad:
            r.problems.append(f"{where}.metadata.labels{_key(k)} must be a string, got {labels[k]!r}")
        node = _Node(i, name, {k: v for k, v in labels.items() if k not in bad})
        out.all.append(node)
        spec = r.mapping(item, "spec", where)
        status = r.mapping(item, "status", where)
        alloc = r.mapping(status, "allocatable", f"{where}.status")
        at = f"{where}.status.allocatable"
        if GPU_RESOURCE in alloc:
            q = r.quantity(alloc[GPU_RESOURCE], f"{at}{_key(GPU_RESOURCE)}", whole=True)
            if q is not None and q > MAX_GPUS_PER_NODE:
                r.problems.append(f"{at}{_key(GPU_RESOURCE)} must be at most {MAX_GPUS_PER_NODE}, got {q}")
            elif q is not None:
                node.gpus = int(q)
        if node.gpus == 0:
            out.no_gpu.append(name)
            continue
        if spec.get("unschedulable") is True:
            out.unschedulable.append(name)
            continue
        conditions = status.get("conditions")
        ready = (
            [c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"]
            if isinstance(conditions, list)
            else []
        )
        if ready and ready[0].get("status") != "True":
            out.not_ready.append(name)
            continue
        node.gpu_type = next((node.labels[k] for k in GPU_TYPE_LABELS if node.labels.get(k)), "unknown")
        if "cpu" in alloc:
            q = r.quantity(alloc["cpu"], f'{at}["cpu"]')
            node.cpus = None if q is None else round(float(q), 3)
        if "memory" in alloc:
            q = r.quantity(alloc["memory"], f'{at}["memory"]')
            node.memory_gb = None if q is None else round(float(q) / 2**30, 3)
        out.servers.append(node)
    return out


# ------------------------------------------------------------------------------ pods
def _container_gpus(r: _Reader, c: Any, where: str) -> int:
    if not isinstance(c, dict):
        r.problems.append(f"{where} must be a container object, got {type(c).__name__}")
        return 0
    res = r.mapping(c, "resources", where)
    got: dict[str, Decimal] = {}
    for part in ("requests", "limits"):
        d = r.mapping(res, part, f"{where}.resources")
        if GPU_RESOURCE in d:
            q = r.quantity(d[GPU_RESOURCE], f"{where}.resources.{part}{_key(GPU_RESOURCE)}", whole=True)
            if q is not None:
                got[part] = q
    if len(got) == 2 and got["requests"] != got["limits"]:
        r.problems.append(
            f"{where}.resources: requests{_key(GPU_RESOURCE)} ({got['requests']}) and limits{_key(GPU_RESOURCE)} "
            f"({got['limits']}) must be equal (Kubernetes does not overcommit extended resources)"
        )
    return int(got.get("requests", got.get("limits", 0)))


def _pod_gpus(r: _Reader, spec: Mapping[str, Any], where: str) -> int:
    """The pod's effective GPU request, by Kubernetes' rule for init and sidecar containers."""

    def containers(key: str) -> list[Any]:
        v = spec.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            r.problems.append(f"{where}.spec.{key} must be a list, got {type(v).__name__}")
            return []
        return v

    apps = sum(_container_gpus(r, c, f"{where}.spec.containers[{k}]") for k, c in enumerate(containers("containers")))
    sidecars = 0
    init_peak = 0
    for k, c in enumerate(containers("initContainers")):
        g = _container_gpus(r, c, f"{where}.spec.initContainers[{k}]")
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            sidecars += g
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + g)
    overhead = r.mapping(spec, "overhead", f"{where}.spec")
    extra = 0
    if GPU_RESOURCE in overhead:
        q = r.quantity(overhead[GPU_RESOURCE], f"{where}.spec.overhead{_key(GPU_RESOURCE)}", whole=True)
        extra = 0 if q is None else int(q)
    return max(apps + sidecars, init_peak) + extra


def _read_pods(r: _Reader, doc: Any, servers: Mapping[str, _Node]) -> int:
    """Adds each live pod's GPUs to its server's ``used``; returns how many pods hold GPUs."""
    holders = 0
    for i, item in r.items(doc, "pods", "Pod", "kubectl get pods -A -o json"):
        where = f"pods.items[{i}]"
        spec = r.mapping(item, "spec", where)
        node = spec.get("nodeName")
        if not isinstance(node, str) or node not in servers:
            continue
        if r.mapping(item, "status", where).get("phase") in _ENDED_PHASES:
            continue
        g = _pod_gpus(r, spec, where)
        if g > 0:
            holders += 1
            meta = r.mapping(item, "metadata", where)
            servers[node].used += g
            servers[node].pods.append(f"{meta.get('namespace', 'default')}/{meta.get('name', f'items[{i}]')}")
    return holders


# ------------------------------------------------------------------------- topology
@dataclass
class _Tree:
    """Switches by level, each with its parent switch (``None`` at the top), and each
    server's first switch."""

    level: dict[str, int] = field(default_factory=dict)
    parent: dict[str, str | None] = field(default_factory=dict)
    uplink: dict[str, str] = field(default_factory=dict)
    levels: int = 0


def _default_labels(servers: Sequence[_Node]) -> list[str]:
    for _family, labels in LEVEL_FAMILIES:
        present = [k for k in labels if any(k in s.labels for s in servers)]
        if present:
            return present
    return []


def _label_tree(r: _Reader, servers: Sequence[_Node], levels: Sequence[str]) -> _Tree:
    tree = _Tree(levels=len(levels))
    nowhere = {k for k in levels if servers and not any(s.labels.get(k) for s in servers)}
    for k in sorted(nowhere):
        r.problems.append(f"nodes: no GPU node has the level label {k!r} (choose others with level_labels)")
    witness: dict[str, tuple[str, str]] = {}  # switch -> (parent switch, node that says so)
    clash: set[tuple[str, str]] = set()
    for s in servers:
        vals = []
        for k in levels:
            v = s.labels.get(k)
            if not v and k not in nowhere:
                what = "has an empty value" if k in s.labels else "is missing"
                r.problems.append(
                    f"{s.where}.metadata.labels{_key(k)} {what} on GPU node {s.name!r} (every GPU node needs "
                    f"each level label: {', '.join(levels)}; choose others with level_labels)"
                )
            vals.append(v)
        if not all(vals):
            continue
        path = [f"{k}={v}" for k, v in zip(levels, vals)]
        tree.uplink[s.name] = path[0]
        for lv, sw in enumerate(path):
            tree.level[sw] = lv
            up = path[lv + 1] if lv + 1 < len(path) else None
            tree.parent.setdefault(sw, up)
            if sw not in witness:
                witness[sw] = (up or "", s.name)
            elif witness[sw][0] != (up or "") and (sw, up or "") not in clash:
                clash.add((sw, up or ""))
                other, node = witness[sw]
                r.problems.append(
                    f"nodes: the level labels form no tree: {sw} lies under {other} (node {node!r}) and under "
                    f"{up} (node {s.name!r})"
                )
    return tree


@dataclass
class _HyperNode:
    index: int
    name: str
    tier: int
    nodes: list[tuple[Callable[[_Node], bool], int]] = field(default_factory=list)
    children: list[tuple[str, int]] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"hypernodes.items[{self.index}]"


def _label_selector(r: _Reader, sel: Any, where: str) -> Callable[[_Node], bool] | None:
    """A Kubernetes label selector (``matchLabels``, ``matchExpressions``); empty matches nothing."""
    if not isinstance(sel, dict):
        r.problems.append(f"{where} must be an object, got {type(sel).__name__}")
        return None
    ok = True
    labels = r.mapping(sel, "matchLabels", where)
    for k, v in labels.items():
        if not isinstance(v, str):
            r.problems.append(f"{where}.matchLabels{_key(k)} must be a string, got {v!r}")
            ok = False
    exprs: list[tuple[str, str, list[str]]] = []
    raw = sel.get("matchExpressions") or []
    if not isinstance(raw, list):
        r.problems.append(f"{where}.matchExpressions must be a list, got {type(raw).__name__}")
        raw, ok = [], False
    for n, e in enumerate(raw):
        at = f"{where}.matchExpressions[{n}]"
        e = e if isinstance(e, dict) else {}
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if not isinstance(key, str) or not key:
            r.problems.append(f"{at}.key must be a non-empty string, got {key!r}")
            ok = False
        if op not in _SELECTOR_OPERATORS:
            r.problems.append(f"{at}.operator must be one of {', '.join(_SELECTOR_OPERATORS)}, got {op!r}")
            ok = False
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            r.problems.append(f"{at}.values must be a list of strings, got {values!r}")
            ok = False
        elif op in ("In", "NotIn") and not values:
            r.problems.append(f"{at}.values must not be empty with operator {op}")
            ok = False
        elif op in ("Exists", "DoesNotExist") and values:
            r.problems.append(f"{at}.values must be empty with operator {op}, got {values!r}")
            ok = False
        if ok:
            exprs.append((str(key), str(op), list(values)))
    if not ok:
        return None
    if not labels and not exprs:
        return lambda n: False

    def match(n: _Node) -> bool:
        if any(n.labels.get(k) != v for k, v in labels.items()):
            return False
        for key, op, values in exprs:
            has = key in n.labels
            if (
                (op == "In" and not (has and n.labels[key] in values))
                or (op == "NotIn" and has and n.labels[key] in values)
                or (op == "Exists" and not has)
                or (op == "DoesNotExist" and has)
            ):
                return False
        return True

    return match


def _named(name: str) -> Callable[[_Node], bool]:
    return lambda n: n.name == name


def _searched(rx: re.Pattern[str]) -> Callable[[_Node], bool]:
    """Volcano's ``regexp.MatchString``: the pattern is searched in the name, not anchored."""
    return lambda n: rx.search(n.name) is not None


def _member(r: _Reader, hn: _HyperNode, k: int, m: Any) -> None:
    where = f"{hn.where}.spec.members[{k}]"
    if not isinstance(m, dict):
        r.problems.append(f"{where} must be an object, got {type(m).__name__}")
        return
    kind = m.get("type")
    if kind not in ("Node", "HyperNode"):
        r.problems.append(f"{where}.type must be 'Node' or 'HyperNode', got {kind!r}")
        return
    sel = r.mapping(m, "selector", where)
    given = [s for s in ("exactMatch", "regexMatch", "labelMatch") if sel.get(s) is not None]
    if len(given) != 1:
        r.problems.append(
            f"{where}.selector must give one of exactMatch, regexMatch, labelMatch, got "
            + (", ".join(given) if given else "none")
        )
        return
    how = given[0]
    at = f"{where}.selector.{how}"
    if kind == "HyperNode" and how != "exactMatch":
        r.problems.append(f"{at}: a HyperNode member is named by exactMatch (Volcano matches no pattern or label)")
        return
    if how == "exactMatch":
        name = r.mapping(sel, how, f"{where}.selector").get("name")
        if not isinstance(name, str) or not name:
            r.problems.append(f"{at}.name must be a non-empty string, got {name!r}")
        elif kind == "HyperNode":
            hn.children.append((name, k))
        else:
            hn.nodes.append((_named(name), k))
    elif how == "regexMatch":
        pattern = r.mapping(sel, how, f"{where}.selector").get("pattern")
        try:
            rx = re.compile(pattern) if isinstance(pattern, str) and pattern else None
        except re.error as e:
            r.problems.append(f"{at}.pattern {pattern!r} is not a regular expression: {e}")
            return
        if rx is None:
            r.problems.append(f"{at}.pattern must be a non-empty string, got {pattern!r}")
        else:
            hn.nodes.append((_searched(rx), k))
    else:
        match = _label_selector(r, sel[how], at)
        if match is not None:
            hn.nodes.append((match, k))


def _hypernode_tree(r: _Reader, doc: Any, nodes: _Nodes) -> tuple[_Tree, list[int]]:
    hns: dict[str, _HyperNode] = {}
    for i, item in r.items(doc, "hypernodes", "HyperNode", "kubectl get hypernodes -o json"):
        where = f"hypernodes.items[{i}]"
        name = r.name(item, where)
        spec = r.mapping(item, "spec", where)
        tier = spec.get("tier")
        if isinstance(tier, bool) or not isinstance(tier, int) or tier < 0:
            r.problems.append(f"{where}.spec.tier must be an integer >= 0, got {tier!r}")
            continue
        members = spec.get("members")
        if not isinstance(members, list) or not members:
            r.problems.append(f"{where}.spec.members must be a non-empty list, got {members!r}")
            continue
        if name is None:
            continue
        if name in hns:
            r.problems.append(f"{where}.metadata.name duplicates HyperNode {name!r} of {hns[name].where}")
            continue
        hn = hns[name] = _HyperNode(i, name, tier)
        for k, m in enumerate(members):
            _member(r, hn, k, m)

    tiers = sorted({h.tier for h in hns.values()})
    pos = {t: k for k, t in enumerate(tiers)}
    tree = _Tree(levels=len(tiers))
    sw = {h: f"hypernode/{h}" for h in hns}
    for h in hns.values():
        tree.level[sw[h.name]] = pos[h.tier]
        tree.parent[sw[h.name]] = None
    parent_of: dict[str, tuple[str, int]] = {}
    for h in hns.values():
        for child, k in h.children:
            at = f"{h.where}.spec.members[{k}].selector.exactMatch.name"
            if child not in hns:
                r.problems.append(f"{at} names HyperNode {child!r}, which is not in the list")
            elif child in parent_of and parent_of[child][0] != h.name:
                r.problems.append(
                    f"{at}: HyperNode {child!r} is a member of both {parent_of[child][0]!r} and {h.name!r}"
                )
            elif child not in parent_of:
                parent_of[child] = (h.name, k)
                if hns[child].tier >= h.tier:
                    r.problems.append(
                        f"{at}: HyperNode {child!r} (tier {hns[child].tier}) is a member of {h.name!r} "
                        f"(tier {h.tier}); a member must be of a lower tier"
                    )
                tree.parent[sw[child]] = sw[h.name]
    reported: set[str] = set()
    for start in hns:
        chain, at_hn = [start], start
        while at_hn in parent_of and parent_of[at_hn][0] not in chain:
            at_hn = parent_of[at_hn][0]
            chain.append(at_hn)
        if at_hn in parent_of and parent_of[at_hn][0] in chain:
            cycle = chain[chain.index(parent_of[at_hn][0]) :]
            if not reported & set(cycle):
                reported |= set(cycle)
                r.problems.append(f"hypernodes: HyperNodes form a cycle: {' -> '.join(cycle + [cycle[0]])}")
    for node in nodes.servers:
        homes = [(h, k) for h in hns.values() for match, k in h.nodes if match(node)]
        first = homes[0][0].name if homes else None
        others = sorted({h.name for h, _ in homes if h.name != first})
        if not homes:
            r.problems.append(f"{node.where}: GPU node {node.name!r} is a member of no HyperNode")
        elif others:
            r.problems.append(
                f"{node.where}: GPU node {node.name!r} is a member of several HyperNodes: "
                + ", ".join(repr(x) for x in [first, *others])
            )
        else:
            tree.uplink[node.name] = sw[homes[0][0].name]
    return tree, tiers


def _reached(tree: _Tree) -> tuple[list[str], list[str]]:
    """The switches above some server, by level, and those of them without a parent."""
    used: list[str] = []
    seen: set[str] = set()
    for first in tree.uplink.values():
        sw: str | None = first
        while sw is not None and sw not in seen:
            seen.add(sw)
            used.append(sw)
            sw = tree.parent.get(sw)
    used.sort(key=lambda s: tree.level[s])
    return used, [s for s in used if tree.parent.get(s) is None]


def _needed(tree: _Tree) -> int:
    """Bandwidths the tree needs: one per level, one more when a root joins several tops."""
    return tree.levels + (1 if len(_reached(tree)[1]) > 1 else 0)


def _links(tree: _Tree, gbps: Sequence[float], root: str) -> tuple[list[Switch], list[Link]]:
    """The switches above some server and the links; the link into a level-``k`` switch
    has ``gbps[k]``; several top switches are joined by ``root`` at level ``tree.levels``."""
    used, tops = _reached(tree)
    links = [Link(n, first, float(gbps[tree.level[first]])) for n, first in tree.uplink.items()]
    links += [Link(s, p, float(gbps[tree.level[p]])) for s in used if (p := tree.parent[s]) is not None]
    switches = [Switch(s) for s in used]
    if len(tops) > 1:
        switches.append(Switch(root))
        links += [Link(s, root, float(gbps[tree.levels])) for s in tops]
    return switches, links


# ----------------------------------------------------------------------------- main
def instance_from_kubernetes(
    nodes: Any,
    *,
    pods: Any = None,
    hypernodes: Any = None,
    level_labels: Sequence[str] | None = None,
    level_gbps: Sequence[float] | None = None,
    **generate_options: Any,
) -> Instance:
    """An instance on a Kubernetes cluster: ``nodes`` is the parsed JSON of ``kubectl get nodes
    -o json``, ``pods`` of ``kubectl get pods -A -o json``, ``hypernodes`` of ``kubectl get
    hypernodes -o json``; ``level_labels`` (innermost first) or ``hypernodes`` give the network
    tree, ``level_gbps`` its bandwidths (see the module's documentation for every rule and
    default). Slowdowns and jobs come from
    :func:`~placement.instances.generate.populate` with ``generate_options`` (``regime``,
    ``jobs``, ``job_mix``, ``load``, ``seed``, ...).

    Raises :class:`~placement.errors.InvalidInputError` listing every problem with its path,
    and :class:`~placement.errors.MethodUnavailableError` when the ``kubernetes`` package
    (``pip install 'placement[kubernetes]'``) is missing.
    """
    from placement.instances.generate import gpu_profile, populate

    r = _Reader()
    found = _read_nodes(r, nodes)
    by_name = {s.name: s for s in found.servers}
    if not found.servers and found.all:
        r.problems.append(
            f"nodes: no schedulable node has {GPU_RESOURCE} allocatable > 0 ({len(found.all)} nodes: "
            f"{len(found.no_gpu)} without GPUs, {len(found.unschedulable)} cordoned, {len(found.not_ready)} NotReady)"
        )

    root = ROOT_SWITCH if ROOT_SWITCH not in by_name else "/" + ROOT_SWITCH  # "/" is in no node name
    if hypernodes is not None and level_labels is not None:
        r.problems.append("level_labels: give level_labels or hypernodes as the topology, not both")
    tiers: list[int] = []
    labels: list[str] = []
    if hypernodes is not None:
        tree, tiers = _hypernode_tree(r, hypernodes, found)
        shape = f"{len(tree.level)} Volcano HyperNodes, tiers {', '.join(map(str, tiers))}"
    else:
        if level_labels is None:
            labels = _default_labels(found.servers)
        elif isinstance(level_labels, str) or not all(isinstance(k, str) and k for k in level_labels):
            r.problems.append(f"level_labels must be a list of non-empty label names, got {level_labels!r}")
        else:
            labels = list(dict.fromkeys(level_labels))
            twice = sorted({k for k in labels if list(level_labels).count(k) > 1})
            if twice:
                r.problems.append(f"level_labels names {', '.join(twice)} more than once")
        if labels:
            tree = _label_tree(r, found.servers, labels)
            shape = f"node labels {', '.join(labels)}"
        else:
            tree = _Tree({root: 0}, {root: None}, {s.name: root for s in found.servers}, 1)
            shape = "no topology labels: one switch joins every node"

    need = _needed(tree)
    if level_gbps is None:
        gbps = default_level_gbps(need)
    else:
        gbps = list(level_gbps)
        if not all(
            isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b) and b > 0 for b in gbps
        ):
            r.problems.append(f"level_gbps must all be finite numbers > 0, got {gbps}")
        elif len(gbps) != need and not r.problems:  # with a broken topology, the count would mislead
            what = f"{tree.levels} level(s)"
            if need > tree.levels:
                what += f" and a root switch {root!r} joining its top switches"
            r.problems.append(f"level_gbps: the topology ({shape}) has {what}, so {need} bandwidth(s); got {len(gbps)}")
    holders = _read_pods(r, pods, by_name) if pods is not None else 0
    if r.problems:
        raise InvalidInputError(r.problems, source="Kubernetes import")

    over = {s.name: s.used for s in found.servers if s.used > s.gpus}
    servers = [
        Server(
            id=s.name,
            gpus=s.gpus,
            gpu_type=s.gpu_type,
            intra_bandwidth_gbps=gpu_profile(s.gpu_type)[1],
            used_gpus=min(s.used, s.gpus),
            cpus=s.cpus,
            memory_gb=s.memory_gb,
        )
        for s in found.servers
    ]
    switches, links = _links(tree, gbps, root)
    try:
        base = populate(servers, switches, links, **generate_options)
    except ValueError as e:
        raise InvalidInputError([f"generator options: {e}"], source="Kubernetes import") from None

    meta: dict[str, Any] = {"level_labels": labels}
    if hypernodes is not None:
        meta["hypernode_tiers"] = tiers
    for k, v in (("unschedulable", found.unschedulable), ("not_ready", found.not_ready)):
        if v:
            meta[k] = v
    if over:
        meta["gpus_in_use_over_allocatable"] = over
    total = sum(s.gpus for s in servers)
    used = sum(s.used_gpus for s in servers)
    notes = [f"{len(servers)} GPU nodes, {total} GPUs"]
    if pods is not None:
        notes.append(f"{used} GPUs in use by {holders} pods")
    left = [
        f"{len(v)} {what}"
        for v, what in (
            (found.no_gpu, "without GPUs"),
            (found.unschedulable, "cordoned"),
            (found.not_ready, "NotReady"),
        )
        if v
    ]
    if left:
        notes.append("left out: " + ", ".join(left))
    if over:
        notes.append("pods hold more GPUs than allocatable on " + ", ".join(f"{k} ({v})" for k, v in over.items()))
    bw = ",".join(f"{b:g}" for b in gbps) + " Gbit/s"
    if need > tree.levels:
        bw += f" (the last into the root switch {root!r})"
    return base.replace(
        name=generate_options.get("name") or f"k8s-{base.name}",
        metadata={**base.metadata, "kubernetes": meta},
        source=f"Kubernetes cluster ({'; '.join(notes)}); topology: {shape}; level bandwidths {bw}; " + base.source,
    )
