"""``placement methods``."""

from __future__ import annotations

import json

import click

from placement.cli.options import table_or_json


@click.command()
@table_or_json("A table, or JSON for scripts.")
def methods(fmt: str) -> None:
    """List the methods in preference order, with their kind and availability."""
    from placement.solving.registry import REGISTRY

    rows = [dict(m.as_dict()) for m in REGISTRY]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(show_edge=False, pad_edge=False)
    for c in ("name", "kind", "available", "description"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["name"], r["kind"], "yes" if r["available"] else "no", r["description"])
    Console(width=160).print(t)
