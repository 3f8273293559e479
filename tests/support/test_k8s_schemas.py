"""The test-side Kubernetes validators themselves: objects a real API server accepts pass, and
each kind of refusal (unknown field, wrong type, bad enum, bad name, CEL rule, Pod rule) is
reported at its path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
import yaml

from support import k8s_schemas as ks
from support.k8s_schemas import CRD_DIR, validate, validate_against_schema, validate_builtin, validate_custom

Obj = dict[str, Any]


def mutated(obj: Obj, change: Callable[[Obj], object]) -> Obj:
    out = copy.deepcopy(obj)
    change(out)
    return out


def refused_at(problems: list[str], path: str) -> bool:
    """Some problem names exactly ``path`` (``spec.foo: ...``)."""
    return any(p.startswith(f"{path}: ") for p in problems)


def pinned(node: str) -> Obj:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def container(gpus: int = 8) -> Obj:
    return {"name": "trainer", "image": "pytorch/pytorch:2.4.0", "resources": {"limits": {"nvidia.com/gpu": gpus}}}


# ----------------------------------------------------------------------------------------------
# the shipped CRDs


def test_the_six_crds_are_shipped_with_licence_and_notice():
    files = sorted(p.name for p in CRD_DIR.glob("*.yaml"))
    assert len(files) == 6
    notice = (CRD_DIR / "NOTICE.md").read_text(encoding="utf-8")
    assert "Apache" in notice and "unchanged" in notice
    assert "Apache License" in (CRD_DIR / "LICENSE-Apache-2.0").read_text(encoding="utf-8")
    for name in files:
        assert f"`{name}`" in notice, name
        (doc,) = list(yaml.safe_load_all((CRD_DIR / name).read_text(encoding="utf-8")))
        assert doc["kind"] == "CustomResourceDefinition"
        assert name == f"{doc['spec']['group']}_{doc['spec']['names']['plural']}.yaml"


def test_every_served_version_is_known():
    assert set(ks.crd_kinds()) == {
        ("batch.volcano.sh/v1alpha1", "Job"),
        ("scheduling.volcano.sh/v1beta1", "PodGroup"),
        ("topology.volcano.sh/v1alpha1", "HyperNode"),
        ("scheduling.x-k8s.io/v1alpha1", "PodGroup"),
        ("kueue.x-k8s.io/v1beta1", "Topology"),
        ("kueue.x-k8s.io/v1beta2", "Topology"),
        ("kueue.x-k8s.io/v1beta1", "ResourceFlavor"),
        ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"),
    }


def test_every_cel_rule_that_runs_on_create_is_translated():
    # a CRD update that brings a new rule must bring its translation (or say it is not checked)
    assert ks.untranslated_cel_rules() == []


def test_unknown_kind_or_version_is_refused():
    assert validate_custom({"apiVersion": "batch.volcano.sh/v1", "kind": "Job", "metadata": {"name": "a"}})
    assert validate_custom({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}})
    assert validate_custom({"kind": "Job"})


# ----------------------------------------------------------------------------------------------
# Volcano Job

VOLCANO_JOB: Obj = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "llama-70b", "namespace": "training", "labels": {"placement/job": "llama-70b"}},
    "spec": {
        "minAvailable": 2,
        "schedulerName": "volcano",
        "queue": "default",
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {
                    "metadata": {"annotations": {"placement/rank": "0"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [container()],
                        "affinity": pinned("gpu-node-01"),
                    },
                },
            }
        ],
    },
}


def test_a_minimal_volcano_job_is_accepted():
    assert validate_custom(VOLCANO_JOB) == []
    assert validate(VOLCANO_JOB) == []
    ks.assert_accepted(VOLCANO_JOB)


def _task(job: Obj) -> Obj:
    return job["spec"]["tasks"][0]


def _pod(job: Obj) -> Obj:
    return _task(job)["template"]["spec"]


VOLCANO_REFUSALS: list[tuple[str, Callable[[Obj], object], str]] = [
    ("unknown spec field", lambda j: j["spec"].update(gangSize=2), "spec.gangSize"),
    ("unknown nested field", lambda j: j["spec"]["networkTopology"].update(tier=1), "spec.networkTopology.tier"),
    (
        "unknown container field",
        lambda j: _pod(j)["containers"][0].update(gpu=8),
        "spec.tasks[0].template.spec.containers[0].gpu",
    ),
    ("unknown metadata field", lambda j: j["metadata"].update(owner="me"), "metadata.owner"),
    ("wrong type", lambda j: j["spec"].update(minAvailable="2"), "spec.minAvailable"),
    ("float for an integer", lambda j: _task(j).update(replicas=2.0), "spec.tasks[0].replicas"),
    ("int32 overflow", lambda j: _task(j).update(replicas=2**31), "spec.tasks[0].replicas"),
    ("below minimum", lambda j: j["spec"].update(minAvailable=-1), "spec.minAvailable"),
    ("bad enum", lambda j: j["spec"]["networkTopology"].update(mode="strict"), "spec.networkTopology.mode"),
    ("null where not nullable", lambda j: j["spec"].update(queue=None), "spec.queue"),
    ("pattern", lambda j: _task(j).update(name="Worker_0"), "spec.tasks[0].name"),
    ("bad name", lambda j: j["metadata"].update(name="My_Job"), "metadata.name"),
    ("name too long", lambda j: j["metadata"].update(name="a" * 254), "metadata.name"),
    ("bad namespace", lambda j: j["metadata"].update(namespace="Training"), "metadata.namespace"),
    ("no name", lambda j: j["metadata"].pop("name"), "metadata.name"),
    ("bad label key", lambda j: j["metadata"]["labels"].update({"-x/y": "1"}), "metadata.labels[-x/y]"),
    ("bad label value", lambda j: j["metadata"]["labels"].update(app="a b"), "metadata.labels.app"),
    ("label value too long", lambda j: j["metadata"]["labels"].update(app="a" * 64), "metadata.labels.app"),
    ("labels not strings", lambda j: j["metadata"]["labels"].update(rank=0), "metadata.labels.rank"),
    (
        "bad template annotation key",
        lambda j: _task(j)["template"]["metadata"]["annotations"].update({"a/b/c": "x"}),
        "spec.tasks[0].template.metadata.annotations[a/b/c]",
    ),
    (
        "duplicate container name",
        lambda j: _pod(j)["containers"].append(container()),
        "spec.tasks[0].template.spec.containers[1]",
    ),
    ("no containers", lambda j: _pod(j).update(containers=[]), "spec.tasks[0].template.spec.containers"),
    (
        "container without a name",
        lambda j: _pod(j)["containers"][0].pop("name"),
        "spec.tasks[0].template.spec.containers[0].name",
    ),
    (
        "GPU request above its limit",
        lambda j: _pod(j)["containers"][0]["resources"].update(requests={"nvidia.com/gpu": 9}),
        "spec.tasks[0].template.spec.containers[0].resources.requests[nvidia.com/gpu]",
    ),
    (
        "fractional GPU",
        lambda j: _pod(j)["containers"][0]["resources"].update(limits={"nvidia.com/gpu": "500m"}),
        "spec.tasks[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]",
    ),
    (
        "quantity that is not one",
        lambda j: _pod(j)["containers"][0]["resources"].update(limits={"cpu": "4 cores"}),
        "spec.tasks[0].template.spec.containers[0].resources.limits.cpu",
    ),
    (
        "In without values",
        lambda j: _pod(j)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]["matchExpressions"][0].pop("values"),
        "spec.tasks[0].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].values",
    ),
    (
        "unknown operator",
        lambda j: _pod(j)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]["matchExpressions"][0].update(operator="Equals"),
        "spec.tasks[0].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].operator",
    ),
    (
        "duplicate list-map key",
        lambda j: _pod(j)["containers"][0].update(ports=[{"containerPort": 1}, {"containerPort": 1}]),
        "spec.tasks[0].template.spec.containers[0].ports[1]",
    ),
]


@pytest.mark.parametrize(("change", "path"), [c[1:] for c in VOLCANO_REFUSALS], ids=[c[0] for c in VOLCANO_REFUSALS])
def test_a_volcano_job_is_refused_at_the_path_of_the_fault(change, path):
    problems = validate_custom(mutated(VOLCANO_JOB, change))
    assert refused_at(problems, path), problems


def test_every_problem_is_reported_not_just_the_first():
    def break_three(j: Obj) -> None:
        j["spec"]["gangSize"] = 2
        j["spec"]["networkTopology"]["mode"] = "strict"
        j["metadata"]["name"] = "My_Job"

    problems = validate_custom(mutated(VOLCANO_JOB, break_three))
    assert len(problems) == 3, problems
    assert problems[0].startswith("metadata.name: ")  # sorted by path


def test_defaulted_required_fields_and_quantities_as_numbers_are_accepted():
    job = mutated(VOLCANO_JOB, lambda j: j["spec"].pop("queue"))  # default: "default"
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": 8}
    assert validate_custom(job) == []


# ----------------------------------------------------------------------------------------------
# HyperNode, PodGroups

HYPERNODE: Obj = {
    "apiVersion": "topology.volcano.sh/v1alpha1",
    "kind": "HyperNode",
    "metadata": {"name": "rack-0"},
    "spec": {
        "tier": 1,
        "members": [
            {"type": "Node", "selector": {"exactMatch": {"name": "gpu-node-01"}}},
            {"type": "Node", "selector": {"regexMatch": {"pattern": "^gpu-node-1[0-9]$"}}},
        ],
    },
}
HYPERNODE_REFUSALS = [
    ("bad member type", lambda h: h["spec"]["members"][0].update(type="Switch"), "spec.members[0].type"),
    ("missing tier", lambda h: h["spec"].pop("tier"), "spec.tier"),
    ("tier not an integer", lambda h: h["spec"].update(tier="1"), "spec.tier"),
    (
        "two selectors (CEL)",
        lambda h: h["spec"]["members"][0]["selector"].update(regexMatch={"pattern": "x"}),
        "spec.members[0].selector",
    ),
    ("no selector (CEL)", lambda h: h["spec"]["members"][0].update(selector={}), "spec.members[0].selector"),
    (
        "unknown selector field",
        lambda h: h["spec"]["members"][0]["selector"]["exactMatch"].update(rack=1),
        "spec.members[0].selector.exactMatch.rack",
    ),
    ("namespace on a cluster-scoped kind", lambda h: h["metadata"].update(namespace="default"), "metadata.namespace"),
]

VOLCANO_PODGROUP: Obj = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "llama-70b", "namespace": "training"},
    "spec": {"minMember": 2, "minResources": {"nvidia.com/gpu": 16, "cpu": "8"}, "networkTopology": {"mode": "soft"}},
}
VOLCANO_PODGROUP_REFUSALS = [
    ("bad enum", lambda g: g["spec"]["networkTopology"].update(mode="strict"), "spec.networkTopology.mode"),
    ("quantity neither int nor string", lambda g: g["spec"]["minResources"].update(cpu=[8]), "spec.minResources.cpu"),
    ("unknown field", lambda g: g["spec"].update(minGPUs=16), "spec.minGPUs"),
]

COSCHEDULING_PODGROUP: Obj = {
    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": {"name": "llama-70b", "namespace": "training"},
    "spec": {"minMember": 2, "minResources": {"nvidia.com/gpu": 16, "memory": "64Gi"}, "scheduleTimeoutSeconds": 60},
}
COSCHEDULING_PODGROUP_REFUSALS = [
    ("below minimum", lambda g: g["spec"].update(minMember=0), "spec.minMember"),
    ("wrong type", lambda g: g["spec"].update(minMember="2"), "spec.minMember"),
    ("quantity pattern", lambda g: g["spec"]["minResources"].update(memory="64 GB"), "spec.minResources.memory"),
    ("unknown field", lambda g: g["spec"].update(queue="default"), "spec.queue"),
    ("bad name", lambda g: g["metadata"].update(name="Llama"), "metadata.name"),
]


@pytest.mark.parametrize("obj", [HYPERNODE, VOLCANO_PODGROUP, COSCHEDULING_PODGROUP], ids=lambda o: o["apiVersion"])
def test_hypernode_and_podgroups_are_accepted(obj):
    assert validate_custom(obj) == []


@pytest.mark.parametrize(
    ("obj", "change", "path"),
    [(HYPERNODE, *c[1:]) for c in HYPERNODE_REFUSALS]
    + [(VOLCANO_PODGROUP, *c[1:]) for c in VOLCANO_PODGROUP_REFUSALS]
    + [(COSCHEDULING_PODGROUP, *c[1:]) for c in COSCHEDULING_PODGROUP_REFUSALS],
    ids=[f"HyperNode-{c[0]}" for c in HYPERNODE_REFUSALS]
    + [f"volcano-PodGroup-{c[0]}" for c in VOLCANO_PODGROUP_REFUSALS]
    + [f"coscheduling-PodGroup-{c[0]}" for c in COSCHEDULING_PODGROUP_REFUSALS],
)
def test_hypernode_and_podgroups_are_refused_at_the_path_of_the_fault(obj, change, path):
    problems = validate_custom(mutated(obj, change))
    assert refused_at(problems, path), problems


# ----------------------------------------------------------------------------------------------
# Kueue Topology and ResourceFlavor, every served version

KUEUE_VERSIONS = ks.crd_versions("kueue.x-k8s.io", "Topology")


def test_kueue_serves_both_versions():
    assert KUEUE_VERSIONS == ["v1beta1", "v1beta2"]
    assert ks.crd_versions("kueue.x-k8s.io", "ResourceFlavor") == KUEUE_VERSIONS


def topology(version: str) -> Obj:
    levels = [{"nodeLabel": "cloud.example.com/topology-block"}, {"nodeLabel": "kubernetes.io/hostname"}]
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Topology",
        "metadata": {"name": "gpu-fabric"},
        "spec": {"levels": levels},
    }


def flavor(version: str) -> Obj:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100"},
        "spec": {
            "nodeLabels": {"gpu.example.com/type": "h100"},
            "topologyName": "gpu-fabric",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


TOPOLOGY_REFUSALS = [
    ("hostname not lowest (CEL)", lambda t: t["spec"]["levels"].reverse(), "spec.levels"),
    (
        "duplicate level (CEL)",
        lambda t: t["spec"]["levels"].insert(0, {"nodeLabel": "kubernetes.io/hostname"}),
        "spec.levels",
    ),
    ("no levels", lambda t: t["spec"].update(levels=[]), "spec.levels"),
    (
        "too many levels",
        lambda t: t["spec"].update(levels=[{"nodeLabel": f"x/l{i}"} for i in range(17)]),
        "spec.levels",
    ),
    ("bad label pattern", lambda t: t["spec"]["levels"][0].update(nodeLabel="a b"), "spec.levels[0].nodeLabel"),
    ("unknown level field", lambda t: t["spec"]["levels"][0].update(name="block"), "spec.levels[0].name"),
    ("missing levels", lambda t: t.update(spec={}), "spec.levels"),
]
FLAVOR_REFUSALS = [
    ("topology without node labels (CEL)", lambda f: f["spec"].pop("nodeLabels"), "spec"),
    ("bad toleration operator (CEL)", lambda f: f["spec"]["tolerations"][0].update(operator="In"), "spec.tolerations"),
    ("value with Exists (CEL)", lambda f: f["spec"]["tolerations"][0].update(value="x"), "spec.tolerations"),
    (
        "bad taint effect (CEL)",
        lambda f: f["spec"].update(nodeTaints=[{"key": "a", "effect": "Never"}]),
        "spec.nodeTaints",
    ),
    (
        "too many node labels",
        lambda f: f["spec"].update(nodeLabels={f"l{i}": "x" for i in range(9)}),
        "spec.nodeLabels",
    ),
    ("bad topology name", lambda f: f["spec"].update(topologyName="GPU_fabric"), "spec.topologyName"),
    ("unknown field", lambda f: f["spec"].update(gpuType="h100"), "spec.gpuType"),
]


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
@pytest.mark.parametrize("make", [topology, flavor], ids=["Topology", "ResourceFlavor"])
def test_kueue_objects_are_accepted(make, version):
    assert validate_custom(make(version)) == []


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
@pytest.mark.parametrize(
    ("make", "change", "path"),
    [(topology, *c[1:]) for c in TOPOLOGY_REFUSALS] + [(flavor, *c[1:]) for c in FLAVOR_REFUSALS],
    ids=[f"Topology-{c[0]}" for c in TOPOLOGY_REFUSALS] + [f"ResourceFlavor-{c[0]}" for c in FLAVOR_REFUSALS],
)
def test_kueue_objects_are_refused_at_the_path_of_the_fault(make, version, change, path):
    problems = validate_custom(mutated(make(version), change))
    assert refused_at(problems, path), problems


# ----------------------------------------------------------------------------------------------
# the OpenAPI extensions, on a schema of our own

EXTENSIONS_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["port"],
            "properties": {
                "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "comment": {"type": "string", "nullable": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "empty": {"type": "object"},
                "started": {"type": "string", "format": "date-time"},
                "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
                },
            },
        },
    },
}
EXTENDED: Obj = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w"},
    "spec": {
        "port": "http",
        "comment": None,
        "free": {"anything": {"goes": [1, "x"]}},
        "empty": {},
        "started": "2026-08-01T12:00:00Z",
        "ratio": 0.5,
        "tags": ["a", "b"],
        "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "spec": {"size": 1}},
    },
}
EXTENSION_REFUSALS = [
    ("int-or-string given a list", lambda w: w["spec"].update(port=[80]), "spec.port"),
    ("int-or-string given a float", lambda w: w["spec"].update(port=80.5), "spec.port"),
    ("missing required", lambda w: w["spec"].pop("port"), "spec.port"),
    ("object without properties has no fields", lambda w: w["spec"]["empty"].update(x=1), "spec.empty.x"),
    ("bad date-time", lambda w: w["spec"].update(started="yesterday"), "spec.started"),
    ("OpenAPI v3.0 exclusiveMinimum", lambda w: w["spec"].update(ratio=0), "spec.ratio"),
    ("duplicate in a set", lambda w: w["spec"].update(tags=["a", "a"]), "spec.tags[1]"),
    ("embedded resource without kind", lambda w: w["spec"]["template"].pop("kind"), "spec.template.kind"),
    ("embedded resource unknown field", lambda w: w["spec"]["template"].update(status={}), "spec.template.status"),
    (
        "embedded resource bad metadata",
        lambda w: w["spec"]["template"]["metadata"].update(nam="c"),
        "spec.template.metadata.nam",
    ),
    (
        "embedded resource bad label",
        lambda w: w["spec"]["template"]["metadata"].update(labels={"a": "b c"}),
        "spec.template.metadata.labels.a",
    ),
]


def test_the_openapi_extensions_are_honoured():
    assert validate_against_schema(EXTENDED, EXTENSIONS_SCHEMA) == []
    assert validate_against_schema(mutated(EXTENDED, lambda w: w["spec"].update(port=8080)), EXTENSIONS_SCHEMA) == []


@pytest.mark.parametrize(
    ("change", "path"), [c[1:] for c in EXTENSION_REFUSALS], ids=[c[0] for c in EXTENSION_REFUSALS]
)
def test_the_openapi_extensions_refuse(change, path):
    problems = validate_against_schema(mutated(EXTENDED, change), EXTENSIONS_SCHEMA)
    assert refused_at(problems, path), problems


def test_the_crd_schemas_are_not_modified_by_the_checks():
    before = yaml.safe_load((CRD_DIR / "batch.volcano.sh_jobs.yaml").read_text(encoding="utf-8"))
    assert validate_custom(VOLCANO_JOB) == []
    assert ks._crds()[("batch.volcano.sh", "Job")] == before


# ----------------------------------------------------------------------------------------------
# built-in kinds through the kubernetes client's models


@pytest.fixture(scope="module")
def kubernetes_client():
    return pytest.importorskip("kubernetes", reason="the built-in checks use the official kubernetes client")


POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "llama-70b-0",
        "namespace": "training",
        "labels": {"scheduling.x-k8s.io/pod-group": "llama-70b"},
        "annotations": {"placement/rank": "0"},
    },
    "spec": {
        "schedulerName": "scheduler-plugins-scheduler",
        "restartPolicy": "Never",
        "containers": [
            {
                **container(),
                "env": [{"name": "RANK", "value": "0"}],
                "ports": [{"containerPort": 29500, "name": "c10d"}],
                "resources": {"limits": {"nvidia.com/gpu": 8, "cpu": "32"}, "requests": {"cpu": 16, "memory": "256Gi"}},
            }
        ],
        "affinity": pinned("gpu-node-01"),
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    },
}

KUEUE_JOB: Obj = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "llama-70b", "namespace": "training", "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"}},
    "spec": {
        "parallelism": 2,
        "completions": 2,
        "completionMode": "Indexed",
        "suspend": True,
        "template": {
            "metadata": {
                "annotations": {"kueue.x-k8s.io/podset-required-topology": "cloud.example.com/topology-block"}
            },
            "spec": {"restartPolicy": "Never", "containers": [container()]},
        },
    },
}

NODE_LIST: Obj = {
    "apiVersion": "v1",
    "kind": "NodeList",
    "metadata": {},
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"gpu-node-0{i}", "labels": {"kubernetes.io/hostname": f"gpu-node-0{i}"}},
            "status": {"capacity": {"nvidia.com/gpu": "8", "cpu": 64}, "allocatable": {"nvidia.com/gpu": 8}},
        }
        for i in (1, 2)
    ],
}

POD_LIST: Obj = {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [POD]}


@pytest.mark.parametrize(
    "obj",
    [POD, KUEUE_JOB, NODE_LIST, NODE_LIST["items"][0], POD_LIST],
    ids=["Pod", "Job", "NodeList", "Node", "PodList"],
)
def test_builtin_objects_are_accepted(kubernetes_client, obj):
    assert validate_builtin(obj) == []
    assert validate(obj) == []


def _ctr(obj: Obj) -> Obj:
    spec = obj["spec"]["template"]["spec"] if obj["kind"] == "Job" else obj["spec"]
    return spec["containers"][0]


BUILTIN_REFUSALS = [
    (POD, "unknown spec field", lambda p: p["spec"].update(gpus=8), "spec.gpus"),
    (POD, "unknown container field", lambda p: _ctr(p).update(gpu=8), "spec.containers[0].gpu"),
    (
        POD,
        "unknown affinity field",
        lambda p: p["spec"]["affinity"].update(rackAffinity={}),
        "spec.affinity.rackAffinity",
    ),
    (POD, "unknown metadata field", lambda p: p["metadata"].update(rank=0), "metadata.rank"),
    (POD, "missing container name", lambda p: _ctr(p).pop("name"), "spec.containers[0].name"),
    (POD, "missing containers", lambda p: p["spec"].pop("containers"), "spec.containers"),
    (
        POD,
        "string for an integer",
        lambda p: _ctr(p)["ports"][0].update(containerPort="29500"),
        "spec.containers[0].ports[0].containerPort",
    ),
    (
        POD,
        "port out of range",
        lambda p: _ctr(p)["ports"][0].update(containerPort=70000),
        "spec.containers[0].ports[0].containerPort",
    ),
    (POD, "integer for a string", lambda p: _ctr(p)["env"][0].update(value=0), "spec.containers[0].env[0].value"),
    (POD, "object for a list", lambda p: _ctr(p).update(env={"RANK": "0"}), "spec.containers[0].env"),
    (
        POD,
        "bad quantity",
        lambda p: _ctr(p)["resources"]["limits"].update(cpu="lots"),
        "spec.containers[0].resources.limits.cpu",
    ),
    (
        POD,
        "request above limit",
        lambda p: _ctr(p)["resources"]["requests"].update(cpu="64"),
        "spec.containers[0].resources.requests.cpu",
    ),
    (POD, "bad name", lambda p: p["metadata"].update(name="Rank_0"), "metadata.name"),
    (POD, "bad label value", lambda p: p["metadata"]["labels"].update(app="a/b"), "metadata.labels.app"),
    (POD, "bad restart policy", lambda p: p["spec"].update(restartPolicy="Sometimes"), "spec.restartPolicy"),
    (POD, "bad toleration", lambda p: p["spec"]["tolerations"][0].update(value="x"), "spec.tolerations[0].value"),
    (POD, "null", lambda p: p["spec"].update(nodeName=None), "spec.nodeName"),
    (POD, "wrong kind", lambda p: p.update(kind="Pods"), "(root)"),
    (KUEUE_JOB, "unknown job field", lambda j: j["spec"].update(queue="gpu-queue"), "spec.queue"),
    (
        KUEUE_JOB,
        "missing template container name",
        lambda j: _ctr(j).pop("name"),
        "spec.template.spec.containers[0].name",
    ),
    (
        KUEUE_JOB,
        "restartPolicy Always",
        lambda j: j["spec"]["template"]["spec"].update(restartPolicy="Always"),
        "spec.template.spec.restartPolicy",
    ),
    (
        KUEUE_JOB,
        "no restartPolicy",
        lambda j: j["spec"]["template"]["spec"].pop("restartPolicy"),
        "spec.template.spec.restartPolicy",
    ),
    (KUEUE_JOB, "name longer than a label value", lambda j: j["metadata"].update(name="j" * 64), "metadata.name"),
    (KUEUE_JOB, "boolean given as a string", lambda j: j["spec"].update(suspend="true"), "spec.suspend"),
    (
        KUEUE_JOB,
        "bad template annotation key",
        lambda j: j["spec"]["template"]["metadata"]["annotations"].update({"kueue.x-k8s.io/": "x"}),
        "spec.template.metadata.annotations[kueue.x-k8s.io/]",
    ),
    (NODE_LIST, "unknown node field", lambda n: n["items"][0]["status"].update(gpus=8), "items[0].status.gpus"),
    (
        NODE_LIST,
        "namespace on a node",
        lambda n: n["items"][1]["metadata"].update(namespace="x"),
        "items[1].metadata.namespace",
    ),
    (NODE_LIST, "item of another kind", lambda n: n["items"][0].update(kind="Pod"), "items[0].kind"),
    (NODE_LIST, "node without a name", lambda n: n["items"][0]["metadata"].pop("name"), "items[0].metadata.name"),
    (
        POD_LIST,
        "pod in a list without container name",
        lambda p: _ctr(p["items"][0]).pop("name"),
        "items[0].spec.containers[0].name",
    ),
]


@pytest.mark.parametrize(
    ("obj", "change", "path"),
    [(c[0], *c[2:]) for c in BUILTIN_REFUSALS],
    ids=[f"{c[0]['kind']}-{c[1]}" for c in BUILTIN_REFUSALS],
)
def test_builtin_objects_are_refused_at_the_path_of_the_fault(kubernetes_client, obj, change, path):
    problems = validate_builtin(mutated(obj, change))
    assert refused_at(problems, path), problems


def test_the_clients_own_validation_runs(kubernetes_client, monkeypatch):
    # an int-or-string port is typed `object` in the client; its model refuses a list
    pod = mutated(POD, lambda p: _ctr(p).update(livenessProbe={"httpGet": {"port": [8080]}}))
    problems = validate_builtin(pod)
    assert len(problems) == 1 and "kubernetes client refused it" in problems[0], problems
    # and it is the deserializer that is asked
    calls = []
    monkeypatch.setattr(ks, "_deserialize", lambda data, type_name: calls.append(type_name))
    assert validate_builtin(POD) == [] and calls == ["V1Pod"]


def test_an_unsupported_builtin_kind_is_refused(kubernetes_client):
    assert validate_builtin({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "a"}})


# ----------------------------------------------------------------------------------------------
# the name rules and quantities


@pytest.mark.parametrize(
    ("check", "value", "ok"),
    [
        (ks.is_dns_label, "gpu-node-01", True),
        (ks.is_dns_label, "a" * 63, True),
        (ks.is_dns_label, "a" * 64, False),
        (ks.is_dns_label, "Node", False),
        (ks.is_dns_label, "-a", False),
        (ks.is_dns_label, "a.b", False),
        (ks.is_dns_label, "", False),
        (ks.is_dns_label, "a\n", False),
        (ks.is_dns_subdomain, "rack-0.pod-1", True),
        (ks.is_dns_subdomain, "a" * 253, True),
        (ks.is_dns_subdomain, "a" * 254, False),
        (ks.is_dns_subdomain, "a..b", False),
        (ks.is_qualified_name, "kubernetes.io/hostname", True),
        (ks.is_qualified_name, "kueue.x-k8s.io/podset-required-topology", True),
        (ks.is_qualified_name, "Rank_0.x", True),
        (ks.is_qualified_name, "a/" + "b" * 64, False),
        (ks.is_qualified_name, "A.io/x", False),
        (ks.is_qualified_name, "/x", False),
        (ks.is_qualified_name, "x/", False),
        (ks.is_qualified_name, "a/b/c", False),
        (ks.is_label_value, "", True),
        (ks.is_label_value, "H100_80GB", True),
        (ks.is_label_value, "a b", False),
        (ks.is_label_value, "x" * 64, False),
    ],
)
def test_name_rules(check, value, ok):
    assert check(value) is ok


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (8, Decimal(8)),
        ("8", Decimal(8)),
        ("500m", Decimal("0.5")),
        ("16Gi", Decimal(16 * 2**30)),
        ("1e3", Decimal(1000)),
        ("1E", Decimal(10**18)),
        ("0.5", Decimal("0.5")),
        ("4 cores", None),
        ("", None),
        (True, None),
        ([8], None),
    ],
)
def test_quantities(raw, value):
    assert ks.quantity(raw) == value
