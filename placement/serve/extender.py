"""The Kubernetes scheduler extender: kube-scheduler's ``extenders`` stanza points its filter and
prioritize calls here (``urlPrefix: http://HOST:PORT/scheduler``, ``filterVerb: filter``,
``prioritizeVerb: prioritize``), and every GPU pod of a gang lands where the gang's placement
put it.

The JSON is ``k8s.io/kube-scheduler/extender/v1``'s, whose Go types carry no json tags: the
keys are the Go field names (``Pod``, ``Nodes``, ``NodeNames``; ``FailedNodes``,
``FailedAndUnresolvableNodes``, ``Error``; ``Host``, ``Score``).  ``nodeCacheCapable`` either
way: a call with ``NodeNames`` is answered with ``NodeNames``, one with a ``NodeList`` with the
``NodeList``'s items that pass.

- A pod's **gang** is its PodGroup: the label ``scheduling.x-k8s.io/pod-group``
  (scheduler-plugins' coscheduling) or the annotation ``scheduling.k8s.io/group-name``
  (Volcano); a pod of no group is a gang of one.  The gang's **size** is the PodGroup's
  ``minMember``: posted to ``POST /v1/gangs`` (with the job's ``compute_ms``, ``gradient_mb``
  and any other job field), or read from the PodGroup with the Kubernetes client
  (:class:`KubernetesPodGroups`, ``placement serve --kubernetes``).
- Its **job**: ``size`` pods of ``g`` GPUs each (``nvidia.com/gpu``, limits or requests); with
  ``g > 1`` a hybrid job of ``tp = g`` (a pod's GPUs on one node), ``pp = 1``, ``dp = size``.
  ``compute_ms``, ``gradient_mb``, ``iterations`` come from the posted gang, else the pod's
  annotations ``placement.io/compute-ms``, ``placement.io/gradient-mb``,
  ``placement.io/iterations``, else :data:`placement.serve.service.DEFAULT_JOB`.
- At the gang's first pod the service places the whole gang (one decision of
  :meth:`Service.place`, reserved); each pod is then **pinned** to a node of the placement with
  a planned slot left (the candidates first), and filter passes that node alone; prioritize
  scores it :data:`MAX_PRIORITY`, the rest 0.  A pod asked about again keeps its node.  Once
  every pod of the gang is pinned the job counts as started; finishing or releasing the job
  (``/v1/jobs/{gang}/finish``) frees its GPUs and pins.
- A pod that asks for no GPU is not the extender's: every candidate passes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from placement.errors import InvalidInputError
from placement.serve.config import Conflict, gang_job
from placement.serve.service import Service

try:
    import sqlalchemy as sa
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.serve.store import ACTIVE, gangs, holdings, jobs, pods

__all__ = [
    "Extender",
    "PodGroups",
    "KubernetesPodGroups",
    "GANG_LABEL",
    "VOLCANO_GROUP_ANNOTATION",
    "GPU_RESOURCE",
    "MAX_PRIORITY",
]

GANG_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
GPU_RESOURCE = "nvidia.com/gpu"
MAX_PRIORITY = 10
"""kube-scheduler's ``MaxExtenderPriority``."""
JOB_ANNOTATIONS = {
    "placement.io/compute-ms": "compute_ms",
    "placement.io/gradient-mb": "gradient_mb",
    "placement.io/iterations": "iterations",
}


class PodGroups(Protocol):
    """Where a PodGroup's ``minMember`` is read."""

    def min_member(self, namespace: str, name: str) -> int | None: ...


class KubernetesPodGroups:
    """``minMember`` of scheduler-plugins' or Volcano's PodGroup, read with the official client
    (in-cluster configuration, else the kubeconfig); ``api`` may be given (a
    ``CustomObjectsApi`` or anything with its ``get_namespaced_custom_object``)."""

    KINDS = (("scheduling.x-k8s.io", "v1alpha1", "podgroups"), ("scheduling.volcano.sh", "v1beta1", "podgroups"))

    def __init__(self, api: Any = None) -> None:
        if api is None:
            from kubernetes import client, config

            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
            api = client.CustomObjectsApi()
        self.api = api

    def min_member(self, namespace: str, name: str) -> int | None:
        for group, version, plural in self.KINDS:
            try:
                obj = self.api.get_namespaced_custom_object(group, version, namespace, plural, name)
            except Exception as e:  # not found, or that API not installed: try the next kind
                if getattr(e, "status", None) not in (403, 404):
                    raise
                continue
            n = (obj.get("spec") or {}).get("minMember")
            if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
                return n
        return None


def _obj(x: Any, key: str) -> Mapping[str, Any]:
    """``x[key]`` when both are objects, else an empty one (a pod is read leniently)."""
    v = x.get(key) if isinstance(x, Mapping) else None
    return v if isinstance(v, Mapping) else {}


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return _obj(pod, "metadata")


def _quantity(x: Any) -> int:
    """A GPU count: an integer, or its string (``"8"``)."""
    if isinstance(x, bool):
        return 0
    if isinstance(x, int):
        return max(0, x)
    if isinstance(x, str) and x.strip().isdigit():
        return int(x.strip())
    return 0


