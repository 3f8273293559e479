"""``placement-instance/1`` documents: the one place where instance input is checked.

Every problem is reported at once, each with its JSON path (``jobs[3].workers must be an
integer >= 1, got 0``): first the JSON Schema (structure and types), then the rules a schema
cannot say (probabilities summing to 1, duplicate ids, edges to unknown nodes, ...).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from placement.errors import InstanceError
from placement.formats.parse import describe, flagged_paths, read_json_file, schema_problems, write_json_atomic
from placement.model.records import ANY_CLASS, CommTerm, Instance, Job, Link, Scenarios, Server, Slowdown, Switch
from placement.model.tolerances import PROB_SUM_TOL

__all__ = [
    "INSTANCE_FORMAT",
    "instance_from_dict",
    "instance_to_dict",
    "job_to_dict",
    "load_instance",
    "dump_instance",
    "checked",
]

INSTANCE_FORMAT = "placement-instance/1"


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
    if len(ps) == len(probs) and ps and abs(sum(ps) - 1.0) > PROB_SUM_TOL:
        problems.append(f"{where}.probs must sum to 1, got {sum(ps):.9g}")


def _negative_gamma_problems(data: dict[str, Any], i: int, bandwidth: float, gamma: float) -> list[str]:
    """A negative ``gamma`` at a level must leave every job's all-reduce there non-negative
    (:func:`~placement.problem.rules.min_gamma_ms`)."""
    from placement.problem.rules import gamma_too_low, min_gamma_ms

    out = []
    term = CommTerm(bandwidth, gamma_ms=gamma)
    for j in data["jobs"] if isinstance(data.get("jobs"), list) else []:
        if not isinstance(j, dict):
            continue
        w: Any = j.get("workers")
        g: Any = j.get("gradient_mb")
        arch: Any = j.get("architecture", "allreduce")
        if isinstance(w, int) and _num(g) and isinstance(arch, str) and gamma_too_low(w, float(g), arch, term):
            out.append(
                f"comm_terms[{i}].gamma_ms {gamma:g} would make job {j.get('id')!r}'s all-reduce negative at "
                f"{bandwidth:g} Gbit/s (its gradient of {g:g} MB allows at least {min_gamma_ms(float(g), bandwidth):g})"
            )
    return out[:10]


def _semantic_problems(data: Any) -> list[str]:
    problems: list[str] = []
    if not isinstance(data, dict):
        return problems
    topo: dict[str, Any] = data["topology"] if isinstance(data.get("topology"), dict) else {}
    nodes: list[Any] = topo["nodes"] if isinstance(topo.get("nodes"), list) else []
    if "edges" in topo and "links" in topo:
        problems.append("topology: give 'edges' or the older 'links', not both")
    ekey = "edges" if "edges" in topo else "links"
    edges: list[Any] = topo[ekey] if isinstance(topo.get(ekey), list) else []
    scen = data.get("scenarios") if isinstance(data.get("scenarios"), dict) else None
    kinds: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    server_shape: dict[str, tuple[int, str]] = {}
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("id"), str):
            continue
        nid = n["id"]
        if nid in first_seen:
            problems.append(f"topology.nodes[{i}].id duplicates node id {nid!r} of topology.nodes[{first_seen[nid]}]")
            continue
        first_seen[nid] = i
        kinds[nid] = n["kind"] if isinstance(n.get("kind"), str) else "?"
        if n.get("kind") == "server":
            g, u = n.get("gpus"), n.get("used_gpus", 0)
            if isinstance(g, int) and isinstance(n.get("gpu_type"), str):
                server_shape[nid] = (g, n["gpu_type"])
            if isinstance(g, int) and isinstance(u, int) and not isinstance(u, bool) and u > g:
                problems.append(f"topology.nodes[{i}].used_gpus must be <= gpus ({g}), got {u}")
            if isinstance(g, int) and isinstance(u, list):
                for k, gi in enumerate(u):
                    if isinstance(gi, int) and not isinstance(gi, bool) and gi >= g:
                        problems.append(f"topology.nodes[{i}].used_gpus[{k}] names GPU {gi}, but the server has {g}")
            fs = n.get("gpu_slowdowns")
            lists = fs.items() if isinstance(fs, dict) else [(None, fs)] if isinstance(fs, list) else []
            for cls, row in lists:
                where = f"topology.nodes[{i}].gpu_slowdowns" + ("" if cls is None else f".{cls}")
                if isinstance(row, list) and isinstance(g, int) and len(row) != g:
                    problems.append(f"{where} must have {g} factors (one per GPU), got {len(row)}")
            if "slowdown" in n:
                if scen is not None:
                    problems.append(
                        f"topology.nodes[{i}].slowdown cannot be given with an instance-level "
                        "scenario table, which replaces the per-server distributions"
                    )
                _check_distribution(n["slowdown"], f"topology.nodes[{i}].slowdown", problems)
        elif n.get("kind") == "switch" and "congestion" in n:
            _check_distribution(n["congestion"], f"topology.nodes[{i}].congestion", problems)
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
                problems.append(
                    f"topology.{ekey}[{i}] duplicates topology.{ekey}[{seen_edges[key]}] ({ends[0]!r}-{ends[1]!r})"
                )
            else:
                seen_edges[key] = i
    n_scen = None
    if scen is not None:
        probs = scen.get("probs")
        if isinstance(probs, list) and probs and all(_num(p) for p in probs):
            n_scen = len(probs)
            if abs(sum(probs) - 1.0) > PROB_SUM_TOL:
                problems.append(f"scenarios.probs must sum to 1, got {sum(probs):.9g}")
        table = scen.get("slowdowns")
        if isinstance(table, dict):
            for sid, row in table.items():
                if sid not in servers:
                    what = "a switch" if sid in kinds else "an unknown server"
                    problems.append(f"scenarios.slowdowns.{sid} names {what}")
                if isinstance(row, list) and n_scen is not None and len(row) != n_scen:
                    problems.append(
                        f"scenarios.slowdowns.{sid} must have {n_scen} values (one per scenario), got {len(row)}"
                    )
    terms: list[Any] = data["comm_terms"] if isinstance(data.get("comm_terms"), list) else []
    levels = {
        float(n["intra_bandwidth_gbps"]) for n in nodes if isinstance(n, dict) and _num(n.get("intra_bandwidth_gbps"))
    }
    levels |= {float(e["bandwidth_gbps"]) for e in edges if isinstance(e, dict) and _num(e.get("bandwidth_gbps"))}
    seen_levels: dict[float, int] = {}
    for i, t in enumerate(terms):
        raw: Any = t.get("bandwidth_gbps") if isinstance(t, dict) else None
        if not _num(raw):
            continue
        b = float(raw)
        if b in seen_levels:
            problems.append(f"comm_terms[{i}].bandwidth_gbps {b:g} repeats comm_terms[{seen_levels[b]}]")
        elif b not in levels:
            problems.append(
                f"comm_terms[{i}].bandwidth_gbps {b:g} is no bandwidth level of the topology "
                f"(a server's intra_bandwidth_gbps or a link's bandwidth_gbps)"
            )
        seen_levels.setdefault(b, i)
        gamma = t.get("gamma_ms", 0.0) if isinstance(t, dict) else 0.0
        if _num(gamma) and gamma < 0:
            problems += _negative_gamma_problems(data, i, b, float(gamma))
    jobs: list[Any] = data["jobs"] if isinstance(data.get("jobs"), list) else []
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
                        problems.append(
                            f"{where}: a list of per-scenario values needs an instance-level scenario table; give a distribution {{values, probs}}"
                        )
                    elif n_scen is not None and len(d) != n_scen:
                        problems.append(f"{where} must have {n_scen} values (one per scenario), got {len(d)}")
                elif isinstance(d, dict):
                    if scen is not None:
                        problems.append(
                            f"{where}: with a scenario table, a job's override is a list of per-scenario values"
                        )
                    _check_distribution(d, where, problems)
        arch = j.get("architecture", "allreduce")
        if arch != "ps":
            for ps_key in ("ps_shards", "ps_cpus", "ps_memory_gb"):
                if ps_key in j:
                    problems.append(f'jobs[{i}].{ps_key} is only for parameter-server jobs (architecture "ps")')
        elif "ps_shards" not in j:
            problems.append(f'jobs[{i}].ps_shards is required with architecture "ps"')
        problems += _hybrid_problems(j, f"jobs[{i}]", server_shape)
        if "iterations" not in j:
            if objective == "weighted_expected_jct":
                problems.append(f"jobs[{i}].iterations is required by the objective 'weighted_expected_jct'")
            elif "deadline_s" in j:
                problems.append(f"jobs[{i}].iterations is required with deadline_s")
    return problems


HYBRID_KEYS = ("tp", "pp", "dp", "microbatches", "activation_mb")
"""A hybrid-parallel job's own fields (architecture ``hybrid``)."""


