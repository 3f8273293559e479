"""Would a Kubernetes API server accept this object? Test-side checks of exported manifests.

``validate_custom`` checks a custom resource against the OpenAPI v3 schema of its
CustomResourceDefinition (unchanged copies in ``tests/data/k8s-crds/``, see ``NOTICE.md``) the way
the API server does under ``kubectl apply --validate=strict`` (field validation ``Strict``): the
structural schema's unknown fields are refused rather than pruned. ``validate_builtin`` checks a
built-in kind (``v1`` Pod, Node, Service, ...; ``batch/v1`` Job) against the models of the official
``kubernetes`` Python client and then builds the model through the client's own deserializer.

Both also apply what the API server checks outside the schema: ``metadata`` (ObjectMeta: known
fields, names, label and annotation syntax), and, for every pod spec (a Pod, a Job's or a Volcano
task's template), the Pod rules a GPU placement can get wrong (container names, extended
resources, node-affinity operators, tolerations). Each returns a list of readable problems, each
starting with the JSON path of the offending field (``spec.tasks[0].replicas: ...``); an empty
list means accepted.

Not checked: CEL rules (``x-kubernetes-validations``) other than the hand translations in
``_CEL`` of the rules the shipped CRDs carry (transition rules, which use ``oldSelf``, do not run
on create); admission webhooks (Volcano's, Kueue's); references to other objects (a queue, a
priority class, a node that exists); defaulting beyond "a required field with a default is not
missing"; the many other server-side rules of the built-in kinds.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

import yaml
from jsonschema import Draft7Validator, FormatChecker, ValidationError
from jsonschema.validators import extend

from support.paths import DATA as TEST_DATA

CRD_DIR = TEST_DATA / "k8s-crds"

Path_ = tuple[str | int, ...]
Problem = tuple[Path_, str]

# ----------------------------------------------------------------------------------------------
# Kubernetes' name rules (k8s.io/apimachinery/pkg/util/validation)

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_QUANTITY = re.compile(rf"([+-]?{_NUMBER})((?:[KMGTPE]i)|[numkMGTPE]|(?:[eE][+-]?{_NUMBER}))?")
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_ANNOTATIONS_TOTAL_MAX = 256 * 1024


def is_dns_label(value: object) -> bool:
    """RFC 1123 label: at most 63 of ``[a-z0-9-]``, alphanumeric at both ends."""
    return isinstance(value, str) and len(value) <= 63 and bool(_DNS1123_LABEL.fullmatch(value))


def is_dns_subdomain(value: object) -> bool:
    """RFC 1123 subdomain: dot-separated labels, at most 253 characters."""
    return isinstance(value, str) and len(value) <= 253 and bool(_DNS1123_SUBDOMAIN.fullmatch(value))


def is_qualified_name(value: object) -> bool:
    """A label or annotation key: optional DNS-subdomain prefix (<= 253) and ``/``, then a name
    of at most 63 of ``[A-Za-z0-9_.-]``, alphanumeric at both ends."""
    if not isinstance(value, str):
        return False
    prefix, slash, name = value.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return False
    return len(name) <= 63 and bool(_QUALIFIED_NAME_PART.fullmatch(name))


def is_label_value(value: object) -> bool:
    """At most 63 of ``[A-Za-z0-9_.-]``, alphanumeric at both ends; may be empty."""
    return isinstance(value, str) and len(value) <= 63 and bool(_LABEL_VALUE.fullmatch(value))


_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{s + "i": Decimal(2 ** (10 * (i + 1))) for i, s in enumerate("KMGTPE")},
}


def quantity(value: object) -> Decimal | None:
    """The value of a Kubernetes resource quantity (``8``, ``"500m"``, ``"16Gi"``, ``"1e3"``),
    or None if the API server would refuse it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        value = repr(value) if isinstance(value, float) else str(value)
    if not isinstance(value, str):
        return None
    m = _QUANTITY.fullmatch(value)
    if m is None:
        return None
    try:
        number, suffix = Decimal(m.group(1)), m.group(2) or ""
        exponent = len(suffix) > 1 and suffix[0] in "eE"
        return number * (Decimal(10) ** Decimal(suffix[1:]) if exponent else _SUFFIX[suffix])
    except (InvalidOperation, KeyError):
        return None


