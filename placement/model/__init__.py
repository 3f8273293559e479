"""Records: the frozen, typed data of DESIGN.md, and the table of numeric tolerances.

The bottom layer of the package: it imports nothing else of ``placement``.
"""

from __future__ import annotations

from placement.model.records import (
    ADMISSIONS,
    NO_SLOWDOWN,
    OBJECTIVES,
    Assignment,
    CommTerm,
    Instance,
    Job,
    JobReport,
    Link,
    Override,
    Scenarios,
    Server,
    Slowdown,
    Solution,
    StageMatrix,
    Stages,
    Status,
    Switch,
)

__all__ = [
    "ADMISSIONS",
    "NO_SLOWDOWN",
    "OBJECTIVES",
    "Assignment",
    "CommTerm",
    "Instance",
    "Job",
    "JobReport",
    "Link",
    "Override",
    "Scenarios",
    "Server",
    "Slowdown",
    "Solution",
    "StageMatrix",
    "Stages",
    "Status",
    "Switch",
]
