"""The Kubernetes scheduler extender: kube-scheduler's JSON (a schema written from
``extender/v1/types.go``: Go field names), a gang placed as a unit at its first pod and each of
its pods pinned to a node of that placement, ``nodeCacheCapable`` both ways, gang sizes posted or
read from the PodGroup, and the calls made the way kube-scheduler makes them (POST to
``urlPrefix/verb``, 5 s timeout) on a real service process."""

import json

import httpx
import jsonschema
import pytest
from fastapi.testclient import TestClient
from support.paths import ROOT

import placement
from placement.bench.serve import start_service, stop_service
from placement.serve import ServeConfig, Service, Store, create_app
from placement.serve.extender import KubernetesPodGroups

SCHEMA = json.loads((ROOT / "tests/data/k8s/kube-scheduler-extender-v1.schema.json").read_text())


def conforms(doc, kind):
    jsonschema.validate(doc, {**SCHEMA, "$ref": f"#/$defs/{kind}"})
    return doc


def pod(name, gpus=8, group=None, volcano=None, ns="ml", **annotations):
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": {}, "annotations": dict(annotations)}
    if group:
        meta["labels"]["scheduling.x-k8s.io/pod-group"] = group
    if volcano:
        meta["annotations"]["scheduling.k8s.io/group-name"] = volcano
    res = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "resources": res}]},
    }


NODES = [f"s{i}" for i in range(16)]  # the demo cluster's servers as node names


def args(p, names=NODES):
    return conforms({"Pod": p, "Nodes": None, "NodeNames": list(names)}, "ExtenderArgs")


@pytest.fixture
def client(tmp_path, clock):
    svc = Service(Store.open(tmp_path / "s.db"), placement.load_bundled("demo"), ServeConfig(), clock)
    with TestClient(create_app(svc)) as c:
        yield c


def filter_(c, a):
    r = c.post("/scheduler/filter", json=a)
    assert r.status_code == 200
    return conforms(r.json(), "ExtenderFilterResult")


def test_a_gang_is_placed_at_its_first_pod_and_each_pod_lands_on_its_node(client):
    r = client.post(
        "/v1/gangs", json={"gang": "ml/bert", "min_member": 4, "job": {"compute_ms": 120, "gradient_mb": 400}}
    )
    assert r.status_code == 200
    pods = [pod(f"bert-{i}", 8, group="bert") for i in range(4)]
    given = []
    for i, p in enumerate(pods):
        out = filter_(client, args(p))
        assert out["Error"] == "" and len(out["NodeNames"]) == 1, out
        (node,) = out["NodeNames"]
        assert set(out["FailedNodes"]) == set(NODES) - {node}
        prio = conforms(client.post("/scheduler/prioritize", json=args(p)).json(), "HostPriorityList")
        assert {h["Host"]: h["Score"] for h in prio} == {n: 10 if n == node else 0 for n in NODES}
        given.append(node)
        state = client.get("/v1/state").json()
        assert state["jobs"]["ml/bert"]["state"] == ("running" if i == 3 else "reserved")
    assert len(set(given)) == 4  # four pods of 8 GPUs: four whole servers
    assert state["assignment"]["ml/bert"] == dict.fromkeys(given, 8)
    assert filter_(client, args(pods[1]))["NodeNames"] == [given[1]]  # asked again: the same node
    assert client.post("/v1/jobs/ml/bert/finish").json()["state"] == "finished"
    assert all(n == 8 for n in client.get("/v1/state").json()["free_gpus"].values())


def test_node_lists_are_answered_with_node_lists(client):
    items = [{"metadata": {"name": n, "labels": {"x": "y"}}, "status": {}} for n in NODES]
    a = conforms(
        {"Pod": pod("solo", 2), "Nodes": {"apiVersion": "v1", "kind": "NodeList", "items": items}, "NodeNames": None},
        "ExtenderArgs",
    )
    out = filter_(client, a)
    assert out["NodeNames"] is None and len(out["Nodes"]["items"]) == 1
    (item,) = out["Nodes"]["items"]
    assert item in items and out["Nodes"]["kind"] == "NodeList"
    assert client.get("/v1/state").json()["assignment"] == {"ml/solo": {item["metadata"]["name"]: 2}}


class StubApi:
    """The CustomObjectsApi call, with only Volcano's PodGroup there."""

    class NotFound(Exception):
        status = 404

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        if group == "scheduling.volcano.sh" and (namespace, name) == ("ml", "resnet"):
            return {"spec": {"minMember": 8}}
        raise self.NotFound()


def test_a_volcano_gang_takes_its_size_from_the_podgroup(tmp_path, clock):
    svc = Service(Store.open(tmp_path / "s.db"), placement.load_bundled("demo"), ServeConfig(), clock)
    with TestClient(create_app(svc, KubernetesPodGroups(api=StubApi()))) as c:
        nodes = {filter_(c, args(pod(f"r{i}", 1, volcano="resnet")))["NodeNames"][0] for i in range(8)}
        held = c.get("/v1/state").json()["assignment"]["ml/resnet"]
        assert sum(held.values()) == 8 and nodes == set(held)  # eight 1-GPU pods where the gang was placed
        # a group whose size nobody knows: every node fails, saying how to give it
        out = filter_(c, args(pod("x0", 1, group="mystery")))
        assert out["NodeNames"] == [] and "post it to /v1/gangs" in out["FailedNodes"]["s0"]


def test_pods_of_no_gang_no_gpu_or_too_big_a_gang(client):
    out = filter_(client, args(pod("web", 0)))
    assert out["NodeNames"] == NODES and out["FailedNodes"] == {}  # not the extender's
    out = filter_(client, args(pod("single", 4)))
    assert len(out["NodeNames"]) == 1  # a gang of one
    client.post("/v1/gangs", json={"gang": "ml/huge", "min_member": 100, "job": {}})
    out = filter_(client, args(pod("huge-0", 8, group="huge")))
    assert out["NodeNames"] == [] and "does not fit" in out["FailedNodes"]["s3"]
    out = filter_(client, {"Pod": "nope"})
    assert out["Error"] and out["NodeNames"] is None
    assert client.post("/v1/gangs", json={"gang": "nope", "min_member": 0}).status_code == 422


def test_kube_scheduler_calls_a_real_service_at_url_prefix_and_verb_within_5_s(tmp_path):
    proc, url = start_service(tmp_path / "s.sqlite", "demo")
    prefix = f"{url}/scheduler"  # the extenders stanza's urlPrefix
    try:
        with httpx.Client(timeout=5.0) as c:
            assert (
                c.post(
                    f"{url}/v1/gangs", json={"gang": "ml/gpt", "min_member": 2, "job": {"gradient_mb": 800}}
                ).status_code
                == 200
            )
            got = []
            for i in range(2):
                a = args(pod(f"gpt-{i}", 8, group="gpt"))
                f = conforms(c.post(f"{prefix}/filter", json=a).json(), "ExtenderFilterResult")
                p = conforms(c.post(f"{prefix}/prioritize", json=a).json(), "HostPriorityList")
                assert [h["Host"] for h in p if h["Score"] == 10] == f["NodeNames"]
                got += f["NodeNames"]
            assert len(set(got)) == 2
    finally:
        stop_service(proc)
