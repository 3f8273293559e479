"""``placement slurm-sync``."""

from __future__ import annotations

import click

from placement.cli.common import err, guard


@click.command(name="slurm-sync")
@click.argument("service")
@click.option("--dry-run", is_flag=True, help="Print the scontrol commands instead of running them.")
@click.option("--partition", default=None, help="Only this partition's jobs.")
@click.option(
    "--every-s",
    type=click.FloatRange(min=1, max=86400),
    default=None,
    help="Repeat the pass this often until interrupted (default: one pass).",
)
@guard
def slurm_sync(service: str, dry_run: bool, partition: str | None, every_s: float | None) -> None:
    """Place Slurm's pending GPU jobs with the placement service at SERVICE (its URL) and pin
    them there (scontrol update JobId=N NumNodes=k ReqNodeList=...); jobs Slurm started or
    ended are told to the service."""
    import time

    import httpx

    from placement.serve.slurm import sync

    with httpx.Client(base_url=service.rstrip("/"), timeout=60) as client:
        while True:
            try:
                counts = sync(client, dry_run=dry_run, partition=partition, say=click.echo)
            except httpx.HTTPError as e:
                err(f"error: the service at {service} did not answer: {e}")
                raise SystemExit(1) from None
            err(", ".join(f"{k} {v}" for k, v in counts.items()))
            if every_s is None:
                return
            time.sleep(every_s)
