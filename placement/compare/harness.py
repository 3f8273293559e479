"""The solver comparison harness: instances x methods x seeds x time limits.

Every run is its own process (``python -m placement.compare.worker``), killed hard past its
limit plus a grace period, so a hung or crashing solver costs one row, never the sweep.
Rows are appended to ``runs.jsonl`` as they finish, so an interrupted sweep resumes where
it stopped.  Locally, runs go ``parallel`` at a time with ``threads`` each, never more
than the machine's cores; with Dask, each run is a task on a Dask worker that starts the
same isolated process.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from placement.compare.lock import sweep_lock
from placement.compare.report import write_report
from placement.compare.rows import ROW_FIELDS, RunState
from placement.compare.spawn import check_workers, worker_command
from placement.errors import InvalidInputError, MethodUnavailableError
from placement.instances import bundled_names
from placement.solving.registry import check_method

__all__ = [
    "Run",
    "RunState",
    "expand_instances",
    "plan",
    "isolated",
    "isolated_run",
    "compare",
    "ROW_FIELDS",
    "read_rows",
]


@dataclass(frozen=True)
class Run:
    instance: str
    """A path to an instance file or a bundled name."""
    method: str
    seed: int
    time_limit_s: float
    threads: int = 1

    @property
    def key(self) -> str:
        return f"{self.instance}|{self.method}|{self.seed}|{self.time_limit_s:g}|{self.threads}"


def expand_instances(items: Iterable[str]) -> list[str]:
    """Files, folders (every ``*.json`` below, sorted) and bundled names (a bundled
    folder such as ``library/medium`` expands to its instances)."""
    out: list[str] = []
    names = bundled_names()
    for it in items:
        p = Path(it)
        if p.is_dir():
            out += [str(f) for f in sorted(p.rglob("*.json"))]
        elif p.is_file():
            out.append(str(p))
        elif it in names:
            out.append(it)
        else:
            inside = [n for n in names if n.startswith(it.rstrip("/") + "/")]
            if not inside:
                raise InvalidInputError([f"instances: {it!r} is neither a file, a folder nor a bundled name"])
            out += inside
    return list(dict.fromkeys(out))


def plan(
    instances: Sequence[str],
    methods: Sequence[str],
    seeds: Sequence[int],
    time_limits: Sequence[float],
    threads: int = 1,
) -> list[Run]:
    return [Run(i, m, s, t, threads) for i in instances for t in time_limits for m in methods for s in seeds]


def _grace(limit: float) -> float:
    return max(10.0, 0.5 * limit)


def isolated(
    module: str, payload: dict[str, Any], row: dict[str, Any], timeout_s: float | None, why_killed: str = ""
) -> dict[str, Any]:
    """Run ``python -m module OUT.json`` with ``payload`` as JSON on stdin in a fresh process
    (this interpreter and this copy of the package: :mod:`placement.compare.spawn`),
    killed hard past ``timeout_s`` (``None``: never); ``row`` updated with what it wrote to
    OUT.json, or with ``killed`` / ``crashed`` and why.  Always returns the row."""
    fd, out = tempfile.mkstemp(prefix="placement-run-", suffix=".json")
    os.close(fd)
    t0 = time.monotonic()
    proc: subprocess.Popen[str] | None = None
    try:
        proc = subprocess.Popen(
            worker_command(module, out),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            _, err = proc.communicate(json.dumps(payload), timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            row.update(
                status=RunState.KILLED,
                wall_s=time.monotonic() - t0,
                error=f"still running {timeout_s:g} s after start{why_killed}: killed",
            )
            return row
        text = Path(out).read_text() if os.path.getsize(out) else ""
        if proc.returncode != 0 or not text:
            tail = (err or "").strip().splitlines()[-3:]
            row.update(
                status=RunState.CRASHED,
                wall_s=time.monotonic() - t0,
                error=f"exit code {proc.returncode}: " + " | ".join(tail),
            )
            return row
        row.update(json.loads(text))
        return row
    finally:
        if proc is not None:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
        with contextlib.suppress(OSError):
            os.unlink(out)


_LIVE: set[subprocess.Popen[str]] = set()
"""The isolated runs' processes alive now (killed together when the sweep is interrupted)."""
_LIVE_LOCK = threading.Lock()


