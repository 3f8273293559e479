"""The hidden truth of a simulation: each server's slowdown over time, never shown to the
scheduler.

- ``none``: every S = 1 (the straggler-free reference);
- ``static``: each server draws its S once from its distribution and keeps it (persistent
  stragglers);
- ``markov``: each server alternates between its lowest value and slow *episodes* at its
  higher values.  Episode lengths are lognormal with median ``episode_median_s`` and
  ``EPISODE_SIGMA``, clipped to [``EPISODE_MIN_S``, ``EPISODE_MAX_S``] (the fail-slow
  durations measured in production); an episode's value is drawn from the higher values in
  proportion to their probabilities; the periods between episodes are exponential with the
  mean that makes the long-run share of time at each value equal its probability:
  ``E[normal] = E[episode] * p_low / (1 - p_low)``;
- ``replay``: per-server series from a CSV ``time_s, server, slowdown`` (a server absent
  from it, and every server before its first row, is at 1.0).

With a scenario table, the scenario index is the state: drawn once (``static``) or re-drawn
at epochs of the episode length law (``markov``), all servers changing together.

Every random draw comes from one seed: each server (and the scenario clock) gets its own
stream spawned from it, so the series do not depend on the order events are processed in.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from placement.errors import InvalidInputError
from placement.formats.cells import CellError, cell_number
from placement.model.records import Instance

__all__ = [
    "DYNAMICS",
    "EPISODE_MEDIAN_S",
    "EPISODE_SIGMA",
    "EPISODE_MIN_S",
    "EPISODE_MAX_S",
    "SlowdownSeries",
    "Change",
    "hidden_truth",
    "episode_mean_s",
    "stationary",
    "read_replay",
]

DYNAMICS = ("none", "static", "markov", "replay")
EPISODE_MEDIAN_S = 600.0
EPISODE_SIGMA = 1.0
"""Log-scale spread of episode lengths (a 68% interval of median x/÷ e)."""
EPISODE_MIN_S = 30.0
EPISODE_MAX_S = 36_000.0


@dataclass(frozen=True)
class Change:
    time_s: float
    server: int
    """Server position in the cluster instance."""
    value: float


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def episode_mean_s(
    median_s: float, sigma: float = EPISODE_SIGMA, lo: float = EPISODE_MIN_S, hi: float = EPISODE_MAX_S
) -> float:
    """Mean of the clipped lognormal episode length (exact, from the normal CDF)."""
    mu = math.log(median_s)
    za, zb = (math.log(lo) - mu) / sigma, (math.log(hi) - mu) / sigma
    inner = math.exp(mu + sigma**2 / 2) * (_phi(zb - sigma) - _phi(za - sigma))
    return lo * _phi(za) + hi * (1.0 - _phi(zb)) + inner


def stationary(values: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Support points and probabilities with zero-probability points dropped and equal
    values merged, sorted by value: the states of the Markov process and their long-run
    shares."""
    keep = probs > 0
    u, inv = np.unique(np.asarray(values, dtype=float)[keep], return_inverse=True)
    q = np.bincount(inv, weights=np.asarray(probs, dtype=float)[keep], minlength=len(u))
    return u, q / q.sum()


