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

__all__ = ["read_placement"]

_JOB_ID = "placement.io/job-id"
_ASSIGNMENT = "placement.io/assignment"


def _pinned_node(spec: Any) -> str | None:
    """The node a pod spec's required node affinity names (by ``metadata.name`` field or
    the hostname label), or its ``nodeName``."""
    if not isinstance(spec, Mapping):
        return None
    if isinstance(spec.get("nodeName"), str):
        return str(spec["nodeName"])
    try:
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    except (KeyError, TypeError):
        return None
    for term in terms or []:
        for part in ("matchFields", "matchExpressions"):
            for req in term.get(part) or []:
                key = req.get("key")
                vals = req.get("values") or []
                if (
                    req.get("operator") == "In"
                    and len(vals) == 1
                    and key in ("metadata.name", "kubernetes.io/hostname")
                ):
                    return str(vals[0])
    return None


def _job_id(doc: Mapping[str, Any]) -> str | None:
    meta = doc.get("metadata") or {}
    jid = (meta.get("annotations") or {}).get(_JOB_ID)
    return None if jid is None else str(jid)


def _add(out: dict[str, dict[str, int]], job: str, node: str, k: int) -> None:
    out.setdefault(job, {})
    out[job][node] = out[job].get(node, 0) + k


def _read_yaml(path: Path, out: dict[str, dict[str, int]], problems: list[str]) -> None:
    import yaml

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
        spec = doc.get("spec") or {}
        if api == "batch.volcano.sh/v1alpha1" and kind == "Job":
            for t, task in enumerate(spec.get("tasks") or []):
                node = _pinned_node((task.get("template") or {}).get("spec"))
                replicas = task.get("replicas")
                if jid is None or node is None or not isinstance(replicas, int) or replicas < 1:
                    problems.append(f"{where}: spec.tasks[{t}] has no {_JOB_ID} annotation, node pin or replicas >= 1")
                    continue
                _add(out, jid, node, replicas)
        elif api == "v1" and kind == "Pod" and jid is not None:
            node = _pinned_node(spec)
            if node is None:
                problems.append(f"{where}: pod {doc['metadata'].get('name')!r} is not pinned to a node")
                continue
            _add(out, jid, node, 1)
        elif api == "batch/v1" and kind == "Job" and jid is not None:
            text = ((doc.get("metadata") or {}).get("annotations") or {}).get(_ASSIGNMENT)
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
                _add(out, jid, str(node), k)


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


def _read_hosts(path: Path, out: dict[str, dict[str, int]], problems: list[str]) -> None:
    script = path.with_suffix(".sbatch")
    jid = _slurm_job_id(script.read_text(encoding="utf-8")) if script.exists() else None
    if jid is None:
        problems.append(f"{path.name}: no {script.name} with '#SBATCH --job-name' beside it")
        return
    hosts = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not hosts:
        problems.append(f"{path.name}: no host")
    for h in hosts:
        _add(out, jid, h, 1)


def read_placement(directory: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """``{job: {server: workers}}`` from the files :func:`placement.export.export` wrote
    into ``directory`` (any target); raises :class:`InvalidInputError` naming each file."""
    root = Path(directory)
    if not root.is_dir():
        raise InvalidInputError([f"{directory}: not a directory"])
    out: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    for path in sorted(root.iterdir()):
        if path.suffix in (".yaml", ".yml"):
            _read_yaml(path, out, problems)
        elif path.suffix == ".hosts":
            _read_hosts(path, out, problems)
    if not out and not problems:
        problems.append(f"{directory}: no exported job (*.yaml with {_JOB_ID}, or *.hosts)")
    if problems:
        raise InvalidInputError(problems, source=str(directory))
    return out
