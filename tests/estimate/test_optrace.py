"""Per-operation traces of hybrid jobs (``placement estimate --op-trace``): a rank is compared
with its own stage's ranks across data-parallel replicas, so the job's uneven stages and
varying sequence lengths are not blamed on servers, while a slow GPU is."""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest
from click.testing import CliRunner
from support.paths import SHARED_DATA

from placement.cli.main import cli
from placement.estimate import LogData, estimate_from_logs
from placement.estimate.optrace import (
    COMPUTE_OPS,
    OpTrace,
    OpTraceError,
    estimate_from_op_trace,
    read_op_trace,
    read_rank_map,
)
from placement.formats import dump_instance, load_instance
from placement.model import Instance, Link, Server, Switch

BYTEDANCE = SHARED_DATA / "bytedance-stragglers"
needs_bytedance = pytest.mark.skipif(
    not (BYTEDANCE / "trace-SE.parquet").is_file(), reason=f"needs ByteDance's per-rank traces in {BYTEDANCE}"
)


def synthetic(slow_rank: int | None = None, factor: float = 2.0, seed: int = 0) -> OpTrace:
    """4 data-parallel replicas x 2 pipeline stages (ranks 2 dp + stage), 8 microbatches, 40
    steps; stage 1 does 1.5x the work (the job's own), every microbatch's sequence length
    varies (+-30%), and ``slow_rank``'s GPU computes ``factor`` times slower."""
    rng = np.random.default_rng(seed)
    rows = []
    for step in range(40):
        for dp in range(4):
            for stage in range(2):
                rank = 2 * dp + stage
                for mb in range(8):
                    seq = rng.uniform(0.7, 1.3)
                    base = 0.1 * (1.5 if stage == 1 else 1.0) * seq * (factor if rank == slow_rank else 1.0)
                    rows.append((dp, stage, rank, step, 0, mb, base))  # forward
                    rows.append((dp, stage, rank, step, 0, mb, 2 * base))  # backward
    a = np.array(rows)
    ints = [a[:, i].astype(np.int64) for i in range(6)]
    return OpTrace(*ints, a[:, 6].astype(float))


RANKS = {r: f"n{r // 2}" for r in range(8)}
"""Each replica's two stages on one server: n0..n3."""


def test_uneven_stages_and_varying_sequences_are_not_blamed_on_servers():
    est, _ = estimate_from_op_trace(synthetic(), RANKS)
    assert set(est) == {"n0", "n1", "n2", "n3"}
    assert max(e.mean for e in est.values()) <= 1.05
    # the --logs way (each rank against the job's median rank) blames the heavier stage
    t = synthetic()
    per = {}
    for rank, step, d in zip(t.rank, t.step, t.duration):
        per[(int(rank), int(step))] = per.get((int(rank), int(step)), 0.0) + d
    keys = sorted(per)
    log = LogData(
        np.zeros(len(keys), dtype=np.int64),
        np.array([f"r{r}" for r, _ in keys]),
        np.array([s for _, s in keys]),
        np.array([per[k] for k in keys]),
    )
    naive, _ = estimate_from_logs(log)
    assert min(naive[f"r{r}"].mean for r in (1, 3, 5, 7)) > 1.15  # stage 1 looks slow


def test_a_slow_gpu_is_found_on_its_server():
    est, _ = estimate_from_op_trace(synthetic(slow_rank=5, factor=1.8), RANKS)
    assert 1.5 <= est["n2"].mean <= 2.2
    assert max(e.mean for s, e in est.items() if s != "n2") <= 1.05


@needs_bytedance
@pytest.mark.parametrize("name", ["SE", "ST"])
def test_bytedance_traces_blame_no_server(name):
    trace = read_op_trace(BYTEDANCE / f"trace-{name}.parquet")
    ranks = {int(r): f"n{int(r) // 8}" for r in np.unique(trace.rank)}  # 8 GPUs a server
    est, _ = estimate_from_op_trace(trace, ranks)
    assert max(e.mean for e in est.values()) <= 1.15


@needs_bytedance
def test_a_copy_of_se_with_one_slow_rank_finds_its_server():
    trace = read_op_trace(BYTEDANCE / "trace-SE.parquet")
    ranks = {int(r): f"n{int(r) // 8}" for r in np.unique(trace.rank)}
    d = trace.duration.copy()
    d[trace.rank == 10] *= 1.8
    est, _ = estimate_from_op_trace(dataclasses.replace(trace, duration=d), ranks)
    assert 1.5 <= est[ranks[10]].mean <= 2.2
    assert max(e.mean for s, e in est.items() if s != ranks[10]) <= 1.15


