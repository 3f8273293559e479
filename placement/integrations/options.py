"""What an export is told beyond the placement: image, command, namespace, queue, names."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ExportOptions", "DEFAULT_IMAGE", "POD_PER", "KUEUE_APIS"]

DEFAULT_IMAGE = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"
POD_PER = ("worker", "server")
KUEUE_APIS = ("v1beta2", "v1beta1")


@dataclass(frozen=True)
class ExportOptions:
    """Options of :func:`placement.export.export`; every field has a working default.

    ``level_labels`` are node label keys for the instance's network tiers, innermost first
    (as ``placement import-k8s --level-labels`` reads them); by default the labels an
    imported instance came with, else ``placement.io/tier-1``, ``-2``, ...

    ``pod_per``: ``"worker"`` (one pod per worker holding one GPU) or ``"server"`` (one pod per
    server of the job holding all of its workers' GPUs, to be launched with ``torchrun
    --nproc-per-node=$NPROC_PER_NODE``; NCCL then keeps NVLink between the GPUs of a server,
    which separate pods do not share).  Kueue's export is always per worker.

    ``kueue_api``: ``v1beta2`` (Kueue 0.15+) or ``v1beta1`` (older releases; deprecated).
    """

    image: str = DEFAULT_IMAGE
    command: str = "python train.py"
    namespace: str = "default"
    queue: str = "default"
    scheduler_name: str = "scheduler-plugins-scheduler"
    level_labels: tuple[str, ...] | None = None
    master_port: int = 29500
    partition: str | None = None
    time_limit: str | None = None
    pod_per: str = "worker"
    kueue_api: str = "v1beta2"
