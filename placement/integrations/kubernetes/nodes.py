"""Kubernetes nodes and pods as ``kubectl get nodes -o json`` and ``kubectl get pods -A -o json``
print them: allocatable GPUs, GPU types, CPUs, memory, schedulability, and the GPUs pods hold.
Every problem is collected with its path."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from placement.errors import MethodUnavailableError
from placement.integrations.kubernetes.keys import GPU_RESOURCE, GPU_TYPE_LABELS

FIRST_LEVEL_GBPS = 200.0
"""Default bandwidth of the links from nodes to their first switch; halved at each level up."""

ROOT_SWITCH = "cluster"
"""The switch that joins several top-level switches, or every server when there is no topology."""

MAX_GPUS_PER_NODE = 4096
"""The instance format's bound on a server's GPUs."""

_ENDED_PHASES = ("Succeeded", "Failed")


def default_level_gbps(levels: int) -> list[float]:
    """``[200, 100, 50, ...]``: ``levels`` bandwidths, halving from :data:`FIRST_LEVEL_GBPS`."""
    return [FIRST_LEVEL_GBPS / 2**k for k in range(levels)]


def label_key(k: str) -> str:
    return "[" + json.dumps(k) + "]"


def _quantity_parser() -> Callable[[Any], Decimal]:
    try:
        from kubernetes.utils import parse_quantity
    except ImportError:
        raise MethodUnavailableError(
            "reading Kubernetes objects needs the official Kubernetes client: pip install 'placement[kubernetes]'"
        ) from None
    return parse_quantity


class Reader:
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
class Node:
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
class Nodes:
    all: list[Node]
    servers: list[Node]
    no_gpu: list[str]
    unschedulable: list[str]
    not_ready: list[str]


def read_nodes(r: Reader, doc: Any) -> Nodes:
    out = Nodes([], [], [], [], [])
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
            r.problems.append(f"{where}.metadata.labels{label_key(k)} must be a string, got {labels[k]!r}")
        node = Node(i, name, {k: v for k, v in labels.items() if k not in bad})
        out.all.append(node)
        spec = r.mapping(item, "spec", where)
        status = r.mapping(item, "status", where)
        alloc = r.mapping(status, "allocatable", f"{where}.status")
        at = f"{where}.status.allocatable"
        if GPU_RESOURCE in alloc:
            q = r.quantity(alloc[GPU_RESOURCE], f"{at}{label_key(GPU_RESOURCE)}", whole=True)
            if q is not None and q > MAX_GPUS_PER_NODE:
                r.problems.append(f"{at}{label_key(GPU_RESOURCE)} must be at most {MAX_GPUS_PER_NODE}, got {q}")
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
def _container_gpus(r: Reader, c: Any, where: str) -> int:
    if not isinstance(c, dict):
        r.problems.append(f"{where} must be a container object, got {type(c).__name__}")
        return 0
    res = r.mapping(c, "resources", where)
    got: dict[str, Decimal] = {}
    for part in ("requests", "limits"):
        d = r.mapping(res, part, f"{where}.resources")
        if GPU_RESOURCE in d:
            q = r.quantity(d[GPU_RESOURCE], f"{where}.resources.{part}{label_key(GPU_RESOURCE)}", whole=True)
            if q is not None:
                got[part] = q
    if len(got) == 2 and got["requests"] != got["limits"]:
        r.problems.append(
            f"{where}.resources: requests{label_key(GPU_RESOURCE)} ({got['requests']}) and limits{label_key(GPU_RESOURCE)} "
            f"({got['limits']}) must be equal (Kubernetes does not overcommit extended resources)"
        )
    return int(got.get("requests", got.get("limits", 0)))


def _pod_gpus(r: Reader, spec: Mapping[str, Any], where: str) -> int:
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
        q = r.quantity(overhead[GPU_RESOURCE], f"{where}.spec.overhead{label_key(GPU_RESOURCE)}", whole=True)
        extra = 0 if q is None else int(q)
    return max(apps + sidecars, init_peak) + extra


def read_pods(r: Reader, doc: Any, servers: Mapping[str, Node]) -> int:
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
