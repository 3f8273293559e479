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

from collections.abc import Sequence
from typing import Any

from placement.errors import InvalidInputError
from placement.integrations.kubernetes.keys import GPU_RESOURCE
from placement.integrations.kubernetes.nodes import ROOT_SWITCH, Reader, default_level_gbps, read_nodes, read_pods
from placement.integrations.kubernetes.topology import (
    Tree,
    default_labels,
    hypernode_tree,
    label_tree,
    needed_levels,
    tree_links,
)
from placement.integrations.levels import describe_levels, level_problems
from placement.model import Instance, Server


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
    from placement.instances.generate import populate
    from placement.model.catalog import gpu_profile

    r = Reader()
    found = read_nodes(r, nodes)
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
        tree, tiers = hypernode_tree(r, hypernodes, found)
        shape = f"{len(tree.level)} Volcano HyperNodes, tiers {', '.join(map(str, tiers))}"
    else:
        if level_labels is None:
            labels = default_labels(found.servers)
        elif isinstance(level_labels, str) or not all(isinstance(k, str) and k for k in level_labels):
            r.problems.append(f"level_labels must be a list of non-empty label names, got {level_labels!r}")
        else:
            labels = list(dict.fromkeys(level_labels))
            twice = sorted({k for k in labels if list(level_labels).count(k) > 1})
            if twice:
                r.problems.append(f"level_labels names {', '.join(twice)} more than once")
        if labels:
            tree = label_tree(r, found.servers, labels)
            shape = f"node labels {', '.join(labels)}"
        else:
            tree = Tree({root: 0}, {root: None}, {s.name: root for s in found.servers}, 1)
            shape = "no topology labels: one switch joins every node"

    need = needed_levels(tree)
    if level_gbps is None:
        gbps = default_level_gbps(need)
    else:
        gbps = list(level_gbps)
        what = f"{tree.levels} level(s)"
        if need > tree.levels:
            what += f" and a root switch {root!r} joining its top switches"
        wrong = level_problems(gbps, need, shape, what)
        if r.problems and not (wrong and wrong[0].startswith("level_gbps must")):
            wrong = []  # with a broken topology, the count would mislead
        r.problems += wrong
    holders = read_pods(r, pods, by_name) if pods is not None else 0
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
    switches, links = tree_links(tree, gbps, root)
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
    bw = describe_levels(gbps, need)
    if need > tree.levels:
        bw += f" (the last into the root switch {root!r})"
    return base.replace(
        name=generate_options.get("name") or f"k8s-{base.name}",
        metadata={**base.metadata, "kubernetes": meta},
        source=f"Kubernetes cluster ({'; '.join(notes)}); topology: {shape}; level bandwidths {bw}; " + base.source,
    )
