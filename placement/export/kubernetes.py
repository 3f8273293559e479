"""Kubernetes manifests of a placement: Volcano, the Coscheduling PodGroup, Kueue.

Every worker is one pod holding one GPU (``nvidia.com/gpu: 1``), plus the job's CPU and
memory per worker where the instance gives them (memory in GiB: ``96Gi``).  Where the target
lets a placement pin pods (Volcano, PodGroup), each pod carries a required node affinity on
the node's name (``matchFields: metadata.name``, which no node label can diverge from).  Kueue
assigns nodes itself: its export is advice, the tier each job needs and the nodes this
placement chose, in annotations.  Ranks follow :func:`placement.export.ranks.rank_order`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from placement.export.names import dns_label, file_stem
from placement.export.options import ExportOptions
from placement.export.ranks import rank_order, server_order
from placement.export.tiers import Tiers, tiers_of
from placement.model import Instance, Job, Solution

__all__ = [
    "volcano_files",
    "podgroup_files",
    "kueue_files",
    "level_labels",
    "JOB_ID_ANNOTATION",
    "ASSIGNMENT_ANNOTATION",
    "HOSTNAME_LABEL",
]

JOB_ID_ANNOTATION = "placement.io/job-id"
ASSIGNMENT_ANNOTATION = "placement.io/assignment"
"""Kueue exports carry the placement's ``{node: workers}`` here (advice: Kueue picks nodes)."""
JOB_LABEL = "placement.io/job"
HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
TIER_LABEL = "placement.io/tier-{}"
CLUSTER_LABEL = "placement.io/cluster"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"


def _dump(objects: Sequence[Mapping[str, Any]]) -> str:
    import yaml

    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False, width=1000)


def level_labels(instance: Instance, options: ExportOptions) -> tuple[tuple[str, ...], bool]:
    """Node label keys of tiers 1..L (innermost first), and whether they are the package's
    own (``placement.io/tier-<t>``, which ``label-nodes.sh`` puts on the nodes) rather than
    labels the nodes already carry.  L is the instance's top tier, or one less when the top
    tier is the whole cluster joined by a root switch no node label names (``import-k8s``
    adds one over several top-level values): a job needing that tier needs no label."""
    top = tiers_of(instance).top
    fits = (top, top - 1) if top > 1 else (top,)
    given = options.level_labels
    if given is None:
        imported = instance.metadata.get("kubernetes", {})
        labels = imported.get("level_labels") if isinstance(imported, Mapping) else None
        if isinstance(labels, (list, tuple)) and len(labels) in fits:
            given = tuple(str(x) for x in labels)
    if given is None:
        return tuple(TIER_LABEL.format(t) for t in range(1, top + 1)), True
    if len(given) not in fits:
        raise ValueError(
            f"--level-labels: the instance has {top} network tier(s), got {len(given)} label(s) "
            f"(give {' or '.join(map(str, fits))}, innermost first)"
        )
    return tuple(given), False


