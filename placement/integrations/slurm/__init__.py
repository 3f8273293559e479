"""Slurm: read a cluster (:mod:`.read`, :mod:`.topology`, :mod:`.nodes`, :mod:`.hostlist`), write
batch scripts and configuration (:mod:`.write`), read scripts back (:mod:`.readback`), and the keys
they share (:mod:`.keys`)."""

from __future__ import annotations

from placement.integrations.slurm.hostlist import compress_hostlist, expand_hostlist
from placement.integrations.slurm.nodes import UNAVAILABLE_STATES, SlurmNode, SlurmNodes, parse_gres, read_slurm_nodes
from placement.integrations.slurm.read import TOPOLOGY_FORMATS, instance_from_slurm, topology_format_of
from placement.integrations.slurm.topology import parse_topology_conf, parse_topology_yaml

__all__ = [
    "expand_hostlist",
    "compress_hostlist",
    "parse_topology_conf",
    "parse_topology_yaml",
    "SlurmNode",
    "SlurmNodes",
    "read_slurm_nodes",
    "parse_gres",
    "UNAVAILABLE_STATES",
    "instance_from_slurm",
    "TOPOLOGY_FORMATS",
    "topology_format_of",
]