def dotted(path: Path_) -> str:
    """``("spec", "tasks", 0, "replicas")`` -> ``spec.tasks[0].replicas``; map keys that are not
    identifiers in brackets, as the API server writes them (``limits[nvidia.com/gpu]``)."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        elif _IDENT.fullmatch(p):
            out += f".{p}" if out else p
        else:
            out += f"[{p}]"
    return out or "(root)"


def _render(problems: list[Problem]) -> list[str]:
    seen: dict[str, None] = {}
    for path, message in problems:
        seen.setdefault(f"{dotted(path)}: {message}", None)
    return list(seen)


# ----------------------------------------------------------------------------------------------
# ObjectMeta: not in any CRD's schema (``metadata: {type: object}``); the API server validates it

_META_FIELDS = {
    "name": "str",
    "generateName": "str",
    "namespace": "str",
    "selfLink": "str",
    "uid": "str",
    "resourceVersion": "str",
    "generation": "int",
    "creationTimestamp": "datetime",
    "deletionTimestamp": "datetime",
    "deletionGracePeriodSeconds": "int",
    "labels": "labels",
    "annotations": "annotations",
    "finalizers": "strings",
    "ownerReferences": "ownerReferences",
    "managedFields": "objects",
}
_OWNER_REFERENCE = {
    "apiVersion": str,
    "kind": str,
    "name": str,
    "uid": str,
    "controller": bool,
    "blockOwnerDeletion": bool,
}


def _meta_shape(meta: Any, path: Path_) -> list[Problem]:
    """ObjectMeta's fields and their types (for custom resources; built-ins walk V1ObjectMeta)."""
    if not isinstance(meta, dict):
        return [(path, f"must be an object, not {_json_type(meta)}")]
    out: list[Problem] = []
    for key, value in meta.items():
        at = (*path, key)
        kind = _META_FIELDS.get(key)
        if kind is None:
            out.append((at, f'unknown field "{key}"'))
        elif kind == "str" and not isinstance(value, str):
            out.append((at, f"must be a string, not {_json_type(value)}"))
        elif kind == "int" and not _is_int(value):
            out.append((at, f"must be an integer, not {_json_type(value)}"))
        elif kind == "datetime" and not (isinstance(value, str) and _RFC3339.fullmatch(value)):
            out.append((at, "must be an RFC 3339 date-time string"))
        elif kind in ("labels", "annotations"):
            if not isinstance(value, dict):
                out.append((at, f"must be an object of strings, not {_json_type(value)}"))
            else:
                out += [((*at, k), "value must be a string") for k, v in value.items() if not isinstance(v, str)]
        elif kind == "strings" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            out.append((at, "must be a list of strings"))
        elif kind in ("objects", "ownerReferences"):
            if not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
                out.append((at, "must be a list of objects"))
            elif kind == "ownerReferences":
                for i, ref in enumerate(value):
                    for k, v in ref.items():
                        t = _OWNER_REFERENCE.get(k)
                        if t is None:
                            out.append(((*at, i, k), f'unknown field "{k}"'))
                        elif not isinstance(v, t):
                            out.append(((*at, i, k), f"must be a {t.__name__}"))
                    out += [
                        ((*at, i, k), "Required value") for k in ("apiVersion", "kind", "name", "uid") if not ref.get(k)
                    ]
    return out


def _mask_trailing_dash(name: str) -> str:
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def meta_rules(
    meta: dict[str, Any],
    path: Path_,
    *,
    top_level: bool,
    namespaced: bool | None = None,
    name_is_label: bool = False,
) -> list[Problem]:
    """What ValidateObjectMeta checks: labels and annotations everywhere an ObjectMeta is (a pod
    template's too); name, generateName and namespace where an object is created (``top_level``).
    ``namespaced=False`` refuses a namespace (a cluster-scoped kind), ``None`` does not look."""
    out: list[Problem] = []
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for key, value in labels.items():
            if not is_qualified_name(key):
                out.append(((*path, "labels", key), _QUALIFIED_NAME_MSG))
            if isinstance(value, str) and not is_label_value(value):
                out.append(((*path, "labels", key), f"Invalid value: {value!r}: {_LABEL_VALUE_MSG}"))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in annotations:
            if not is_qualified_name(key.lower() if isinstance(key, str) else key):
                out.append(((*path, "annotations", key), _QUALIFIED_NAME_MSG))
        total = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
        if total > _ANNOTATIONS_TOTAL_MAX:
            out.append(((*path, "annotations"), f"Too long: may not be more than {_ANNOTATIONS_TOTAL_MAX} bytes"))
    finalizers = meta.get("finalizers")
    if isinstance(finalizers, list):
        out += [
            ((*path, "finalizers", i), _QUALIFIED_NAME_MSG)
            for i, f in enumerate(finalizers)
            if not is_qualified_name(f)
        ]
    if not top_level:
        return out
    name, generate = meta.get("name"), meta.get("generateName")
    valid = is_dns_subdomain
    if name_is_label:

        def valid(n: object) -> bool:
            return is_dns_subdomain(n) and is_label_value(n)

    if not name and not generate:
        out.append(((*path, "name"), "Required value: name or generateName is required"))
    if isinstance(name, str) and name and not valid(name):
        out.append(((*path, "name"), f"Invalid value: {name!r}: {_name_msg(name_is_label)}"))
    if isinstance(generate, str) and generate and not valid(_mask_trailing_dash(generate)):
        out.append(((*path, "generateName"), f"Invalid value: {generate!r}: {_name_msg(name_is_label)}"))
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        if namespaced is False:
            out.append(((*path, "namespace"), "Forbidden: not allowed on a cluster-scoped kind"))
        elif not is_dns_label(namespace):
            out.append(((*path, "namespace"), f"Invalid value: {namespace!r}: {_DNS_LABEL_MSG}"))
    return out


_DNS_LABEL_MSG = "a lowercase RFC 1123 label must consist of at most 63 of [a-z0-9-], alphanumeric at both ends"
_QUALIFIED_NAME_MSG = (
    "Invalid key: a qualified name is an optional DNS-subdomain prefix (<= 253) and '/', then at most 63 of "
    "[A-Za-z0-9_.-], alphanumeric at both ends"
)
_LABEL_VALUE_MSG = "a label value is at most 63 of [A-Za-z0-9_.-], alphanumeric at both ends, or empty"