def _degree(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def _hybrid_problems(j: Mapping[str, Any], where: str, server_shape: Mapping[str, tuple[int, str]]) -> list[str]:
    """A hybrid job's fields: only with architecture ``hybrid``; ``tp``, ``pp``, ``dp``
    required, ``workers = tp * pp * dp``, and some server the job may use with ``tp`` GPUs
    (a group sits on one server).  Types and ranges are the schema's."""
    out = []
    if j.get("architecture", "allreduce") != "hybrid":
        out += [
            f'{where}.{key} is only for hybrid-parallel jobs (architecture "hybrid")' for key in HYBRID_KEYS if key in j
        ]
        return out
    out += [f'{where}.{key} is required with architecture "hybrid"' for key in ("tp", "pp", "dp") if key not in j]
    tp, pp, dp, w = j.get("tp"), j.get("pp"), j.get("dp"), j.get("workers")
    if _degree(tp) and _degree(pp) and _degree(dp) and _degree(w) and tp * pp * dp != w:
        out.append(f"{where}.workers must equal tp * pp * dp = {tp} * {pp} * {dp} = {tp * pp * dp}, got {w}")
    if _degree(tp) and server_shape:
        allowed = j.get("allowed_servers")
        ids = [s for s in allowed if s in server_shape] if isinstance(allowed, list) else list(server_shape)
        speed = j.get("gpu_speed")
        if isinstance(speed, dict):
            ids = [s for s in ids if server_shape[s][1] in speed]
        most = max((server_shape[s][0] for s in ids), default=0)
        if ids and tp > most:
            out.append(
                f"{where}.tp is {tp}, more than the GPUs of every server the job may use (at most {most}): "
                "a tensor-parallel group sits on one server"
            )
    return out


# ------------------------------------------------------------------- building
def _slowdown(d: Mapping[str, Any]) -> Slowdown:
    return Slowdown(tuple(float(v) for v in d["values"]), tuple(float(p) for p in d["probs"]))


def _gpu_factors(d: Any) -> dict[str, tuple[float, ...]]:
    """A server's ``gpu_slowdowns`` by class (a plain list serves every class)."""
    if d is None:
        return {}
    if isinstance(d, list):
        return {ANY_CLASS: tuple(float(f) for f in d)}
    return {str(k): tuple(float(f) for f in v) for k, v in d.items()}


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
                    used_gpus=len(n["used_gpus"]) if isinstance(n.get("used_gpus"), list) else n.get("used_gpus", 0),
                    held_gpus=tuple(n["used_gpus"]) if isinstance(n.get("used_gpus"), list) else None,
                    gpu_slowdowns=_gpu_factors(n.get("gpu_slowdowns")),
                    cpus=_opt_float(n.get("cpus")),
                    memory_gb=_opt_float(n.get("memory_gb")),
                    slowdown=_slowdown(n["slowdown"]) if "slowdown" in n else Slowdown(),
                )
            )
        else:
            switches.append(Switch(n["id"], _slowdown(n["congestion"]) if "congestion" in n else Slowdown()))
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
                architecture=j.get("architecture", "allreduce"),
                ps_shards=j.get("ps_shards"),
                ps_cpus=_opt_float(j.get("ps_cpus")),
                ps_memory_gb=_opt_float(j.get("ps_memory_gb")),
                tp=j.get("tp"),
                pp=j.get("pp"),
                dp=j.get("dp"),
                microbatches=j.get("microbatches", 1),
                activation_mb=float(j.get("activation_mb", 0.0)),
                app_class=j.get("app_class"),
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
        comm_terms=tuple(
            CommTerm(float(t["bandwidth_gbps"]), float(t.get("alpha_ms", 0.0)), float(t.get("gamma_ms", 0.0)))
            for t in data.get("comm_terms", [])
        ),
        locality_penalty=float(data.get("locality_penalty", 1.0)),
    )


