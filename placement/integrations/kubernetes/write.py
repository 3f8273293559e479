"""Kubernetes manifests of a placement: Volcano, the Coscheduling PodGroup, Kueue.

Every worker is one pod holding one GPU (``nvidia.com/gpu: 1``), or with ``pod_per="server"``
every server of a job one pod holding its workers' GPUs; plus the job's CPU and memory per
worker where the instance gives them (CPU in cores or millicores, memory in MiB).  Where the
target lets a placement pin pods (Volcano, PodGroup), each pod carries a required node
affinity on the node's name (``matchFields: metadata.name``, which no node label can diverge
from).  Kueue assigns nodes itself: its export is advice, the level each job needs and the
nodes this placement chose, in annotations.  Ranks follow
:func:`placement.integrations.ranks.job_ranks`: a hybrid job's in Megatron's order over its
stage matrix (``RANK = t + tp (r + dp s)`` runs on ``stages[s][r]``; with ``pod_per="server"``
one pod per tensor-parallel group, ``NODE_RANK`` its group index, ``NPROC_PER_NODE = tp``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from placement.errors import InvalidInputError
from placement.integrations.kubernetes.keys import (
    ASSIGNMENT_ANNOTATION,
    CLUSTER_LABEL,
    GPU_RESOURCE,
    GPUS_ANNOTATION,
    HOSTNAME_LABEL,
    JOB_ID_ANNOTATION,
    JOB_LABEL,
    REQUIRED_TOPOLOGY,
    ROLE_ANNOTATION,
    SHARDS_ANNOTATION,
    STAGES_ANNOTATION,
    TIER_LABEL,
    UNCONSTRAINED_TOPOLOGY,
)
from placement.integrations.names import dns_label, file_stem
from placement.integrations.options import ExportOptions
from placement.integrations.ranks import job_ranks, segments, server_order
from placement.integrations.tiers import Tiers, tiers_of
from placement.model import Instance, Job, Solution

__all__ = [
    "volcano_files",
    "podgroup_files",
    "kueue_files",
    "level_labels",
    "node_name_problems",
]


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
        raise InvalidInputError(
            [
                f"--level-labels: the instance has {top} network tier(s), got {len(given)} label(s) "
                f"(give {' or '.join(map(str, fits))}, innermost first)"
            ]
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


def _cpu(cores: float) -> str:
    return str(int(cores)) if float(cores).is_integer() else f"{math.ceil(cores * 1000)}m"


def _container(
    job: Job, options: ExportOptions, env: list[dict[str, Any]], command: str, gpus: int = 1
) -> dict[str, Any]:
    """The one container of a pod holding ``gpus`` of ``job``'s workers."""
    limits = {GPU_RESOURCE: str(gpus)}
    if job.cpus_per_worker is not None:
        limits["cpu"] = _cpu(job.cpus_per_worker * gpus)
    if job.memory_gb_per_worker is not None:
        limits["memory"] = f"{math.ceil(job.memory_gb_per_worker * gpus * 1024)}Mi"
    return {
        "name": "worker",
        "image": options.image,
        "command": ["/bin/sh", "-c", command],
        "env": env,
        "resources": {"limits": limits, "requests": dict(limits)},
    }


_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def node_name_problems(instance: Instance, solution: Solution) -> list[str]:
    """The placed servers whose ids cannot be Kubernetes node names (DNS-1123 subdomains)."""
    used = sorted({s for a in solution.assignment.values() for s in a if s in instance.server_pos})
    return [
        f"server {s!r} cannot be a Kubernetes node name (lower-case DNS-1123 subdomain, at most 253 characters)"
        for s in used
        if len(s) > 253 or not _NODE_NAME.fullmatch(s)
    ]


