"""The hidden truth of a simulation: each server's slowdown over time, never shown to the
scheduler.  One module per model, and :data:`DYNAMICS`, the name -> class table that
:class:`~placement.simulation.config.SimConfig` and ``placement simulate --dynamics`` read:

- ``none`` (:mod:`.none`): every S = 1, the straggler-free reference;
- ``static`` (:mod:`.static`): each server draws its S once and keeps it;
- ``markov`` (:mod:`.markov`): normal periods and slow episodes of a lognormal length law;
- ``mixed`` (:mod:`.mixed`): a hidden few servers persistently slow, the rest in episodes,
  each server's long-run law unchanged;
- ``onset`` (:mod:`.onset`): episodes, and now and then a fail-slow regime of hours that
  changes a server's law until it heals;
- ``replay`` (:mod:`.replay`): per-server series from a CSV;
- ``measured`` (:mod:`.measured`): computation fail-slows, severe slow machines and congested
  links at the rates, lengths and magnitudes measured in production (Greyhound, ByteDance).

Congested domains (a switch's ``congestion``) move with the model: never under ``none``, drawn
once under ``static`` and ``replay``, in episodes of the same law under the others
(:meth:`~.base.Dynamics.run_start`, :meth:`~.base.Dynamics.run_changes`: the state vector holds
the servers, then the congested domains).

A new model is a :class:`~.base.Dynamics` subclass (``start`` and ``changes``) added to the
table.  The shared parts (episode law, seeded streams, scenario table) are in :mod:`.base`.
"""

from __future__ import annotations

import os

from placement.model.records import Instance
from placement.simulation.dynamics.base import (
    EPISODE_MAX_S,
    EPISODE_MEDIAN_S,
    EPISODE_MIN_S,
    EPISODE_SIGMA,
    PERSISTENT_SHARE,
    Change,
    Dynamics,
    DynamicsOptions,
    episode_mean_s,
    stationary,
)
from placement.simulation.dynamics.markov import Markov
from placement.simulation.dynamics.measured import MEASURED, Measured, MeasuredLaw, measured_cluster
from placement.simulation.dynamics.mixed import Mixed
from placement.simulation.dynamics.none import NoSlowdown
from placement.simulation.dynamics.onset import Onset
from placement.simulation.dynamics.replay import Replay, read_replay
from placement.simulation.dynamics.static import Static

__all__ = [
    "DYNAMICS",
    "EPISODE_MEDIAN_S",
    "EPISODE_SIGMA",
    "EPISODE_MIN_S",
    "EPISODE_MAX_S",
    "PERSISTENT_SHARE",
    "Change",
    "Dynamics",
    "DynamicsOptions",
    "hidden_truth",
    "MEASURED",
    "MeasuredLaw",
    "measured_cluster",
    "episode_mean_s",
    "stationary",
    "read_replay",
]

DYNAMICS: dict[str, type[Dynamics]] = {m.name: m for m in (NoSlowdown, Static, Markov, Mixed, Onset, Replay, Measured)}


def hidden_truth(
    cluster: Instance,
    kind: str,
    *,
    seed: int,
    episode_median_s: float = EPISODE_MEDIAN_S,
    persistent_share: float = PERSISTENT_SHARE,
    replay_path: str | os.PathLike[str] | None = None,
) -> Dynamics:
    """The series of model ``kind`` for ``cluster`` (``replay`` reads ``replay_path``)."""
    if kind not in DYNAMICS:
        raise ValueError(f"The 'dynamics' parameter must be one of {', '.join(DYNAMICS)}. Got {kind!r} instead.")
    replay = read_replay(replay_path) if kind == "replay" and replay_path is not None else None
    options = DynamicsOptions(episode_median_s=episode_median_s, persistent_share=persistent_share, replay=replay)
    return DYNAMICS[kind](cluster, seed=seed, options=options)
