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
