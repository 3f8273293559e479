"""The house stays layered: no import cycles among the package's modules, and no module
imports a higher layer, counting imports inside functions (the README's "Architecture")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("placement.errors", "placement.model"),
    ("placement.formats", "placement.problem"),
    ("placement.evaluation",),
    ("placement.solving",),
    ("placement.formulations",),
    ("placement.methods",),
    (
        "placement.instances",
        "placement.compare",
        "placement.bench",
        "placement.estimate",
        "placement.simulation",
        "placement.export",
        "placement.testing",
    ),
    ("placement",),
    ("placement.cli",),
)
"""Bottom first.  A module may import its own layer (without cycles) and the layers below."""


def package_dirs() -> dict[str, Path]:
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"package-dir\s*=\s*\{([^}]*)\}", text)
    assert block, "pyproject.toml has no package-dir"
    return {name: ROOT / folder for name, folder in re.findall(r'"([\w.]+)"\s*=\s*"([\w./-]*)"', block.group(1))}


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg, base in sorted(package_dirs().items(), key=lambda kv: -len(kv[0])):
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if "__pycache__" in rel.parts or any(p in ("bundled", "traces", "benchmark") for p in rel.parts):
                continue
            out.setdefault(".".join([pkg, *parts]), path)
    return out


def imports_of(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """Every module of the package that ``name`` imports, anywhere in its body."""
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def layer(name: str) -> int:
    best, depth = -1, -1
    for k, group in enumerate(LAYERS):
        for prefix in group:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = k, len(prefix)
    return best


MODS = modules()
GRAPH = {m: imports_of(m, p, MODS) for m, p in MODS.items()}


def test_every_module_has_a_layer():
    assert len(MODS) > 40
    assert [m for m in MODS if layer(m) < 0] == []


@pytest.mark.parametrize("module", sorted(MODS))
def test_no_module_imports_a_higher_layer(module):
    up = sorted(t for t in GRAPH[module] if layer(t) > layer(module))
    assert up == [], f"{module} (layer {layer(module)}) imports higher layers: {up}"


def test_no_import_cycles():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for m in sorted(GRAPH):
        if m not in index:
            visit(m)
    assert cycles == []


def test_the_checker_sees_imports_inside_functions(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from placement.cli.main import cli\n    return cli\n")
    mods = {"placement.model.fake": src, "placement.cli.main": src}
    assert imports_of("placement.model.fake", src, mods) == {"placement.cli.main"}
    assert layer("placement.model.fake") < layer("placement.cli.main")


def test_every_package_is_installed():
    """A sub-package missing from pyproject's ``packages`` works from the source tree and
    breaks a plain ``pip install .``: every folder with an ``__init__.py`` must be listed."""
    text = (ROOT / "pyproject.toml").read_text()
    listed = set(re.findall(r'"(placement[\w.]*)"', re.search(r"\npackages\s*=\s*\[(.*?)\]", text, re.S).group(1)))
    found = {m for m, p in MODS.items() if p.name == "__init__.py"}
    assert found == listed
    folders = {p.parent for p in (ROOT / "placement").rglob("*.py") if "__pycache__" not in p.parts}
    assert [f for f in folders if not (f / "__init__.py").exists()] == []
