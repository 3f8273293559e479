"""GPU telemetry from Prometheus: DCGM-shaped series (a GPU whose SM clock drops under thermal
events, idle spells, both spellings of the host label) backfilled into a real Prometheus that
the test starts; the service's estimates learn the hot server from them and place around it;
Prometheus gone or slow, the service places on its last estimates and says so."""

import math
import socket
import threading
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient
from support.prometheus import missing, prometheus_with
from support.serving import two_servers

import placement
from placement.estimate.workflow import read_server_map
from placement.serve import ServeConfig, Service, Store, create_app
from placement.serve.telemetry import Prometheus, TelemetryError, looks

STEP = 60.0
FULL, HOT, IDLE = 1410.0, 940.0, 210.0


def dcgm_series(start: float, n: int, seed: int = 0) -> str:
    """Two 8-GPU hosts: ``node-a`` (label ``Hostname``, released images) whose GPU 3 throttles
    thermally on a fifth of the steps, ``s1`` (label ``hostname``, newer) always at full clock;
    both idle on every tenth step."""
    rng = np.random.default_rng(seed)
    clock = ["# TYPE DCGM_FI_DEV_SM_CLOCK gauge", "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz)."]
    reason = [
        "# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge",
        "# HELP DCGM_FI_DEV_CLOCKS_EVENT_REASONS Current clock event reasons (bitmask).",
    ]
    hot = rng.random(n) < 0.2
    for host, label in (("node-a", "Hostname"), ("s1", "hostname")):
        for g in range(8):
            labels = f'gpu="{g}",UUID="GPU-{host}-{g}",{label}="{host}",modelName="NVIDIA A100-SXM4-80GB"'
            for k in range(n):
                t = start + k * STEP
                if k % 10 == 9:
                    c, bits = IDLE, 0x1
                elif host == "node-a" and g == 3 and hot[k]:
                    c, bits = HOT, 0x40 | 0x20  # hardware and software thermal slowdown
                else:
                    c, bits = FULL, 0
                clock.append(f"DCGM_FI_DEV_SM_CLOCK{{{labels}}} {c:g} {t:.0f}")
                reason.append(f"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{{labels}}} {bits} {t:.0f}")
    return "\n".join(clock + reason) + "\n# EOF\n"


def test_looks_take_the_slowest_gpu_skip_idle_steps_and_read_both_host_labels():
    def series(host_label, host, gpu, pts):
        return {"metric": {host_label: host, "gpu": str(gpu), "UUID": f"u{host}{gpu}"}, "values": pts}

    clocks = [
        series("Hostname", "a", 0, [[0, "1400"], [60, "700"], [120, "200"]]),
        series("Hostname", "a", 1, [[0, "1400"], [60, "1400"], [120, "200"]]),
        series("hostname", "b", 0, [[0, "1400"], [60, "1400"], [120, "NaN"]]),
        series("hostname", "elsewhere", 0, [[0, "1400"]]),
    ]
    reasons = [
        series("Hostname", "a", 0, [[0, "0"], [60, "64"], [120, "1"]]),
        series("Hostname", "a", 1, [[0, "0"], [60, "0"], [120, "1"]]),
        series("hostname", "b", 0, [[0, "0"], [60, "0"], [120, "0"]]),
    ]
    job, server, it, r, seen = looks(clocks, reasons, {"s-a", "b"}, {"a": "s-a"}, 0.0, 60.0)
    got = {(s, int(i)): float(v) for s, i, v in zip(server, it, r)}
    assert got == {("s-a", 0): 1.0, ("s-a", 1): 2.0, ("b", 0): 1.0, ("b", 1): 1.0}  # step 2: idle or unread
    assert set(job) == {"dcgm"} and seen == {"gpu_series": 3, "unknown_hosts": 1}


def test_a_host_map_is_read_and_its_bad_rows_named(tmp_path):
    p = tmp_path / "hosts.csv"
    p.write_text("host,server\nnode-a,s0\nnode-b,\nnode-a,s9\n")
    two = placement.instance_from_dict(two_servers())
    with pytest.raises(placement.InvalidInputError) as e:
        read_server_map(p, two, key="host", option="--prometheus-hosts")
    assert e.value.problems == (
        f"--prometheus-hosts {p} row 3: empty host or server",
        f"--prometheus-hosts {p} row 4: server 's9' is not in the instance",
    )
    p.write_text("host,server\nnode-a,s0\nnode-a,s1\n")
    with pytest.raises(placement.InvalidInputError, match="host 'node-a' is mapped twice"):
        read_server_map(p, None, key="host", option="--prometheus-hosts")
    p.write_text("host,server\nnode-a,s0\n")
    assert read_server_map(p, two, key="host") == {"node-a": "s0"}


@pytest.mark.skipif(missing() is not None, reason=missing() or "")
def test_the_estimates_learn_a_hot_gpu_from_prometheus_and_survive_its_loss(tmp_path):
    n = 120
    end = math.floor(time.time() / STEP) * STEP - STEP
    start = end - (n - 1) * STEP
    with prometheus_with(dcgm_series(start, n), tmp_path / "prom") as url:
        tele = Prometheus(url, {"node-a": "s0"}, step_s=STEP)
        svc = Service(
            Store.open(tmp_path / "s.db"),
            placement.instance_from_dict(two_servers()),
            ServeConfig(estimate_window_s=(n + 1) * STEP),
            clock=lambda: end + 1,
            telemetry=tele,
        )
        with TestClient(create_app(svc)) as c:
            fit = c.post("/v1/estimates/refit").json()
            assert fit["gpu_series"] == 16 and fit["telemetry_looks"] > 150
            est = c.get("/v1/state").json()["estimates"]
            mean = {s: sum(v * p for v, p in zip(e["values"], e["probs"])) for s, e in est.items()}
            assert mean["s0"] > 1.05 and mean["s1"] < 1.02, est
            assert c.post(
                "/v1/place", json={"jobs": [{"id": "a", "workers": 4, "compute_ms": 100, "gradient_mb": 50}]}
            ).json()["assignment"] == {"a": {"s1": 4}}
            assert "placement_telemetry_up 1.0" in c.get("/metrics").text
    # Prometheus is gone: the refit fails cleanly, the estimates stay, placing goes on
    with TestClient(create_app(svc)) as c:
        r = c.post("/v1/estimates/refit")
        assert r.status_code == 503 and "did not answer" in r.json()["errors"][0]
        h = c.get("/healthz").json()
        assert h["status"] == "degraded" and "telemetry unavailable" in h["reason"]
        assert "placement_telemetry_up 0.0" in c.get("/metrics").text
        assert c.get("/v1/state").json()["estimates"] == est
        out = c.post("/v1/place", json={"jobs": [{"id": "b", "workers": 2, "compute_ms": 100, "gradient_mb": 50}]})
        assert out.status_code == 200 and out.json()["assignment"] == {"b": {"s1": 2}}


def test_a_slow_prometheus_times_out_and_says_so():
    """A listener that accepts and never answers: the read gives up at its timeout."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    held = []
    t = threading.Thread(target=lambda: held.append(srv.accept()), daemon=True)
    t.start()
    try:
        tele = Prometheus(f"http://127.0.0.1:{srv.getsockname()[1]}", timeout_s=0.5)
        t0 = time.monotonic()
        with pytest.raises(TelemetryError, match="did not answer"):
            tele.series(0.0, 60.0)
        assert time.monotonic() - t0 < 5
    finally:
        srv.close()
