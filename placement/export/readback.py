"""Read a placement back from exported manifests and scripts (``placement import-placement``).

What each target pins is read from where the target keeps it: a Volcano task's node
affinity times its ``replicas``; a PodGroup pod's node affinity; a Kueue Job's
``placement.io/assignment`` annotation (advice); a Slurm job's ``.hosts`` file (one host per
rank).  The job id is the ``placement.io/job-id`` annotation, or the Slurm script's
``placement-job-id`` header (else its ``--job-name``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from placement.errors import InvalidInputError

__all__ = ["read_placement", "read_placement_and_shards"]

_JOB_ID = "placement.io/job-id"
_ASSIGNMENT = "placement.io/assignment"
_GPU = "nvidia.com/gpu"
_SHARDS = "placement.io/shards"
_ROLE = "placement.io/role"


def _pinned_node(spec: Any) -> str | None:
    """The node a pod spec's required node affinity names (by ``metadata.name`` field or
    the hostname label), or its ``nodeName``; ``None`` if it names none."""
    if not isinstance(spec, Mapping):
        return None
    if isinstance(spec.get("nodeName"), str):
        return str(spec["nodeName"])
    terms: Any = spec
    for key in ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"):
        terms = terms.get(key) if isinstance(terms, Mapping) else None
    for term in terms if isinstance(terms, list) else []:
        for part in ("matchFields", "matchExpressions"):
            reqs = term.get(part) if isinstance(term, Mapping) else None
            for req in reqs if isinstance(reqs, list) else []:
                if not isinstance(req, Mapping):
                    continue
                vals = req.get("values")
                if (
                    req.get("operator") == "In"
                    and isinstance(vals, list)
                    and len(vals) == 1
                    and req.get("key") in ("metadata.name", "kubernetes.io/hostname")
                ):
                    return str(vals[0])
    return None


def _pod_gpus(spec: Any) -> int | None:
    """The workers a pod holds: its containers' ``nvidia.com/gpu`` limits (``None`` if none
    is a whole number >= 1)."""
    total = 0
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    for c in containers if isinstance(containers, list) else []:
        res = c.get("resources") if isinstance(c, Mapping) else None
        limits = res.get("limits") if isinstance(res, Mapping) else None
        value = limits.get(_GPU) if isinstance(limits, Mapping) else None
        if value is None:
            continue
        text = str(value)
        if not text.isdigit():
            return None
        total += int(text)
    return total or None


def _is_shard(obj: Any) -> bool:
    """Whether a pod or pod template is a parameter-server shard's (its role annotation)."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return isinstance(annotations, Mapping) and annotations.get(_ROLE) == "ps"


def _job_id(doc: Mapping[str, Any]) -> str | None:
    meta = doc.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    jid = annotations.get(_JOB_ID) if isinstance(annotations, Mapping) else None
    return None if jid is None else str(jid)


class _Found:
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


