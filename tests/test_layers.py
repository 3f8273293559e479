"""The house stays layered: no import cycles among the package's modules, and no module
imports a higher layer, counting imports inside functions (the README's "Architecture")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.paths import ROOT as REPO_ROOT

ROOT = REPO_ROOT

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
        "placement.calibrate",
        "placement.estimate",
        "placement.simulation",
        "placement.export",
        "placement.integrations",
        "placement.testing",
        "placement.visual",
        "placement.serve",
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
    assert found <= listed, sorted(found - listed)
    # the rest are data folders (instances, traces, schemas): real folders with no Python in
    # them, each shipped by its own package-data glob
    roots = {"placement.formulations": "formulations", "placement.instances": "instances", "placement.cli": "cli"}
    globs = re.search(r"\[tool\.setuptools\.package-data\](.*?)\n\[", text, re.S).group(1)
    for data in sorted(listed - found):
        head = max((k for k in roots if data.startswith(k + ".")), key=len, default="placement")
        folder = ROOT / roots.get(head, "placement") / Path(*data[len(head) + 1 :].split("."))
        assert folder.is_dir() and not list(folder.glob("*.py")), data
        if any(f.is_file() for f in folder.iterdir()):  # a folder of folders needs no glob
            assert f'"{data}" = [' in globs, f"{data}: no package-data glob"
    folders = {p.parent for p in (ROOT / "placement").rglob("*.py") if "__pycache__" not in p.parts}
    assert [f for f in folders if not (f / "__init__.py").exists()] == []


# ------------------------------------------------------------------ tests mirror the package
COVERED: dict[str, tuple[str, str]] = {
    # module: (the test file that covers it, a name that file uses from it or of it)
    "placement": ("acceptance/test_newcomer.py", "import placement"),
    "placement.bench.__main__": ("bench/test_benchmarks.py", "main("),
    "placement.cli.commands.backtest": ("estimate/test_logs.py", '"backtest"'),
    "placement.bench.calibrate": ("test_calibrate.py", "bench_calibrate"),
    "placement.cli.commands.calibrate": ("test_calibrate.py", '"calibrate"'),
    "placement.cli.commands.compare": ("compare/test_harness.py", '"compare"'),
    "placement.cli.commands.estimate": ("estimate/test_logs.py", '"estimate"'),
    "placement.cli.commands.evaluate": ("cli/test_commands.py", '"evaluate"'),
    "placement.cli.commands.explain": ("evaluation/test_explain.py", '"explain"'),
    "placement.cli.commands.export": ("export/test_export.py", '"export"'),
    "placement.cli.commands.generate": ("cli/test_commands.py", '"generate"'),
    "placement.cli.commands.import_k8s": ("export/test_export.py", '"import-k8s"'),
    "placement.cli.commands.import_placement": ("export/test_export.py", '"import-placement"'),
    "placement.cli.commands.import_slurm": ("instances/test_traces.py", '"import-slurm"'),
    "placement.cli.commands.methods": ("cli/test_commands.py", '"methods"'),
    "placement.cli.commands.show": ("visual/test_show.py", '"show"'),
    "placement.cli.commands.simulate": ("cli/test_simulate.py", '"simulate"'),
    "placement.cli.commands.simulate_show": ("cli/test_simulate.py", "simulate"),
    "placement.cli.commands.solve": ("cli/test_commands.py", '"solve"'),
    "placement.cli.commands.validate": ("cli/test_commands.py", '"validate"'),
    "placement.cli.common": ("acceptance/test_hostile_inputs.py", "exit_code == 2"),
    "placement.cli.entry": ("acceptance/test_hostile_inputs.py", "interrupted"),
    "placement.cli.main": ("cli/test_commands.py", "COMMANDS"),
    "placement.cli.options": ("cli/test_commands.py", '"generate"'),
    "placement.compare.lock": ("acceptance/test_install.py", "sweep_lock"),
    "placement.compare.report": ("compare/test_harness.py", "summarise"),
    "placement.compare.rows": ("compare/test_harness.py", '"crashed"'),
    "placement.compare.spawn": ("acceptance/test_install.py", "check_workers"),
    "placement.compare.worker": ("compare/test_harness.py", "isolated_run"),
    "placement.errors": ("formats/test_instance.py", "InstanceError"),
    "placement.estimate.apply": ("estimate/test_logs.py", "apply_estimates"),
    "placement.estimate.backtest": ("estimate/test_logs.py", "backtest_pai"),
    "placement.estimate.csvrows": ("acceptance/test_hostile_inputs.py", "not UTF-8"),
    "placement.estimate.telemetry": ("estimate/test_logs.py", "read_telemetry"),
    "placement.estimate.workflow": ("acceptance/test_newcomer.py", '"--map"'),
    "placement.evaluation.bounds": ("evaluation/test_evaluate.py", "lower_bound"),
    "placement.evaluation.feasibility": ("methods/test_exact.py", "infeasible"),
    "placement.evaluation.montecarlo": ("evaluation/test_evaluate.py", "monte_carlo"),
    "placement.evaluation.ranking": ("solving/test_registry.py", "check_solution"),
    "placement.formats.cells": ("acceptance/test_hostile_inputs.py", "row 3: iteration must be an integer"),
    "placement.formats.parse": ("formats/test_instance.py", "parse_json"),
    "placement.formats.solution": ("formats/test_instance.py", "solution_from_dict"),
    "placement.formulations.cpsat": ("formulations/test_milp.py", "cpsat"),
    "placement.formulations.gpu_levels": (
        "problem/test_gpus.py",
        "test_exact_models_agree_with_brute_force_with_factors",
    ),
    "placement.formulations.milp_push_pull": ("formulations/test_milp.py", "parameter_servers=True"),
    "placement.formulations.chain": ("formulations/test_congestion.py", "milp"),
    "placement.formulations.milp_solvers": ("formulations/test_milp.py", "milp_highs"),
    "placement.formulations.packing": ("formulations/test_index.py", "disaggregate"),
    "placement.formulations.reductions": ("formulations/test_index.py", "prune_thresholds"),
    "placement.formulations.transport": ("acceptance/test_scale.py", "transport_lower_bound"),
    "placement.instances.library": ("instances/test_generate.py", "bundled_names"),
    "placement.instances.scaling": ("acceptance/test_scale.py", "placement.instances.scaling"),
    "placement.integrations.found": ("integrations/test_targets.py", "read_placement"),
    "placement.integrations.kubernetes.keys": ("integrations/test_targets.py", "read_placement"),
    "placement.integrations.kubernetes.nodes": ("integrations/kubernetes/test_read.py", "allocatable"),
    "placement.integrations.kubernetes.readback": ("integrations/test_targets.py", "read_placement"),
    "placement.integrations.kubernetes.topology": ("integrations/kubernetes/test_read.py", "hypernodes"),
    "placement.integrations.kubernetes.write": ("export/test_export.py", "volcano"),
    "placement.integrations.names": ("integrations/slurm/test_write.py", "file_stem"),
    "placement.integrations.options": ("export/test_export.py", "ExportOptions"),
    "placement.integrations.ranks": ("integrations/slurm/test_write.py", "rank_order"),
    "placement.integrations.readback": ("integrations/test_targets.py", "READERS"),
    "placement.integrations.slurm.keys": ("integrations/test_targets.py", "read_placement"),
    "placement.integrations.slurm.readback": ("integrations/test_targets.py", "read_placement"),
    "placement.integrations.tiers": ("export/test_export.py", "tiers_of"),
    "placement.methods.auto": ("solving/test_registry.py", "REGISTRY"),
    "placement.methods.baselines": ("solving/test_registry.py", "REGISTRY"),
    "placement.methods.bruteforce": ("solving/test_registry.py", "brute_force"),
    "placement.methods.comm_optimal": ("solving/test_registry.py", "REGISTRY"),
    "placement.methods.local_search": ("solving/test_registry.py", "local_search"),
    "placement.methods.pop": ("acceptance/test_scale.py", "placement.methods.pop"),
    "placement.methods.replan": ("acceptance/test_scale.py", "previous"),
    "placement.simulation.running": ("simulation/test_engine.py", "ratio_to"),
    "placement.methods.saa": ("solving/test_registry.py", "REGISTRY"),
    "placement.model": ("test_testing.py", "from placement.model import"),
    "placement.model.catalog": ("integrations/kubernetes/test_read.py", "gpu_profile"),
    "placement.model.records": ("formats/test_instance.py", "instance_from_dict"),
    "placement.model.tolerances": ("methods/test_exact.py", "tolerance"),
    "placement.problem.arrays": ("evaluation/test_evaluate.py", "placement.problem.arrays"),
    "placement.problem.reuse": ("acceptance/test_scale.py", "previous"),
    "placement.problem.rules": ("simulation/test_engine.py", "placement.problem.rules"),
    "placement.problem.shards": ("acceptance/test_parameter_server.py", "shards"),
    "placement.problem.state": ("solving/test_registry.py", "REGISTRY"),
    "placement.problem.variants": ("compare/test_harness.py", "ideal_lower_bound"),
    "placement.simulation.congestion_book": ("simulation/test_congestion_sim.py", "CongestionLearner"),
    "placement.simulation.belief": ("simulation/test_engine.py", "plan_by"),
    "placement.simulation.queues.base": ("simulation/test_queues.py", "Candidate"),
    "placement.simulation.queues.fifo": ("simulation/test_queues.py", '"fifo-strict"'),
    "placement.simulation.queues.gavel": ("simulation/test_queues.py", "water_fill"),
    "placement.simulation.queues.las": ("simulation/test_queues.py", "QUEUES"),
    "placement.simulation.queues.sjf": ("simulation/test_queues.py", "QUEUES"),
    "placement.simulation.queues.replay": ("simulation/test_queues.py", "replay_starts"),
    "placement.simulation.queues.srtf": ("simulation/test_queues.py", '"srtf"'),
    "placement.simulation.queues.tiresias": ("simulation/test_queues.py", "Tiresias"),
    "placement.simulation.observations": ("simulation/test_engine.py", "iteration_log"),
    "placement.simulation.policy": ("simulation/test_queues.py", "fifo-strict"),
    "placement.simulation.replanning": ("simulation/test_engine.py", "replan_events"),
    "placement.simulation.config": ("simulation/test_engine.py", "SimConfig"),
    "placement.simulation.metrics": ("simulation/test_engine.py", "avg_jct_s"),
    "placement.simulation.dynamics.base": ("simulation/test_dynamics.py", "DynamicsOptions"),
    "placement.simulation.dynamics.markov": ("simulation/test_dynamics.py", '"markov"'),
    "placement.simulation.dynamics.mixed": ("simulation/test_dynamics.py", '"mixed"'),
    "placement.simulation.dynamics.none": ("simulation/test_dynamics.py", '"none"'),
    "placement.simulation.dynamics.onset": ("simulation/test_dynamics.py", '"onset"'),
    "placement.simulation.dynamics.measured": ("simulation/test_measured.py", "measured_cluster"),
    "placement.simulation.dynamics.replay": ("simulation/test_dynamics.py", "read_replay"),
    "placement.simulation.dynamics.static": ("simulation/test_dynamics.py", '"static"'),
    "placement.simulation.workload.bundled": ("simulation/test_workload.py", "elasticflow-cluster"),
    "placement.simulation.workload.readers": ("simulation/test_workload.py", "read_trace"),
    "placement.simulation.workload.records": ("simulation/test_workload.py", "TraceJob"),
    "placement.simulation.workload.transforms": ("simulation/test_workload.py", "apply_options"),
    "placement.simulation.workload.reference": ("simulation/test_reference.py", "as_measured"),
    "placement.simulation.runner": ("cli/test_simulate.py", "runs.jsonl"),
    "placement.simulation.sweep_report": ("cli/test_simulate.py", "report.md"),
    "placement.simulation.worker": ("cli/test_simulate.py", "runs.jsonl"),
    "placement.solving.backend": ("methods/test_exact.py", "Termination"),
    "placement.solving.driver": ("solving/test_registry.py", "solve("),
    "placement.solving.options": ("methods/test_exact.py", "Options("),
    "placement.cli.commands.serve": ("serve/test_app.py", '"serve"'),
    "placement.bench.serve": ("serve/test_durability.py", "kill_rounds"),
    "placement.serve.base": ("serve/test_service.py", "Service("),
    "placement.serve.config": ("serve/test_service.py", "ServeConfig"),
    "placement.serve.learning": ("serve/test_service.py", "refit"),
    "placement.serve.moves": ("serve/test_service.py", "replan"),
    "placement.bench.gaps": ("bench/test_benchmarks.py", "placement.bench.gaps"),
    "placement.bench.online_report": ("bench/test_online.py", "online_report.grid_table"),
    "placement.cli.commands.slurm_sync": ("serve/test_slurm.py", "slurm-sync"),
    "placement.integrations.slurm.pending": ("serve/test_slurm.py", "read_squeue_json"),
    "placement.serve.migrations": ("serve/test_store.py", "migrate"),
    "placement.serve.migrations.env": ("serve/test_store.py", "migrate"),
    "placement.serve.migrations.versions": ("serve/test_store.py", '"0001"'),
    "placement.serve.migrations.versions.rev_0001_initial": ("serve/test_store.py", '"0001"'),
    "placement.serve.migrations.versions.rev_0002_gangs": ("serve/test_store.py", '"0002"'),
    "placement.serve.migrations.versions.rev_0003_moves": ("serve/test_store.py", "started_seq"),
    "placement.simulation.decisions": ("serve/test_parity.py", "placement.simulation.decisions"),
    "placement.simulation.gpu_book": ("simulation/test_engine.py", "variability="),
    "placement.simulation.hindsight": ("simulation/test_dynamics.py", "Lookahead"),
}
"""Modules without a test file of their own (``tests/<subpackage>/test_<module>.py``), and the
test file that covers them.  A package's ``__init__`` is covered by its folder of tests."""


def own_test_file(module: str) -> Path:
    parts = module.split(".")[1:]
    return (
        ROOT / "tests" / Path(*parts[:-1]) / f"test_{parts[-1]}.py" if parts else ROOT / "tests" / "test_placement.py"
    )


@pytest.mark.parametrize("module", sorted(MODS))
def test_every_module_has_a_test_file_or_says_which_covers_it(module):
    if own_test_file(module).exists():
        assert module not in COVERED, f"{module} has its own test file: drop it from COVERED"
        return
    parts = module.split(".")[1:]
    if MODS[module].name == "__init__.py" and parts and any((ROOT / "tests" / Path(*parts)).glob("test_*.py")):
        return
    assert module in COVERED, f"{module}: no {own_test_file(module).relative_to(ROOT)}, and not in COVERED"
    path, evidence = COVERED[module]
    text = (ROOT / "tests" / path).read_text()
    assert evidence in text, f"{module}: tests/{path} does not use {evidence!r}"
