"""The names Kubernetes and this package's manifests use: resources, node labels, the
annotations and labels an export writes and the read-back reads (one home for each key)."""

from __future__ import annotations

__all__ = [
    "GPU_RESOURCE",
    "GPU_TYPE_LABELS",
    "LEVEL_FAMILIES",
    "JOB_ID_ANNOTATION",
    "ASSIGNMENT_ANNOTATION",
    "SHARDS_ANNOTATION",
    "STAGES_ANNOTATION",
    "ROLE_ANNOTATION",
    "GPUS_ANNOTATION",
    "JOB_LABEL",
    "HOSTNAME_LABEL",
    "TIER_LABEL",
    "CLUSTER_LABEL",
    "REQUIRED_TOPOLOGY",
    "UNCONSTRAINED_TOPOLOGY",
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

JOB_ID_ANNOTATION = "placement.io/job-id"
"""The job id on every exported object (the read-back's key to the job)."""
ASSIGNMENT_ANNOTATION = "placement.io/assignment"
"""Kueue exports carry the placement's ``{node: workers}`` here (advice: Kueue picks nodes)."""
SHARDS_ANNOTATION = "placement.io/shards"
"""Kueue exports carry a parameter-server job's ``{node: shards}`` here (a batch/v1 Job has one
pod set: the shards' pods are the user's JobSet or operator's to add)."""
STAGES_ANNOTATION = "placement.io/stages"
"""Kueue exports carry a hybrid job's stage matrix here (pp rows of dp nodes: advice, as the
assignment; Volcano and PodGroup exports pin it through their ranks)."""
ROLE_ANNOTATION = "placement.io/role"
"""``ps`` on the pods of a parameter-server job's shards (Volcano tasks, PodGroup pods)."""
JOB_LABEL = "placement.io/job"
HOSTNAME_LABEL = "kubernetes.io/hostname"
TIER_LABEL = "placement.io/tier-{}"
CLUSTER_LABEL = "placement.io/cluster"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"

GPUS_ANNOTATION = "placement.io/gpus"
"""The GPU indices a placement chose for a job on a node with per-GPU factors (comma-separated).
Advice: the device plugin's ``nvidia.com/gpu`` cannot ask for given GPUs (the kubelet picks);
a DRA ResourceClaim selecting devices by their ``index`` attribute could, and is not written."""
