"""A private PostgreSQL server for a test: Debian's binaries (``.ci/run`` installs them), a
fresh cluster in a temporary folder on a free port, started and stopped by its own data folder
(so only what the test started is stopped).  As root, it runs as the ``postgres`` user, since
``initdb`` refuses root."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
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

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


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
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped by the test
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