def gpus_of(pod: Mapping[str, Any]) -> int:
    """The GPUs a pod asks for: its containers' ``nvidia.com/gpu`` (limits, else requests)."""
    total = 0
    containers = _obj(pod, "spec").get("containers")
    for c in containers if isinstance(containers, list) else ():
        res = _obj(c, "resources")
        total += _quantity(_obj(res, "limits").get(GPU_RESOURCE, _obj(res, "requests").get(GPU_RESOURCE)))
    return total


def gang_of(pod: Mapping[str, Any]) -> tuple[str, str, str | None]:
    """``(gang id, namespace, PodGroup name or None)``; the id is ``namespace/group``, or
    ``namespace/pod`` for a pod of no group."""
    m = _meta(pod)
    ns = str(m.get("namespace") or "default")
    group = _obj(m, "labels").get(GANG_LABEL) or _obj(m, "annotations").get(VOLCANO_GROUP_ANNOTATION)
    if isinstance(group, str) and group:
        return f"{ns}/{group}", ns, group
    return f"{ns}/{m.get('name')}", ns, None


class Extender:
    """The filter and prioritize verbs over a :class:`Service`."""

    def __init__(self, service: Service, podgroups: PodGroups | None = None) -> None:
        self.service = service
        self.podgroups = podgroups

    # ------------------------------------------------------------------ gangs
    def register_gang(self, body: Any) -> dict[str, Any]:
        """``{"gang": "namespace/name", "min_member": N, "job": {...}}``: a gang's size and its
        job's fields (checked by the instance loader when the gang is placed)."""
        problems = []
        if not isinstance(body, Mapping):
            raise InvalidInputError(["the body must be an object with gang, min_member and job"])
        gang, size, job = body.get("gang"), body.get("min_member"), body.get("job", {})
        if not isinstance(gang, str) or gang.count("/") != 1 or not all(gang.split("/")):
            problems.append(f"gang must be 'namespace/name', got {gang!r}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            problems.append(f"min_member must be an integer >= 1, got {size!r}")
        if not isinstance(job, Mapping) or {"id", "workers"} & set(job):
            problems.append("job must be an object of job fields other than id and workers (the gang sets them)")
        extra = sorted(set(body) - {"gang", "min_member", "job"})
        problems += [f"{k} is not a field of a gang" for k in extra]
        if problems:
            raise InvalidInputError(problems)
        with self.service.store.write() as conn:
            conn.execute(gangs.delete().where(gangs.c.id == gang))
            conn.execute(
                gangs.insert().values(id=gang, size=size, job=json.dumps(dict(job)), created_at=self.service.clock())
            )
        return {"gang": gang, "min_member": size}

    def _gang(self, gang: str, ns: str, group: str | None) -> tuple[int | None, dict[str, Any]]:
        with self.service.store.read() as conn:
            row = conn.execute(sa.select(gangs.c.size, gangs.c.job).where(gangs.c.id == gang)).first()
        if row is not None:
            return int(row.size), json.loads(row.job)
        if group is None:
            return 1, {}
        if self.podgroups is not None:
            return self.podgroups.min_member(ns, group), {}
        return None, {}

    def _job(
        self, gang: str, size: int, gpus: int, posted: Mapping[str, Any], pod: Mapping[str, Any]
    ) -> dict[str, Any]:
        notes = _obj(_meta(pod), "annotations")
        fields: dict[str, Any] = {}
        for key, name in JOB_ANNOTATIONS.items():
            if key in notes:
                try:
                    fields[name] = float(notes[key]) if name != "iterations" else int(notes[key])
                except (TypeError, ValueError):
                    raise InvalidInputError(
                        [f"pod annotation {key} must be a number, got {notes[key]!r}"], source=f"pod of {gang}"
                    ) from None
        return gang_job(gang, size, gpus, {**fields, **posted})

    # ------------------------------------------------------------------ pinning
    def node_for(self, pod: Mapping[str, Any], candidates: Sequence[str]) -> tuple[str | None, str]:
        """The node ``pod`` is pinned to (placing its gang at its first pod), or None and why."""
        svc, store = self.service, self.service.store
        m = _meta(pod)
        uid = str(m.get("uid") or f"{m.get('namespace')}/{m.get('name')}")
        with store.read() as conn:
            pinned = conn.execute(sa.select(pods.c.node).where(pods.c.uid == uid)).scalar_one_or_none()
        if pinned is not None:
            return pinned, ""
        gang, ns, group = gang_of(pod)
        gpus = gpus_of(pod)
        with store.write() as conn:
            svc._expire(conn, svc.clock())
            active = conn.execute(
                sa.select(jobs.c.state).where(jobs.c.id == gang, jobs.c.state.in_(ACTIVE))
            ).scalar_one_or_none()
        if active is None:
            size, posted = self._gang(gang, ns, group)
            if size is None:
                return None, (
                    f"the size of gang {gang} is not known: post it to /v1/gangs, or run placement serve "
                    "--kubernetes to read its PodGroup's minMember"
                )
            try:
                out = svc.place({"jobs": [self._job(gang, size, gpus, posted, pod)]}, with_explanation=False)
            except Conflict:
                out = {"assignment": {gang: True}}  # another pod of the gang placed it meanwhile
            if gang in out.get("waiting", {}):
                return None, (
                    f"gang {gang} waits for better GPUs (patience) until t={out['waiting'][gang]:.0f} s, "
                    "or until they free up"
                )
            if gang not in out["assignment"]:
                return None, f"gang {gang} ({size} pod(s) of {gpus} GPU(s)) does not fit the free GPUs now"
        with store.write() as conn:
            store.decision_lock(conn)
            again = conn.execute(sa.select(pods.c.node).where(pods.c.uid == uid)).scalar_one_or_none()
            if again is not None:
                return again, ""
            plan = dict(
                conn.execute(sa.select(holdings.c.server, holdings.c.workers).where(holdings.c.job_id == gang)).all()
            )
            taken: dict[str, int] = dict(
                conn.execute(
                    sa.select(pods.c.node, sa.func.count()).where(pods.c.gang == gang).group_by(pods.c.node)
                ).all()
            )
            left = {n: int(k) // max(1, gpus) - int(taken.get(n, 0)) for n, k in plan.items()}
            left = {n: k for n, k in left.items() if k > 0}
            if not left:
                return None, f"every pod of gang {gang}'s placement is already given a node"
            cand = set(candidates)
            node = min(left, key=lambda n: (n not in cand, -left[n], n))
            conn.execute(
                pods.insert().values(
                    uid=uid, gang=gang, namespace=ns, name=str(m.get("name")), node=node, pinned_at=svc.clock()
                )
            )
            if sum(left.values()) == 1:  # the last pod: the gang runs
                conn.execute(
                    jobs.update()
                    .where(jobs.c.id == gang, jobs.c.state == "reserved")
                    .values(**svc._started(conn, svc.clock()))
                )
        return node, ""

    # ------------------------------------------------------------------ verbs
    @staticmethod
    def _args(args: Any) -> tuple[Mapping[str, Any], list[str], list[Any] | None, Mapping[str, Any] | None]:
        """``(pod, candidate names, NodeNames or None, NodeList or None)`` of an ExtenderArgs."""
        if not isinstance(args, Mapping) or not isinstance(args.get("Pod"), Mapping):
            raise InvalidInputError(["ExtenderArgs.Pod must be a Pod object"])
        names, nodes = args.get("NodeNames"), args.get("Nodes")
        if names is not None:
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise InvalidInputError(["ExtenderArgs.NodeNames must be a list of node names"])
            return args["Pod"], list(names), names, None
        if nodes is not None:
            items = nodes.get("items") if isinstance(nodes, Mapping) else None
            if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
                raise InvalidInputError(["ExtenderArgs.Nodes must be a NodeList with items"])
            return args["Pod"], [str(_meta(i).get("name")) for i in items], None, nodes
        return args["Pod"], [], [], None

    def filter(self, args: Any) -> dict[str, Any]:
        """ExtenderArgs -> ExtenderFilterResult."""
        try:
            pod, names, by_name, node_list = self._args(args)
        except InvalidInputError as e:
            return _filtered(None, None, {}, "; ".join(e.problems))
        if gpus_of(pod) == 0:
            return _filtered(by_name, node_list, {}, "")
        try:
            node, why = self.node_for(pod, names)
        except InvalidInputError as e:
            return _filtered(None, None, {}, "; ".join(e.problems))
        if node is None:
            return _filtered(
                [] if by_name is not None else None, _keep(node_list, set()), dict.fromkeys(names, why), ""
            )
        failed = {n: f"the gang's placement puts this pod on {node}" for n in names if n != node}
        keep = {node} & set(names)
        return _filtered(
            [n for n in names if n in keep] if by_name is not None else None, _keep(node_list, keep), failed, ""
        )

    def prioritize(self, args: Any) -> list[dict[str, Any]]:
        """ExtenderArgs -> HostPriorityList: the pod's node :data:`MAX_PRIORITY`, others 0."""
        try:
            pod, names, _, _ = self._args(args)
        except InvalidInputError:
            return []
        m = _meta(pod)
        uid = str(m.get("uid") or f"{m.get('namespace')}/{m.get('name')}")
        with self.service.store.read() as conn:
            node = conn.execute(sa.select(pods.c.node).where(pods.c.uid == uid)).scalar_one_or_none()
        return [{"Host": n, "Score": MAX_PRIORITY if n == node else 0} for n in names]


def _keep(node_list: Mapping[str, Any] | None, keep: set[str]) -> dict[str, Any] | None:
    if node_list is None:
        return None
    return {**node_list, "items": [i for i in node_list.get("items", []) if _meta(i).get("name") in keep]}


def _filtered(
    names: list[Any] | None, node_list: Mapping[str, Any] | None, failed: dict[str, str], error: str
) -> dict[str, Any]:
    """An ExtenderFilterResult, keys as kube-scheduler's Go type names them."""
    return {
        "Nodes": node_list,
        "NodeNames": names,
        "FailedNodes": failed,
        "FailedAndUnresolvableNodes": {},
        "Error": error,
    }
