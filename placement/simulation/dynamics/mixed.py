"""``mixed``: a few servers are persistently slow and the rest slow down in episodes.

Each server with slow values is *persistent* with probability ``persistent_share x (1 -
p_low)``: it draws one of its higher values (in proportion to their probabilities) and
keeps it.  Every other server follows ``markov`` with the slow share that leaves each
server's long-run law unchanged: ``q = (1 - p_low)(1 - ps) / (1 - ps (1 - p_low))``, so
``ps (1 - p_low) + (1 - ps (1 - p_low)) q = 1 - p_low``.  The cluster's distributions are
therefore still the law the truth is drawn from (what ``oracle`` knowledge plans by), but
which servers are the persistent stragglers is hidden: only the logs can tell.  Who is
persistent is drawn from its own stream (one draw per server, in position order).  With a
scenario table the model is ``markov``'s (persistence per server means nothing for a joint
table).
"""

from __future__ import annotations

import numpy as np

from placement.model.records import Instance
from placement.simulation.dynamics.base import DynamicsOptions, draw
from placement.simulation.dynamics.markov import Markov


class Mixed(Markov):
    name = "mixed"
    summary = "a few servers persistently slow, the rest in episodes (--persistent-share)"
    extra_streams = 1

    def __init__(self, cluster: Instance, *, seed: int, options: DynamicsOptions | None = None) -> None:
        super().__init__(cluster, seed=seed, options=options)
        ps = self.options.persistent_share
        who = self.extra_rngs[0]
        self.persistent = np.zeros(self.n, dtype=bool)
        self.low = np.ones(self.n)
        for sp, (values, probs) in enumerate(self.states):
            u = who.random()
            if len(values) < 2:
                continue
            slow = 1.0 - float(probs[0])
            self.persistent[sp] = u < ps * slow
            self.low[sp] = 1.0 - slow * (1.0 - ps) / (1.0 - ps * slow)

    def low_share(self, sp: int) -> float:
        return float(self.low[sp]) if not self.scenarios else super().low_share(sp)

    def start(self) -> np.ndarray:
        if self.scenarios:
            return super().start()
        out = np.empty(self.n)
        for sp, (rng, (values, probs)) in enumerate(zip(self.rngs, self.states)):
            if len(values) < 2:
                out[sp] = values[0]
            elif self.persistent[sp]:
                out[sp] = draw(rng, values[1:], probs[1:] / probs[1:].sum())
            else:
                slow = probs[1:] / probs[1:].sum() * (1.0 - self.low[sp])
                out[sp] = draw(rng, values, np.concatenate(([self.low[sp]], slow)))
        return out

    def forecast(
        self, sp: int, now: float, horizon_s: float, at_s: float | None = None
    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        if not self.scenarios and self.persistent[sp]:
            return (float(now),), (1.0,)  # a persistent straggler stays as it is
        return super().forecast(sp, now, horizon_s, at_s)

    def alternating(self) -> list[int]:
        return [sp for sp in super().alternating() if not self.persistent[sp]]