def _meta(name: str, options: ExportOptions, job: Job | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": options.namespace}
    if job is not None:
        meta["labels"] = {JOB_LABEL: file_stem(job.id)}
        meta["annotations"] = {JOB_ID_ANNOTATION: job.id}
    for k, v in extra.items():
        meta.setdefault(k, {}).update(v)
    return meta


def _quantity(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _container(job: Job, options: ExportOptions, env: list[dict[str, Any]], command: str) -> dict[str, Any]:
    limits = {GPU: "1"}
    if job.cpus_per_worker is not None:
        limits["cpu"] = _quantity(job.cpus_per_worker)
    if job.memory_gb_per_worker is not None:
        limits["memory"] = f"{_quantity(job.memory_gb_per_worker)}Gi"
    return {
        "name": "worker",
        "image": options.image,
        "command": ["/bin/sh", "-c", command],
        "env": env,
        "resources": {"limits": limits, "requests": dict(limits)},
    }


def _pinned(node: str) -> dict[str, Any]:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _env(**values: Any) -> list[dict[str, Any]]:
    return [{"name": k, "value": str(v)} for k, v in values.items()]


def _headless_service(stem: str, options: ExportOptions, job: Job) -> dict[str, Any]:
    """The DNS name of every worker pod (``<hostname>.<stem>``) for ``MASTER_ADDR``."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(stem, options, job),
        "spec": {
            "clusterIP": "None",
            "selector": {JOB_LABEL: stem},
            "ports": [{"name": "rendezvous", "port": options.master_port}],
        },
    }


def _placed(solution: Solution, instance: Instance) -> list[tuple[Job, dict[str, int]]]:
    return [(j, dict(solution.assignment[j.id])) for j in instance.jobs if solution.assignment.get(j.id)]


def _hypernodes(tiers: Tiers) -> list[dict[str, Any]]:
    """One ``HyperNode`` per bandwidth domain, at the domain's tier; a domain's members are
    its inner domains, and its servers outside any inner domain wrapped one by one in a
    tier-1 HyperNode (a HyperNode lists members of one type)."""
    from placement.problem import cluster_of

    cluster = cluster_of(tiers.instance)
    out: list[dict[str, Any]] = []
    wrapped: set[str] = set()

    def hypernode(name: str, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {"tier": tier, "members": members},
        }

    def member(kind: str, name: str) -> dict[str, Any]:
        return {"type": kind, "selector": {"exactMatch": {"name": name}}}

    for d in cluster.domains:
        inner = {s for c in d.children for s in cluster.domains[c].servers}
        lone = [s for s in d.servers if s not in inner]
        if not d.children:
            members = [member("Node", s) for s in d.servers]
        else:
            members = [member("HyperNode", tiers.names[c]) for c in d.children]
            for s in lone:
                name = f"node-{dns_label(s)}"
                members.append(member("HyperNode", name))
                if name not in wrapped:
                    wrapped.add(name)
                    out.append(hypernode(name, 1, [member("Node", s)]))
        out.append(hypernode(tiers.names[d.index], tiers.tier[d.index], members))
    return sorted(out, key=lambda h: (h["spec"]["tier"], h["metadata"]["name"]))


def volcano_files(instance: Instance, solution: Solution, options: ExportOptions) -> dict[str, str]:
    """``<job>.yaml``: a ``batch.volcano.sh/v1alpha1`` Job per placed job, one task per
    server (``replicas`` = its workers) pinned to the node, ``minAvailable`` = the gang, and
    ``networkTopology`` hard at the lowest tier holding the job; ``hypernodes.yaml``: the
    ``HyperNode`` tree of the instance's bandwidth domains.  Ranks: Volcano's ``env`` plugin
    gives each pod ``VC_TASK_INDEX``; the command runs with ``RANK`` = the task's
    ``RANK_OFFSET`` + ``VC_TASK_INDEX``; ``MASTER_ADDR`` is rank 0's pod through the ``svc``
    plugin's headless service."""
    tiers = tiers_of(instance)
    files: dict[str, str] = {}
    for job, servers in _placed(solution, instance):
        stem = file_stem(job.id)
        order = server_order(instance, servers)
        tasks, offset = [], 0
        master = f"{stem}-t0-0.{stem}"
        for k, node in enumerate(order):
            env = _env(
                RANK_OFFSET=offset,
                WORLD_SIZE=job.workers,
                MASTER_ADDR=master,
                MASTER_PORT=options.master_port,
            )
            command = f"export RANK=$((RANK_OFFSET + VC_TASK_INDEX)); exec {options.command}"
            tasks.append(
                {
                    "name": f"t{k}",
                    "replicas": servers[node],
                    "template": {
                        "metadata": {"labels": {JOB_LABEL: stem}, "annotations": {"placement.io/node": node}},
                        "spec": {
                            "restartPolicy": "Never",
                            "affinity": _pinned(node),
                            "containers": [_container(job, options, env, command)],
                        },
                    },
                }
            )
            offset += servers[node]
        spec: dict[str, Any] = {
            "schedulerName": "volcano",
            "queue": options.queue,
            "minAvailable": job.workers,
            "plugins": {"env": [], "svc": []},
            "tasks": tasks,
        }
        tier = tiers.job_tier(order)
        if tier > 0:
            spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": tier}
        doc = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": _meta(stem, options, job),
            "spec": spec,
        }
        files[f"{stem}.yaml"] = _dump([doc])
    hyper = _hypernodes(tiers)
    if hyper:
        files["hypernodes.yaml"] = _dump(hyper)
    return files


def podgroup_files(instance: Instance, solution: Solution, options: ExportOptions) -> dict[str, str]:
    """``<job>.yaml``: a ``scheduling.x-k8s.io/v1alpha1`` PodGroup (``minMember`` = the gang)
    for the Coscheduling plugin of kubernetes-sigs/scheduler-plugins, a headless Service, and
    one Pod per worker (``<job>-<rank>``) with the pod-group label, pinned to its node, with
    ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` (rank 0's pod) and ``MASTER_PORT``."""
    files: dict[str, str] = {}
    for job, servers in _placed(solution, instance):
        stem = file_stem(job.id)
        group = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": _meta(stem, options, job),
            "spec": {"minMember": job.workers},
        }
        docs: list[dict[str, Any]] = [group, _headless_service(stem, options, job)]
        for rank, node in enumerate(rank_order(instance, servers)):
            env = _env(
                RANK=rank,
                WORLD_SIZE=job.workers,
                MASTER_ADDR=f"{stem}-0.{stem}",
                MASTER_PORT=options.master_port,
            )
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": _meta(
                        f"{stem}-{rank}",
                        options,
                        job,
                        labels={"scheduling.x-k8s.io/pod-group": stem},
                        annotations={"placement.io/rank": str(rank)},
                    ),
                    "spec": {
                        "schedulerName": options.scheduler_name,
                        "hostname": f"{stem}-{rank}",
                        "subdomain": stem,
                        "restartPolicy": "Never",
                        "affinity": _pinned(node),
                        "containers": [_container(job, options, env, f"exec {options.command}")],
                    },
                }
            )
        files[f"{stem}.yaml"] = _dump(docs)
    return files


