"""The names Slurm and this package's scripts use (one home for each key)."""

from __future__ import annotations

__all__ = ["JOB_ID_LINE", "GRES_GPU"]

JOB_ID_LINE = "placement-job-id:"
"""Header comment of an exported script holding the job id as JSON (what ``placement
import-placement`` reads back)."""

GRES_GPU = "gpu"
"""The generic resource that counts a node's GPUs (``Gres=gpu:a100:8``)."""
