"""One self-contained HTML page of a sweep's report, readable offline: the report's Markdown
(tables) rendered by markdown-it, its plots embedded as data URIs, and tables of the worst jobs'
explanations (:func:`placement.evaluation.explain.summary_rows`)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path

from placement.evaluation.explain import SUMMARY_COLUMNS

__all__ = ["html_report", "explanation_table"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 1400px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f2f2f2; }
td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; margin: 0.5em 0; }
"""


def explanation_table(caption: str, rows: Sequence[Sequence[str]]) -> str:
    """An HTML table of explanation rows (:data:`SUMMARY_COLUMNS`) under ``caption``."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in SUMMARY_COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<h3>{html.escape(caption)}</h3>\n<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"


def _embed(page: str, folder: Path) -> str:
    def data_uri(m: re.Match[str]) -> str:
        f = folder / m.group(1)
        if not f.is_file():
            return m.group(0)
        mime = "image/svg+xml" if f.suffix == ".svg" else "image/png"
        return f'src="data:{mime};base64,{base64.b64encode(f.read_bytes()).decode()}"'

    return re.sub(r'src="([^":]+\.(?:png|svg))"', data_uri, page)


def html_report(title: str, markdown_text: str, folder: Path, extra: str = "") -> Path:
    """``folder/report.html``: ``markdown_text`` with its images (files in ``folder``) inside,
    then ``extra`` HTML; one file, no network."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown_text)
    page = (
        f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body>\n{body}\n{extra}</body></html>\n"
    )
    out = folder / "report.html"
    out.write_text(_embed(page, folder), encoding="utf-8")
    return out
