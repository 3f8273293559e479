"""Reading and writing ``placement-instance/1`` and ``placement-solution/1`` documents.

The loader is the one place where input is checked.  It reports every problem at once,
each with its JSON path (``jobs[3].workers must be an integer >= 1, got 0``): first the
JSON Schemas in ``placement/schemas`` (structure and types), then the rules a schema
cannot say (probabilities summing to 1, duplicate ids, edges to unknown nodes, ...).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from placement.errors import InstanceError, SolutionFormatError
from placement.model import (
    Instance,
    Job,
    JobReport,
    Link,
    Scenarios,
    Server,
    Slowdown,
    Solution,
    Status,
    Switch,
)

__all__ = [
    "INSTANCE_FORMAT",
    "SOLUTION_FORMAT",
    "PROB_TOLERANCE",
    "parse_json",
    "instance_from_dict",
    "instance_to_dict",
    "load_instance",
    "dump_instance",
    "solution_to_dict",
    "solution_from_dict",
    "load_solution",
    "dump_solution",
    "write_json_atomic",
    "schema",
]

INSTANCE_FORMAT = "placement-instance/1"
SOLUTION_FORMAT = "placement-solution/1"
PROB_TOLERANCE = 1e-6
"""Probabilities of a distribution or scenario table must sum to 1 within this."""


# ------------------------------------------------------------------ JSON paths
def jpath(parts: Iterable[str | int]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(document)"


def _describe(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, str):
        return repr(v) if len(v) < 40 else repr(v[:37] + "...")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return f"a list of {len(v)}"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__  # pragma: no cover


class _NonFinite:
    def __init__(self, text: str) -> None:
        self.text = text


def _parse_float(text: str) -> float | _NonFinite:
    v = float(text)
    return v if math.isfinite(v) else _NonFinite(text)


def parse_json(text: str, *, what: str = "document") -> tuple[Any, list[str]]:
    """Parse strict JSON: returns ``(data, problems)``.

    NaN, Infinity and numbers that overflow to infinity (``1e999``) are problems with
    their paths, as are duplicate keys; malformed JSON is one problem with line/column.
    """
    dup: list[str] = []

    def pairs(kv: list[tuple[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for k, v in kv:
            if k in d:
                dup.append(k)
            d[k] = v
        return d

    try:
        data = json.loads(
            text,
            parse_constant=_NonFinite,
            parse_float=_parse_float,
            object_pairs_hook=pairs,
        )
    except json.JSONDecodeError as e:
        return None, [f"malformed JSON {what}: {e.msg} at line {e.lineno} column {e.colno}"]
    except RecursionError:
        return None, [f"malformed JSON {what}: nested too deeply"]
    problems = [f"duplicate key {k!r} in a JSON object" for k in dict.fromkeys(dup)]
    bad: list[str] = []

    def walk(x: Any, path: tuple[str | int, ...]) -> Any:
        if isinstance(x, _NonFinite):
            bad.append(f"{jpath(path)} must be a finite number, got {x.text}")
            return None
        if isinstance(x, dict):
            return {k: walk(v, path + (k,)) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, path + (i,)) for i, v in enumerate(x)]
        return x

    data = walk(data, ())
    return data, problems + bad


# -------------------------------------------------------------------- schemas
@lru_cache(maxsize=None)
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of ``placement-instance/1`` (``"instance"``) or ``"solution"``."""
    fname = {"instance": "placement-instance-1.schema.json", "solution": "placement-solution-1.schema.json"}[name]
    return json.loads(resources.files("placement").joinpath("schemas", fname).read_text())


@lru_cache(maxsize=None)
def _validator(name: str) -> Any:
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _c, x: isinstance(x, int) and not isinstance(x, bool)
    )
    cls = jsonschema.validators.extend(base, type_checker=checker)
    return cls(schema(name))


_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "object": "an object",
    "array": "a list",
    "boolean": "a boolean",
    "null": "null",
}