class SlowdownSeries:
    """The hidden slowdowns of every server: :meth:`start` gives them at time 0,
    :meth:`changes` yields every later change in time order (lazily, so a run of weeks
    keeps only one pending change per server)."""

    def __init__(
        self,
        cluster: Instance,
        kind: str,
        *,
        seed: int,
        episode_median_s: float = EPISODE_MEDIAN_S,
        replay: dict[str, list[tuple[float, float]]] | None = None,
    ) -> None:
        if kind not in DYNAMICS:
            raise ValueError(f"The 'dynamics' parameter must be one of {', '.join(DYNAMICS)}. Got {kind!r} instead.")
        if not (math.isfinite(episode_median_s) and EPISODE_MIN_S <= episode_median_s <= EPISODE_MAX_S):
            raise ValueError(
                f"The 'episode_median_s' parameter must be a number in [{EPISODE_MIN_S:g}, {EPISODE_MAX_S:g}]. "
                f"Got {episode_median_s!r} instead."
            )
        if kind == "replay" and replay is None:
            raise ValueError("The 'replay' dynamics needs a series (read_replay)")
        self.kind = kind
        self.cluster = cluster
        self.n = len(cluster.servers)
        self.median = episode_median_s
        self.mean_episode = episode_mean_s(episode_median_s)
        root = np.random.SeedSequence(int(seed) % 2**63)
        streams = root.spawn(self.n + 1)
        self.rngs = [np.random.default_rng(s) for s in streams[: self.n]]
        self.clock_rng = np.random.default_rng(streams[self.n])
        self.states: list[tuple[np.ndarray, np.ndarray]] = []
        sc = cluster.scenarios
        if sc is not None:
            self.scen_probs = np.asarray(sc.probs, dtype=float) / sum(sc.probs)
            table = np.ones((self.n, sc.count))
            for sid, row in sc.slowdowns.items():
                table[cluster.server_pos[sid]] = row
            self.table = table
        else:
            self.states = [
                stationary(np.asarray(s.slowdown.values), np.asarray(s.slowdown.probs)) for s in cluster.servers
            ]
        self.replay: dict[int, list[tuple[float, float]]] = {}
        if replay is not None:
            unknown = sorted(set(replay) - set(cluster.server_pos))
            if unknown:
                raise InvalidInputError(
                    [f"replay names server {s!r}, which the cluster does not have" for s in unknown[:40]]
                )
            self.replay = {cluster.server_pos[s]: sorted(rows) for s, rows in replay.items()}

    # -------------------------------------------------------------- draws
    def _episode(self, rng: np.random.Generator) -> float:
        x = float(np.exp(rng.normal(math.log(self.median), EPISODE_SIGMA)))
        return min(max(x, EPISODE_MIN_S), EPISODE_MAX_S)

    def _draw(self, rng: np.random.Generator, values: np.ndarray, probs: np.ndarray) -> float:
        return float(values[min(int(np.searchsorted(np.cumsum(probs), rng.random(), side="right")), len(values) - 1)])

    # ------------------------------------------------------------- series
    def start(self) -> np.ndarray:
        """Every server's slowdown at time 0."""
        if self.kind == "none":
            return np.ones(self.n)
        if self.kind == "replay":
            s = np.ones(self.n)
            for sp, rows in self.replay.items():
                before = [v for t, v in rows if t <= 0.0]
                if before:
                    s[sp] = before[-1]
            return s
        if self.cluster.scenarios is not None:
            k = int(self._draw(self.clock_rng, np.arange(len(self.scen_probs), dtype=float), self.scen_probs))
            return self.table[:, k].copy()
        return np.array([self._draw(rng, v, p) for rng, (v, p) in zip(self.rngs, self.states)])

    def changes(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        """``(time, changes)`` after time 0, in time order, from the state ``s0`` that
        :meth:`start` returned (infinite for ``markov``)."""
        if self.kind in ("none", "static"):
            return
        if self.kind == "replay":
            events = sorted((t, sp, v) for sp, rows in self.replay.items() for t, v in rows if t > 0.0)
            i = 0
            while i < len(events):
                t = events[i][0]
                batch = []
                while i < len(events) and events[i][0] == t:
                    batch.append(Change(t, events[i][1], events[i][2]))
                    i += 1
                yield t, batch
            return
        if self.cluster.scenarios is not None:
            t = 0.0
            while True:
                t += self._episode(self.clock_rng)
                k = int(self._draw(self.clock_rng, np.arange(len(self.scen_probs), dtype=float), self.scen_probs))
                yield t, [Change(t, sp, float(self.table[sp, k])) for sp in range(self.n)]
        yield from self._markov(s0)

    def _markov(self, s0: np.ndarray) -> Iterator[tuple[float, list[Change]]]:
        import heapq

        pending: list[tuple[float, int, float]] = []
        for sp, (values, _) in enumerate(self.states):
            if len(values) > 1:
                pending.append(self._next(sp, 0.0, float(s0[sp])))
        heapq.heapify(pending)
        while pending:
            t, sp, v = heapq.heappop(pending)
            heapq.heappush(pending, self._next(sp, t, v))
            yield t, [Change(t, sp, v)]

    def _next(self, sp: int, t: float, now: float) -> tuple[float, int, float]:
        """The change that ends the period server ``sp`` is in at time ``t`` (value ``now``)."""
        values, probs = self.states[sp]
        rng = self.rngs[sp]
        low, p_low = float(values[0]), float(probs[0])
        if now > low:  # an episode ends: back to the lowest value
            return t + self._episode(rng), sp, low
        mean_normal = self.mean_episode * p_low / (1.0 - p_low)
        v = self._draw(rng, values[1:], probs[1:] / probs[1:].sum())
        return t + float(rng.exponential(mean_normal)), sp, v


def hidden_truth(
    cluster: Instance,
    kind: str,
    *,
    seed: int,
    episode_median_s: float = EPISODE_MEDIAN_S,
    replay_path: str | os.PathLike[str] | None = None,
) -> SlowdownSeries:
    """The :class:`SlowdownSeries` of ``kind`` for ``cluster`` (``replay`` reads
    ``replay_path``)."""
    replay = read_replay(replay_path) if kind == "replay" and replay_path is not None else None
    return SlowdownSeries(cluster, kind, seed=seed, episode_median_s=episode_median_s, replay=replay)


def read_replay(path: str | os.PathLike[str]) -> dict[str, list[tuple[float, float]]]:
    """Read ``time_s, server, slowdown`` rows; every bad row is reported with its line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError([f"cannot read {p}: {e}"], source=str(p)) from None
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    missing = [c for c in ("time_s", "server", "slowdown") if c not in header]
    if missing:
        raise InvalidInputError([f"missing column(s) {', '.join(missing)}; the header has {header}"], source=str(p))
    out: dict[str, list[tuple[float, float]]] = {}
    problems: list[str] = []
    for line, row in enumerate(reader, start=2):
        server = (row["server"] or "").strip()
        bad = []
        t = v = 0.0
        try:
            t = cell_number(row["time_s"], minimum=0)
        except CellError as e:
            bad.append(f"time_s {e}")
        try:
            v = cell_number(row["slowdown"], minimum=1)
        except CellError as e:
            bad.append(f"slowdown {e}")
        if not server:
            bad.append("empty server")
        if bad:
            problems.append(f"{p.name} row {line}: " + "; ".join(bad))
            continue
        out.setdefault(server, []).append((t, v))
    if problems:
        raise InvalidInputError(
            problems[:40] + ([f"... and {len(problems) - 40} more"] if len(problems) > 40 else []), source=str(p)
        )
    if not out:
        raise InvalidInputError(["no rows"], source=str(p))
    return out
