"""A private Prometheus for a test (Debian's 2.42 and its promtool; ``.ci/run`` installs them):
series the test writes in the OpenMetrics text format are backfilled into a fresh TSDB with
``promtool tsdb create-blocks-from openmetrics``, and ``prometheus`` serves them on a free
loopback port, stopped by its pid."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def missing() -> str | None:
    gone = [b for b in ("prometheus", "promtool") if shutil.which(b) is None]
    return f"not installed: {', '.join(gone)} (apt-get install prometheus)" if gone else None


@contextmanager
def prometheus_with(openmetrics: str, folder: Path) -> Iterator[str]:
    """Prometheus serving ``openmetrics`` (ending in ``# EOF``); yields its URL."""
    import httpx

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "series.om").write_text(openmetrics)
    tsdb = folder / "tsdb"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(folder / "series.om"), str(tsdb)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (folder / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = open(folder / "prometheus.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={tsdb}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not start:\n{(folder / 'prometheus.log').read_text()[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