def _schema_message(err: Any) -> str:
    path = list(err.absolute_path)
    where = jpath(path)
    v, sch, kind = err.instance, err.schema, err.validator
    if kind == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        return f"{jpath(path + [missing])} is required"
    if kind == "additionalProperties":
        extra = sorted(set(v) - set(sch.get("properties", {})))
        return f"{where}: unknown field{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}"
    if kind == "type":
        t = err.validator_value
        words = " or ".join(_TYPE_WORDS.get(x, x) for x in (t if isinstance(t, list) else [t]))
        return f"{where} must be {words}, got {_describe(v)}"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        noun = "an integer" if sch.get("type") == "integer" else "a number"
        return f"{where} must be {noun} {op} {err.validator_value:g}, got {_describe(v)}"
    if kind == "enum":
        opts = ", ".join(repr(x) for x in err.validator_value)
        return f"{where} must be one of {opts}, got {_describe(v)}"
    if kind == "const":
        return f"{where} must be {err.validator_value!r}, got {_describe(v)}"
    if kind == "minLength":
        return f"{where} must be a non-empty string"
    if kind in ("minItems", "maxItems"):
        word = "at least" if kind == "minItems" else "at most"
        return f"{where} must have {word} {err.validator_value} item(s), got {len(v)}"
    if kind == "minProperties":
        return f"{where} must not be empty"
    if kind == "oneOf":
        return (
            f"{where} must be a distribution {{\"values\": [...], \"probs\": [...]}} "
            f"or a list of per-scenario values, got {_describe(v)}"
        )
    return f"{where}: {err.message}"  # pragma: no cover - every keyword used is mapped above


def _schema_problems(name: str, data: Any, skip: set[str]) -> list[str]:
    out = []
    for err in _validator(name).iter_errors(data):
        if jpath(list(err.absolute_path)) in skip:
            continue
        out.append((list(map(str, err.absolute_path)), _schema_message(err)))
    out.sort(key=lambda x: x[0])
    return list(dict.fromkeys(m for _, m in out))


# ------------------------------------------------------------ semantic checks
def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_distribution(d: Any, where: str, problems: list[str]) -> None:
    if not isinstance(d, dict):
        return
    vals, probs = d.get("values"), d.get("probs")
    if not (isinstance(vals, list) and isinstance(probs, list)):
        return
    if len(vals) != len(probs):
        problems.append(f"{where}.values and {where}.probs must have the same length, got {len(vals)} and {len(probs)}")
    ps = [p for p in probs if _num(p)]
    if len(ps) == len(probs) and ps and abs(sum(ps) - 1.0) > PROB_TOLERANCE:
        problems.append(f"{where}.probs must sum to 1, got {sum(ps):.9g}")


