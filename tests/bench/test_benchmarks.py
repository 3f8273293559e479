"""``python -m placement.bench``: the documented benchmark commands run and print what the
README quotes (their figures are measured by running them, not here)."""

from __future__ import annotations

import re

import pytest

import placement
from placement.bench.benchmarks import main


def test_bounds_prints_every_bound_below_the_proven_optimum(capsys):
    inst = placement.load_bundled("library/tiny/hot")
    main(["bounds", "library/tiny/hot"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["instance", "best", "known"]
    row = next(line for line in out if line.startswith(inst.name))
    simple, plain, _, home = (float(x.replace(",", "")) for x in row.split()[2:6])
    optimum = inst.metadata["optimum"]
    assert 0 < simple <= optimum * (1 + 1e-9) and plain <= optimum * (1 + 1e-9) and home <= optimum * (1 + 1e-9)


def test_methods_prints_one_row_per_method_with_its_ratio_to_the_best(capsys):
    main(["methods", "tiny", "--time-limit", "1", "--seeds", "1"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["method", "status"]
    rows = [line.split() for line in out[1:]]
    names = {r[0] for r in rows}
    assert {"greedy", "consolidate", "auto"} <= names
    ratios = [float(r[4]) for r in rows if re.fullmatch(r"\d+\.\d+", r[4])]
    assert ratios and min(ratios) == pytest.approx(1.0) and all(x >= 1.0 - 1e-12 for x in ratios)


def test_gaps_on_the_family_prints_each_member_s_gap_and_the_median(tmp_path, capsys):
    from placement.bench.gaps import bench_gaps_family

    lines = bench_gaps_family([2.0], tmp_path, members=1, grace_s=120)  # a 9,000-server member: loading takes seconds
    rows = [ln for ln in lines if ln.startswith("| family-00")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    objective, bound = (float(c.replace(",", "")) for c in cells[5:7])
    assert bound <= objective and cells[7] == f"{100 * (objective / bound - 1):.2f}%"
    assert any(ln.startswith("| 2 | 1 of 1 |") for ln in lines) and (tmp_path / "gaps.md").exists()
