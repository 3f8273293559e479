"""``placement calibrate``."""

from __future__ import annotations

import click

from placement.cli.common import FiniteRange, check_output, console, guard


@click.command()
@click.argument("profiles", type=click.Path(exists=True, dir_okay=False))
@click.option("--model", required=True, help="The profiled model's name: the jobs are <model>-b<local_bsz>.")
@click.option("--gpus-per-server", type=click.IntRange(min=1), required=True, help="GPUs on each server written.")
@click.option(
    "--servers",
    type=click.IntRange(min=1),
    default=None,
    help="Servers written (default: the widest profiled placement's count).",
)
@click.option(
    "--gradient-mb",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="The model's gradient (default: the catalogue's for --model, else 100 MB); only the ratio to the fitted "
    "bandwidths matters.",
)
@click.option("--gpu-type", default="A100", show_default=True, help="The servers' GPU type.")
@click.option(
    "--form",
    type=click.Choice(("auto", "ring", "ring+alpha", "ring+gamma", "ring+alpha+gamma")),
    default="auto",
    show_default=True,
    help="The communication form; auto: the plain ring unless another predicts held-out server counts better.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), required=True, help="The instance.")
@guard
def calibrate(
    profiles: str,
    model: str,
    gpus_per_server: int,
    servers: int | None,
    gradient_mb: float | None,
    gpu_type: str,
    form: str,
    output: str,
) -> None:
    """Fit each batch size's compute and the all-reduce terms from PROFILES (step times by
    placement: Pollux's placements.csv, or the same columns with GPUs per server joined by '+');
    print every form's error on held-out server counts; write a placement-instance/1."""
    check_output(output, profiles)
    from rich.table import Table

    from placement.calibrate import FORMS, calibrate, read_profiles
    from placement.formats import dump_instance

    p = read_profiles(profiles)
    cal = calibrate(
        p,
        model=model,
        gpus_per_server=gpus_per_server,
        servers=servers,
        gradient_mb=gradient_mb,
        gpu_type=gpu_type,
        form=None if form == "auto" else form,
    )
    dump_instance(cal.instance, output)
    con = console()
    t = Table(title=f"{len(p.step_ms)} rows: median error on held-out server counts", show_edge=False, pad_edge=False)
    for c in ("form", "median error", ""):
        t.add_column(c)
    for f in FORMS:
        e = cal.errors[f]
        t.add_row(f, "-" if e != e else f"{100 * e:.1f}%", "chosen" if f == cal.form else "")
    con.print(t)
    fit = cal.fit
    con.print(
        f"fitted on every row ({cal.form}): ring {fit.ring_intra_ms:.3f} ms inside a server, "
        f"{fit.ring_inter_ms:.3f} ms between servers (x 2 (W-1)/W); alpha {fit.alpha_intra_ms:.4f} / "
        f"{fit.alpha_inter_ms:.4f} ms per ring step; gamma {fit.gamma_ms:.3f} ms (x 2 (k-1)/k); "
        f"compute {', '.join(f'b{b}: {c:.2f}' for b, c in sorted(fit.compute_ms.items()))} ms"
    )
    for n in cal.notes:
        con.print(f"note: {n}")
    con.print(f"wrote {output}: {len(cal.instance.servers)} servers, {len(cal.instance.jobs)} jobs")