def _semantic_problems(data: Any) -> list[str]:
    problems: list[str] = []
    if not isinstance(data, dict):
        return problems
    topo = data.get("topology") if isinstance(data.get("topology"), dict) else {}
    nodes = topo.get("nodes") if isinstance(topo.get("nodes"), list) else []
    if "edges" in topo and "links" in topo:
        problems.append("topology: give 'edges' or the older 'links', not both")
    ekey = "edges" if "edges" in topo else "links"
    edges = topo.get(ekey) if isinstance(topo.get(ekey), list) else []
    scen = data.get("scenarios") if isinstance(data.get("scenarios"), dict) else None
    kinds: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("id"), str):
            continue
        nid = n["id"]
        if nid in first_seen:
            problems.append(f"topology.nodes[{i}].id duplicates node id {nid!r} of topology.nodes[{first_seen[nid]}]")
            continue
        first_seen[nid] = i
        kinds[nid] = n.get("kind") if isinstance(n.get("kind"), str) else "?"
        if n.get("kind") == "server":
            g, u = n.get("gpus"), n.get("used_gpus", 0)
            if isinstance(g, int) and isinstance(u, int) and not isinstance(u, bool) and u > g:
                problems.append(f"topology.nodes[{i}].used_gpus must be <= gpus ({g}), got {u}")
            if "slowdown" in n:
                if scen is not None:
                    problems.append(
                        f"topology.nodes[{i}].slowdown cannot be given with an instance-level "
                        "scenario table, which replaces the per-server distributions"
                    )
                _check_distribution(n["slowdown"], f"topology.nodes[{i}].slowdown", problems)
    servers = {k for k, v in kinds.items() if v == "server"}
    if not servers and nodes:
        problems.append("topology.nodes must contain at least one server")
    seen_edges: dict[frozenset[str], int] = {}
    for i, e in enumerate(edges):
        if not isinstance(e, dict):
            continue
        ends = []
        for end in ("source", "target"):
            x = e.get(end)
            if isinstance(x, str):
                if x not in kinds:
                    problems.append(f"topology.{ekey}[{i}].{end} names unknown node {x!r}")
                ends.append(x)
        if len(ends) == 2:
            if ends[0] == ends[1]:
                problems.append(f"topology.{ekey}[{i}] is a self-loop on {ends[0]!r}")
            key = frozenset(ends)
            if key in seen_edges:
                problems.append(f"topology.{ekey}[{i}] duplicates topology.{ekey}[{seen_edges[key]}] ({ends[0]!r}-{ends[1]!r})")
            else:
                seen_edges[key] = i
    n_scen = None
    if scen is not None:
        probs = scen.get("probs")
        if isinstance(probs, list) and probs and all(_num(p) for p in probs):
            n_scen = len(probs)
            if abs(sum(probs) - 1.0) > PROB_TOLERANCE:
                problems.append(f"scenarios.probs must sum to 1, got {sum(probs):.9g}")
        table = scen.get("slowdowns")
        if isinstance(table, dict):
            for sid, row in table.items():
                if sid not in servers:
                    what = "a switch" if sid in kinds else "an unknown server"
                    problems.append(f"scenarios.slowdowns.{sid} names {what}")
                if isinstance(row, list) and n_scen is not None and len(row) != n_scen:
                    problems.append(f"scenarios.slowdowns.{sid} must have {n_scen} values (one per scenario), got {len(row)}")
    jobs = data.get("jobs") if isinstance(data.get("jobs"), list) else []
    seen_jobs: dict[str, int] = {}
    objective = data.get("objective", "weighted_expected_iteration_time")
    for i, j in enumerate(jobs):
        if not isinstance(j, dict):
            continue
        jid = j.get("id")
        if isinstance(jid, str):
            if jid in seen_jobs:
                problems.append(f"jobs[{i}].id duplicates job id {jid!r} of jobs[{seen_jobs[jid]}]")
            else:
                seen_jobs[jid] = i
        allowed = j.get("allowed_servers")
        if isinstance(allowed, list):
            for k, sid in enumerate(allowed):
                if isinstance(sid, str) and sid not in servers:
                    problems.append(f"jobs[{i}].allowed_servers[{k}] names unknown server {sid!r}")
        over = j.get("slowdown")
        if isinstance(over, dict):
            for sid, d in over.items():
                where = f"jobs[{i}].slowdown.{sid}"
                if sid not in servers:
                    problems.append(f"{where} names unknown server {sid!r}")
                if isinstance(d, list):
                    if scen is None:
                        problems.append(f"{where}: a list of per-scenario values needs an instance-level scenario table; give a distribution {{values, probs}}")
                    elif n_scen is not None and len(d) != n_scen:
                        problems.append(f"{where} must have {n_scen} values (one per scenario), got {len(d)}")
                elif isinstance(d, dict):
                    if scen is not None:
                        problems.append(f"{where}: with a scenario table, a job's override is a list of per-scenario values")
                    _check_distribution(d, where, problems)
        if "iterations" not in j:
            if objective == "weighted_expected_jct":
                problems.append(f"jobs[{i}].iterations is required by the objective 'weighted_expected_jct'")
            elif "deadline_s" in j:
                problems.append(f"jobs[{i}].iterations is required with deadline_s")
    return problems


# ------------------------------------------------------------------- building
def _slowdown(d: Mapping[str, Any]) -> Slowdown:
    return Slowdown(tuple(float(v) for v in d["values"]), tuple(float(p) for p in d["probs"]))


def _opt_float(x: Any) -> float | None:
    return None if x is None else float(x)


def _build(data: Mapping[str, Any]) -> Instance:
    topo = data["topology"]
    edges = topo.get("edges", topo.get("links", []))
    servers, switches = [], []
    for n in topo["nodes"]:
        if n["kind"] == "server":
            servers.append(
                Server(
                    id=n["id"],
                    gpus=n["gpus"],
                    gpu_type=n["gpu_type"],
                    intra_bandwidth_gbps=float(n["intra_bandwidth_gbps"]),
                    used_gpus=n.get("used_gpus", 0),
                    cpus=_opt_float(n.get("cpus")),
                    memory_gb=_opt_float(n.get("memory_gb")),
                    slowdown=_slowdown(n["slowdown"]) if "slowdown" in n else Slowdown(),
                )
            )
        else:
            switches.append(Switch(n["id"]))
    links = tuple(Link(e["source"], e["target"], float(e["bandwidth_gbps"])) for e in edges)
    scen = None
    if "scenarios" in data:
        s = data["scenarios"]
        scen = Scenarios(
            tuple(float(p) for p in s["probs"]),
            {k: tuple(float(v) for v in row) for k, row in s["slowdowns"].items()},
        )
    jobs = []
    for j in data["jobs"]:
        over: dict[str, Any] = {}
        for sid, d in j.get("slowdown", {}).items():
            over[sid] = tuple(float(v) for v in d) if isinstance(d, list) else _slowdown(d)
        jobs.append(
            Job(
                id=j["id"],
                workers=j["workers"],
                compute_ms=float(j["compute_ms"]),
                gradient_mb=float(j["gradient_mb"]),
                iterations=j.get("iterations"),
                weight=float(j.get("weight", 1.0)),
                gpu_speed={k: float(v) for k, v in j["gpu_speed"].items()} if "gpu_speed" in j else None,
                cpus_per_worker=_opt_float(j.get("cpus_per_worker")),
                memory_gb_per_worker=_opt_float(j.get("memory_gb_per_worker")),
                max_servers=j.get("max_servers"),
                allowed_servers=tuple(j["allowed_servers"]) if "allowed_servers" in j else None,
                deadline_s=_opt_float(j.get("deadline_s")),
                slowdown=over,
            )
        )
    return Instance(
        name=data["name"],
        servers=tuple(servers),
        jobs=tuple(jobs),
        switches=tuple(switches),
        links=links,
        scenarios=scen,
        objective=data.get("objective", "weighted_expected_iteration_time"),
        admission=data.get("admission", "all"),
        source=data.get("source", ""),
        metadata=data.get("metadata", {}),
    )


