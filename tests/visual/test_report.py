"""``report.html`` of compare and simulate: one file, readable offline, with the tables, the plots
inside, and the worst jobs explained."""

from __future__ import annotations

import re

import placement
from placement.compare import compare, read_rows
from placement.evaluation.explain import summary_rows
from placement.model import Solution, Status
from placement.visual.report import html_report


def offline(page: str) -> None:
    assert not re.search(r'(src|href)="https?://', page)  # nothing fetched


def test_compare_writes_one_offline_page_with_the_worst_jobs_explained(tmp_path):
    out = tmp_path / "c"
    compare(
        ["library/tiny/hot"],
        ["greedy", "consolidate"],
        time_limits=[1.0],
        out_dir=out,
        progress=False,
        say=lambda m: None,
    )
    page = (out / "report.html").read_text()
    offline(page)
    assert page.count("data:image/png;base64,") == 3 and "<table>" in page and "Comparison report" in page
    rows = [r for r in read_rows(out / "runs.jsonl") if r["valid"]]
    best = min(rows, key=lambda r: r["objective"])
    inst = placement.load_bundled("library/tiny/hot")
    sol = Solution(
        inst.name, best["method"], Status(best["status"]), best["objective"], None, best["assignment"], (), {}, {}, {}
    )
    worst = summary_rows(placement.explain(inst, sol))[0]
    assert "Why the worst jobs wait" in page and f"<td>{worst[0]}</td><td>{worst[1]}</td>" in page


def test_the_page_embeds_images_and_renders_tables(tmp_path):
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    page = html_report(
        "t", "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![x](a.png)\n", tmp_path, "<p>extra</p>"
    ).read_text()
    assert "<td>1</td>" in page and 'src="data:image/png;base64,' in page and "<p>extra</p>" in page


def test_instances_past_the_explanation_size_are_named_not_explained(tmp_path, monkeypatch):
    from placement.compare import report

    out = tmp_path / "c"
    compare(["tiny"], ["greedy"], time_limits=[1.0], out_dir=out, progress=False, say=lambda m: None)
    monkeypatch.setattr(report, "EXPLAIN_UP_TO", 1)
    page = report.worst_jobs_html(read_rows(out / "runs.jsonl"))
    assert "not explained here (more than 1)" in page and "placement explain SOLUTION" in page and "<table>" not in page
