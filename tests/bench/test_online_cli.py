"""``python -m placement.bench online``'s arguments (placement.bench.online_cli)."""

from __future__ import annotations

import pytest

from placement.bench import benchmarks


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--grid", "--grid-measured"], "--grid and --grid-measured: one at a time"),
        (["--cells", "nowhere"], "unknown cell or configuration nowhere"),
        (["--configs", "consolidate,nothing"], "unknown cell or configuration nothing"),
        (["--set", "no_such_field=1"], "--set: not SimConfig fields: no_such_field"),
    ],
)
def test_bad_arguments_are_refused_before_any_run(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        benchmarks.main(["online", *argv, "-o", str(tmp_path / "out")])
    assert e.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_measured_cell_runs_and_reports(tmp_path, capsys):
    out = tmp_path / "out"
    benchmarks.main(
        ["online", "--cells", "cluster03-pod256-measured", "--seeds", "0", "--configs", "consolidate", "-o", str(out)]
    )
    text = capsys.readouterr().out
    assert "## cluster03-pod256-measured" in text and "| consolidate | 1 |" in text
    assert (out / "online.md").read_text() in text
