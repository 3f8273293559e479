"""Helpers of the service's tests (``tests/serve``)."""


class Clock:
    """A clock the tests move by hand."""

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def two_servers(gpus: int = 8) -> dict:
    """Two equal servers under one switch, no slowdowns: only the estimates tell them apart."""
    node = {"kind": "server", "gpus": gpus, "gpu_type": "A100", "intra_bandwidth_gbps": 2400}
    return {
        "format": "placement-instance/1",
        "name": "two",
        "topology": {
            "nodes": [{"id": "s0", **node}, {"id": "s1", **node}, {"id": "tor", "kind": "switch"}],
            "edges": [
                {"source": "s0", "target": "tor", "bandwidth_gbps": 100},
                {"source": "s1", "target": "tor", "bandwidth_gbps": 100},
            ],
        },
        "jobs": [],
    }


def place_concurrently(replicas, threads: int, per_thread: int, workers: int = 4) -> list[str]:
    """``threads`` threads, spread over ``replicas`` (services on one database), each placing
    ``per_thread`` jobs of ``workers`` GPUs one request at a time; the ids placed.  An error in
    any thread is raised here."""
    import threading

    placed: list[str] = []
    errors: list[BaseException] = []

    def work(svc, first):
        try:
            for k in range(first, first + per_thread):
                job = {"id": f"j{k}", "workers": workers, "compute_ms": 100, "gradient_mb": 50}
                placed.extend(svc.place({"jobs": [job]}, with_explanation=False)["assignment"])
        except BaseException as e:  # surfaced below
            errors.append(e)

    pool = [threading.Thread(target=work, args=(replicas[i % len(replicas)], per_thread * i)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    return placed
