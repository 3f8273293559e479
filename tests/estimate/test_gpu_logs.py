"""Iteration logs that name each worker's GPU: the estimator separates a GPU's steady factor (its
workers against their peers on the same server, which share the server's episodes) from the
server's episodes, writes the factors as ``gpu_slowdowns``, and refuses bad GPU cells by row."""

from __future__ import annotations

import numpy as np
import pytest

from placement.errors import InvalidInputError
from placement.estimate.workflow import estimate_instance
from placement.model import Instance, Link, Server, Switch

HIDDEN = {"s0": (1.0, 1.0, 1.05, 1.3), "s1": (0.95, 1.0, 1.0, 1.1)}


def _cluster() -> Instance:
    servers = tuple(Server(s, 4, "V100", 300.0) for s in HIDDEN)
    return Instance("two", servers, (), (Switch("t"),), tuple(Link(s.id, "t", 25.0) for s in servers))


def _logs(tmp_path, gpu: bool = True, seed: int = 0):
    """One 8-worker job on both servers for 400 iterations; s1 is 2x slow for iterations 100-199."""
    rng = np.random.default_rng(seed)
    rows = ["job,worker,server,iteration,duration" + (",gpu" if gpu else "")]
    for it in range(400):
        for w in range(8):
            sid, g = ("s0", w) if w < 4 else ("s1", w - 4)
            episode = 2.0 if sid == "s1" and 100 <= it < 200 else 1.0
            d = 100.0 * HIDDEN[sid][g] * episode * float(np.exp(0.01 * rng.standard_normal()))
            rows.append(f"a,{w},{sid},{it},{d:.4f}" + (f",{g}" if gpu else ""))
    p = tmp_path / ("gpu.csv" if gpu else "plain.csv")
    p.write_text("\n".join(rows) + "\n")
    return p


def test_gpu_factors_are_learnt_against_their_peers_and_the_episode_stays_the_servers(tmp_path):
    est = estimate_instance(_cluster(), logs=[_logs(tmp_path)]).instance
    for s in est.servers:
        got = np.array(s.gpu_factors(None))
        want = np.array(HIDDEN[s.id]) / np.median(HIDDEN[s.id])  # relative to the server's peers
        assert got == pytest.approx(want, abs=0.02)
    plain = estimate_instance(_cluster(), logs=[_logs(tmp_path, gpu=False)]).instance
    by = {s.id: s for s in est.servers}
    blind = {s.id: s for s in plain.servers}
    # s1's episode is the server's: it still shows, in both
    assert by["s1"].slowdown.mean() > 1.05 and blind["s1"].slowdown.mean() > 1.05
    # s0's slow GPU 3 is a GPU's: with the GPUs named, s0 no longer looks like a straggling server
    assert by["s0"].slowdown.mean() < blind["s0"].slowdown.mean()
    assert not plain.servers[0].has_gpu_factors


def test_bad_gpu_cells_and_gpus_the_cluster_lacks_are_refused(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("job,worker,server,iteration,duration,gpu\na,0,s0,1,100,x\na,1,s0,1,100,-1\na,2,s0,1,100,\n")
    with pytest.raises(InvalidInputError) as e:
        estimate_instance(_cluster(), logs=[p])
    text = str(e.value)
    assert "row 2" in text and "row 3" in text and "row 4" not in text  # an empty cell: not said
    q = tmp_path / "far.csv"
    q.write_text(
        "job,worker,server,iteration,duration,gpu\n"
        + "".join(f"a,{w},s0,{it},{100 + w},{w + 2}\n" for it in range(3) for w in range(3))
    )
    with pytest.raises(InvalidInputError, match="GPU 4 of server 's0', which has 4"):
        estimate_instance(_cluster(), logs=[q])
