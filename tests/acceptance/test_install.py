"""The package is whole wherever Python starts, and sweeps start their workers with the
parent's interpreter and package (issue "The package is the package wherever Python starts").

A *regular install* here is the layout setuptools builds from pyproject.toml (each package's
folder, as ``package-dir`` maps it, copied under ``placement/``), put on ``PYTHONPATH`` for a
process started in the repository root: the situation of a user who ran ``pip install .`` and
stayed in the clone.  ``.ci/run`` repeats these checks with the real wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import site
import subprocess
import sys
import textwrap
import time
import venv
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import ROOT as REPO_ROOT

import placement
from placement.cli.main import cli
from placement.compare import compare, read_rows
from placement.compare.lock import INFO_NAME, sweep_lock
from placement.compare.spawn import _BOOT, WRONG_PACKAGE_EXIT, check_workers, package_folder
from placement.errors import SweepBusyError, WorkerStartError

tomllib = pytest.importorskip("tomllib")

ROOT = REPO_ROOT


def regular_install(dest: Path) -> Path:
    """Copy the package as setuptools installs it (packages, their modules and package data)
    into ``dest``; returns ``dest`` (the folder to put on the path)."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping: dict[str, str] = conf["package-dir"]
    data: dict[str, list[str]] = conf.get("package-data", {})
    for pkg in conf["packages"]:
        # the folder of a package: its own mapping, or its nearest mapped parent's plus the rest
        parts = pkg.split(".")
        for k in range(len(parts), 0, -1):
            head = ".".join(parts[:k])
            if head in mapping:
                src = ROOT / mapping[head] / Path(*parts[k:])
                break
        target = dest / Path(*parts)
        target.mkdir(parents=True, exist_ok=True)
        for f in src.glob("*.py"):
            shutil.copy2(f, target / f.name)
        for pattern in data.get(pkg, []):
            for f in src.glob(pattern):
                (target / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target / f.relative_to(src))
    return dest


@pytest.fixture(scope="module")
def env_python(tmp_path_factory) -> Path:
    """The interpreter of a fresh virtual environment holding a regular install of the
    package, with this test run's dependencies visible through a ``.pth`` file (as plain
    folders: an editable install's finder among them is not activated)."""
    home = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(home)
    py = home / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    regular_install(Path(purelib))
    outer = [p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p)]
    (Path(purelib) / "outer-dependencies.pth").write_text("\n".join(outer) + "\n")
    return py


