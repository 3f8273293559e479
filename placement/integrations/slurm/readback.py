"""Read back what Slurm scripts pin: a job's ``.hosts`` file (one host per rank), its id
from the script's ``placement-job-id`` header (else its ``--job-name``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from placement.integrations.found import Found
from placement.integrations.slurm.keys import JOB_ID_LINE

__all__ = ["read_hosts"]


_JOB_ID_LINE = re.compile(r"^# " + re.escape(JOB_ID_LINE) + r" (.+)$", re.M)
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


def read_hosts(path: Path, found: Found) -> None:
    script = path.with_suffix(".sbatch")
    jid = _slurm_job_id(script.read_text(encoding="utf-8")) if script.exists() else None
    if jid is None:
        found.problems.append(f"{path.name}: no {script.name} with '#SBATCH --job-name' beside it")
        return
    hosts = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not hosts:
        found.problems.append(f"{path.name}: no host")
    for r, h in enumerate(hosts):
        found.add(jid, h, 1, path.name)
        found.rank(jid, r, h, 1)
