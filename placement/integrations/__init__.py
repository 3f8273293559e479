"""The external systems a placement comes from and goes to: one room per system.

- :mod:`placement.integrations.kubernetes`: read a cluster (``kubectl get nodes/pods/hypernodes
  -o json``), write manifests (Volcano, PodGroup, Kueue), read them back, and the keys they use.
- :mod:`placement.integrations.slurm`: read a cluster (``topology.conf``/``topology.yaml``, the
  nodes' JSON), write batch scripts and ``slurm.conf``/``topology.conf``, read them back.

Shared by both: :mod:`~placement.integrations.levels` (the one rule that turns a switch tree and
per-level bandwidths into links), :mod:`~placement.integrations.tiers`,
:mod:`~placement.integrations.ranks`, :mod:`~placement.integrations.names`, the export options
and :mod:`~placement.integrations.targets` (the table ``placement.export.export`` dispatches
through), :mod:`~placement.integrations.readback` (file suffix -> reader).
"""