def _shard_container(job: Job, options: ExportOptions, env: list[dict[str, Any]], shards: int = 1) -> dict[str, Any]:
    """The container of a parameter-server pod holding ``shards`` of ``job``'s shards: no GPU,
    the shards' CPU and memory where the instance gives them."""
    limits: dict[str, str] = {}
    if job.ps_cpus:
        limits["cpu"] = _cpu(job.ps_cpus * shards)
    if job.ps_memory_gb:
        limits["memory"] = f"{math.ceil(job.ps_memory_gb * shards * 1024)}Mi"
    out: dict[str, Any] = {
        "name": "ps",
        "image": options.image,
        "command": ["/bin/sh", "-c", f"exec {options.command}"],
        "env": env,
    }
    if limits:
        out["resources"] = {"limits": limits, "requests": dict(limits)}
    return out


def _shards_of(instance: Instance, solution: Solution, job: Job) -> list[tuple[str, int]]:
    """A parameter-server job's ``(server, shards)`` in server order."""
    z = solution.shards.get(job.id, {})
    return sorted(((s, int(k)) for s, k in z.items() if k > 0), key=lambda t: instance.server_pos[t[0]])


def _pinned(node: str) -> dict[str, Any]:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _env(**values: Any) -> list[dict[str, Any]]:
    return [{"name": k, "value": str(v)} for k, v in values.items()]


