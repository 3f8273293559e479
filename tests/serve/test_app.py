"""The service over HTTP: the API, errors that name the field (4xx, never a traceback), the
OpenAPI description, /healthz and /metrics, every endpoint fuzzed with random bodies (no 5xx, no
state changed by a refused request), and the CLI's refusals."""

import json

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from support.serving import Clock, two_servers

import placement
from placement.cli.main import cli
from placement.serve import ServeConfig, Service, Store, create_app


@pytest.fixture
def client(tmp_path, clock):
    svc = Service(Store.open(tmp_path / "s.db"), placement.load_bundled("demo"), ServeConfig(refit_every_s=60), clock)
    with TestClient(create_app(svc)) as c:
        c.service = svc
        yield c


JOB = {"id": "a", "workers": 8, "compute_ms": 100, "gradient_mb": 50}


def test_place_start_state_finish_over_http(client):
    r = client.post("/v1/place", json={"jobs": [JOB]})
    assert r.status_code == 200, r.text
    out = r.json()
    assert set(out["assignment"]) == {"a"} and out["decision"] == 1 and "a" in out["explanation"]
    assert client.post("/v1/jobs/a/start").json() == {"job": "a", "state": "running"}
    state = client.get("/v1/state").json()
    assert state["assignment"] == out["assignment"] and state["jobs"]["a"]["state"] == "running"
    assert client.post("/v1/jobs/a/finish").json()["state"] == "finished"
    assert client.get("/v1/state").json()["assignment"] == {}
    r = client.post("/v1/place", json={"jobs": [{**JOB, "id": "b"}], "explain": False})
    assert r.status_code == 200 and r.json().get("explanation") is None


def test_errors_name_the_field_with_the_right_status(client):
    r = client.post("/v1/place", json={"jobs": [{"id": "x", "workers": 0, "compute_ms": 1}]})
    assert r.status_code == 422
    assert any(e.startswith("body.jobs[0].workers") for e in r.json()["errors"]), r.json()
    r = client.post("/v1/place", json={"jobs": [JOB], "extra": 1})
    assert r.status_code == 422 and r.json()["errors"] == ["body.extra: Extra inputs are not permitted"]
    r = client.post("/v1/place", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and "Traceback" not in r.text
    r = client.post(
        "/v1/observations",
        json={"rows": [{"job": "a", "worker": 0, "server": "s99", "iteration": 1, "duration": -1}]},
    )
    assert r.status_code == 422
    assert r.json()["errors"] == [
        "body.rows[0].server: Value error, 's99' is not a server of the cluster",
        "body.rows[0].duration: Input should be greater than 0",
    ]
    assert client.post("/v1/jobs/nope/start").status_code == 404
    client.post("/v1/place", json={"jobs": [JOB]})
    r = client.post("/v1/place", json={"jobs": [JOB]})
    assert r.status_code == 409 and "already reserved" in r.json()["errors"][0]


def test_openapi_healthz_and_metrics(client, clock):
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/place", "/v1/jobs/{job_id}/start", "/v1/observations", "/v1/state", "/healthz", "/metrics"} <= set(
        paths
    )
    assert client.get("/healthz").json()["status"] == "ok"  # refitted at start
    rows = [
        {"job": "p", "worker": w, "server": f"s{w}", "iteration": i, "duration": 1.0}
        for i in range(5)
        for w in range(3)
    ]
    assert client.post("/v1/observations", json={"rows": rows}).json() == {"accepted": 15}
    client.post("/v1/place", json={"jobs": [JOB]})
    clock.t += 3 * 60 + 1  # three refit periods without a refit: the estimates are stale
    h = client.get("/healthz").json()
    assert h["status"] == "degraded" and "stale" in h["reason"]
    text = client.get("/metrics").text
    assert 'placement_requests_total{method="POST",path="/v1/place",status="200"} 1.0' in text
    assert 'placement_decisions_total{outcome="placed"} 1.0' in text
    assert "placement_observation_rows_total 15.0" in text
    assert "placement_estimates_age_seconds 181.0" in text
    assert client.post("/v1/estimates/refit").json()["rows"] == 15
    assert client.get("/healthz").json()["status"] == "ok"


bodies = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
shaped = (
    st.fixed_dictionaries(
        {
            "jobs": st.lists(
                st.dictionaries(
                    st.sampled_from(["id", "workers", "compute_ms", "gradient_mb", "x"]), bodies, max_size=5
                ),
                max_size=3,
            )
        }
    )
    | st.fixed_dictionaries(
        {
            "moves": st.lists(
                st.dictionaries(st.sampled_from(["job", "to", "stages", "shards", "x"]), bodies, max_size=4), max_size=3
            )
        }
    )
    | st.fixed_dictionaries({"progress": st.dictionaries(st.sampled_from(["a", "b"]), bodies), "queued": bodies})
    | (
        st.fixed_dictionaries(
            {
                "rows": st.lists(
                    st.dictionaries(
                        st.sampled_from(["job", "worker", "server", "iteration", "duration"]), bodies, max_size=6
                    ),
                    max_size=3,
                )
            }
        )
    )
)


@given(
    body=bodies | shaped,
    endpoint=st.sampled_from(
        [
            "/v1/place",
            "/v1/observations",
            "/v1/jobs/a/start",
            "/v1/jobs/a/finish",
            "/v1/jobs/a/release",
            "/v1/gangs",
            "/scheduler/filter",
            "/v1/jobs/a/move",
            "/v1/moves",
            "/v1/replan",
            "/scheduler/prioritize",
        ]
    ),
)
def test_random_bodies_never_give_a_5xx_and_a_refused_one_changes_nothing(tmp_path_factory, body, endpoint):
    svc = _fuzzed_service(tmp_path_factory)
    with TestClient(create_app(svc)) as c:
        before = c.get("/v1/state").json()
        try:
            payload = json.dumps(body, allow_nan=True)
        except (ValueError, OverflowError):
            return
        r = c.post(endpoint, content=payload, headers={"content-type": "application/json"})
        assert r.status_code < 500, r.text
        if r.status_code >= 400:
            assert "errors" in r.json()
            assert c.get("/v1/state").json() == before


_SERVICES: dict = {}


def _fuzzed_service(factory):
    """One service for every example (a fresh one each would cost a database each)."""
    if "svc" not in _SERVICES:
        _SERVICES["svc"] = Service(
            Store.open(factory.mktemp("fuzz") / "s.db"),
            placement.instance_from_dict(two_servers()),
            ServeConfig(decision_time_limit_s=0.05),
            Clock(),
        )
    return _SERVICES["svc"]


def test_the_cli_refuses_a_bad_cluster_or_state_with_exit_2(tmp_path):
    import sqlite3

    r = CliRunner().invoke(cli, ["serve", str(tmp_path / "missing.json")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    bad = tmp_path / "state.sqlite"
    Store.open(bad)
    with sqlite3.connect(bad) as raw:
        raw.execute("UPDATE alembic_version SET version_num = '0099'")
    r = CliRunner().invoke(cli, ["serve", "demo", "--state", str(bad)])
    assert r.exit_code == 2 and "'0099'" in r.stderr and "newer" in r.stderr
    r = CliRunner().invoke(cli, ["serve", "demo", "--port", "0"])
    assert r.exit_code == 2