def instance_from_dict(data: Any, *, source: str | None = None, _pre: Sequence[str] = ()) -> Instance:
    """Check a parsed ``placement-instance/1`` document and build the :class:`Instance`.

    Raises :class:`InstanceError` listing every problem found.
    """
    problems = list(_pre)
    skip = {p.split(" must be a finite number")[0] for p in _pre}
    if not isinstance(data, dict):
        if data is not None:
            problems.append(f"(document) must be a JSON object, got {_describe(data)}")
        raise InstanceError(problems or ["empty document"], source=source)
    if data.get("format") != INSTANCE_FORMAT:
        problems.append(f"format must be {INSTANCE_FORMAT!r}, got {_describe(data.get('format'))}")
        if isinstance(data.get("format"), str) and data["format"].startswith("placement-solution"):
            problems.append("this is a solution document; pass an instance")
        raise InstanceError(problems, source=source)
    problems += _schema_problems("instance", data, skip)
    problems += _semantic_problems(data)
    if problems:
        raise InstanceError(problems, source=source)
    return _build(data)


def _read(path: str | os.PathLike[str], error: type[InstanceError] | type[SolutionFormatError], what: str) -> tuple[Any, list[str], str]:
    """Read and parse a JSON file: ``(data, problems so far, source)``; raises ``error``
    when there is nothing to check further."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise error([f"cannot read {p}: {e}"], source=str(p)) from None
    data, problems = parse_json(text, what=what)
    if data is None:
        raise error(problems, source=str(p))
    return data, problems, str(p)


def load_instance(path: str | os.PathLike[str]) -> Instance:
    """Read an instance file (raises :class:`InstanceError` on any problem)."""
    data, problems, src = _read(path, InstanceError, "instance")
    return instance_from_dict(data, source=src, _pre=problems)


def _slowdown_dict(s: Slowdown) -> dict[str, Any]:
    return {"values": list(s.values), "probs": list(s.probs)}


def instance_to_dict(inst: Instance) -> dict[str, Any]:
    """The ``placement-instance/1`` document of ``inst`` (lossless)."""
    nodes: list[dict[str, Any]] = []
    for s in inst.servers:
        n: dict[str, Any] = {
            "id": s.id,
            "kind": "server",
            "gpus": s.gpus,
            "gpu_type": s.gpu_type,
            "intra_bandwidth_gbps": s.intra_bandwidth_gbps,
        }
        if s.used_gpus:
            n["used_gpus"] = s.used_gpus
        if s.cpus is not None:
            n["cpus"] = s.cpus
        if s.memory_gb is not None:
            n["memory_gb"] = s.memory_gb
        if inst.scenarios is None and not (s.slowdown.values == (1.0,) and s.slowdown.probs == (1.0,)):
            n["slowdown"] = _slowdown_dict(s.slowdown)
        nodes.append(n)
    nodes += [{"id": w.id, "kind": "switch"} for w in inst.switches]
    jobs = []
    for j in inst.jobs:
        d: dict[str, Any] = {"id": j.id, "workers": j.workers, "compute_ms": j.compute_ms, "gradient_mb": j.gradient_mb}
        if j.iterations is not None:
            d["iterations"] = j.iterations
        if j.weight != 1.0:
            d["weight"] = j.weight
        for key in ("cpus_per_worker", "memory_gb_per_worker", "max_servers", "deadline_s"):
            if getattr(j, key) is not None:
                d[key] = getattr(j, key)
        if j.gpu_speed is not None:
            d["gpu_speed"] = dict(j.gpu_speed)
        if j.allowed_servers is not None:
            d["allowed_servers"] = list(j.allowed_servers)
        if j.slowdown:
            d["slowdown"] = {
                k: (_slowdown_dict(v) if isinstance(v, Slowdown) else list(v)) for k, v in j.slowdown.items()
            }
        jobs.append(d)
    out: dict[str, Any] = {
        "format": INSTANCE_FORMAT,
        "name": inst.name,
        "source": inst.source,
        "objective": inst.objective,
        "admission": inst.admission,
        "topology": {
            "directed": False,
            "multigraph": False,
            "graph": {},
            "nodes": nodes,
            "edges": [{"source": e.source, "target": e.target, "bandwidth_gbps": e.bandwidth_gbps} for e in inst.links],
        },
        "jobs": jobs,
    }
    if inst.scenarios is not None:
        out["scenarios"] = {
            "probs": list(inst.scenarios.probs),
            "slowdowns": {k: list(v) for k, v in inst.scenarios.slowdowns.items()},
        }
    if inst.metadata:
        out["metadata"] = json.loads(json.dumps(dict(inst.metadata)))
    return out


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON to ``path`` via a temporary file and a rename: never a half-written file."""
    p = Path(path)
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def dump_instance(inst: Instance, path: str | os.PathLike[str]) -> None:
    write_json_atomic(path, instance_to_dict(inst))


