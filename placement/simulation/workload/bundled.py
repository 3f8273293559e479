"""The traces bundled with the package (ElasticFlow cluster03 and cluster04, MIT licence)."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def _bundled_elasticflow() -> Path:
    return Path(str(resources.files("placement.instances").joinpath("traces", "elasticflow")))


def elasticflow_trace_path(name: str = "cluster03") -> Path:
    """The bundled copy of ElasticFlow trace ``name`` (``cluster03``, ``cluster04``; MIT
    licence, unchanged)."""
    folder = _bundled_elasticflow()
    names = sorted(p.stem for p in folder.glob("*.csv"))
    if name not in names:
        raise ValueError(
            f"The 'name' parameter of elasticflow_trace_path must be one of {', '.join(map(repr, names))}. "
            f"Got {name!r} instead."
        )
    return folder / f"{name}.csv"


def bundled_traces() -> list[str]:
    """Names of the bundled traces (``elasticflow-cluster03``, ``elasticflow-cluster04``)."""
    return [f"elasticflow-{p.stem}" for p in sorted(_bundled_elasticflow().glob("*.csv"))]


def resolve_trace(name_or_path: str | os.PathLike[str]) -> Path:
    """A trace file: ``name_or_path`` itself when it exists, else the bundled trace of that
    name (:func:`bundled_traces`); a path that is neither is returned as is (reading it
    reports the missing file)."""
    p = Path(name_or_path)
    text = str(name_or_path)
    if not p.exists() and text.startswith("elasticflow-") and text in bundled_traces():
        return elasticflow_trace_path(text.removeprefix("elasticflow-"))
    return p
