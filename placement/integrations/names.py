"""Names an exported job, task or host gets in the systems it is handed to.

Kubernetes object names are DNS-1123 labels (lower-case alphanumerics and ``-``, at most
63 characters, alphanumeric at both ends); a job's name also names a Service (ours, and the
one Volcano's ``svc`` plugin makes), which must start with a letter (DNS-1035).  A job id that
is such a label already keeps its name; any other is lowered, its other characters become
``-``, a leading digit gets ``j-``, and a short hash of the original id is appended so that two
ids never meet in one name.  File names use the same stems; the names of the cluster-level
files (:data:`RESERVED`) are never a job's.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["dns_label", "file_stem", "MAX_STEM", "RESERVED"]

MAX_STEM = 52
"""Longest stem: leaves room for ``-<rank>`` pod suffixes inside Kubernetes' 63 characters."""

_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")

RESERVED = frozenset({"hypernodes", "topology", "label-nodes"})
"""Stems of the cluster-level files an export writes beside the jobs' files."""


def dns_label(text: str, *, limit: int = MAX_STEM) -> str:
    """``text`` as a DNS-1123 label of at most ``limit`` characters, unique per ``text``.

    >>> dns_label("j0"), dns_label("Job_7")
    ('j0', 'job-7-ff7a42')
    """
    if len(text) <= limit and _LABEL.fullmatch(text):
        return text
    digest = hashlib.sha1(text.encode()).hexdigest()[:6]
    body = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if body[:1].isdigit():
        body = "j-" + body
    body = body[: limit - 7].strip("-")
    return f"{body}-{digest}" if body else f"x-{digest}"


def file_stem(job_id: str) -> str:
    """The file name stem of a job's exported files (``<stem>.yaml``, ``<stem>.sbatch``) and
    the name of its Kubernetes objects; never one of :data:`RESERVED`.

    >>> file_stem("j0"), file_stem("7"), file_stem("topology")
    ('j0', 'j-7-902ba3', 'topology-91576d')
    """
    stem = dns_label(job_id)
    if stem in RESERVED:
        digest = hashlib.sha1(job_id.encode()).hexdigest()[:6]
        stem = f"{stem}-{digest}"
    return stem
