"""Slurm inputs shared by the Slurm tests: a topology.yaml, node records of the nodes' JSON as
each Slurm version prints them, and a topology.conf with its nodes."""

from __future__ import annotations

__all__ = ["TREE_YAML", "NODE_2205", "NODE_NEW", "CPU_NODE", "CONF", "slurm_node"]

TREE_YAML = """
- topology: fabric
  cluster_default: true
  tree:
    switches:
      - switch: leaf0
        nodes: gpu[00-03]
      - switch: leaf1
        nodes: gpu[04-07]
      - switch: spine
        children: leaf[0-1]
- topology: one
  tree:
    switches:
      - {switch: all, nodes: "gpu[00-07]"}
- topology: plain
  flat: true
"""


# A node of `sinfo --json` from Slurm 22.05 (openapi v0.0.38), fields trimmed
NODE_2205 = {
    "name": "g1",
    "cpus": 96,
    "gres": "gpu:a100:8(S:0-1)",
    "gres_drained": "N/A",
    "gres_used": "gpu:a100:2(IDX:0-1)",
    "real_memory": 1048576,
    "state": "mixed",
    "state_flags": ["DRAIN"],
    "partitions": ["gpu"],
}
# `scontrol show nodes --json`, data_parser v0.0.40+: states as a list, numbers maybe wrapped
NODE_NEW = {
    "name": "g2",
    "cpus": 64,
    "gres": "gpu:h100:4(S:0),gpu:h100:4(S:1)",
    "gres_used": "gpu:h100:3(IDX:0,2-3)",
    "real_memory": {"set": True, "infinite": False, "number": 524288},
    "state": ["IDLE"],
}
CPU_NODE = {"name": "c1", "cpus": 32, "gres": "", "gres_used": "", "real_memory": 65536, "state": ["IDLE"]}


CONF = "SwitchName=leaf0 Nodes=g[1-2]\nSwitchName=leaf1 Nodes=g[3-4],cpu1\nSwitchName=top Switches=leaf[0-1]\n"


def slurm_node(name: str, gpus: int, used: int = 0, state: str = "IDLE") -> dict:
    return {
        "name": name,
        "gres": f"gpu:h100:{gpus}",
        "gres_used": f"gpu:h100:{used}",
        "cpus": 64,
        "real_memory": 262144,
        "state": [state],
    }