def _headless_service(stem: str, options: ExportOptions, job: Job) -> dict[str, Any]:
    """The DNS name of every worker pod (``<hostname>.<stem>``) for ``MASTER_ADDR``, published
    before the pods are ready (rank 0 must resolve while the others wait for it)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(stem, options, job),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {JOB_LABEL: stem},
            "ports": [{"name": "rendezvous", "port": options.master_port}],
        },
    }


def _pods(ranks: Sequence[str], pod_per: str, unit: int) -> list[tuple[str, int, int]]:
    """``(node, pods, GPUs per pod)`` per run of consecutive ranks on one node (a server, in
    ring order; a hybrid job's runs in Megatron's order): one pod per worker, or with
    ``pod_per="server"`` one pod per run (per tensor-parallel group for a hybrid job, so
    that ``torchrun``'s ``NODE_RANK x NPROC_PER_NODE + local rank`` is Megatron's rank)."""
    runs = segments(ranks)
    if pod_per != "server":
        return [(node, k, 1) for node, k in runs]
    if unit > 1:
        return [(node, 1, unit) for node, k in runs for _ in range(k // unit)]
    return [(node, 1, k) for node, k in runs]


def _placed(solution: Solution, instance: Instance) -> list[tuple[Job, dict[str, int]]]:
    return [(j, dict(solution.assignment[j.id])) for j in instance.jobs if solution.assignment.get(j.id)]


def _hypernodes(tiers: Tiers) -> list[dict[str, Any]]:
    """One ``HyperNode`` per bandwidth domain, at the domain's tier; its members are its
    inner domains (``HyperNode``) and its servers outside them (``Node``), by exact name."""
    from placement.problem import cluster_of

    cluster = cluster_of(tiers.instance)
    out: list[dict[str, Any]] = []

    def member(kind: str, name: str) -> dict[str, Any]:
        return {"type": kind, "selector": {"exactMatch": {"name": name}}}

    for d in cluster.domains:
        inner = {s for c in d.children for s in cluster.domains[c].servers}
        members = [member("HyperNode", tiers.names[c]) for c in d.children]
        members += [member("Node", s) for s in d.servers if s not in inner]
        out.append(
            {
                "apiVersion": "topology.volcano.sh/v1alpha1",
                "kind": "HyperNode",
                "metadata": {"name": tiers.names[d.index]},
                "spec": {"tier": tiers.tier[d.index], "members": members},
            }
        )
    return sorted(out, key=lambda h: (h["spec"]["tier"], h["metadata"]["name"]))


def volcano_files(instance: Instance, solution: Solution, options: ExportOptions) -> dict[str, str]:
    """``<job>.yaml``: a ``batch.volcano.sh/v1alpha1`` Job per placed job, one task per
    server pinned to the node (``replicas`` = its workers, or one pod holding them all with
    ``pod_per="server"``), ``minAvailable`` = every pod of the gang, ``networkTopology`` hard at
    the lowest tier holding the job; ``hypernodes.yaml``: the ``HyperNode`` tree of the
    instance's bandwidth domains.  Volcano's ``env`` plugin gives each pod ``VC_TASK_INDEX``
    (its index in the task) and the ``svc`` plugin a DNS name; per worker the command runs with
    ``RANK`` = the task's ``RANK_OFFSET`` + ``VC_TASK_INDEX``, per server with ``NODE_RANK``,
    ``NNODES`` and ``NPROC_PER_NODE`` for ``torchrun``; ``MASTER_ADDR`` is rank 0's pod."""
    tiers = tiers_of(instance)
    files: dict[str, str] = {}
    for job, servers in _placed(solution, instance):
        stem = file_stem(job.id)
        order = server_order(instance, servers)
        pods = _pods(job_ranks(instance, solution, job), options.pod_per, job.unit)
        tasks, offset = [], 0
        common = {"WORLD_SIZE": job.workers, "MASTER_ADDR": f"{stem}-t0-0.{stem}", "MASTER_PORT": options.master_port}
        for k, (node, replicas, gpus) in enumerate(pods):
            if options.pod_per == "server":
                env = _env(NODE_RANK=k, NNODES=len(pods), NPROC_PER_NODE=gpus, RANK_OFFSET=offset, **common)
                command = f"exec {options.command}"
            else:
                env = _env(RANK_OFFSET=offset, **common)
                command = f"export RANK=$((RANK_OFFSET + ${{VC_TASK_INDEX:?}})); exec {options.command}"
            tasks.append(
                {
                    "name": f"t{k}",
                    "replicas": replicas,
                    "template": {
                        "metadata": {
                            "labels": {JOB_LABEL: stem},
                            "annotations": {"placement.io/node": node, **_gpus_note(solution, job.id, node)},
                        },
                        "spec": {
                            "restartPolicy": "Never",
                            "affinity": _pinned(node),
                            "containers": [_container(job, options, env, command, gpus)],
                        },
                    },
                }
            )
            offset += replicas * gpus
        shard_offset = 0
        for k, (node, count) in enumerate(_shards_of(instance, solution, job)):
            env = _env(ROLE="ps", PS_OFFSET=shard_offset, PS_SHARDS=job.shards, **common)
            tasks.append(
                {
                    "name": f"ps{k}",
                    "replicas": count,
                    "template": {
                        "metadata": {
                            "labels": {JOB_LABEL: stem},
                            "annotations": {"placement.io/node": node, ROLE_ANNOTATION: "ps"},
                        },
                        "spec": {
                            "restartPolicy": "Never",
                            "affinity": _pinned(node),
                            "containers": [_shard_container(job, options, env)],
                        },
                    },
                }
            )
            shard_offset += count
        spec: dict[str, Any] = {
            "schedulerName": "volcano",
            "queue": options.queue,
            "minAvailable": sum(r for _, r, _ in pods) + shard_offset,
            "plugins": {"env": [], "svc": ["--publish-not-ready-addresses"]},
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
    """``<job>.yaml``: a ``scheduling.x-k8s.io/v1alpha1`` PodGroup (``minMember`` = the gang's
    pods) for the Coscheduling plugin of kubernetes-sigs/scheduler-plugins, a headless Service,
    and one Pod per worker (``<job>-<rank>``, with ``RANK``) or, with ``pod_per="server"``, per
    server (``<job>-<node rank>``, with ``NODE_RANK``, ``NNODES``, ``NPROC_PER_NODE``), each with
    the pod-group label, pinned to its node, with ``WORLD_SIZE``, ``MASTER_ADDR`` (the first
    pod) and ``MASTER_PORT``."""
    files: dict[str, str] = {}
    for job, _ in _placed(solution, instance):
        stem = file_stem(job.id)
        pods = [
            (node, gpus)
            for node, n, gpus in _pods(job_ranks(instance, solution, job), options.pod_per, job.unit)
            for _ in range(n)
        ]
        shard_pods = [node for node, count in _shards_of(instance, solution, job) for _ in range(count)]
        group = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": _meta(stem, options, job),
            "spec": {"minMember": len(pods) + len(shard_pods)},
        }
        docs: list[dict[str, Any]] = [group, _headless_service(stem, options, job)]
        common = {"WORLD_SIZE": job.workers, "MASTER_ADDR": f"{stem}-0.{stem}", "MASTER_PORT": options.master_port}
        offset = 0
        for k, (node, gpus) in enumerate(pods):
            if options.pod_per == "server":
                env = _env(NODE_RANK=k, NNODES=len(pods), NPROC_PER_NODE=gpus, RANK_OFFSET=offset, **common)
            else:
                env = _env(RANK=k, **common)
            offset += gpus
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": _meta(
                        f"{stem}-{k}",
                        options,
                        job,
                        labels={"scheduling.x-k8s.io/pod-group": stem},
                        annotations={"placement.io/rank": str(k), **_gpus_note(solution, job.id, node)},
                    ),
                    "spec": {
                        "schedulerName": options.scheduler_name,
                        "hostname": f"{stem}-{k}",
                        "subdomain": stem,
                        "restartPolicy": "Never",
                        "affinity": _pinned(node),
                        "containers": [_container(job, options, env, f"exec {options.command}", gpus)],
                    },
                }
            )
        for k, node in enumerate(shard_pods):
            env = _env(ROLE="ps", PS_INDEX=k, PS_SHARDS=job.shards, **common)
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": _meta(
                        f"{stem}-ps-{k}",
                        options,
                        job,
                        labels={"scheduling.x-k8s.io/pod-group": stem},
                        annotations={ROLE_ANNOTATION: "ps"},
                    ),
                    "spec": {
                        "schedulerName": options.scheduler_name,
                        "hostname": f"{stem}-ps-{k}",
                        "subdomain": stem,
                        "restartPolicy": "Never",
                        "affinity": _pinned(node),
                        "containers": [_shard_container(job, options, env)],
                    },
                }
            )
        files[f"{stem}.yaml"] = _dump(docs)
    return files


