"""The hidden truth's future, read ahead (``hindsight`` knowledge): the dynamics' changes come
through :class:`Lookahead`, which can show, at any time, what each server will do over the next
``h`` seconds without changing what happens (each server's changes are drawn from its own
stream, in order, whenever they are read).

A ``hindsight`` decision sees each server as the share of the coming ``h`` seconds it will
spend at each value (:meth:`Lookahead.path`): the realised path, not a forecast from the state
now (``clairvoyant``) nor the law (``oracle``).  A reference for what knowing the future could
buy, not something a scheduler can have."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from placement.model.records import Slowdown

__all__ = ["Lookahead"]


class Lookahead:
    """The dynamics' ``(time, changes)`` iterator, with a buffer read ahead on demand."""

    def __init__(self, changes: Iterator[tuple[float, list[Any]]]) -> None:
        self.source = changes
        self.ahead: deque[tuple[float, list[Any]]] = deque()
        self.given: tuple[float, list[Any]] | None = None
        """The last item handed out (its changes apply at its time)."""

    def next(self) -> tuple[float, list[Any]] | None:
        """The next ``(time, changes)`` to apply (from the buffer first)."""
        self.given = self.ahead.popleft() if self.ahead else next(self.source, None)
        return self.given

    def path(self, S: np.ndarray, now: float, horizon_s: float, server_ids: Sequence[str]) -> dict[str, Slowdown]:
        """Each server's values over ``(now, now + horizon_s]`` from ``S`` (its values now,
        every change at ``now`` applied), weighted by the time it spends at each: servers that
        stay put keep a point distribution."""
        end = now + horizon_s
        while not self.ahead or self.ahead[-1][0] <= end:
            nxt = next(self.source, None)
            if nxt is None:
                break
            self.ahead.append(nxt)
        coming = ([self.given] if self.given is not None else []) + list(self.ahead)
        value = S.astype(float).copy()
        since = np.full(len(S), now)
        spent: list[dict[float, float]] = [{} for _ in range(len(S))]
        for t, changes in coming:
            if t <= now:
                continue
            if t > end:
                break
            for c in changes:
                sp = c.server
                d = spent[sp]
                d[float(value[sp])] = d.get(float(value[sp]), 0.0) + (t - since[sp])
                value[sp], since[sp] = c.value, t
        out: dict[str, Slowdown] = {}
        for sp, sid in enumerate(server_ids):
            d = spent[sp]
            d[float(value[sp])] = d.get(float(value[sp]), 0.0) + (end - since[sp])
            keep = sorted((v, w) for v, w in d.items() if w > 0) or [(float(value[sp]), 1.0)]
            total = sum(w for _, w in keep)
            out[sid] = Slowdown(tuple(v for v, _ in keep), tuple(float(w / total) for _, w in keep))
        return out