def python_in_root(py: Path, code: str, *, drop_cwd: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -c code`` with that interpreter, started in the repository root
    (``drop_cwd``: as the installed ``placement`` command runs, whose path starts with its own
    folder, not the working one)."""
    if drop_cwd:
        code = "import sys; sys.path.remove('')\n" + code
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(py), "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_checkout_is_whole_when_python_starts_in_the_repository_root(env_python):
    # before the fix: ModuleNotFoundError: No module named 'placement.instances'
    proc = python_in_root(
        env_python,
        "import placement, placement.cli.main, placement.formulations.cpsat\n"
        "i = placement.load_bundled('pod256')\n"
        "print(placement.__file__, placement.instances.__file__, len(i.servers))",
    )
    assert proc.returncode == 0, proc.stderr
    pkg, instances, n = proc.stdout.split()
    assert Path(pkg) == ROOT / "placement" / "__init__.py"
    assert Path(instances) == ROOT / "instances" / "__init__.py" and int(n) > 0


def test_the_regular_install_is_whole_from_any_folder(env_python, tmp_path):
    code = (
        "import sys, placement; placement.load_bundled('pod256'); print(placement.__file__); "
        "print(any(type(f).__name__ == '_SiblingFinder' for f in sys.meta_path))"
    )
    proc = subprocess.run([str(env_python), "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    where, looks_beside = proc.stdout.split()
    assert Path(where).parent.parent.name == "site-packages" and env_python.parent.parent in Path(where).parents
    assert looks_beside == "False"  # an installed copy never looks beside itself


def test_a_sweep_from_the_repository_root_runs_its_workers_on_the_installed_copy(env_python, tmp_path):
    # before the fix: every run "failed" (compare) or "crashed" (simulate), the workers
    # importing the checkout from the working folder
    out = tmp_path / "sweep"
    proc = python_in_root(
        env_python,
        textwrap.dedent(f"""
            import json, placement
            from placement.compare import compare
            from placement.compare.spawn import package_folder
            rows = compare(["tiny"], ["greedy", "consolidate"], time_limits=[1.0], out_dir={str(out)!r},
                           progress=False, say=lambda m: None)
            print(json.dumps({{"package": package_folder(), "rows": rows}}))
        """),
        drop_cwd=True,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (
        Path(doc["package"]).parent.name == "site-packages" and env_python.parent.parent in Path(doc["package"]).parents
    )
    assert sorted(r["status"] for r in doc["rows"]) == ["feasible", "feasible"], doc["rows"]


def test_the_sibling_folders_are_the_ones_pyproject_maps():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    mapped = {k.split(".", 1)[1] for k, v in conf.items() if k != "placement"}
    assert mapped == set(placement.SIBLING_SUBPACKAGES)
    assert all(conf[f"placement.{n}"] == n for n in mapped)


# ------------------------------------------------------------------ workers
def test_a_worker_on_another_copy_of_the_package_refuses_to_run(tmp_path):
    cmd = [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(tmp_path), "placement.compare.worker", "check"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == WRONG_PACKAGE_EXIT
    assert f"not the parent's copy at {tmp_path}" in proc.stderr and package_folder() in proc.stderr


def test_check_workers_names_what_the_worker_could_not_import():
    check_workers(["placement.compare.worker", "placement.simulation.worker"])
    with pytest.raises(WorkerStartError, match="No module named 'placement.nowhere'.*no run was started"):
        check_workers(["placement.nowhere"])


@pytest.fixture
def broken_interpreter(tmp_path, monkeypatch):
    """``sys.executable`` replaced by a program that fails as a worker that cannot import the
    package does."""
    exe = tmp_path / "python-without-placement"
    exe.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'placement.instances'\" >&2\nexit 1\n")
    exe.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(exe))
    return exe


def test_a_sweep_whose_workers_cannot_start_fails_before_any_run(broken_interpreter, tmp_path):
    out = tmp_path / "c"
    with pytest.raises(WorkerStartError, match="No module named 'placement.instances'"):
        compare(["tiny"], ["greedy", "consolidate"], time_limits=[1.0], out_dir=out, progress=False, say=print)
    assert read_rows(out / "runs.jsonl") == []
    r = CliRunner().invoke(cli, ["compare", "tiny", "-m", "greedy,consolidate", "--time-limits", "1", "-o", str(out)])
    assert r.exit_code == 1, r.output
    assert "cannot start" in r.stderr and "No module named 'placement.instances'" in r.stderr
    assert "Traceback" not in r.output and "crashed" not in r.output and not (out / "runs.csv").exists()


def test_a_simulation_sweep_whose_workers_cannot_start_fails_before_any_run(broken_interpreter, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("submit_s,workers,iterations,model\n0,2,100,resnet50\n5,1,100,resnet50\n")
    out = tmp_path / "s"
    r = CliRunner().invoke(
        cli,
        ["simulate", "tiny", "--trace", str(trace), "-m", "greedy,consolidate", "--no-reference", "-o", str(out)],
    )
    assert r.exit_code == 1 and "No module named 'placement.instances'" in r.stderr, r.output
    assert read_rows(out / "runs.jsonl") == [] and "crashed" not in r.output


# ------------------------------------------------------------------ exit codes
CRASH = "import os\n\ndef crash(instance, opts):\n    os._exit(7)\n"


@pytest.fixture
def crashing_method(tmp_path, monkeypatch):
    (tmp_path / "crashing.py").write_text(CRASH)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "crashing:crash"


def test_a_sweep_in_which_every_run_failed_exits_1_and_says_so_last(crashing_method, tmp_path):
    r = CliRunner().invoke(
        cli,
        ["compare", "tiny", "-m", crashing_method, "--seeds", "0,1", "--time-limits", "1", "-o", str(tmp_path / "a")],
    )
    assert r.exit_code == 1, r.output
    assert r.stdout.strip().splitlines()[-1] == (
        f"placement compare: all 2 runs failed or were refused; see {tmp_path / 'a'}/report.md for why"
    )


def test_a_partly_failed_sweep_exits_0_and_counts_the_failures(crashing_method, tmp_path):
    r = CliRunner().invoke(
        cli, ["compare", "tiny", "-m", f"greedy,{crashing_method}", "--time-limits", "1", "-o", str(tmp_path / "p")]
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().splitlines()[-1] == "placement compare: 1 of 2 runs done, 1 failed or refused"


# ------------------------------------------------------------------ one sweep per folder
HOLDER = textwrap.dedent("""
    import sys, time
    from placement.compare.lock import sweep_lock
    with sweep_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def hold(folder: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding ``folder``'s sweep lock for ``seconds`` (started and waited for here)."""
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_a_second_sweep_into_a_busy_folder_refuses_at_once_and_names_the_first(tmp_path):
    out = tmp_path / "busy"
    holder = hold(out, 120)
    try:
        t0 = time.monotonic()
        with pytest.raises(SweepBusyError, match=f"another sweep is running into this folder \\(pid {holder.pid} on"):
            compare(["tiny"], ["greedy"], time_limits=[1.0], out_dir=out, progress=False, say=lambda m: None)
        assert time.monotonic() - t0 < 30 and read_rows(out / "runs.jsonl") == []
        r = CliRunner().invoke(cli, ["compare", "tiny", "-m", "greedy", "--time-limits", "1", "-o", str(out)])
        assert r.exit_code == 2 and f"pid {holder.pid}" in r.stderr and "--wait" in r.stderr, r.output
    finally:
        holder.kill()
        holder.wait()


def test_a_stale_lock_of_a_killed_sweep_is_taken_over(tmp_path):
    out = tmp_path / "stale"
    holder = hold(out, 120)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert json.loads((out / INFO_NAME).read_text())["pid"] == holder.pid  # it left its description
    said: list[str] = []
    rows = compare(["tiny"], ["greedy"], time_limits=[1.0], out_dir=out, progress=False, say=said.append)
    assert [r["status"] for r in rows] == ["feasible"]
    assert any("took over" in m and f"pid {holder.pid}" in m for m in said), said
    assert not (out / INFO_NAME).exists()


def test_wait_starts_when_the_running_sweep_ends(tmp_path):
    out = tmp_path / "wait"
    holder = hold(out, 3)
    try:
        said: list[str] = []
        rows = compare(["tiny"], ["greedy"], time_limits=[1.0], out_dir=out, progress=False, wait=True, say=said.append)
        assert holder.poll() is not None  # it ran only after the holder had finished
        assert [r["status"] for r in rows] == ["feasible"] and any("waiting" in m for m in said)
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_is_reentrant_in_one_process(tmp_path):
    with sweep_lock(tmp_path / "r", say=lambda m: None):
        rows = compare(["tiny"], ["greedy"], time_limits=[1.0], out_dir=tmp_path / "r", progress=False, say=print)
    assert [r["status"] for r in rows] == ["feasible"]
