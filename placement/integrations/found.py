"""What the files of an export place, gathered while they are read back (one job per file)."""

from __future__ import annotations

__all__ = ["Found"]


class Found:
    """What the files place, and which file placed each job (a job in two files is refused)."""

    def __init__(self) -> None:
        self.assignment: dict[str, dict[str, int]] = {}
        self.shards: dict[str, dict[str, int]] = {}
        self.file_of: dict[str, str] = {}
        self.problems: list[str] = []
        self.ranks: dict[str, dict[int, str]] = {}
        """Where the files fix the ranks: ``{job: {rank: node}}``."""
        self.stages: dict[str, list[list[str]]] = {}
        """Stage matrices the files carry as such (a Kueue export's advice)."""

    def rank(self, job: str, first: int, node: str, count: int) -> None:
        """Ranks ``first .. first + count - 1`` of ``job`` run on ``node``."""
        ranks = self.ranks.setdefault(job, {})
        for r in range(first, first + count):
            if ranks.setdefault(r, node) != node:
                msg = f"job {job!r}: rank {r} is on both {ranks[r]!r} and {node!r}"
                if msg not in self.problems:
                    self.problems.append(msg)

    def add(self, job: str, node: str, k: int, file: str, *, shard: bool = False) -> None:
        first = self.file_of.setdefault(job, file)
        if first != file:
            msg = f"{file}: job {job!r} is placed in {first} too (one export per folder)"
            if msg not in self.problems:
                self.problems.append(msg)
            return
        a = (self.shards if shard else self.assignment).setdefault(job, {})
        a[node] = a.get(node, 0) + k
