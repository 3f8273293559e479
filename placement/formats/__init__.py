"""Formats: reading, checking and writing the JSON documents of the package
(``placement-instance/1``, ``placement-solution/1``), with their JSON Schemas."""

from __future__ import annotations

from placement.formats.instance import (
    INSTANCE_FORMAT,
    checked,
    dump_instance,
    instance_from_dict,
    instance_to_dict,
    load_instance,
)
from placement.formats.parse import jpath, parse_json, schema, write_json_atomic
from placement.formats.solution import (
    SOLUTION_FORMAT,
    dump_solution,
    load_solution,
    solution_from_dict,
    solution_to_dict,
)

__all__ = [
    "INSTANCE_FORMAT",
    "SOLUTION_FORMAT",
    "checked",
    "dump_instance",
    "dump_solution",
    "instance_from_dict",
    "instance_to_dict",
    "jpath",
    "load_instance",
    "load_solution",
    "parse_json",
    "schema",
    "solution_from_dict",
    "solution_to_dict",
    "write_json_atomic",
]
