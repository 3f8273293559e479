"""Kubernetes: read a cluster (:mod:`.read`, :mod:`.nodes`, :mod:`.topology`), write manifests
for Volcano, the Coscheduling PodGroup and Kueue (:mod:`.write`), read them back
(:mod:`.readback`), and the keys they share (:mod:`.keys`)."""

from __future__ import annotations

from placement.integrations.kubernetes.keys import GPU_RESOURCE, GPU_TYPE_LABELS, LEVEL_FAMILIES
from placement.integrations.kubernetes.nodes import FIRST_LEVEL_GBPS, ROOT_SWITCH, default_level_gbps
from placement.integrations.kubernetes.read import instance_from_kubernetes

__all__ = [
    "instance_from_kubernetes",
    "default_level_gbps",
    "GPU_RESOURCE",
    "GPU_TYPE_LABELS",
    "LEVEL_FAMILIES",
    "FIRST_LEVEL_GBPS",
    "ROOT_SWITCH",
]