# ------------------------------------------------------------------ solutions
def solution_to_dict(sol: Solution) -> dict[str, Any]:
    return {
        "format": SOLUTION_FORMAT,
        "instance": sol.instance,
        "method": sol.method,
        "status": sol.status.value,
        "objective": sol.objective,
        "bound": sol.bound,
        "assignment": {j: dict(a) for j, a in sol.assignment.items()},
        "unplaced": list(sol.unplaced),
        "jobs": {
            j: {
                "expected_iteration_ms": r.expected_iteration_ms,
                "ideal_iteration_ms": r.ideal_iteration_ms,
                "straggler_probability": r.straggler_probability,
                "bandwidth_gbps": r.bandwidth_gbps,
                "servers": r.servers,
            }
            for j, r in sol.jobs.items()
        },
        "stats": dict(sol.stats),
    }


def solution_from_dict(data: Any, instance: Instance | None = None, *, source: str | None = None,
                       _pre: Sequence[str] = ()) -> Solution:
    """Check and build a :class:`Solution`; with ``instance``, its ids are checked too
    (capacity and the other constraints are the validator's business)."""
    problems = list(_pre)
    if not isinstance(data, dict) or data.get("format") != SOLUTION_FORMAT:
        got = data.get("format") if isinstance(data, dict) else data
        problems.append(f"format must be {SOLUTION_FORMAT!r}, got {_describe(got)}")
        raise SolutionFormatError(problems, source=source)
    problems += _schema_problems("solution", data, set())
    if not problems and instance is not None:
        for jid, a in data["assignment"].items():
            if jid not in instance.job_by_id:
                problems.append(f"assignment.{jid} names unknown job {jid!r}")
            for sid in a:
                if sid not in instance.server_by_id:
                    problems.append(f"assignment.{jid}.{sid} names unknown server {sid!r}")
        for k, jid in enumerate(data["unplaced"]):
            if jid not in instance.job_by_id:
                problems.append(f"unplaced[{k}] names unknown job {jid!r}")
    if problems:
        raise SolutionFormatError(problems, source=source)
    return Solution(
        instance=data["instance"],
        method=data["method"],
        status=Status(data["status"]),
        objective=data["objective"],
        bound=data["bound"],
        assignment={j: dict(a) for j, a in data["assignment"].items()},
        unplaced=tuple(data["unplaced"]),
        jobs={j: JobReport(**r) for j, r in data["jobs"].items()},
        stats=data["stats"],
    )


def load_solution(path: str | os.PathLike[str], instance: Instance | None = None) -> Solution:
    """Read a solution file; with ``instance``, its ids are checked against it."""
    data, problems, src = _read(path, SolutionFormatError, "solution")
    return solution_from_dict(data, instance, source=src, _pre=problems)


def dump_solution(sol: Solution, path: str | os.PathLike[str]) -> None:
    write_json_atomic(path, solution_to_dict(sol))