def _label_values(instance: Instance, labels: Sequence[str], own: bool) -> dict[str, tuple[str, ...]] | None:
    """Each server's value of each level label (innermost first): the package's own tier
    groups, or for an instance imported from Kubernetes the values in its switch ids
    (``"<label>=<value>"``, a server linked to its innermost level's switch, each switch to
    the next level's); ``None`` when they cannot be read off the instance."""
    if own:
        tiers = tiers_of(instance)
        return {s.id: tiers.level_values(s.id)[: len(labels)] for s in instance.servers}
    switches = {w.id for w in instance.switches}
    near: dict[str, list[str]] = {}
    for ln in instance.links:
        near.setdefault(ln.source, []).append(ln.target)
        near.setdefault(ln.target, []).append(ln.source)
    out: dict[str, tuple[str, ...]] = {}
    for s in instance.servers:
        cur, values = s.id, []
        for lab in labels:
            up = [n for n in near.get(cur, []) if n in switches and n.startswith(lab + "=")]
            if len(up) != 1:
                return None
            cur = up[0]
            values.append(cur.split("=", 1)[1])
        out[s.id] = tuple(values)
    return out


def kueue_files(instance: Instance, solution: Solution, options: ExportOptions) -> dict[str, str]:
    """``topology.yaml``: a ``kueue.x-k8s.io`` Topology (``kueue_api``) whose levels are the
    instance's tiers (broadest first, then ``kubernetes.io/hostname``) and a ResourceFlavor
    using it; ``label-nodes.sh`` (the flavor's label, and the tier labels when they are the
    package's own); per job ``<job>.yaml``: a suspended Indexed ``batch/v1`` Job in the
    LocalQueue ``queue`` whose pod template requires
    (``kueue.x-k8s.io/podset-required-topology``) the innermost level whose value all the
    placement's nodes share (``kubernetes.io/hostname`` for one node; unconstrained when no
    label holds them all), with the placement's nodes in ``placement.io/assignment``.  Kueue
    assigns the nodes itself: this is advice, not a pin.  Kueue also needs a ClusterQueue
    that offers the flavor's resources and a LocalQueue ``queue`` (not written: quotas are
    the cluster's policy)."""
    tiers = tiers_of(instance)
    labels, own = level_labels(instance, options)
    values = _label_values(instance, labels, own)
    cluster_name = dns_label(instance.name)
    api = f"kueue.x-k8s.io/{options.kueue_api}"
    levels = [{"nodeLabel": lab} for lab in reversed(labels)] + [{"nodeLabel": HOSTNAME_LABEL}]
    topology = {"apiVersion": api, "kind": "Topology", "metadata": {"name": cluster_name}, "spec": {"levels": levels}}
    flavor = {
        "apiVersion": api,
        "kind": "ResourceFlavor",
        "metadata": {"name": cluster_name},
        "spec": {"nodeLabels": {CLUSTER_LABEL: cluster_name}, "topologyName": cluster_name},
    }
    files = {"topology.yaml": _dump([topology, flavor])}
    script = ["#!/bin/sh", "# Labels the nodes of the Kueue topology and flavor in topology.yaml.", "set -e"]
    for s in instance.servers:
        pairs = [f"{CLUSTER_LABEL}={cluster_name}"]
        if own and values is not None:
            pairs += [f"{lab}={v}" for lab, v in zip(labels, values[s.id])]
        script.append(f"kubectl label node --overwrite {s.id} {' '.join(pairs)}")
    files["label-nodes.sh"] = "\n".join(script) + "\n"
    for job, servers in _placed(solution, instance):
        stem = file_stem(job.id)
        order = server_order(instance, servers)
        annotations = {}
        if len(order) == 1:
            annotations[REQUIRED_TOPOLOGY] = HOSTNAME_LABEL
        elif values is not None:
            shared = [lab for k, lab in enumerate(labels) if len({values[s][k] for s in order}) == 1]
            if shared:
                annotations[REQUIRED_TOPOLOGY] = shared[0]
        else:  # labels the nodes carry but the instance cannot tell: trust tier t = label t
            tier = tiers.job_tier(order)
            if 0 < tier <= len(labels):
                annotations[REQUIRED_TOPOLOGY] = labels[tier - 1]
        if not annotations:
            annotations[UNCONSTRAINED_TOPOLOGY] = "true"
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
                annotations={
                    ASSIGNMENT_ANNOTATION: json.dumps({s: servers[s] for s in order}),
                    **(
                        {STAGES_ANNOTATION: json.dumps([list(row) for row in solution.stages[job.id]])}
                        if job.id in solution.stages
                        else {}
                    ),
                    **(
                        {SHARDS_ANNOTATION: json.dumps(dict(_shards_of(instance, solution, job)))}
                        if job.id in solution.shards
                        else {}
                    ),
                },
            ),
            "spec": {
                "suspend": True,
                "parallelism": job.workers,
                "completions": job.workers,
                "completionMode": "Indexed",
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": {JOB_LABEL: stem}, "annotations": annotations},
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


def _gpus_note(solution: Solution, job: str, node: str) -> dict[str, str]:
    """The GPUs the placement chose for ``job`` on ``node`` (:data:`GPUS_ANNOTATION`), if any."""
    ids = solution.gpus.get(job, {}).get(node)
    return {GPUS_ANNOTATION: ",".join(str(g) for g in ids)} if ids else {}
