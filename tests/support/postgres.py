"""A private PostgreSQL server for a test: Debian's binaries (``.ci/run`` installs them), a
fresh cluster in a temporary folder on a free loopback port, stopped by its pid (the
``postmaster.pid`` of its own data folder).  As root, it runs as the ``postgres`` user, since
``initdb`` refuses root."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path


def binaries() -> Path | None:
    for cand in [os.path.dirname(shutil.which("pg_ctl") or "")] + sorted(glob.glob("/usr/lib/postgresql/*/bin")):
        if cand and Path(cand, "initdb").exists() and Path(cand, "pg_ctl").exists():
            return Path(cand)
    return None


def missing() -> str | None:
    """Why a PostgreSQL test cannot run here, or None."""
    if binaries() is None:
        return "PostgreSQL is not installed (apt-get install postgresql)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]')"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "root without runuser: cannot run initdb as another user"
    return None


class Server:
    def __init__(self, folder: Path, port: int, bin_dir: Path) -> None:
        self.folder, self.port, self.bin = folder, port, bin_dir
        self.data = folder / "data"
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *args: str) -> None:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.folder / "log"), "-w", "start")

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop the server this object started, by its pid (``postmaster.pid`` of its own data
        folder): SIGINT is PostgreSQL's fast shutdown."""
        pidfile = self.data / "postmaster.pid"
        if not pidfile.exists():
            return
        pid = int(pidfile.read_text().split()[0])
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


@contextmanager
def postgres_server():
    bin_dir = binaries()
    assert bin_dir is not None
    folder = Path(tempfile.mkdtemp(prefix="placement-pg-", dir="/tmp"))
    os.chmod(folder, 0o755)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = Server(folder, port, bin_dir)
    server._run("initdb", "-D", str(server.data), "--auth=trust", "-U", "postgres", "--no-sync")
    server.start()
    try:
        yield server
    finally:
        server.stop()  # unless the test stopped it already
        shutil.rmtree(folder, ignore_errors=True)
