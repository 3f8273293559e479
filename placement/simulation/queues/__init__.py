"""Queue policies: who runs, while the placement method decides where.  One module per policy
and :data:`QUEUES`, the name -> class table that
:class:`~placement.simulation.config.SimConfig` and ``placement simulate --queue`` read:

- ``fifo`` (:mod:`.fifo`, the default): arrival order, a job that does not fit is skipped
  (backfilling without a reservation);
- ``fifo-strict`` (:mod:`.fifo`): the head blocks;
- ``sjf`` (:mod:`.sjf`): shortest straggler-free run first;
- ``srtf`` (:mod:`.srtf`): preemptive, least believed remaining time first;
- ``las`` (:mod:`.las`): preemptive, least attained GPU-seconds first;
- ``tiresias`` (:mod:`.tiresias`): discretised 2D-LAS with Tiresias's thresholds;
- ``gavel`` (:mod:`.gavel`): max-min fairness in rounds of 360 s;
- ``replay`` (:mod:`.replay`): another run's start times, replayed (a reference).

A new policy is a :class:`~.base.QueuePolicy` subclass added to the table.  Every policy
composes with every placement method.
"""

from __future__ import annotations

from placement.simulation.queues.base import Candidate, QueuePolicy
from placement.simulation.queues.fifo import Fifo, FifoStrict
from placement.simulation.queues.gavel import ROUND_S, Gavel
from placement.simulation.queues.las import LAS_QUANTUM_S, Las
from placement.simulation.queues.replay import Replay
from placement.simulation.queues.sjf import Sjf
from placement.simulation.queues.srtf import Srtf
from placement.simulation.queues.tiresias import THRESHOLDS_GPU_S, Tiresias

__all__ = ["QUEUES", "Candidate", "QueuePolicy", "ROUND_S", "LAS_QUANTUM_S", "THRESHOLDS_GPU_S"]

QUEUES: dict[str, type[QueuePolicy]] = {q.name: q for q in (Fifo, FifoStrict, Sjf, Srtf, Las, Tiresias, Gavel, Replay)}