def kueue_files(instance: Instance, solution: Solution, options: ExportOptions) -> dict[str, str]:
    """``topology.yaml``: a ``kueue.x-k8s.io/v1beta1`` Topology whose levels are the
    instance's tiers (broadest first, then ``kubernetes.io/hostname``) and a ResourceFlavor
    using it; ``label-nodes.sh`` when the tier labels are the package's own; per job
    ``<job>.yaml``: a suspended Indexed ``batch/v1`` Job in the LocalQueue ``queue`` whose pod
    template requires (``kueue.x-k8s.io/podset-required-topology``) the lowest tier holding
    the placement, with the placement's nodes in ``placement.io/assignment``.  Kueue assigns
    the nodes itself: this is advice, not a pin."""
    tiers = tiers_of(instance)
    labels, own = level_labels(instance, options)
    cluster_name = dns_label(instance.name)
    levels = [{"nodeLabel": lab} for lab in reversed(labels)] + [{"nodeLabel": HOSTNAME_LABEL}]
    topology = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Topology",
        "metadata": {"name": cluster_name},
        "spec": {"levels": levels},
    }
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": cluster_name},
        "spec": {"nodeLabels": {CLUSTER_LABEL: cluster_name}, "topologyName": cluster_name},
    }
    files = {"topology.yaml": _dump([topology, flavor])}
    script = ["#!/bin/sh", "# Labels the nodes of the Kueue topology and flavor above.", "set -e"]
    for s in instance.servers:
        pairs = [f"{CLUSTER_LABEL}={cluster_name}"]
        if own:
            pairs += [f"{lab}={v}" for lab, v in zip(labels, tiers.level_values(s.id))]
        script.append(f"kubectl label node --overwrite {s.id} {' '.join(pairs)}")
    files["label-nodes.sh"] = "\n".join(script) + "\n"
    for job, servers in _placed(solution, instance):
        stem = file_stem(job.id)
        order = server_order(instance, servers)
        tier = tiers.job_tier(order)
        required = HOSTNAME_LABEL if len(order) == 1 or tier == 0 else None
        if required is None and tier <= len(labels):
            required = labels[tier - 1]
        env = [
            {
                "name": "RANK",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
                },
            },
            *_env(WORLD_SIZE=job.workers, MASTER_ADDR=f"{stem}-0.{stem}", MASTER_PORT=options.master_port),
        ]
        doc = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta(
                stem,
                options,
                job,
                labels={"kueue.x-k8s.io/queue-name": options.queue},
                annotations={ASSIGNMENT_ANNOTATION: json.dumps({s: servers[s] for s in order})},
            ),
            "spec": {
                "suspend": True,
                "parallelism": job.workers,
                "completions": job.workers,
                "completionMode": "Indexed",
                "backoffLimit": 0,
                "template": {
                    "metadata": {
                        "labels": {JOB_LABEL: stem},
                        "annotations": {} if required is None else {REQUIRED_TOPOLOGY: required},
                    },
                    "spec": {
                        "subdomain": stem,
                        "restartPolicy": "Never",
                        "containers": [_container(job, options, env, f"exec {options.command}")],
                    },
                },
            },
        }
        files[f"{stem}.yaml"] = _dump([doc, _headless_service(stem, options, job)])
    return files