def _name_msg(name_is_label: bool) -> str:
    limit = "63 (it becomes a label value)" if name_is_label else "253"
    return f"a lowercase RFC 1123 subdomain of at most {limit} characters: [a-z0-9-.], alphanumeric at both ends"


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _json_type(x: object) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, int):
        return "integer"
    if isinstance(x, float):
        return "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, list):
        return "array"
    if isinstance(x, dict):
        return "object"
    return type(x).__name__


# ----------------------------------------------------------------------------------------------
# Pod rules the API server applies to every pod spec (ValidatePodSpec), the ones a placement touches

_NODE_SELECTOR_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
_TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}
_RESTART_POLICIES = {"Always", "OnFailure", "Never"}


def _is_native_resource(name: str) -> bool:
    return "/" not in name or name.split("/", 1)[0].endswith("kubernetes.io")


def pod_spec_rules(spec: Any, path: Path_, *, restart_policies: set[str] | None = None) -> list[Problem]:
    """Containers (names, images, resources), nodeSelector, node affinity, tolerations,
    schedulerName and restartPolicy as ValidatePodSpec checks them; ``restart_policies`` narrows
    the allowed restart policies (a Job's pods: OnFailure or Never), and then one is required."""
    if not isinstance(spec, dict):
        return []
    out: list[Problem] = []
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        out.append(((*path, "containers"), "Required value: at least one container"))
        containers = []
    names: set[str] = set()
    for field in ("initContainers", "containers"):
        group = spec.get(field)
        for i, c in enumerate(group if isinstance(group, list) else []):
            if isinstance(c, dict):
                out += _container_rules(c, (*path, field, i), names)
    policy = spec.get("restartPolicy")
    if restart_policies is not None:
        allowed = ", ".join(sorted(restart_policies))
        if policy is None:
            out.append(((*path, "restartPolicy"), f"Required value: supported values: {allowed}"))
        elif policy not in restart_policies:
            out.append(((*path, "restartPolicy"), f"Unsupported value: {policy!r}: supported values: {allowed}"))
    elif policy is not None and policy not in _RESTART_POLICIES:
        out.append(((*path, "restartPolicy"), f"Unsupported value: {policy!r}"))
    scheduler = spec.get("schedulerName")
    if isinstance(scheduler, str) and scheduler and not is_dns_subdomain(scheduler):
        out.append(((*path, "schedulerName"), f"Invalid value: {scheduler!r}: must be a DNS subdomain"))
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        for k, v in selector.items():
            if not is_qualified_name(k):
                out.append(((*path, "nodeSelector", k), _QUALIFIED_NAME_MSG))
            if not is_label_value(v):
                out.append(((*path, "nodeSelector", k), f"Invalid value: {v!r}: {_LABEL_VALUE_MSG}"))
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if isinstance(node_affinity, dict):
        at = (*path, "affinity", "nodeAffinity")
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(required, dict):
            terms = required.get("nodeSelectorTerms")
            rat = (*at, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
            if not isinstance(terms, list) or not terms:
                out.append((rat, "Required value: must have at least one node selector term"))
            for i, term in enumerate(terms if isinstance(terms, list) else []):
                out += _node_selector_term_rules(term, (*rat, i))
        preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
        for i, p in enumerate(preferred if isinstance(preferred, list) else []):
            pat = (*at, "preferredDuringSchedulingIgnoredDuringExecution", i)
            if isinstance(p, dict):
                weight = p.get("weight")
                if not (_is_int(weight) and 1 <= weight <= 100):
                    out.append(((*pat, "weight"), f"Invalid value: {weight!r}: must be in the range 1-100"))
                out += _node_selector_term_rules(p.get("preference"), (*pat, "preference"))
    tolerations = spec.get("tolerations")
    for i, t in enumerate(tolerations if isinstance(tolerations, list) else []):
        if isinstance(t, dict):
            out += _toleration_rules(t, (*path, "tolerations", i))
    return out


def _container_rules(c: dict[str, Any], at: Path_, names: set[str]) -> list[Problem]:
    out: list[Problem] = []
    name = c.get("name")
    if isinstance(name, str):
        if not is_dns_label(name):
            out.append(((*at, "name"), f"Invalid value: {name!r}: {_DNS_LABEL_MSG}"))
        elif name in names:
            out.append(((*at, "name"), f"Duplicate value: {name!r}"))
        names.add(name)
    if not c.get("image"):
        out.append(((*at, "image"), "Required value"))
    ports = c.get("ports")
    for i, p in enumerate(ports if isinstance(ports, list) else []):
        for field, low in (("containerPort", 1), ("hostPort", 0)):
            v = p.get(field) if isinstance(p, dict) else None
            if _is_int(v) and not low <= v <= 65535:
                out.append(
                    ((*at, "ports", i, field), f"Invalid value: {v}: must be between {low} and 65535, inclusive")
                )
    resources = c.get("resources")
    if not isinstance(resources, dict):
        return out
    values: dict[str, dict[str, Decimal]] = {}
    for kind in ("requests", "limits"):
        group = resources.get(kind)
        values[kind] = {}
        for rname, raw in group.items() if isinstance(group, dict) else ():
            rat = (*at, "resources", kind, rname)
            if not is_qualified_name(rname):
                out.append((rat, _QUALIFIED_NAME_MSG))
            q = quantity(raw)
            if q is None:
                out.append((rat, f"Invalid value: {raw!r}: must be a quantity (e.g. 8, '500m', '16Gi')"))
            elif q < 0:
                out.append((rat, f"Invalid value: {raw!r}: must be greater than or equal to 0"))
            else:
                values[kind][rname] = q
    requests, limits = values["requests"], values["limits"]
    for rname in sorted(set(requests) | set(limits)):
        rat = (*at, "resources")
        if not _is_native_resource(rname):
            for kind, group in values.items():
                if rname in group and group[rname] != group[rname].to_integral_value():
                    out.append(((*rat, kind, rname), "Invalid value: must be an integer (extended resource)"))
            if rname in requests and rname not in limits:
                out.append(
                    ((*rat, "limits", rname), "Required value: Limit must be set for non overcommitable resources")
                )
            elif rname in requests and requests[rname] != limits[rname]:
                out.append(((*rat, "requests", rname), f"Invalid value: must be equal to {rname} limit"))
        elif rname in requests and rname in limits and requests[rname] > limits[rname]:
            out.append(((*rat, "requests", rname), f"Invalid value: must be less than or equal to {rname} limit"))
    return out


def _node_selector_term_rules(term: Any, at: Path_) -> list[Problem]:
    if not isinstance(term, dict):
        return []
    out: list[Problem] = []
    for field in ("matchExpressions", "matchFields"):
        exprs = term.get(field)
        for i, e in enumerate(exprs if isinstance(exprs, list) else []):
            if not isinstance(e, dict):
                continue
            eat = (*at, field, i)
            key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
            if field == "matchExpressions" and not is_qualified_name(key):
                out.append(((*eat, "key"), _QUALIFIED_NAME_MSG))
            if field == "matchFields" and key != "metadata.name":
                out.append(((*eat, "key"), f"Invalid value: {key!r}: only metadata.name is supported"))
            if op not in _NODE_SELECTOR_OPERATORS:
                out.append(
                    (
                        (*eat, "operator"),
                        f"Unsupported value: {op!r}: supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt",
                    )
                )
            elif op in ("In", "NotIn") and not values:
                out.append(((*eat, "values"), "Required value: must be specified when `operator` is 'In' or 'NotIn'"))
            elif op in ("Exists", "DoesNotExist") and values:
                out.append(
                    ((*eat, "values"), "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
                )
            elif op in ("Gt", "Lt") and (len(values) != 1 or not re.fullmatch(r"-?\d+", str(values[0]))):
                out.append(
                    (
                        (*eat, "values"),
                        "Required value: must be specified single integer value when `operator` is 'Lt' or 'Gt'",
                    )
                )
    return out


def _toleration_rules(t: dict[str, Any], at: Path_) -> list[Problem]:
    out: list[Problem] = []
    key, op, effect = t.get("key"), t.get("operator") or "Equal", t.get("effect")
    if key and not is_qualified_name(key):
        out.append(((*at, "key"), _QUALIFIED_NAME_MSG))
    if not key and op != "Exists":
        out.append(((*at, "operator"), f"Invalid value: {op!r}: operator must be Exists when `key` is empty"))
    if op not in ("Equal", "Exists"):
        out.append(((*at, "operator"), f"Unsupported value: {op!r}: supported values: Equal, Exists"))
    elif op == "Exists" and t.get("value"):
        out.append(((*at, "value"), "Invalid value: value must be empty when `operator` is 'Exists'"))
    if effect and effect not in _TAINT_EFFECTS:
        out.append(
            (
                (*at, "effect"),
                f"Unsupported value: {effect!r}: supported values: NoSchedule, PreferNoSchedule, NoExecute",
            )
        )
    if t.get("tolerationSeconds") is not None and effect != "NoExecute":
        out.append(((*at, "effect"), "Invalid value: effect must be 'NoExecute' when `tolerationSeconds` is set"))
    return out


# ----------------------------------------------------------------------------------------------
# Custom resources: the CRDs' OpenAPI v3 schemas, validated as JSON Schema Draft 7


@cache
def _crds() -> dict[tuple[str, str], dict[str, Any]]:
    """(group, kind) -> the CustomResourceDefinition, from ``tests/data/k8s-crds/*.yaml``."""
    out = {}
    for f in sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text(encoding="utf-8")):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                spec = doc["spec"]
                out[(spec["group"], spec["names"]["kind"])] = doc
    return out


def crd_versions(group: str, kind: str) -> list[str]:
    """The served versions of a kind in the shipped CRDs ([] if none)."""
    crd = _crds().get((group, kind))
    return [v["name"] for v in crd["spec"]["versions"] if v.get("served")] if crd else []


def crd_kinds() -> list[tuple[str, str]]:
    """Every (apiVersion, kind) the shipped CRDs serve."""
    return [(f"{g}/{v}", k) for (g, k) in sorted(_crds()) for v in crd_versions(g, k)]


_OBJECT_META = "x-placement-object-meta"  # marker: run the ObjectMeta checks on this node
_POD_TEMPLATE = "x-placement-pod-template"  # marker: run the pod-spec checks on this node's spec
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def _prepare(node: dict[str, Any], *, key: str | None = None, root: dict[str, Any] | None = None) -> dict[str, Any]:
    """A CRD schema node as a strict Draft 7 schema. Only the structural skeleton (properties,
    items, additionalProperties) is rewritten; anyOf/allOf/oneOf/not only validate values."""
    out = {k: v for k, v in node.items() if k != "description"}
    preserve = out.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = out.get("x-kubernetes-embedded-resource") is True
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if out.get(exclusive) is True and bound in out:  # OpenAPI v3.0's boolean form
            out[exclusive] = out.pop(bound)
        elif isinstance(out.get(exclusive), bool):
            out.pop(exclusive)
    if out.get("x-kubernetes-int-or-string") is True and out.get("anyOf") == _INT_OR_STRING:
        out.pop("anyOf")  # the keyword below says the same, in one message
    props = {name: _prepare(p, key=name) for name, p in out.get("properties", {}).items()}
    if root is not None or embedded:
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props["metadata"] = {"type": "object", _OBJECT_META: root or {"shape": True, "top_level": False}}
        if embedded:
            out["required"] = sorted({*out.get("required", []), "apiVersion", "kind"})
    elif key == "metadata" and {"labels", "annotations"} & set(props):
        out[_OBJECT_META] = {"top_level": False}  # a template's ObjectMeta, as controller-gen writes it
    if key == "template" and "containers" in props.get("spec", {}).get("properties", {}):
        out[_POD_TEMPLATE] = True
    if "properties" in out or props:
        out["properties"] = props
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _prepare(out["additionalProperties"])
    if isinstance(out.get("items"), dict):
        out["items"] = _prepare(out["items"])
    is_object = out.get("type") == "object" or "properties" in out
    if is_object and "additionalProperties" not in out and not preserve:
        # structural schema + strict field validation: a field the schema does not name is refused
        out["additionalProperties"] = False
    if "required" in out:  # defaulting runs before validation: a defaulted field is never missing
        out["required"] = [r for r in out["required"] if "default" not in props.get(r, {})]
    return out


def _skip_null_if_nullable(fn: Callable[..., Any]) -> Callable[..., Iterator[ValidationError]]:
    def check(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
        if instance is None and schema.get("nullable") is True:
            return
        yield from fn(validator, value, instance, schema) or ()

    return check


def _int_or_string(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if value is True and not (_is_int(instance) or isinstance(instance, str)):
        yield ValidationError(f"must be an integer or a string, not {_json_type(instance)}")


def _list_type(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not isinstance(instance, list):
        return
    if value == "set":
        keys = [json.dumps(x, sort_keys=True) for x in instance]
        described = "value"
    elif value == "map":
        fields = schema.get("x-kubernetes-list-map-keys", [])
        keys = [json.dumps([x.get(f) if isinstance(x, dict) else x for f in fields]) for x in instance]
        described = f"value of {', '.join(fields)}"
    else:
        return
    seen: set[str] = set()
    for i, k in enumerate(keys):
        if k in seen:
            yield ValidationError(f"Duplicate value: {described} {k} (x-kubernetes-list-type: {value})", path=[i])
        seen.add(k)


def _object_meta(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    problems = _meta_shape(instance, ()) if value.get("shape") else []
    if isinstance(instance, dict):
        problems += meta_rules(
            instance, (), top_level=value.get("top_level", False), namespaced=value.get("namespaced")
        )
    for path, message in problems:
        yield ValidationError(message, path=list(path))


def _pod_template(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if isinstance(instance, dict):
        for path, message in pod_spec_rules(instance.get("spec"), ("spec",)):
            yield ValidationError(message, path=list(path))


_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_HOSTNAME = "kubernetes.io/hostname"

# Hand translations of the CEL rules in the shipped CRDs (whitespace-normalised rule -> predicate
# on ``self``); an exception counts as a failed rule, as a CEL evaluation error does.
_CEL: dict[str, Callable[[Any], bool]] = {
    "!has(self.topologyName) || self.nodeLabels.size() >= 1": lambda s: (
        "topologyName" not in s or len(s["nodeLabels"]) >= 1
    ),
    "(has(self.exactMatch) ? 1 : 0) + (has(self.regexMatch) ? 1 : 0) + (has(self.labelMatch) ? 1 : 0) <= 1": (
        lambda s: sum(k in s for k in ("exactMatch", "regexMatch", "labelMatch")) <= 1
    ),
    "has(self.exactMatch) || has(self.regexMatch) || has(self.labelMatch)": lambda s: any(
        k in s for k in ("exactMatch", "regexMatch", "labelMatch")
    ),
    "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])": lambda s: all(
        "effect" not in x or x["effect"] in _EFFECTS for x in s
    ),
    "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)": lambda s: all(
        x["operator"] == "Exists" if "key" not in x else True for x in s
    ),
    "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])": lambda s: all(
        "operator" not in x or x["operator"] in ("Equal", "Exists") for x in s
    ),
    "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)": lambda s: all(
        "value" not in x if x.get("operator") == "Exists" else True for x in s
    ),
    "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)": lambda s: all(
        x["effect"] == "NoExecute" if "tolerationSeconds" in x else True for x in s
    ),
    "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])": lambda s: all(
        x["effect"] in _EFFECTS for x in s
    ),
    "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'": (
        lambda s: all(x["nodeLabel"] != _HOSTNAME for x in s) or s[-1]["nodeLabel"] == _HOSTNAME
    ),
    "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0": lambda s: (
        len({json.dumps(x, sort_keys=True) for x in s}) == len(s)
    ),
}


def _normalise_rule(rule: str) -> str:
    return " ".join(rule.split())


def untranslated_cel_rules() -> list[str]:
    """CEL rules of the shipped CRDs that run on create and have no translation in ``_CEL``."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for r in node.get("x-kubernetes-validations", []):
                rule = _normalise_rule(r["rule"])
                if "oldSelf" not in rule and rule not in _CEL:
                    found.add(rule)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(list(_crds().values()))
    return sorted(found)


def _cel(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    for r in value:
        rule = _normalise_rule(r.get("rule", ""))
        check = _CEL.get(rule)
        if check is None or "oldSelf" in rule:  # transition rules do not run on create
            continue
        try:
            ok = bool(check(instance))
        except (KeyError, TypeError, IndexError, AttributeError):
            ok = False
        if not ok:
            yield ValidationError(f"Invalid value: {r.get('message') or rule}")


_FORMATS = FormatChecker(formats=())


@_FORMATS.checks("int32")
def _int32(x: object) -> bool:
    return not _is_int(x) or -(2**31) <= x < 2**31  # type: ignore[operator]


@_FORMATS.checks("int64")
def _int64(x: object) -> bool:
    return not _is_int(x) or -(2**63) <= x < 2**63  # type: ignore[operator]


@_FORMATS.checks("date-time")
def _date_time(x: object) -> bool:
    return not isinstance(x, str) or bool(_RFC3339.fullmatch(x))


@_FORMATS.checks("quantity")
def _quantity_format(x: object) -> bool:
    return not isinstance(x, str) or quantity(x) is not None


_K8sValidator = extend(
    Draft7Validator,
    validators={
        **{k: _skip_null_if_nullable(fn) for k, fn in Draft7Validator.VALIDATORS.items()},
        "x-kubernetes-int-or-string": _skip_null_if_nullable(_int_or_string),
        "x-kubernetes-list-type": _list_type,
        "x-kubernetes-validations": _skip_null_if_nullable(_cel),
        _OBJECT_META: _object_meta,
        _POD_TEMPLATE: _pod_template,
    },
    type_checker=Draft7Validator.TYPE_CHECKER.redefine("integer", lambda _, x: _is_int(x)),
)


def _validator_for(schema: dict[str, Any], namespaced: bool) -> Any:
    root = {"shape": True, "top_level": True, "namespaced": namespaced}
    return _K8sValidator(_prepare(schema, root=root), format_checker=_FORMATS)


@cache
def _validator(group: str, version: str, kind: str) -> Any:
    crd = _crds()[(group, kind)]
    (entry,) = (v for v in crd["spec"]["versions"] if v["name"] == version)
    namespaced = crd["spec"].get("scope", "Namespaced") == "Namespaced"
    return _validator_for(entry["schema"]["openAPIV3Schema"], namespaced)


def _schema_problems(error: ValidationError) -> list[Problem]:
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and error.validator_value is False:
        known = error.schema.get("properties", {})
        return [((*path, k), f'unknown field "{k}"') for k in error.instance if k not in known]
    if error.validator == "required":
        return [((*path, k), "Required value") for k in error.validator_value if k not in error.instance]
    if error.validator == "enum":
        allowed = ", ".join(json.dumps(v) for v in error.validator_value)
        return [(path, f"Unsupported value: {json.dumps(error.instance)}: supported values: {allowed}")]
    if error.validator == "type" and error.instance is None:
        return [(path, "Invalid value: null (the field is not nullable)")]
    return [(path, error.message)]


def validate_custom(obj: dict[str, Any]) -> list[str]:
    """Problems the API server would report creating this custom resource (strict field
    validation); [] if it would accept it."""
    if not isinstance(obj, dict):
        return [f"(root): must be an object, not {_json_type(obj)}"]
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or "/" not in api_version or not isinstance(kind, str):
        return [f"(root): apiVersion 'group/version' and kind are required (got {api_version!r}, {kind!r})"]
    group, version = api_version.split("/", 1)
    served = crd_versions(group, kind)
    if version not in served:
        known = f"served versions: {', '.join(served)}" if served else "no CRD for this kind in tests/data/k8s-crds"
        return [f"apiVersion: {api_version} {kind} is not served ({known})"]
    return _problems(obj, _validator(group, version, kind))


def validate_against_schema(obj: dict[str, Any], schema: dict[str, Any], *, namespaced: bool = True) -> list[str]:
    """``validate_custom`` against a given ``openAPIV3Schema`` (a CRD version's), not a shipped CRD."""
    return _problems(obj, _validator_for(schema, namespaced))


def _problems(obj: dict[str, Any], validator: Any) -> list[str]:
    problems: list[Problem] = []
    if "metadata" not in obj:
        problems.append((("metadata", "name"), "Required value: name or generateName is required"))
    for error in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        problems += _schema_problems(error)
    return _render(problems)


# ----------------------------------------------------------------------------------------------
# Built-in kinds: the official client's models

_BUILTIN = {
    ("v1", "Pod"): "V1Pod",
    ("v1", "PodList"): "V1PodList",
    ("v1", "Node"): "V1Node",
    ("v1", "NodeList"): "V1NodeList",
    ("v1", "Service"): "V1Service",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "PodTemplate"): "V1PodTemplate",
    ("batch/v1", "Job"): "V1Job",
    ("batch/v1", "JobList"): "V1JobList",
    ("batch/v1", "CronJob"): "V1CronJob",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("scheduling.k8s.io/v1", "PriorityClass"): "V1PriorityClass",
}
_CLUSTER_SCOPED = {"Node", "Namespace", "PriorityClass"}

# str-typed fields the API server decodes as resource.Quantity: a JSON number is accepted too
_QUANTITY_FIELDS = {
    ("V1ResourceRequirements", "limits"),
    ("V1ResourceRequirements", "requests"),
    ("V1VolumeResourceRequirements", "limits"),
    ("V1VolumeResourceRequirements", "requests"),
    ("V1NodeStatus", "capacity"),
    ("V1NodeStatus", "allocatable"),
    ("V1PodSpec", "overhead"),
    ("V1PodStatus", "allocated_resources"),
    ("V1ContainerStatus", "allocated_resources"),
    ("V1EmptyDirVolumeSource", "size_limit"),
    ("V1ResourceFieldSelector", "divisor"),
    ("V1ResourceQuotaSpec", "hard"),
    ("V1ResourceQuotaStatus", "hard"),
    ("V1ResourceQuotaStatus", "used"),
    ("V1PersistentVolumeSpec", "capacity"),
    ("V1PersistentVolumeClaimStatus", "capacity"),
    ("V1PersistentVolumeClaimStatus", "allocated_resources"),
    *(("V1LimitRangeItem", a) for a in ("default", "default_request", "max", "min", "max_limit_request_ratio")),
}

_LIST_TYPE = re.compile(r"(?:List|list)\[(.+)\]")
_DICT_TYPE = re.compile(r"(?:Dict\[str, (.+)\]|dict\(str, (.+)\))")
_OPTIONAL_TYPE = re.compile(r"Optional\[(.+)\]")


def _models() -> Any:
    import kubernetes.client.models  # noqa: PLC0415 — only the built-in checks need the client

    return kubernetes.client.models


@cache
def _required_attributes(cls: type) -> frozenset[str]:
    """Attributes the client itself requires: pydantic models (client >= 35) say so per field;
    older models' setters raise ValueError on None under client-side validation."""
    fields = getattr(cls, "model_fields", None)
    if fields is not None:
        return frozenset(a for a, f in fields.items() if f.is_required())
    from kubernetes.client import Configuration  # noqa: PLC0415

    probe = cls.__new__(cls)
    probe.local_vars_configuration = Configuration()
    required = set()
    for attr in cls.openapi_types:
        try:
            setattr(probe, attr, None)
        except ValueError:
            required.add(attr)
    return frozenset(required)


def _walk(value: Any, type_name: str, path: Path_, out: list[Problem]) -> Any:
    """Check ``value`` against a client type (``V1Pod``, ``List[V1Container]``, ``Dict[str, str]``,
    ``str``, ``int``, ``datetime``, ``object``, ...); returns the value as the deserializer wants
    it (quantities given as numbers become strings)."""
    m = _OPTIONAL_TYPE.fullmatch(type_name)
    if m:
        type_name = m.group(1)
    if value is None:
        out.append((path, "Invalid value: null"))
        return None
    if m := _LIST_TYPE.fullmatch(type_name):
        if not isinstance(value, list):
            out.append((path, f"must be an array, not {_json_type(value)}"))
            return value
        return [_walk(v, m.group(1), (*path, i), out) for i, v in enumerate(value)]
    if m := _DICT_TYPE.fullmatch(type_name):
        if not isinstance(value, dict):
            out.append((path, f"must be an object, not {_json_type(value)}"))
            return value
        return {k: _walk(v, m.group(1) or m.group(2), (*path, k), out) for k, v in value.items()}
    primitive = {"str": str, "bool": bool, "int": int, "float": (int, float)}.get(type_name)
    if primitive is not None:
        if not isinstance(value, primitive) or (isinstance(value, bool) and type_name != "bool"):
            out.append((path, f"must be {_ARTICLE[type_name]}, not {_json_type(value)}"))
        return value
    if type_name in ("datetime", "date"):
        pattern = _RFC3339 if type_name == "datetime" else _DATE
        if not (isinstance(value, str) and pattern.fullmatch(value)):
            out.append((path, f"must be an RFC 3339 {'date-time' if type_name == 'datetime' else 'date'} string"))
        return value
    cls = getattr(_models(), type_name, None)
    if type_name == "object" or cls is None:
        return value  # int-or-string, raw extensions: the deserializer's own check decides
    if not isinstance(value, dict):
        out.append((path, f"must be an object ({type_name}), not {_json_type(value)}"))
        return value
    by_json = {j: a for a, j in cls.attribute_map.items()}
    normal = {}
    for k, v in value.items():
        attr = by_json.get(k)
        if attr is None:
            out.append(((*path, k), f'unknown field "{k}"'))
            continue
        sub = cls.openapi_types[attr]
        normal[k] = (
            _quantities(v, sub, (*path, k), out)
            if (type_name, attr) in _QUANTITY_FIELDS
            else _walk(v, sub, (*path, k), out)
        )
    for attr in sorted(_required_attributes(cls)):
        if cls.attribute_map[attr] not in value:
            out.append(((*path, cls.attribute_map[attr]), "Required value"))
    if type_name == "V1ObjectMeta":
        out.extend(meta_rules(value, path, top_level=False))
    return normal


_ARTICLE = {"str": "a string", "bool": "a boolean", "int": "an integer", "float": "a number"}


def _quantities(value: Any, type_name: str, path: Path_, out: list[Problem]) -> Any:
    if _DICT_TYPE.fullmatch(type_name):
        if not isinstance(value, dict):
            out.append((path, f"must be an object, not {_json_type(value)}"))
            return value
        return {k: _quantities(v, "str", (*path, k), out) for k, v in value.items()}
    if quantity(value) is None:
        out.append((path, f"Invalid value: {value!r}: must be a quantity (e.g. 8, '500m', '16Gi')"))
        return value
    return value if isinstance(value, str) else str(value)


@cache
def _api_client() -> Any:
    from kubernetes.client import ApiClient  # noqa: PLC0415

    return ApiClient()


def _deserialize(data: Any, type_name: str) -> None:
    _api_client()._ApiClient__deserialize(data, type_name)


def _client_error(e: Exception) -> str:
    errors = getattr(e, "errors", None)
    if callable(errors):  # pydantic.ValidationError
        parts = [f"{dotted(tuple(x['loc']))}: {x['msg']}" for x in errors()]
        return "kubernetes client refused it: " + "; ".join(parts)
    return f"kubernetes client refused it: {type(e).__name__}: {e}"


def _builtin_rules(obj: dict[str, Any], kind: str, path: Path_) -> list[Problem]:
    """ObjectMeta names and the pod spec rules of a top-level built-in object."""
    out: list[Problem] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [((*path, "metadata", "name"), "Required value: name or generateName is required")]
    out += meta_rules(
        meta, (*path, "metadata"), top_level=True, namespaced=kind not in _CLUSTER_SCOPED, name_is_label=kind == "Job"
    )
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if kind in ("Pod", "PodTemplate"):
        pod = spec if kind == "Pod" else (obj.get("template") or {}).get("spec")
        at = (*path, "spec") if kind == "Pod" else (*path, "template", "spec")
        out += pod_spec_rules(pod, at)
    elif kind == "Job":
        out += _job_rules(spec, (*path, "spec"))
    elif kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        out += _job_rules(job, (*path, "spec", "jobTemplate", "spec"))
    elif kind in ("Deployment", "StatefulSet", "DaemonSet"):
        template = spec.get("template") or {}
        out += pod_spec_rules(template.get("spec"), (*path, "spec", "template", "spec"), restart_policies={"Always"})
    return out


def _job_rules(spec: dict[str, Any], at: Path_) -> list[Problem]:
    out: list[Problem] = []
    template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
    out += pod_spec_rules(template.get("spec"), (*at, "template", "spec"), restart_policies={"OnFailure", "Never"})
    if spec.get("selector") is not None and spec.get("manualSelector") is not True:
        out.append(((*at, "selector"), "Invalid value: `selector` not auto-generated (set manualSelector: true)"))
    for field in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"):
        v = spec.get(field)
        if _is_int(v) and v < (1 if field == "activeDeadlineSeconds" else 0):
            out.append(((*at, field), f"Invalid value: {v}: must be greater than or equal to 0"))
    return out


def validate_builtin(obj: dict[str, Any]) -> list[str]:
    """Problems the API server would report creating this built-in object (strict field
    validation); [] if it would accept it. Needs the ``kubernetes`` client."""
    if not isinstance(obj, dict):
        return [f"(root): must be an object, not {_json_type(obj)}"]
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    type_name = _BUILTIN.get((api_version, kind))  # type: ignore[arg-type]
    if type_name is None:
        known = ", ".join(f"{a} {k}" for a, k in _BUILTIN)
        return [f"(root): {api_version} {kind} is not a supported built-in kind ({known})"]
    problems: list[Problem] = []
    normal = _walk(obj, type_name, (), problems)
    if kind.endswith("List") and isinstance(obj.get("items"), list):
        item_kind = kind[: -len("List")]
        for i, item in enumerate(obj["items"]):
            if not isinstance(item, dict):
                continue
            for field, expected in (("apiVersion", api_version), ("kind", item_kind)):
                if field in item and item[field] != expected:
                    problems.append((("items", i, field), f"Invalid value: {item[field]!r}: must be {expected!r}"))
            problems += _builtin_rules(item, item_kind, ("items", i))
    else:
        problems += _builtin_rules(obj, kind, ())
    if not problems:  # the client's own validation, once the walk found nothing to explain it
        try:
            _deserialize(copy.deepcopy(normal), type_name)
        except Exception as e:  # noqa: BLE001 — any refusal of the client is a finding
            problems.append(((), _client_error(e)))
    return _render(problems)


def validate(obj: dict[str, Any]) -> list[str]:
    """``validate_builtin`` for the built-in groups, ``validate_custom`` for the rest."""
    api_version = obj.get("apiVersion") if isinstance(obj, dict) else None
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    builtin = "." not in group or (api_version, obj.get("kind")) in _BUILTIN
    return validate_builtin(obj) if builtin else validate_custom(obj)


def assert_accepted(obj: dict[str, Any]) -> None:
    """AssertionError listing the problems, if the API server would refuse ``obj``."""
    problems = validate(obj)
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    assert not problems, f"{obj.get('kind')} {name!r} would be refused:\n  " + "\n  ".join(problems)
