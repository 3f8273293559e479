"""``kill -9`` while a client places jobs, starts and finishes them and pushes iteration rows:
after each restart every acknowledged decision, transition and row is there, and no GPU is held
twice.  A real ``placement serve`` process on loopback, killed by the pid the test started
(``python -m placement.bench serve`` does the same 20 times)."""

import httpx

import placement
from placement.bench.serve import check_state, kill_rounds, start_service, stop_service


def test_kill_9_at_random_points_loses_nothing_acknowledged(tmp_path):
    state = tmp_path / "state.sqlite"
    out = kill_rounds(state, rounds=3, seed=7)
    assert out["problems"] == []
    assert out["decisions"] >= 3 and out["row_batches"] >= 3, f"the churn acknowledged too little: {out}"
    # the service comes back once more on the state alone and answers from it
    proc, url = start_service(state, None)
    try:
        st = httpx.get(f"{url}/v1/state", timeout=10).json()
    finally:
        stop_service(proc)
    assert st["cluster"] == "demo" and all(n >= 0 for n in st["free_gpus"].values())
    # every acknowledged row is there; a batch the service committed but was killed before
    # answering is there too, unacknowledged: at most one such batch (80 rows) a kill
    assert out["rows"] <= st["observations"] <= out["rows"] + 80 * out["rounds"]


def test_the_check_finds_what_is_missing(tmp_path):
    """The check that the test relies on does fail on a state that lacks an acknowledged write."""
    state = tmp_path / "state.sqlite"
    kill_rounds(state, rounds=1, seed=1)
    acked = {"decisions": {10**9}, "jobs": {"ghost": "running"}, "rows": {"ghost-rows": 5}}
    problems = check_state(state, placement.load_bundled("demo"), acked)
    assert len(problems) == 3
