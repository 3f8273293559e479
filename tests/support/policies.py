"""A user's scheduling policy with a bug, run through ``placement.solve`` by its
``module:function`` name, as a user runs their own."""

from __future__ import annotations

from placement.model import Instance
from placement.solving import Options, Outcome

__all__ = ["broken_first_fit"]


def broken_first_fit(instance: Instance, opts: Options) -> Outcome:
    """A user's policy with a bug: first fit that ignores GPU types and allowed_servers."""
    free = {s.id: s.free_gpus for s in instance.servers}
    out: dict[str, dict[str, int]] = {}
    for j in instance.jobs:
        need, alloc = j.workers, {}
        for sid in free:
            k = min(free[sid], need)
            if k:
                alloc[sid], need = k, need - k
                free[sid] -= k
            if not need:
                break
        if need == 0:
            out[j.id] = alloc
    return Outcome(out)
