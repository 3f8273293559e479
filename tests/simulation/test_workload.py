"""Trace reading for the simulator (placement.simulation.workload): the three formats, the
options, and bad input reported row by row."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from placement.model.catalog import ELASTICFLOW_MODELS
from placement.simulation.workload import (
    CONSOLIDATED_GBPS,
    MODELS,
    TraceError,
    TraceJob,
    Workload,
    apply_options,
    elasticflow_trace_path,
    read_elasticflow,
    read_philly,
    read_plain,
    read_trace,
)

DAY = 86400.0


@pytest.fixture(scope="module")
def cluster03_rows() -> list[dict[str, str]]:
    with open(elasticflow_trace_path("cluster03"), newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def cluster03(cluster03_rows: list[dict[str, str]]) -> Workload:
    return read_trace(elasticflow_trace_path("cluster03"))


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def ideal_iterations(duration_s: float, workers: int, model: str) -> int:
    compute, gradient = MODELS[model]
    comm = 0.0 if workers == 1 else 2.0 * (workers - 1) / workers * 8.0 * gradient / CONSOLIDATED_GBPS
    return max(1, round(duration_s * 1000.0 / (compute + comm)))


def problem_rows(e: pytest.ExceptionInfo[TraceError]) -> list[str]:
    return [p.split(":")[0] for p in e.value.problems]


# ------------------------------------------------------------------ model table
def test_models_cover_elasticflow_with_its_gradient_sizes() -> None:
    for name, mb in ELASTICFLOW_MODELS.items():
        assert MODELS[name][1] == mb
        assert MODELS[name][0] > 0
    assert {"transformer", "resnet101"} <= set(MODELS)


# ------------------------------------------------------------------ ElasticFlow
def test_elasticflow_reads_every_row(cluster03: Workload, cluster03_rows: list[dict[str, str]]) -> None:
    assert len(cluster03_rows) == 3011
    assert len(cluster03.jobs) == len(cluster03_rows)
    assert len({j.id for j in cluster03.jobs}) == len(cluster03.jobs)
    keys = [(j.submit_s, j.id) for j in cluster03.jobs]
    assert keys == sorted(keys)
    assert cluster03.dropped == {}
    assert cluster03.source == "elasticflow cluster03.csv"


def test_elasticflow_fields(cluster03: Workload, cluster03_rows: list[dict[str, str]]) -> None:
    r = cluster03_rows[0]
    j = next(j for j in cluster03.jobs if j.id == r["job_id"])
    assert j.submit_s == float(r["submission_time"])
    assert j.workers == int(r["num_gpu"])
    assert j.iterations == int(r["num_iteration"])
    assert j.model == r["model_name"]
    assert j.compute_ms == pytest.approx(1000.0 * int(r["duration"]) / int(r["num_iteration"]))
    assert j.gradient_mb == ELASTICFLOW_MODELS[r["model_name"]]
    assert j.deadline_s == int(r["deadline"]) - int(r["submission_time"])
    assert j.weight == 1.0 and j.gpu_speed is None


def test_elasticflow_raw_reader_keeps_file_order(cluster03_rows: list[dict[str, str]]) -> None:
    jobs = read_elasticflow(elasticflow_trace_path())
    assert [j.id for j in jobs] == [r["job_id"] for r in cluster03_rows]


def test_elasticflow_deadline_not_after_submission_is_none(tmp_path: Path) -> None:
    head = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
    p = write(tmp_path, head + "a,100,10,bert,100,32,2,5\nb,100,10,bert,,32,2,5\nc,100,10,bert,160,32,2,5\n")
    assert [j.deadline_s for j in read_elasticflow(p)] == [None, None, 60.0]


def test_bundled_cluster04() -> None:
    p = elasticflow_trace_path("cluster04")
    assert p.is_file()
    with pytest.raises(ValueError, match="'name' parameter of elasticflow_trace_path"):
        elasticflow_trace_path("cluster99")


# ------------------------------------------------------------------ options
def test_window_of_one_day(cluster03: Workload, cluster03_rows: list[dict[str, str]]) -> None:
    start = 12 * DAY
    w = read_trace(elasticflow_trace_path(), window_start_s=start, window_s=DAY)
    expected = sorted(
        (float(r["submission_time"]) - start, r["job_id"])
        for r in cluster03_rows
        if start <= float(r["submission_time"]) < start + DAY
    )
    assert expected
    assert [(j.submit_s, j.id) for j in w.jobs] == expected
    assert all(0 <= j.submit_s < DAY for j in w.jobs)
    assert "window 1.0368e+06-1.1232e+06 s" in w.source


def test_max_jobs_and_load(cluster03: Workload) -> None:
    w = apply_options(cluster03.jobs, max_jobs=10)
    assert w.jobs == cluster03.jobs[:10]
    w2 = apply_options(cluster03.jobs, max_jobs=10, load=2)
    assert [j.submit_s for j in w2.jobs] == [j.submit_s / 2 for j in w.jobs]
    assert [j.id for j in w2.jobs] == [j.id for j in w.jobs]
    assert "first 10 jobs; load x2" in w2.source


def test_resampling_is_seeded_and_keeps_the_rate(cluster03: Workload) -> None:
    a = apply_options(cluster03.jobs, resample_seed=7)
    b = apply_options(cluster03.jobs, resample_seed=7)
    c = apply_options(cluster03.jobs, resample_seed=8)
    assert a == b
    assert [j.submit_s for j in a.jobs] != [j.submit_s for j in c.jobs]
    assert len(a.jobs) == len(cluster03.jobs)
    assert [j.id for j in a.jobs] == [j.id for j in cluster03.jobs]
    assert a.jobs[0].submit_s == cluster03.jobs[0].submit_s
    times = np.array([j.submit_s for j in a.jobs])
    assert np.all(np.diff(times) > 0)
    span = cluster03.jobs[-1].submit_s - cluster03.jobs[0].submit_s
    assert times[-1] - times[0] == pytest.approx(span, rel=0.1)
    assert "Poisson resampled (seed 7)" in a.source
    one = apply_options(cluster03.jobs[:1], resample_seed=1)
    assert one.jobs == cluster03.jobs[:1]


def test_the_widest_jobs_widened(cluster03: Workload) -> None:
    jobs = cluster03.jobs[:200]
    wide = [j for j in jobs if j.workers >= 8]
    assert wide and len(wide) < len(jobs)
    w = apply_options(jobs, min_workers=8, widen=4)
    # the wide ones only, in order, each gang 4x wider, everything else of the job kept (weak scaling)
    assert [j.id for j in w.jobs] == [j.id for j in wide]
    for j, k in zip(wide, w.jobs):
        assert k.workers == 4 * j.workers
        assert (k.iterations, k.compute_ms, k.gradient_mb, k.duration_s) == (
            j.iterations,
            j.compute_ms,
            j.gradient_mb,
            j.duration_s,
        )
    assert "jobs of 8+ GPUs; widened x4" in w.source
    # widened before the cluster's width is checked; a hybrid job's data-parallel degree widens
    with pytest.raises(TraceError):
        apply_options(wide[:1], widen=64, max_workers=wide[0].workers * 32)
    hybrid = TraceJob("h", 0.0, 16, 10, 1.0, 1.0, architecture="hybrid", tp=4, pp=2, dp=2)
    (h,) = apply_options([hybrid], widen=3).jobs
    assert (h.workers, h.tp, h.pp, h.dp) == (48, 4, 2, 6)


def test_wider_than_the_cluster(cluster03: Workload) -> None:
    jobs = cluster03.jobs[:50]
    wide = [j for j in jobs if j.workers > 16]
    assert wide
    with pytest.raises(TraceError) as e:
        apply_options(jobs, max_workers=16)
    assert e.value.problems[0] == f"job {wide[0].id!r} needs {wide[0].workers} GPUs; the cluster has 16"
    assert len(e.value.problems) == len(wide)
    w = apply_options(jobs, max_workers=16, drop_wider=True)
    assert w.dropped == {"wider than the cluster": len(wide)}
    assert len(w.jobs) == len(jobs) - len(wide)
    assert all(j.workers <= 16 for j in w.jobs)
    assert w.source.endswith(f"dropped {len(wide)} wider than the cluster")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("load", 0, "The 'load' parameter of read_trace must be a number > 0. Got 0 instead."),
        ("load", math.inf, "The 'load' parameter of read_trace must be a number > 0. Got inf instead."),
        ("window_s", 0.0, "The 'window_s' parameter of read_trace must be a number > 0. Got 0.0 instead."),
        ("max_jobs", 0, "The 'max_jobs' parameter of read_trace must be an int >= 1. Got 0 instead."),
        ("min_workers", 0, "The 'min_workers' parameter of read_trace must be an int >= 1 or None. Got 0 instead."),
        ("widen", 1.5, "The 'widen' parameter of read_trace must be an int >= 1. Got 1.5 instead."),
    ],
)
def test_bad_option_values(option: str, value: object, message: str) -> None:
    with pytest.raises(ValueError) as e:
        read_trace(elasticflow_trace_path(), **{option: value})  # type: ignore[arg-type]
    assert str(e.value) == message


# ------------------------------------------------------------------ Philly
def test_philly_iso_timestamps_and_derived_iterations(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "timestamp,duration,num_gpus,cluster,model\n"
        "2017-10-03 14:22:10,3600,8,c1,vgg16\n"
        "2017-10-03T14:22:00Z,100,1,c1,\n"
        "2017-10-03T15:22:10+00:00,7200,16,c2,bert\n",
    )
    jobs = read_philly(p)
    assert [j.id for j in jobs] == ["philly-2", "philly-3", "philly-4"]
    assert [j.submit_s for j in jobs] == [10.0, 0.0, 3610.0]
    assert [j.model for j in jobs] == ["vgg16", "resnet50", "bert"]
    assert [j.iterations for j in jobs] == [
        ideal_iterations(3600, 8, "vgg16"),
        ideal_iterations(100, 1, "resnet50"),
        ideal_iterations(7200, 16, "bert"),
    ]
    assert jobs[1].iterations == 1000
    assert (jobs[0].compute_ms, jobs[0].gradient_mb) == MODELS["vgg16"]
    assert all(j.deadline_s is None and j.weight == 1.0 for j in jobs)

    only = read_philly(p, cluster="c2")
    assert [(j.id, j.submit_s) for j in only] == [("philly-4", 0.0)]
    w = read_trace(p)
    assert [j.id for j in w.jobs] == ["philly-3", "philly-2", "philly-4"]
    assert w.source == "philly trace.csv"


def test_philly_job_id_column(tmp_path: Path) -> None:
    p = write(tmp_path, "job_id,timestamp,duration,num_gpus\nx,2017-10-03 00:00:00,0,2\n")
    (j,) = read_philly(p)
    assert (j.id, j.iterations, j.workers) == ("x", 1, 2)


# ------------------------------------------------------------------ plain
def test_plain_defaults_and_columns(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "submit_s,workers,duration_s,iterations,id,model,compute_ms,gradient_mb,deadline_s,weight\n"
        "0,4,600,,,,,,,\n"
        "5,2,,100,a,gpt2,,,3600,2\n"
        "7,8,60,,b,mystery,50,10,,\n"
        "9,1,999,77,,,,,,\n",
    )
    jobs = read_plain(p)
    assert [j.id for j in jobs] == ["job-2", "a", "b", "job-5"]
    j0 = jobs[0]
    assert (j0.model, j0.compute_ms, j0.gradient_mb) == ("resnet50", *MODELS["resnet50"])
    assert j0.iterations == ideal_iterations(600, 4, "resnet50")
    assert (jobs[1].iterations, jobs[1].deadline_s, jobs[1].weight) == (100, 3600.0, 2.0)
    assert (jobs[1].compute_ms, jobs[1].gradient_mb) == MODELS["gpt2"]
    comm = 2.0 * 7 / 8 * 8.0 * 10 / CONSOLIDATED_GBPS
    assert (jobs[2].model, jobs[2].iterations) == ("mystery", max(1, round(60_000 / (50 + comm))))
    assert jobs[3].iterations == 77
    assert read_trace(p).jobs == tuple(jobs)


def test_plain_through_options(tmp_path: Path) -> None:
    p = write(tmp_path, "submit_s,workers,iterations\n10,1,5\n20,1,5\n30,1,5\n40,1,5\n")
    w = read_trace(p, window_start_s=15, window_s=20, load=2)
    assert [(j.id, j.submit_s) for j in w.jobs] == [("job-3", 2.5), ("job-4", 7.5)]
    assert w.source == "plain trace.csv; window 15-35 s; load x2"


# ------------------------------------------------------------------ bad input
def test_every_bad_row_at_once(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "submit_s,workers,duration_s,iterations,model\n"
        "0,1,10,,\n"
        "nan,1,10,,\n"
        "1,-2,10,,\n"
        "2,1,10,,nosuchnet\n"
        "3,1,,,\n"
        "4,1.5,1e999,0,\n",
    )
    with pytest.raises(TraceError) as e:
        read_plain(p)
    problems = e.value.problems
    assert e.value.source == str(p)
    assert problem_rows(e) == ["row 3, submit_s", "row 4, workers", "row 5, model", "row 6, duration_s/iterations"] + [
        "row 7, workers",
        "row 7, iterations",
        "row 7, duration_s",
    ]
    assert "'nan'" in problems[0] and "'-2'" in problems[1] and "'nosuchnet'" in problems[2]


def test_bad_philly_rows(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "timestamp,duration,num_gpus,model\n"
        "2017-10-03 14:22:10,10,1,\n"
        "yesterday,10,1,\n"
        "2017-10-03 14:22:10,inf,0,bert\n"
        "2017-13-03 14:22:10,-1,1,gpt5\n",
    )
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert problem_rows(e) == [
        "row 3, timestamp",
        "row 4, duration",
        "row 4, num_gpus",
        "row 5, timestamp",
        "row 5, duration",
        "row 5, model",
    ]


def test_bad_elasticflow_rows_and_duplicate_ids(tmp_path: Path) -> None:
    head = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
    p = write(tmp_path, head + "a,1,10,bert,5,32,2,5\na,2,10,bert,5,32,2,5\nb,3,10,resnet7,5,32,2,0\n")
    with pytest.raises(TraceError) as e:
        read_elasticflow(p)
    assert problem_rows(e) == ["row 4, model_name", "row 4, duration", "row 3, job_id"]
    assert "repeats row 2" in e.value.problems[-1]


def test_many_problems_are_capped(tmp_path: Path) -> None:
    p = write(tmp_path, "submit_s,workers,iterations\n" + "x,1,1\n" * 45)
    with pytest.raises(TraceError) as e:
        read_plain(p)
    assert len(e.value.problems) == 41
    assert e.value.problems[-1] == "... and 5 more"


def test_missing_column(tmp_path: Path) -> None:
    p = write(tmp_path, "timestamp,num_gpus\n2017-10-03 14:22:10,1\n")
    with pytest.raises(TraceError) as e:
        read_trace(p)
    (problem,) = e.value.problems
    assert "'duration'" in problem and "timestamp,num_gpus" in problem
    p2 = write(tmp_path, "submit_s,workers\n0,1\n", "p2.csv")
    with pytest.raises(TraceError) as e:
        read_trace(p2)
    assert "'duration_s' or 'iterations'" in e.value.problems[0]


@pytest.mark.parametrize("text", ["", "\n\n", "submit_s,workers,iterations\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    with pytest.raises(TraceError) as e:
        read_trace(write(tmp_path, text))
    assert len(e.value.problems) == 1


def test_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "latin1.csv"
    p.write_bytes("submit_s,workers,iterations,model\n0,1,1,r\xe9snet\n".encode("latin-1"))
    with pytest.raises(TraceError) as e:
        read_trace(p)
    (problem,) = e.value.problems
    assert "latin1.csv" in problem and "UTF-8" in problem


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError) as e:
        read_trace(tmp_path / "nope.csv")
    (problem,) = e.value.problems
    assert "nope.csv" in problem


def test_unknown_header(tmp_path: Path) -> None:
    with pytest.raises(TraceError) as e:
        read_trace(write(tmp_path, "when,gpus\n1,2\n"))
    (problem,) = e.value.problems
    assert "when,gpus" in problem
    assert all(f in problem for f in ("elasticflow", "philly", "plain"))


def test_trace_job_is_a_record() -> None:
    j = TraceJob("a", 0.0, 1, 1, 1.0, 0.0)
    assert (j.model, j.weight, j.deadline_s, j.gpu_speed) == ("", 1.0, None, None)


def test_the_sia_philly_workloads_read_as_pal_runs_them(tmp_path):
    """PAL's Sia-Philly CSVs: the header tells the format; duration is the iteration count; each
    model's iteration time and application class are PAL's; bad rows by line."""
    from placement.model.catalog import PAL_MODELS
    from placement.simulation.workload import TraceError, read_trace

    path = tmp_path / "sia.csv"
    path.write_text("job_id,num_gpus,submit_time,duration,model\n0,1,98,1481.0,vgg19\n1,12,115,4037.0,DCGAN\n")
    w = read_trace(path)
    assert w.source.startswith("sia ")
    a, b = w.jobs
    assert (a.workers, a.iterations, a.compute_ms, a.app_class) == (1, 1481, PAL_MODELS["vgg19"][0], "C")
    assert (b.workers, b.submit_s, b.app_class, b.gradient_mb) == (12, 115.0, "B", 0.0)
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,num_gpus,submit_time,duration,model\n0,0,98,1481,vgg19\n1,2,-5,10,alexnet\n")
    with pytest.raises(TraceError) as e:
        read_trace(bad)
    text = str(e.value)
    assert "row 2, num_gpus" in text and "row 3, submit_time" in text and "unknown model 'alexnet'" in text
