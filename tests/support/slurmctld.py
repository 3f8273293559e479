"""A real ``slurmctld`` on the loopback, for the tests of the Slurm export (a helper, not a
test module).

It runs in the foreground (``slurmctld -D``) on a free port with a ``slurm.conf`` and a
``topology.conf`` written by :mod:`placement.integrations.slurm.write` for an instance, in a temporary
folder: ``auth/none`` and ``cred/none`` (no munge), every node ``State=CLOUD`` with no-op
power-saving programs so that the controller, without any slurmd, schedules on them
(``sbatch --test-only`` evaluates a job against them; ``sbatch --hold`` queues it).  Stopped
by its pid (and the ``slurmscriptd`` it forked, by theirs); nothing else is touched.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from placement.integrations.slurm.write import slurm_conf, topology_conf
from placement.model import Instance

BINARIES = ("slurmctld", "scontrol", "sbatch", "sinfo", "squeue", "scancel")


def missing_binaries() -> list[str]:
    """The Slurm programs the daemon tests need that are not on PATH (slurmctld lives in
    /usr/sbin, which a user's PATH may lack)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/usr/local/sbin"
    return [b for b in BINARIES if shutil.which(b, path=path) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


class Slurmctld:
    """A running controller: ``run(...)`` calls a Slurm client command against it."""

    def __init__(self, instance: Instance, folder: Path) -> None:
        self.folder = folder
        self.state = folder / "state"
        self.state.mkdir(parents=True)
        self.log = folder / "slurmctld.log"
        self.conf = folder / "slurm.conf"
        self.port = _free_port()
        self.conf.write_text(
            slurm_conf(
                instance,
                cluster_name="placement-test",
                control_host=socket.gethostname(),
                control_addr="127.0.0.1",
                port=self.port,
                state_dir=str(self.state),
                log_file=str(self.log),
                slurm_user=getpass.getuser(),
                auth="none",
                node_addr="127.0.0.1",
                cloud=True,
            )
        )
        (folder / "topology.conf").write_text(topology_conf(instance))
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.env["PATH"] = self.env.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/usr/local/sbin"
        for k in [
            k for k in self.env if k.startswith(("SLURM_", "SBATCH_", "SQUEUE_", "SINFO_")) and k != "SLURM_CONF"
        ]:
            del self.env[k]
        self.proc: subprocess.Popen[bytes] | None = None
        self.helpers: list[int] = []

    def start(self, timeout: float = 60.0) -> None:
        with open(self.folder / "slurmctld.out", "wb") as out:
            self.proc = subprocess.Popen(
                ["slurmctld", "-D"], env=self.env, stdout=out, stderr=subprocess.STDOUT, cwd=self.folder
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"slurmctld exited with {self.proc.returncode}:\n{self.output()}")
            r = self.run("scontrol", "ping", check=False)
            if r.returncode == 0 and " is UP" in r.stdout:
                self.helpers = _children(self.proc.pid)
                return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"slurmctld did not answer 'scontrol ping' within {timeout:g} s:\n{self.output()}")

    def output(self) -> str:
        parts = []
        for name in ("slurmctld.out", "slurmctld.log"):
            p = self.folder / name
            if p.exists():
                parts.append(p.read_text(errors="replace").replace("\0", "")[-4000:])
        return "\n".join(parts)

    def run(
        self, *args: str, env: Mapping[str, str] | None = None, check: bool = True, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(
            list(args),
            env={**self.env, **(env or {})},
            cwd=cwd or self.folder,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
        return r

    def stop(self) -> None:
        """Stop the controller this object started (SIGTERM, then SIGKILL after 20 s), and the
        helpers it forked if they outlive it; by pid only."""
        if self.proc is None:
            return
        helpers = self.helpers or _children(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for pid in helpers:
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"slurm" in cmd:
                os.kill(pid, signal.SIGKILL)
        self.proc = None


@contextmanager
def running_slurmctld(instance: Instance, folder: Path) -> Iterator[Slurmctld]:
    """A controller for ``instance``'s cluster, answering ``scontrol ping``; stopped on exit."""
    ctld = Slurmctld(instance, folder)
    try:
        ctld.start()
        yield ctld
    finally:
        ctld.stop()