def stop_live_runs() -> int:
    """Kill every isolated run still alive (their temporary files go with their threads);
    returns how many."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        with contextlib.suppress(OSError):
            p.kill()
    return len(procs)


def isolated_run(run: Run, grace_s: float | None = None) -> dict[str, Any]:
    """Run one (instance, method, seed, limit) in a fresh process; kill it past
    ``time_limit_s + grace``.  Always returns a row, whatever happened."""
    grace = _grace(run.time_limit_s) if grace_s is None else grace_s
    row: dict[str, Any] = {
        "instance": run.instance,
        "method": run.method,
        "seed": run.seed,
        "time_limit_s": run.time_limit_s,
        "threads": run.threads,
    }
    return isolated(
        "placement.compare.worker",
        asdict(run),
        row,
        run.time_limit_s + grace,
        f" (limit {run.time_limit_s:g} s + grace {grace:g} s)",
    )


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by an interruption: that run is redone
    return rows


def _key(row: dict[str, Any]) -> str:
    return Run(
        row["instance"], row["method"], int(row["seed"]), float(row["time_limit_s"]), int(row.get("threads", 1))
    ).key


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ROW_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(
                {k: (" > ".join(r[k]) if k == "path" and isinstance(r.get(k), list) else r.get(k)) for k in ROW_FIELDS}
            )


def compare(
    instances: Sequence[str],
    methods: Sequence[str],
    *,
    seeds: Sequence[int] = (0,),
    time_limits: Sequence[float] = (10.0,),
    threads: int = 1,
    parallel: int | None = None,
    out_dir: str | os.PathLike[str] = "results/sweep",
    dask: str | None = None,
    grace_s: float | None = None,
    progress: bool | None = None,
    wait: bool = False,
    say: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
) -> list[dict[str, Any]]:
    """Run the sweep (skipping runs already in ``out_dir/runs.jsonl``), then write
    ``runs.csv``, ``report.md`` and the plots.  Returns every row of the sweep.

    One sweep at a time writes into ``out_dir``: another one running there makes this one
    raise :class:`~placement.errors.SweepBusyError`, or with ``wait`` start when it ends
    (:mod:`placement.compare.lock`).  Before any run, one worker process must import the
    package (:func:`~placement.compare.spawn.check_workers`), else
    :class:`~placement.errors.WorkerStartError`; before that, a method that is not
    registered, or a user's ``module:function`` that cannot be imported or does not take
    ``(instance, options)``, is refused (:func:`~placement.solving.registry.check_method`)."""
    for m in dict.fromkeys(methods):
        check_method(m)
    runs = plan(expand_instances(instances), methods, seeds, time_limits, threads)
    with sweep_lock(out_dir, wait=wait, say=say):
        return _compare_locked(Path(out_dir), runs, threads, parallel, dask, grace_s, progress, say)


def _compare_locked(
    out: Path,
    runs: list[Run],
    threads: int,
    parallel: int | None,
    dask: str | None,
    grace_s: float | None,
    progress: bool | None,
    say: Callable[[str], None],
) -> list[dict[str, Any]]:
    jsonl = out / "runs.jsonl"
    done = {_key(r) for r in read_rows(jsonl)}
    todo = [r for r in runs if r.key not in done]
    cores = os.cpu_count() or 1
    limit = max(1, cores // max(1, threads))
    p = limit if parallel is None else max(1, min(parallel, limit))
    where = f"Dask at {dask}" if dask else "this machine"
    say(
        f"placement compare: {len(runs)} runs ({len(runs) - len(todo)} already in {jsonl}), "
        f"{p} at a time x {threads} thread(s) = {p * threads} of {cores} cores, on {where}"
    )
    if parallel is not None and parallel > limit:
        say(
            f"placement compare: --parallel {parallel} lowered to {limit}: threads x parallel runs stay within {cores} cores"
        )
    if todo:
        check_workers(["placement.compare.worker"])
    run_into(
        jsonl,
        todo,
        isolated_run,
        parallel=p,
        dask=dask,
        show=sys.stderr.isatty() if progress is None else progress,
        grace_s=grace_s,
        describe=lambda row: f"{row['method']} on {row['instance']}: {row['status']}",
    )
    # the files describe every run in the folder (a resumed or extended sweep included);
    # the rows returned are this sweep's
    everything = list({_key(r): r for r in read_rows(jsonl)}.values())
    write_csv(everything, out / "runs.csv")
    write_report(everything, out)
    keys = {r.key for r in runs}
    return [r for r in everything if _key(r) in keys]


def _progress(total: int, show: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(
        TextColumn("[bold]compare"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        disable=not show,
        transient=False,
    )
    return prog


def run_into(jsonl: Path, todo: Sequence[Any], fn: Callable[..., dict[str, Any]], **kwargs: Any) -> None:
    """:func:`run_all` appending every row to ``jsonl`` as it arrives (a sweep interrupted
    there resumes from what it holds)."""
    if not todo:
        return
    with open(jsonl, "a") as sink:

        def record(row: dict[str, Any]) -> None:
            sink.write(json.dumps(row) + "\n")
            sink.flush()

        run_all(todo, fn, record=record, **kwargs)


def run_all(
    todo: Sequence[Any],
    fn: Callable[..., dict[str, Any]],
    *,
    parallel: int,
    dask: str | None,
    record: Callable[[dict[str, Any]], None],
    show: bool,
    describe: Callable[[dict[str, Any]], str],
    **kwargs: Any,
) -> None:
    """``fn(item, **kwargs)`` for every item of ``todo``, ``parallel`` at a time on this
    machine (threads that wait on isolated processes) or as tasks of a Dask cluster
    (``dask``: an address, or ``"local"``); each row is ``record``-ed as it arrives, with a
    progress bar when ``show``.  ``fn`` must be importable by name (Dask pickles it)."""
    with _progress(len(todo), show) as prog:
        task = prog.add_task("", total=len(todo))

        def done(row: dict[str, Any]) -> None:
            record(row)
            prog.update(task, advance=1, description=describe(row))

        if dask:
            _run_dask(todo, fn, dask, parallel, done, kwargs)
            return
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            futs = [pool.submit(fn, item, **kwargs) for item in todo]
            try:
                for f in as_completed(futs):
                    done(f.result())
            except KeyboardInterrupt:
                # no row is recorded past this point: a resumed sweep re-runs what was cut short
                for f in futs:
                    f.cancel()
                stop_live_runs()
                raise


def _run_dask(
    todo: Sequence[Any],
    fn: Callable[..., dict[str, Any]],
    address: str,
    parallel: int,
    done: Callable[[dict[str, Any]], None],
    kwargs: dict[str, Any],
) -> None:
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError:
        raise MethodUnavailableError(
            "--dask needs the distributed extra: pip install 'placement[distributed]'"
        ) from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=parallel, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        futs = client.map(fn, list(todo), pure=False, **kwargs)
        for f in dask_completed(futs):
            done(f.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