def instance_from_dict(data: Any, *, source: str | None = None, _pre: Sequence[str] = ()) -> Instance:
    """Check a parsed ``placement-instance/1`` document and build the :class:`Instance`.

    Raises :class:`InstanceError` listing every problem found.
    """
    problems = list(_pre)
    skip = flagged_paths(_pre)
    if not isinstance(data, dict):
        if data is not None:
            problems.append(f"(document) must be a JSON object, got {describe(data)}")
        raise InstanceError(problems or ["empty document"], source=source)
    if data.get("format") != INSTANCE_FORMAT:
        problems.append(f"format must be {INSTANCE_FORMAT!r}, got {describe(data.get('format'))}")
        if isinstance(data.get("format"), str) and data["format"].startswith("placement-solution"):
            problems.append("this is a solution document; pass an instance")
        raise InstanceError(problems, source=source)
    problems += schema_problems("instance", data, skip)
    problems += _semantic_problems(data)
    if problems:
        raise InstanceError(problems, source=source)
    return _build(data)


def load_instance(path: str | os.PathLike[str]) -> Instance:
    """Read an instance file (raises :class:`InstanceError` on any problem)."""
    data, problems, src = read_json_file(path, InstanceError, "instance")
    return instance_from_dict(data, source=src, _pre=problems)


