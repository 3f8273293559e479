"""Bundled instances (``instances/bundled/*.json``) and the seeded generators.

>>> from placement.instances import load_bundled, bundled_names
>>> "demo" in bundled_names()
True
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from placement.errors import InstanceError
from placement.model import Instance

__all__ = ["DEFAULT_INSTANCE", "bundled_folder", "bundled_names", "bundled_path", "load_bundled", "resolve_instance"]

DEFAULT_INSTANCE = "demo"


def bundled_folder() -> Path:
    """The folder of the bundled instances (inside the installed package)."""
    return Path(str(resources.files("placement.instances").joinpath("bundled")))


def bundled_names() -> list[str]:
    """Names of the bundled instances, sorted: ``demo``, ..., and the library's
    ``library/<size>/<regime>``."""
    root = bundled_folder()
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.json"))


def bundled_path(name: str) -> Path:
    p = bundled_folder() / f"{name}.json"
    if ".." in Path(name).parts or not p.is_file():
        raise InstanceError([f"no bundled instance {name!r}; bundled: {', '.join(bundled_names())}"])
    return p


def load_bundled(name: str = DEFAULT_INSTANCE) -> Instance:
    """Load a bundled instance by name (``demo`` is the default)."""
    from placement.formats import load_instance

    return load_instance(bundled_path(name))


def resolve_instance(name_or_path: str | os.PathLike[str]) -> Instance:
    """A file path if it exists, else a bundled instance name."""
    from placement.formats import load_instance

    p = Path(name_or_path)
    if p.exists():
        return load_instance(p)
    names = bundled_names()
    if str(name_or_path) in names:
        return load_bundled(str(name_or_path))
    inside = [n for n in names if n.startswith(str(name_or_path).rstrip("/") + "/")]
    if inside:
        shown = ", ".join(inside[:8]) + (", ..." if len(inside) > 8 else "")
        raise InstanceError(
            [
                f"{name_or_path!r} is a folder of {len(inside)} bundled instances ({shown}): name one, "
                "or give the folder to placement compare"
            ],
        )
    if str(name_or_path).endswith(".json") or os.sep in str(name_or_path):
        return load_instance(p)  # says it cannot read the file
    return load_bundled(str(name_or_path))  # says which names are bundled
