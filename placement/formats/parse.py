"""Strict JSON in and out: parsing that names every problem with its JSON path, the JSON
Schemas of ``placement/schemas`` with messages in the same words, and atomic writes."""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
import tempfile
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from placement.errors import InvalidInputError

__all__ = [
    "jpath",
    "describe",
    "parse_json",
    "flagged_paths",
    "schema",
    "schema_problems",
    "read_json_file",
    "write_json_atomic",
]


# ------------------------------------------------------------------ JSON paths
def jpath(parts: Iterable[str | int]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(document)"


def describe(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, str):
        return repr(v) if len(v) < 40 else repr(v[:37] + "...")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return f"a list of {len(v)}"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__  # pragma: no cover


MAX_DEPTH = 64
"""Deepest nesting accepted in a document (free-form fields included): far beyond any real
document, far below the interpreter's recursion limit."""


class _NonFinite:
    def __init__(self, text: str) -> None:
        self.text = text


def _parse_float(text: str) -> float | _NonFinite:
    v = float(text)
    return v if math.isfinite(v) else _NonFinite(text)


MAX_INTEGER_DIGITS = 18
"""Longest integer literal read as an integer (every count, size and seed fits in 64 bits);
a longer one is a problem at its JSON path, never an interpreter error about digit limits."""


class _HugeInteger:
    def __init__(self, text: str) -> None:
        self.text = text


def _parse_int(text: str) -> int | _HugeInteger:
    digits = text.lstrip("-")
    return int(text) if len(digits) <= MAX_INTEGER_DIGITS else _HugeInteger(text)


def parse_json(text: str, *, what: str = "document") -> tuple[Any, list[str]]:
    """Parse strict JSON: returns ``(data, problems)``.

    NaN, Infinity and numbers that overflow to infinity (``1e999``) are problems with
    their paths, as are duplicate keys; malformed JSON is one problem with line/column.
    """
    dup: list[str] = []

    def pairs(kv: list[tuple[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for k, v in kv:
            if k in d:
                dup.append(k)
            d[k] = v
        return d

    try:
        data = json.loads(
            text,
            parse_constant=_NonFinite,
            parse_float=_parse_float,
            parse_int=_parse_int,
            object_pairs_hook=pairs,
        )
    except json.JSONDecodeError as e:
        return None, [f"malformed JSON {what}: {e.msg} at line {e.lineno} column {e.colno}"]
    except RecursionError:
        return None, [f"malformed JSON {what}: nested too deeply"]
    except ValueError as e:  # e.g. an integer past Python's int-string limit (4300 digits)
        return None, [f"malformed JSON {what}: {str(e).split(';')[0]}"]
    problems = [f"duplicate key {k!r} in a JSON object" for k in dict.fromkeys(dup)]
    bad: list[str] = []
    deep: list[str] = []

    def walk(x: Any, path: tuple[str | int, ...]) -> Any:
        if len(path) > MAX_DEPTH:
            deep.append(f"{jpath(path[:MAX_DEPTH])} is nested more than {MAX_DEPTH} levels deep")
            return None
        if isinstance(x, _NonFinite):
            bad.append(f"{jpath(path)} must be a finite number, got {x.text}")
            return None
        if isinstance(x, _HugeInteger):
            shown = x.text if len(x.text) <= 24 else f"{x.text[:12]}... ({len(x.text.lstrip('-'))} digits)"
            bad.append(f"{jpath(path)} must be an integer of at most {MAX_INTEGER_DIGITS} digits, got {shown}")
            return None
        if isinstance(x, dict):
            return {k: walk(v, path + (k,)) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, path + (i,)) for i, v in enumerate(x)]
        return x

    data = walk(data, ())
    if deep:
        return None, problems + deep[:1]
    return data, problems + bad


def flagged_paths(problems: Iterable[str]) -> set[str]:
    """The JSON paths :func:`parse_json` already named (a non-finite number, an integer too
    long): the schema check skips them, so each value is reported once."""
    return {p.split(" must be ")[0] for p in problems if " must be " in p}


# -------------------------------------------------------------------- schemas
@cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of ``placement-instance/1`` (``"instance"``) or ``"solution"``."""
    fname = {"instance": "placement-instance-1.schema.json", "solution": "placement-solution-1.schema.json"}[name]
    doc: dict[str, Any] = json.loads(resources.files("placement").joinpath("schemas", fname).read_text())
    return doc


@cache
def _validator(name: str) -> Any:
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", lambda _c, x: isinstance(x, int) and not isinstance(x, bool))
    cls = jsonschema.validators.extend(base, type_checker=checker)
    return cls(schema(name))


_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "object": "an object",
    "array": "a list",
    "boolean": "a boolean",
    "null": "null",
}


def _schema_message(err: Any) -> str:
    path = list(err.absolute_path)
    where = jpath(path)
    v, sch, kind = err.instance, err.schema, err.validator
    if kind == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        return f"{jpath(path + [missing])} is required"
    if kind == "additionalProperties":
        known = list(sch.get("properties", {}))
        extra = sorted(set(v) - set(known))
        hints = [
            f"{x!r} (did you mean {c[0]!r}?)" if (c := difflib.get_close_matches(x, known, n=1)) else repr(x)
            for x in extra
        ]
        return f"{where}: unknown field{'s' if len(extra) > 1 else ''} {', '.join(hints)}"
    if kind == "type":
        t = err.validator_value
        words = " or ".join(_TYPE_WORDS.get(x, str(x)) for x in (t if isinstance(t, list) else [t]))
        return f"{where} must be {words}, got {describe(v)}"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        noun = "an integer" if sch.get("type") == "integer" else "a number"
        return f"{where} must be {noun} {op} {err.validator_value:g}, got {describe(v)}"
    if kind == "enum":
        opts = ", ".join(repr(x) for x in err.validator_value)
        return f"{where} must be one of {opts}, got {describe(v)}"
    if kind == "const":
        return f"{where} must be {err.validator_value!r}, got {describe(v)}"
    if kind == "minLength":
        return f"{where} must be a non-empty string"
    if kind in ("minItems", "maxItems"):
        word = "at least" if kind == "minItems" else "at most"
        return f"{where} must have {word} {err.validator_value} item(s), got {len(v)}"
    if kind == "minProperties":
        return f"{where} must not be empty"
    if kind == "oneOf":
        if "x-expected" in sch:  # the schema's own words for its alternatives
            return f"{where} must be {sch['x-expected']}, got {describe(v)}"
        return (
            f'{where} must be a distribution {{"values": [...], "probs": [...]}} '
            f"or a list of per-scenario values, got {describe(v)}"
        )
    return f"{where}: {err.message}"  # pragma: no cover - every keyword used is mapped above


def _position(path: Iterable[str | int]) -> tuple[tuple[int, int, str], ...]:
    """A sort key that keeps document order: ``nodes[2]`` before ``nodes[10]``."""
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)


def _owner(data: Any, path: list[str | int]) -> str:
    """`` (node 's3')`` / `` (job 'j3')`` when ``path`` lies inside a node or job with an id."""
    for prefix, kind in ((["topology", "nodes"], "node"), (["jobs"], "job")):
        n = len(prefix)
        if path[:n] == prefix and len(path) > n and isinstance(path[n], int):
            try:
                item = data
                for p in path[: n + 1]:
                    item = item[p]
            except (KeyError, IndexError, TypeError):
                return ""
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                return f" ({kind} {describe(item['id'])})"
    return ""


def schema_problems(name: str, data: Any, skip: set[str]) -> list[str]:
    """Every schema problem of ``data`` (``name``: ``instance`` or ``solution``) in document
    order, each with its JSON path and, inside a node or a job, that item's id."""
    out = []
    for err in _validator(name).iter_errors(data):
        path = list(err.absolute_path)
        if jpath(path) in skip:
            continue
        out.append((_position(path), _schema_message(err) + _owner(data, path)))
    out.sort(key=lambda x: x[0])
    return list(dict.fromkeys(m for _, m in out))


def read_json_file(
    path: str | os.PathLike[str], error: type[InvalidInputError], what: str
) -> tuple[Any, list[str], str]:
    """Read and parse a JSON file: ``(data, problems so far, source)``; raises ``error``
    when there is nothing to check further."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise error([f"cannot read {p}: {e}"], source=str(p)) from None
    data, problems = parse_json(text, what=what)
    if data is None:
        raise error(problems or [f"the {what} is JSON null; a JSON object is expected"], source=str(p))
    return data, problems, str(p)


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON to ``path`` via a temporary file and a rename: never a half-written file.
    The file gets the permissions any tool's would (``0666`` less the umask)."""
    p = Path(path)
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