def write_csv(path, trace: OpTrace, extra_rows=()):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dp_rank", "stage", "rank", "step", "optype", "duration", "mc", "mb_id"])
        for i in range(len(trace.duration)):
            w.writerow(
                [
                    trace.dp_rank[i],
                    trace.stage[i],
                    trace.rank[i],
                    trace.step[i],
                    COMPUTE_OPS[i % 2],
                    trace.duration[i],
                    0,
                    trace.mb_id[i],
                ]
            )
            w.writerow([trace.dp_rank[i], trace.stage[i], trace.rank[i], trace.step[i], "forward-send", 9.0, -1, -1])
        for row in extra_rows:
            w.writerow(row)


def test_csv_and_parquet_read_alike(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    t = synthetic(slow_rank=3)
    write_csv(tmp_path / "t.csv", t)
    with open(tmp_path / "t.csv") as f:
        rows = list(csv.DictReader(f))
    cols = {c: [r[c] for r in rows] for c in rows[0]}
    table = pa.table(
        {
            c: (v if c == "optype" else np.array(v, dtype=float if c == "duration" else np.int64))
            for c, v in cols.items()
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    a, b = read_op_trace(tmp_path / "t.csv"), read_op_trace(tmp_path / "t.parquet")
    assert len(a.duration) == len(t.duration)  # the sends are not compute
    ea, _ = estimate_from_op_trace(a, RANKS)
    eb, _ = estimate_from_op_trace(b, RANKS)
    assert {s: e.mean for s, e in ea.items()} == pytest.approx({s: e.mean for s, e in eb.items()})
    assert ea["n1"].mean > 1.5


def test_bad_rows_and_maps_are_refused_all_at_once(tmp_path):
    bad = tmp_path / "bad.csv"
    write_csv(
        bad, synthetic(), [(0, 0, 0, 1.5, "forward-compute", 0.1, 0, 0), (0, 0, 0, 2, "backward-compute", -1, 0, 0)]
    )
    with pytest.raises(OpTraceError) as e:
        read_op_trace(bad)
    text = str(e.value)
    assert "step must be a whole number" in text and "duration must be a number > 0" in text
    first = 2 * len(synthetic().duration) + 2  # the header, then two lines per compute operation
    assert f"line {first}:" in text and f"line {first + 1}:" in text
    (tmp_path / "nocol.csv").write_text("rank,step,duration\n0,1,0.5\n")
    with pytest.raises(OpTraceError, match="missing column"):
        read_op_trace(tmp_path / "nocol.csv")
    m = tmp_path / "map.csv"
    m.write_text("rank,server\n0,n0\nx,n0\n0,n1\n2,\n")
    with pytest.raises(OpTraceError) as e:
        read_rank_map(m)
    assert all(f"line {k}" in str(e.value) for k in (3, 4, 5))
    with pytest.raises(OpTraceError, match="no server in the rank map: 6, 7"):
        estimate_from_op_trace(synthetic(), dict.fromkeys(range(6), "n0"))


def _cluster(tmp_path):
    servers = tuple(Server(f"n{i}", 2, "A100", 2400.0) for i in range(4))
    inst = Instance("four", servers, (), (Switch("tor"),), tuple(Link(s.id, "tor", 100.0) for s in servers))
    path = tmp_path / "four.json"
    dump_instance(inst, path)
    return path


def test_the_cli_writes_the_estimates_and_refuses_bad_input_with_exit_2(tmp_path):
    cluster = _cluster(tmp_path)
    write_csv(tmp_path / "t.csv", synthetic(slow_rank=6, factor=1.8))
    (tmp_path / "map.csv").write_text("rank,server\n" + "".join(f"{r},{s}\n" for r, s in RANKS.items()))
    out = tmp_path / "out.json"
    args = ["estimate", str(cluster), "--op-trace", str(tmp_path / "t.csv"), "--rank-map", str(tmp_path / "map.csv")]
    r = CliRunner().invoke(cli, [*args, "-o", str(out)])
    assert r.exit_code == 0, r.output
    got = load_instance(out)
    mean = {s.id: s.slowdown.mean() for s in got.servers}
    assert 1.5 <= mean["n3"] <= 2.2 and max(mean[s] for s in ("n0", "n1", "n2")) <= 1.05
    (tmp_path / "badmap.csv").write_text("rank,server\n0,n9\n")
    out2 = tmp_path / "out2.json"
    r = CliRunner().invoke(cli, [*args[:-2], "--rank-map", str(tmp_path / "badmap.csv"), "-o", str(out2)])
    assert r.exit_code == 2 and "'n9' is not in the instance" in r.output and not out2.exists()
    r = CliRunner().invoke(cli, args[:-2])
    assert r.exit_code == 2 and "--op-trace and --rank-map go together" in r.output
