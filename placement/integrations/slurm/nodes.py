"""Slurm's nodes as ``scontrol show nodes --json`` and ``sinfo --json`` print them: GPUs (GRES),
GPUs in use, CPUs, memory and states."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from placement.errors import InvalidInputError
from placement.integrations.slurm.hostlist import compress_hostlist, split_outside


@dataclass(frozen=True)
class SlurmNode:
    """A node as Slurm reports it (``scontrol show nodes --json``, ``sinfo --json``).

    ``gpu_type`` is the GRES type (``gpu:a100:8`` -> ``"a100"``, Slurm's spelling kept);
    ``"unknown"`` when the GRES has no type (``gpu:8``); the types joined by ``+``
    (``"a100+v100"``) when a node has several.  ``memory_gb`` is ``RealMemory`` / 1024
    (Slurm's MB are MiB); ``None`` when Slurm reports no CPUs or its default ``RealMemory``
    of 1 MB (not configured).  ``states`` are upper case, base state first (``("IDLE",
    "DRAIN")``)."""

    name: str
    gpus: int
    gpu_type: str
    used_gpus: int = 0
    cpus: int | None = None
    memory_gb: float | None = None
    states: tuple[str, ...] = ()

    @property
    def available(self) -> bool:
        """Whether Slurm would start a new job here (no state of :data:`UNAVAILABLE_STATES`)."""
        return not UNAVAILABLE_STATES.intersection(self.states)


UNAVAILABLE_STATES = frozenset(
    {
        "DOWN",
        "DRAIN",
        "DRAINED",
        "DRAINING",
        "FAIL",
        "FAILING",
        "MAINT",
        "FUTURE",
        "NOT_RESPONDING",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "INVALID",
        "INVALID_REG",
    }
)
"""Node states in which Slurm starts no new job: :func:`instance_from_slurm` counts all the
GPUs of such a node as used.  (``UNKNOWN``, a controller that has just started, and the
power-saving states, which Slurm resumes on demand, are not among them.)"""


class SlurmNodes(dict[str, SlurmNode]):
    """``{node name: SlurmNode}`` of the nodes with GPUs, in the order Slurm listed them;
    ``without_gpus`` names the nodes left out for having none."""

    without_gpus: tuple[str, ...] = ()


_GRES_ENTRY = re.compile(r"^(?P<body>[^()]*)(?:\((?P<detail>[^()]*)\))?$")
_GRES_COUNT = re.compile(r"^(?P<n>\d+)(?P<unit>[KMGTP]?)$")
_GRES_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_GRES_NAME = re.compile(r"^[\w.+-]+$")
MAX_GPUS_PER_NODE = 1_000_000
"""Most GPUs a node may report (more is a corrupt count, refused)."""


def _split_outside_parens(text: str) -> list[str]:
    """Split on commas outside parentheses; an unbalanced one keeps its entry whole (the entry
    is then refused by its own check)."""
    try:
        return split_outside(text, "(", ")")
    except ValueError:
        return [text]


def parse_gres(text: str, path: str = "gres") -> tuple[dict[str, int], list[str]]:
    """``({gpu type or "": count}, problems)`` of a Slurm GRES string; GRES other than
    ``gpu`` are skipped.  Accepted: ``gpu``, ``gpu:8``, ``gpu:a100``, ``gpu:a100:8``,
    ``gpu:a100:8(S:0-1)``, ``gpu:a100:2(IDX:0-1)``, ``gpu:(null):0(IDX:N/A)``, a
    ``no_consume`` flag, several comma-separated entries; ``(null)``, ``N/A`` and ``""``
    are no GRES.

    >>> parse_gres("gpu:a100:8(S:0-1),gpu:v100:2,nic:1")
    ({'a100': 8, 'v100': 2}, [])
    >>> parse_gres("gpu:a100:eight", "nodes[3].gres")[1]
    ["nodes[3].gres: malformed GPU entry 'gpu:a100:eight' (expected gpu[:type][:count][(...)])"]
    """
    out: dict[str, int] = {}
    problems: list[str] = []
    if text.strip() in ("", "(null)", "N/A"):
        return out, problems
    if text.count("(") != text.count(")"):
        return out, [f"{path}: unbalanced parentheses in {text!r}"]
    for raw in _split_outside_parens(text):
        entry = raw.strip().replace(":(null):", ":")
        if not entry:
            continue
        m = _GRES_ENTRY.match(entry)
        parts = m.group("body").split(":") if m else []
        if m is None or not parts[0]:
            problems.append(f"{path}: malformed GRES entry {raw.strip()!r} (expected name[:type][:count][(...)])")
            continue
        if parts[0] != "gpu":
            continue
        rest = [p for p in parts[1:] if p != "no_consume"]
        count: int | None = 1
        if rest and (c := _GRES_COUNT.match(rest[-1])):
            count = int(c.group("n")) * _GRES_UNITS[c.group("unit")]
            rest = rest[:-1]
        if len(rest) > 1 or (rest and not _GRES_NAME.match(rest[0])):
            count = None
        if count is None:
            problems.append(f"{path}: malformed GPU entry {raw.strip()!r} (expected gpu[:type][:count][(...)])")
            continue
        if count > MAX_GPUS_PER_NODE:
            problems.append(f"{path}: {count:,} GPUs in {raw.strip()!r}, more than {MAX_GPUS_PER_NODE:,}")
            continue
        key = rest[0] if rest else ""
        out[key] = out.get(key, 0) + count
    return out, problems


def _count(value: Any, path: str, problems: list[str]) -> int | None:
    """An integer >= 0 as Slurm's JSON writes it: a number, or (data_parser v0.0.40+)
    ``{"set": true, "infinite": false, "number": n}``; ``None`` when not set."""
    if isinstance(value, Mapping) and "number" in value:
        if value.get("set") is False or value.get("infinite") is True:
            return None
        value = value["number"]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(f"{path}: expected an integer >= 0, got {value!r}")
        return None
    return value


def _string(value: Any, path: str, problems: list[str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"{path}: expected a string, got {value!r}")
        return ""
    return value


def _sub(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, Mapping) else {}


def _states(value: Any, flags: Any, path: str, problems: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v, at in ((value, f"{path}.state"), (flags, f"{path}.state_flags")):
        if v is None:
            continue
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
            problems.append(f"{at}: expected a state name or a list of them, got {v!r}")
            continue
        out += [s.upper() for s in items if s and s.upper() not in out]
    return tuple(out)


def _node(
    name: str,
    gres: str,
    gres_used: str,
    cpus: int | None,
    real_memory: int | None,
    states: tuple[str, ...],
    gres_path: str,
    used_path: str,
    problems: list[str],
) -> SlurmNode:
    total, p1 = parse_gres(gres, gres_path)
    used, p2 = parse_gres(gres_used, used_path)
    problems += p1 + p2
    gpus, used_gpus = sum(total.values()), sum(used.values())
    if used_gpus > gpus and not p1:
        problems.append(f"{used_path}: {used_gpus} GPUs in use, but the node has {gpus} ({gres!r})")
    types = sorted({t or "unknown" for t, k in total.items() if k > 0})
    return SlurmNode(
        name=name,
        gpus=gpus,
        gpu_type="+".join(types) or "unknown",
        used_gpus=min(used_gpus, gpus),
        cpus=cpus or None,
        memory_gb=real_memory / 1024 if real_memory is not None and real_memory > 1 else None,
        states=states,
    )


def read_slurm_nodes(text: str | bytes) -> SlurmNodes:
    """The GPU nodes of a cluster from the JSON of ``scontrol show nodes --json`` (Slurm
    23.02+), ``sinfo --json`` of Slurm 22.05 (openapi v0.0.38: a ``nodes`` list) or
    ``sinfo -N --json`` of Slurm 23.02+ (a ``sinfo`` list of rows).

    Per node: GPUs and their type from ``gres`` (:func:`parse_gres`), GPUs in use from
    ``gres_used``, CPUs, ``real_memory`` (MB, read as GB = MB / 1024) and states.  Nodes
    without a GPU are left out of the result (their names are in ``without_gpus``).  A
    node listed several times (``sinfo -N`` lists it once per partition) must say the same
    each time.  ``sinfo`` without ``-N`` groups nodes whose GRES differ into one row, so a
    row of several nodes is refused.  Every problem (not JSON, a malformed GRES or count, a
    ``gres_used`` above ``gres``) is raised at once with its JSON path:
    ``nodes[3].gres: malformed GPU entry 'gpu:a100:x' ...``.

    >>> n = read_slurm_nodes('{"nodes": [{"name": "g1", "gres": "gpu:a100:8(S:0-1)", '
    ...     '"gres_used": "gpu:a100:2(IDX:0-1)", "cpus": 96, "real_memory": 1048576, "state": ["MIXED"]}]}')
    >>> n["g1"]
    SlurmNode(name='g1', gpus=8, gpu_type='a100', used_gpus=2, cpus=96, memory_gb=1024.0, states=('MIXED',))
    """
    from placement.formats import parse_json

    src = "Slurm nodes JSON"
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInputError([f"not UTF-8 text: {e}"], source=src) from None
    doc, problems = parse_json(text, what="of Slurm's nodes")
    if doc is None and problems:
        raise InvalidInputError(problems, source=src)
    seen: dict[str, tuple[SlurmNode, str]] = {}
    if not isinstance(doc, Mapping) or not (isinstance(doc.get("nodes"), list) or isinstance(doc.get("sinfo"), list)):
        raise InvalidInputError(
            [
                "expected an object with a 'nodes' list (scontrol show nodes --json, sinfo --json of Slurm 22.05) "
                "or a 'sinfo' list (sinfo -N --json of Slurm 23.02+)"
            ],
            source=src,
        )
    for k, err in enumerate(doc.get("errors") or []):
        what = err.get("description") or err.get("error") if isinstance(err, Mapping) else err
        problems.append(f"errors[{k}]: Slurm reported {what!r}")
    records: list[tuple[str, SlurmNode]] = []
    if isinstance(doc.get("nodes"), list):
        for i, rec in enumerate(doc["nodes"]):
            at = f"nodes[{i}]"
            if not isinstance(rec, Mapping):
                problems.append(f"{at}: expected an object")
                continue
            name = rec.get("name")
            if not isinstance(name, str) or not name:
                problems.append(f"{at}.name: expected the node name, got {name!r}")
                continue
            node = _node(
                name,
                _string(rec.get("gres"), f"{at}.gres", problems),
                _string(rec.get("gres_used"), f"{at}.gres_used", problems),
                _count(rec.get("cpus"), f"{at}.cpus", problems),
                _count(rec.get("real_memory"), f"{at}.real_memory", problems),
                _states(rec.get("state"), rec.get("state_flags"), at, problems),
                f"{at}.gres",
                f"{at}.gres_used",
                problems,
            )
            records.append((at, node))
    else:
        for i, row in enumerate(doc["sinfo"]):
            at = f"sinfo[{i}]"
            if not isinstance(row, Mapping):
                problems.append(f"{at}: expected an object")
                continue
            names = _sub(row, "nodes").get("nodes")
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names) or not names:
                problems.append(f"{at}.nodes.nodes: expected a list of node names, got {names!r}")
                continue
            if len(names) > 1:
                problems.append(
                    f"{at}.nodes.nodes: one row for {len(names)} nodes ({compress_hostlist(names)}): sinfo groups "
                    "nodes without comparing their GRES, so each node's GPUs are unknown; use 'sinfo -N --json' "
                    "or 'scontrol show nodes --json'"
                )
                continue
            cpus, mem, gres = _sub(row, "cpus"), _sub(row, "memory"), _sub(row, "gres")
            state = _sub(row, "node").get("state")
            node = _node(
                names[0],
                _string(gres.get("total"), f"{at}.gres.total", problems),
                _string(gres.get("used"), f"{at}.gres.used", problems),
                _count(cpus.get("maximum", cpus.get("total")), f"{at}.cpus.maximum", problems),
                _count(mem.get("maximum"), f"{at}.memory.maximum", problems),
                _states(state, None, f"{at}.node", problems),
                f"{at}.gres.total",
                f"{at}.gres.used",
                problems,
            )
            records.append((at, node))
    for at, node in records:
        if node.name in seen:
            first, first_at = seen[node.name]
            if replace(first, states=()) != replace(node, states=()):
                problems.append(f"{at}: node {node.name!r} differs from {first_at}: {node} vs {first}")
            continue
        seen[node.name] = (node, at)
    if problems:
        raise InvalidInputError(problems, source=src)
    out = SlurmNodes((n, v) for n, (v, _) in seen.items() if v.gpus > 0)
    out.without_gpus = tuple(n for n, (v, _) in seen.items() if v.gpus == 0)
    return out
