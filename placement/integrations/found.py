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

    def add(self, job: str, node: str, k: int, file: str, *, shard: bool = False) -> None:
        first = self.file_of.setdefault(job, file)
        if first != file:
            msg = f"{file}: job {job!r} is placed in {first} too (one export per folder)"
            if msg not in self.problems:
                self.problems.append(msg)
            return
        a = (self.shards if shard else self.assignment).setdefault(job, {})
        a[node] = a.get(node, 0) + k
