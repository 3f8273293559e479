"""PostgreSQL as the shared state of several replicas (a private server the test starts): no
GPU given twice by concurrent decisions, and a database restarted under load makes requests fail
cleanly (503, nothing changed) and then resume."""

import pytest
from fastapi.testclient import TestClient
from support.postgres import missing, postgres_server
from support.serving import Clock, place_concurrently

import placement
from placement.serve import ServeConfig, Service, Store, create_app
from placement.serve.store import HEAD

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


@pytest.fixture(scope="module")
def pg():
    with postgres_server() as server:
        yield server


def job(jid, workers=4):
    return {"id": jid, "workers": workers, "compute_ms": 100, "gradient_mb": 50}


def test_replicas_on_postgresql_never_give_one_gpu_twice(pg):
    cluster = placement.load_bundled("demo")
    replicas = [
        Service(Store.open(pg.url), cluster, ServeConfig(decision_time_limit_s=0.05), Clock()) for _ in range(3)
    ]
    assert replicas[0].store.revision() == HEAD
    placed = place_concurrently(replicas, threads=6, per_thread=8)
    state = replicas[1].state()
    assert len(placed) == 32 and sorted(state["assignment"]) == sorted(placed)
    assert all(n == 0 for n in state["free_gpus"].values())
    for jid in placed:
        replicas[2].release(jid)
    assert all(n == 8 for n in replicas[0].state()["free_gpus"].values())


def test_a_database_restarted_under_load_fails_requests_cleanly_and_they_resume(pg):
    svc = Service(Store.open(pg.url), placement.load_bundled("demo"), ServeConfig(decision_time_limit_s=0.05), Clock())
    with TestClient(create_app(svc), raise_server_exceptions=False) as c:
        assert c.post("/v1/place", json={"jobs": [job("before")]}).status_code == 200
        pg.stop()
        try:
            r = c.post("/v1/place", json={"jobs": [job("during")]})
            assert r.status_code == 503 and "unavailable" in r.json()["errors"][0]
            assert c.get("/healthz").status_code == 503
        finally:
            pg.start()
        assert c.get("/healthz").status_code == 200
        r = c.post("/v1/place", json={"jobs": [job("after")]})
        assert r.status_code == 200, r.text
        held = c.get("/v1/state").json()["assignment"]
        assert "before" in held and "after" in held and "during" not in held
