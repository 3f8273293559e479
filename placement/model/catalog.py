"""The catalogues the package assumes of hardware and models, in one place: GPU types (relative
speed, GPU-to-GPU bandwidth inside a server) and training models (compute per iteration,
gradient size).  They are stated assumptions of the generators, importers and simulator, not
measurements; every figure here says where it comes from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "GPU_TYPES",
    "REAL_GPU_TYPES",
    "ALIBABA_GPU_TYPES",
    "UNKNOWN_GPU_PROFILE",
    "gpu_profile",
    "ELASTICFLOW_MODELS",
    "MODELS",
    "DEFAULT_MODEL",
    "PAL_MODELS",
]

GPU_TYPES: dict[str, tuple[float, float]] = {
    # GPU type -> (relative speed, GPU-to-GPU bandwidth inside a server, Gbit/s)
    "H100": (1.6, 3600.0),
    "A100": (1.0, 2400.0),
    "V100": (0.55, 1200.0),
    "T4": (0.25, 128.0),
}
"""The generator's own GPU types."""

# Datacenter GPUs a real cluster reports (Kubernetes' nvidia.com/gpu.product, Slurm's gres
# type) beyond the generator's own types: (relative speed to A100, GPU-to-GPU bandwidth inside
# a server, Gbit/s; NVLink generation for SXM parts, PCIe 4.0 x16 = 256 for PCIe cards).
REAL_GPU_TYPES: dict[str, tuple[float, float]] = {
    "B200": (2.5, 7200.0),
    "H200": (1.8, 3600.0),
    "H800": (1.6, 1600.0),
    "A800": (1.0, 1600.0),
    "L40S": (0.9, 256.0),
    "L40": (0.75, 256.0),
    "A40": (0.6, 256.0),
    "A30": (0.55, 256.0),
    "A10G": (0.45, 256.0),
    "A10": (0.45, 256.0),
    "L4": (0.35, 256.0),
    "P100": (0.3, 640.0),
}

# relative speed and GPU-to-GPU bandwidth inside a server (Gbit/s) per GPU model of the Alibaba
# cluster-trace-gpu-v2023.  The trace anonymises G2/G3; they are taken as A100-class (NVLink)
# parts.  These are assumptions of the generator, stated, not figures of the trace.
ALIBABA_GPU_TYPES: dict[str, tuple[float, float]] = {
    "G3": (1.3, 2400.0),
    "G2": (1.0, 2400.0),
    "V100M32": (0.55, 1200.0),
    "V100M16": (0.5, 1200.0),
    "A10": (0.45, 128.0),
    "P100": (0.35, 128.0),
    "T4": (0.25, 64.0),
}

UNKNOWN_GPU_PROFILE = (1.0, 256.0)
"""An unrecognised GPU type: speed of an A100, PCIe 4.0 x16 between its GPUs."""


def gpu_profile(gpu_type: str) -> tuple[float, float]:
    """``(relative speed, intra-server GPU bandwidth in Gbit/s)`` of a GPU type named as a
    real cluster names it: ``"NVIDIA-A100-SXM4-80GB"`` -> A100's, ``"Tesla-T4"`` -> T4's.
    The longest known name contained in ``gpu_type`` (case-insensitive) wins, so ``A10G``
    is not read as ``A10``; an unknown type gets :data:`UNKNOWN_GPU_PROFILE`.  Where the
    catalogues disagree, the generator's types win, then Alibaba's, then the real ones."""
    known = {**REAL_GPU_TYPES, **ALIBABA_GPU_TYPES, **GPU_TYPES}
    name = gpu_type.upper()
    if name in known:
        return known[name]
    for key in sorted(known, key=len, reverse=True):
        if re.search(rf"(?<![A-Z0-9]){re.escape(key)}(?![0-9])", name):
            return known[key]
    return UNKNOWN_GPU_PROFILE


# gradient sizes (MB of fp32 parameters) of the model names in the ElasticFlow traces
ELASTICFLOW_MODELS: dict[str, float] = {
    "resnet50": 98.0,
    "vgg16": 528.0,
    "inception3": 91.0,
    "bert": 1340.0,
    "gpt2": 548.0,
    "deepspeech2": 150.0,
    "yolov3": 248.0,
    "resnet18": 45.0,
    "alexnet": 233.0,
    "vgg19": 548.0,
}

DEFAULT_MODEL = "resnet50"
"""The model of a Philly or plain trace row that names none."""

# model -> (compute ms per iteration on one A100-class GPU at a typical per-GPU batch,
# gradient MB).  The gradient is the fp32 parameters (parameters x 4 bytes, in MiB): the
# ElasticFlow models' sizes above; resnet101 has 44.5 M parameters, the Transformer (base,
# WMT) 65 M.  The compute times are rough figures of the order published for these models,
# assumptions of the simulator, not measurements.
_COMPUTE_MS: dict[str, float] = {
    "resnet50": 100.0,
    "vgg16": 200.0,
    "inception3": 150.0,
    "bert": 300.0,
    "gpt2": 400.0,
    "deepspeech2": 250.0,
    "yolov3": 220.0,
    "resnet18": 50.0,
    "alexnet": 40.0,
    "vgg19": 230.0,
}
MODELS: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        **{name: (_COMPUTE_MS[name], mb) for name, mb in ELASTICFLOW_MODELS.items()},
        "resnet101": (170.0, 170.0),
        "transformer": (180.0, 248.0),
    }
)
"""Model name -> (compute ms per iteration at speed 1, gradient MB)."""


PAL_MODELS: Mapping[str, tuple[float, str]] = MappingProxyType(
    {
        # model -> (iteration time in ms on a median V100 of PAL's setup, PAL's application class)
        "BERT": (179.0, "B"),
        "DCGAN": (46.9266931, "B"),
        "GPT2": (3571.4, "B"),
        "PointNet": (281.25, "D"),
        "resnet50": (175.40429367763434, "A"),
        "vgg19": (300.610341, "C"),
    }
)
"""The models of the Sia-Philly workloads as PAL's simulator runs them (``hal-uw/blox-pal``, branch
``artifact``: ``workload/workload.py`` ``get_per_iter_time`` for the times, 438-452 for the classes:
A profiled by ResNet-50, B and C by BERT, D by PageRank, ``blox/profiles.json``)."""