def _slowdown_dict(s: Slowdown) -> dict[str, Any]:
    return {"values": list(s.values), "probs": list(s.probs)}


def job_to_dict(j: Job) -> dict[str, Any]:
    """A job's object in the ``placement-instance/1`` format (lossless)."""
    d: dict[str, Any] = {"id": j.id, "workers": j.workers, "compute_ms": j.compute_ms, "gradient_mb": j.gradient_mb}
    if j.iterations is not None:
        d["iterations"] = j.iterations
    if j.weight != 1.0:
        d["weight"] = j.weight
    for key in ("cpus_per_worker", "memory_gb_per_worker", "max_servers", "deadline_s"):
        if getattr(j, key) is not None:
            d[key] = getattr(j, key)
    if j.is_ps:
        d["architecture"] = "ps"
        for key in ("ps_shards", "ps_cpus", "ps_memory_gb"):
            if getattr(j, key) is not None:
                d[key] = getattr(j, key)
    if j.is_hybrid:
        d["architecture"] = "hybrid"
        d.update(tp=j.tp, pp=j.pp, dp=j.dp, microbatches=j.microbatches, activation_mb=j.activation_mb)
    if j.gpu_speed is not None:
        d["gpu_speed"] = dict(j.gpu_speed)
    if j.allowed_servers is not None:
        d["allowed_servers"] = list(j.allowed_servers)
    if j.app_class is not None:
        d["app_class"] = j.app_class
    if j.slowdown:
        d["slowdown"] = {k: (_slowdown_dict(v) if isinstance(v, Slowdown) else list(v)) for k, v in j.slowdown.items()}
    return d


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
        if s.held_gpus is not None:
            n["used_gpus"] = list(s.held_gpus)
        elif s.used_gpus:
            n["used_gpus"] = s.used_gpus
        if s.gpu_slowdowns:
            fs = dict(s.gpu_slowdowns)
            n["gpu_slowdowns"] = list(fs[ANY_CLASS]) if list(fs) == [ANY_CLASS] else {k: list(v) for k, v in fs.items()}
        if s.cpus is not None:
            n["cpus"] = s.cpus
        if s.memory_gb is not None:
            n["memory_gb"] = s.memory_gb
        if inst.scenarios is None and not (s.slowdown.values == (1.0,) and s.slowdown.probs == (1.0,)):
            n["slowdown"] = _slowdown_dict(s.slowdown)
        nodes.append(n)
    nodes += [
        {
            "id": w.id,
            "kind": "switch",
            **({} if w.congestion.is_trivial else {"congestion": _slowdown_dict(w.congestion)}),
        }
        for w in inst.switches
    ]
    jobs = [job_to_dict(j) for j in inst.jobs]
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
    if inst.comm_terms:
        out["comm_terms"] = [
            {"bandwidth_gbps": t.bandwidth_gbps, "alpha_ms": t.alpha_ms, "gamma_ms": t.gamma_ms}
            for t in inst.comm_terms
        ]
    if inst.locality_penalty != 1.0:
        out["locality_penalty"] = inst.locality_penalty
    if inst.metadata:
        out["metadata"] = json.loads(json.dumps(dict(inst.metadata)))
    return out


def dump_instance(inst: Instance, path: str | os.PathLike[str]) -> None:
    write_json_atomic(path, instance_to_dict(inst))


def checked(instance: Instance) -> Instance:
    """``instance`` after the loader's checks: a record built by hand in Python goes through
    the same rules as a document (raises :class:`~placement.errors.InstanceError`)."""
    return instance_from_dict(instance_to_dict(instance))