def _read_yaml(path: Path, found: _Found) -> None:
    import yaml

    problems = found.problems
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        problems.append(f"{path.name}: not YAML ({str(e).splitlines()[0]})")
        return
    for i, doc in enumerate(docs):
        where = f"{path.name} document {i + 1}"
        if not isinstance(doc, Mapping):
            problems.append(f"{where}: not a Kubernetes object")
            continue
        api, kind, jid = doc.get("apiVersion"), doc.get("kind"), _job_id(doc)
        spec = doc.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        if api == "batch.volcano.sh/v1alpha1" and kind == "Job":
            tasks = spec.get("tasks")
            for t, task in enumerate(tasks if isinstance(tasks, list) else [None]):
                template = task.get("template") if isinstance(task, Mapping) else None
                pod = template.get("spec") if isinstance(template, Mapping) else None
                node, gpus = _pinned_node(pod), _pod_gpus(pod)
                replicas = task.get("replicas") if isinstance(task, Mapping) else None
                if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
                    replicas = None
                if _is_shard(template) and jid is not None and node is not None and replicas is not None:
                    found.add(jid, node, replicas, path.name, shard=True)
                    continue
                if jid is None or node is None or gpus is None or replicas is None:
                    problems.append(
                        f"{where}: spec.tasks[{t}] needs the {_JOB_ID} annotation, a node pin, "
                        f"{_GPU} limits and replicas >= 1"
                    )
                    continue
                found.add(jid, node, replicas * gpus, path.name)
        elif api == "v1" and kind == "Pod" and jid is not None and _is_shard(doc):
            node = _pinned_node(spec)
            if node is None:
                problems.append(f"{where}: the shard's pod is not pinned to a node")
                continue
            found.add(jid, node, 1, path.name, shard=True)
        elif api == "v1" and kind == "Pod" and jid is not None:
            node, gpus = _pinned_node(spec), _pod_gpus(spec)
            if node is None or gpus is None:
                problems.append(f"{where}: the pod is not pinned to a node or holds no {_GPU}")
                continue
            found.add(jid, node, gpus, path.name)
        elif api == "batch/v1" and kind == "Job" and jid is not None:
            meta = doc.get("metadata")
            annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
            text = annotations.get(_ASSIGNMENT) if isinstance(annotations, Mapping) else None
            try:
                advice = json.loads(text) if isinstance(text, str) else None
            except json.JSONDecodeError:
                advice = None
            if not isinstance(advice, dict) or not all(
                isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in advice.values()
            ):
                problems.append(f"{where}: metadata.annotations[{_ASSIGNMENT!r}] must be a JSON object of counts")
                continue
            for node, k in advice.items():
                found.add(jid, str(node), k, path.name)
            text = annotations.get(_SHARDS) if isinstance(annotations, Mapping) else None
            try:
                shards = json.loads(text) if isinstance(text, str) else {}
            except json.JSONDecodeError:
                problems.append(f"{where}: metadata.annotations[{_SHARDS!r}] is not JSON")
                continue
            for node, k in shards.items() if isinstance(shards, dict) else ():
                if isinstance(k, int) and k > 0:
                    found.add(jid, str(node), k, path.name, shard=True)


_JOB_ID_LINE = re.compile(r"^# placement-job-id: (.+)$", re.M)
_JOB_NAME = re.compile(r'^#SBATCH\s+(?:--job-name[= ]|-J\s*)("[^"]*"|\S+)', re.M)


def _slurm_job_id(script: str) -> str | None:
    """The job id an exported script names: its ``placement-job-id`` header (JSON), else
    its ``--job-name`` (quotes dropped, as sbatch drops them)."""
    m = _JOB_ID_LINE.search(script)
    if m:
        try:
            jid = json.loads(m.group(1))
        except json.JSONDecodeError:
            jid = None
        if isinstance(jid, str):
            return jid
    m = _JOB_NAME.search(script)
    return m.group(1).strip('"') if m else None


def _read_hosts(path: Path, found: _Found) -> None:
    script = path.with_suffix(".sbatch")
    jid = _slurm_job_id(script.read_text(encoding="utf-8")) if script.exists() else None
    if jid is None:
        found.problems.append(f"{path.name}: no {script.name} with '#SBATCH --job-name' beside it")
        return
    hosts = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not hosts:
        found.problems.append(f"{path.name}: no host")
    for h in hosts:
        found.add(jid, h, 1, path.name)


def read_placement(directory: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """``{job: {server: workers}}`` from the files :func:`placement.export.export` wrote
    into ``directory`` (any one target); raises :class:`InvalidInputError` naming each file."""
    return read_placement_and_shards(directory)[0]


def read_placement_and_shards(
    directory: str | os.PathLike[str],
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """The workers and the parameter-server shards that ``directory``'s files pin."""
    root = Path(directory)
    if not root.is_dir():
        raise InvalidInputError([f"{directory}: not a directory"])
    found = _Found()
    for path in sorted(root.iterdir()):
        try:
            if path.suffix in (".yaml", ".yml"):
                _read_yaml(path, found)
            elif path.suffix == ".hosts":
                _read_hosts(path, found)
        except (OSError, UnicodeDecodeError) as e:
            found.problems.append(f"{path.name}: cannot read it ({e})")
    if not found.assignment and not found.problems:
        found.problems.append(f"{directory}: no exported job (*.yaml with {_JOB_ID}, or *.hosts)")
    if found.problems:
        raise InvalidInputError(found.problems, source=str(directory))
    return found.assignment, found.shards
