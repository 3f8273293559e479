"""The calibration's goals on Pollux's measured step times (``python -m placement.bench calibrate``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["bench_calibrate"]


def bench_calibrate(data: Path, out: Path, seeds: int = 5) -> None:
    """The calibration's goals on Pollux's measured step times (``data``: the folder holding
    ``cifar10.csv`` ... ``ncf.csv``): per job and form, the median relative error on the three-
    and four-server rows when fitted on the one- and two-server rows, on a random half when
    fitted on the other half (mean over ``seeds`` splits), and on each server count of two or
    more held out in turn; written to ``out/calibrate.md``."""
    import numpy as np

    from placement.calibrate import FORMS, fit, holdout_error, read_profiles, relative_errors

    lines = [
        "Median relative error of the predicted step time, per Pollux job and communication form "
        f"(random halves: mean over {seeds} seeded splits).",
        "",
        "| job | rows | form | 3-4 servers, fitted on 1-2 | / the ring's | random half | each server count held out |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in ("cifar10", "deepspeech2", "imagenet", "ncf"):
        p = read_profiles(data / f"{name}.csv")
        k = p.servers
        near, far = p.subset(k <= 2), p.subset(k >= 3)
        ext = {f: float(np.median(relative_errors(fit(near, f), far))) for f in FORMS}
        rng = np.random.default_rng(0)
        half: dict[str, list[float]] = {f: [] for f in FORMS}
        for _ in range(seeds):
            a = np.zeros(len(p.step_ms), dtype=bool)
            a[rng.permutation(len(a))[: len(a) // 2]] = True
            for f in FORMS:
                half[f].append(float(np.median(relative_errors(fit(p.subset(a), f), p.subset(~a)))))
        for f in FORMS:
            lines.append(
                f"| {name} | {len(p.step_ms)} | {f} | {100 * ext[f]:.1f}% | {ext[f] / ext['ring']:.2f} "
                f"| {100 * float(np.mean(half[f])):.1f}% | {100 * holdout_error(p, f):.1f}% |"
            )
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibrate.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
