"""Bayesian online change-point detection (Adams and MacKay, 2007) on each server's looks: when
did the server's law last change?  The estimator then forgets what the server showed before
(``SimConfig.change_points = "bocpd"``), in proportion to the posterior that a change came
after it, so that a fail-slow onset, or the server healing from
one, shows in its estimate within a few looks instead of the estimate window's day.

A look is what the scheduler saw of a server at one estimate tick: slow or not (its workers'
mean ratio past the estimator's no-slowdown bin, as the forecaster reads it).  Within a
segment (one law), the looks follow the forecaster's two-state chain: a server of slow share
``p`` is slow at a look ``d`` seconds after the last with probability
``p + (x - p) exp(-k d)``, ``x`` the last look (1 slow, 0 not), ``k = rate(E[episode], 1 - p)``:
so a run of slow looks is an episode where episodes are long, and a change where they are
short.  The first look of a segment is slow with probability ``p``.  ``p`` is unknown: the
posterior is kept jointly over the run length (looks in the current segment, capped at
``max_run``, the estimate window's looks, the last entry holding every longer run) and ``p``
on the grid :data:`P_GRID` (uniform prior for every new segment).  A segment ends at each
look with the hazard ``gap / CHANGE_EVERY_S``.

:meth:`ChangePoints.kept` gives the probability that a look belongs to its server's current
segment (the posterior mass of the run lengths that reach back to it): the estimator weighs
the look's rows by it.  :meth:`ChangePoints.since` gives, per server, when its current
segment most probably began (the first look of the most probable run length; ``-inf`` when
that is the longest, a segment older than the window).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["CHANGE_EVERY_S", "P_GRID", "ChangePoints"]

P_GRID = np.array([0.005, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.995])
"""The slow shares a segment's law may have."""
CHANGE_EVERY_S = 172_800.0
"""The mean time between changes of a server's law the detector expects (two days: fail-slow
regimes come days apart and last hours)."""


class ChangePoints:
    """The run-length posterior of ``n`` servers' looks (server positions ``0..n-1``)."""

    def __init__(self, n: int, max_run: int) -> None:
        self.max_run = max(int(max_run), 2)
        g = len(P_GRID)
        self.w = np.zeros((n, self.max_run, g))
        """Joint posterior: server x (looks in the segment - 1) x slow share."""
        self.times = np.full((n, self.max_run), -np.inf)
        """Per server, the times of its last looks, most recent first."""
        self.last = np.full(n, -1.0)
        """Per server, its last look (1 slow, 0 not; -1 never seen)."""
        self.prior = np.full(g, 1.0 / g)
        self.found = 0
        """Changes found: looks after which a server's most probable segment is a new one
        (not its first look)."""

    def update(self, now: float, servers: np.ndarray, slow: np.ndarray, mean_episode_s: float) -> None:
        """One look at each of ``servers`` (distinct positions) at ``now``; ``slow`` says which
        were slow; ``mean_episode_s`` is the fleet's mean episode length (the forecaster's)."""
        if not len(servers):
            return
        sp = np.asarray(servers, dtype=np.int64)
        x = np.asarray(slow, dtype=float)[:, None]
        p = P_GRID[None, :]
        prev = self.last[sp][:, None]
        gap = now - self.times[sp, 0][:, None]
        k = 1.0 / (mean_episode_s * (1.0 - p))
        r = np.exp(-k * np.where(np.isfinite(gap), gap, np.inf))
        stay = np.where(prev >= 0, p + (prev - p) * r, p)  # P(slow) within the segment
        like = np.where(x > 0, stay, 1.0 - stay)
        fresh = np.where(x > 0, p, 1.0 - p)  # P(slow) at a segment's first look
        hazard = np.minimum(np.where(np.isfinite(gap), gap, 0.0) / CHANGE_EVERY_S, 0.5)
        w = self.w[sp]
        total = w.sum(axis=(1, 2))
        was = w.sum(axis=2).argmax(axis=1)
        new = np.zeros_like(w)
        new[:, 1:, :] = w[:, :-1, :] * ((1.0 - hazard) * like)[:, None, :]
        new[:, -1, :] += w[:, -1, :] * (1.0 - hazard) * like
        seen = total > 0
        new[:, 0, :] = (np.where(seen, hazard[:, 0] * total, 1.0)[:, None] * self.prior[None, :]) * fresh
        new /= new.sum(axis=(1, 2), keepdims=True)
        self.w[sp] = new
        now_run = new.sum(axis=2).argmax(axis=1)
        self.found += int(((total > 0) & (now_run <= was) & (was < self.max_run - 1)).sum())
        self.times[sp, 1:] = self.times[sp, :-1]
        self.times[sp, 0] = now
        self.last[sp] = x[:, 0]

    def run_lengths(self) -> np.ndarray:
        """Per server, the most probable number of looks in its current segment (0 for a
        server never seen)."""
        mass = self.w.sum(axis=2)
        return np.where(mass.sum(axis=1) > 0, mass.argmax(axis=1) + 1, 0)

    def kept(self, looks: Sequence[np.ndarray]) -> np.ndarray:
        """Per logged row, the posterior probability that its look belongs to its server's
        current segment: that no change came after it.  ``looks`` holds, oldest first, the
        server of every row of each :meth:`update` still in the window (a server's rows of one
        update are one look); the estimator weighs each row by it (a soft forgetting: a change
        the looks leave in doubt forgets in proportion)."""
        n = len(self.w)
        mass = self.w.sum(axis=2)
        survival = np.cumsum(mass[:, ::-1], axis=1)[:, ::-1]  # P(run length >= i + 1)
        later = np.zeros(n, dtype=np.int64)
        out = []
        for sp in reversed(looks):
            out.append(survival[sp, np.minimum(later[sp], self.max_run - 1)])
            seen = np.zeros(n, dtype=np.int64)
            seen[sp] = 1
            later += seen
        return np.concatenate(out[::-1]) if out else np.zeros(0)

    def since(self) -> np.ndarray:
        """Per server, the time its current segment began (``-inf``: before the window, or
        never seen)."""
        runs = self.run_lengths()
        out = np.full(len(runs), -np.inf)
        inside = (runs > 0) & (runs < self.max_run)
        idx = np.flatnonzero(inside)
        out[idx] = self.times[idx, runs[idx] - 1]
        return out
