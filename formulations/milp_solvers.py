"""The MILP's solvers through PuLP: HiGHS (given the start as its first incumbent) or CBC."""

from __future__ import annotations

from typing import Any

from placement.formulations.quiet import interruptible_run
from placement.model.tolerances import MILP_GAP_REL

__all__ = ["pulp_solver"]


def pulp_solver(backend: str, time_left: float, threads: int, log: str | None, warm: bool) -> Any:
    """PuLP's solver for ``backend`` (``highs``: handed the start when ``warm``; else CBC) with
    ``time_left`` seconds, at the project's gap."""
    import pulp

    t = max(0.05, time_left)
    if backend == "highs":
        return _warm_highs()(warm, msg=False, timeLimit=t, threads=threads, gapRel=MILP_GAP_REL, random_seed=0)
    return pulp.PULP_CBC_CMD(msg=False, timeLimit=t, threads=threads, gapRel=MILP_GAP_REL, logPath=log, warmStart=warm)


def _warm_highs() -> type:
    """PuLP's HiGHS adapter, handing HiGHS the variables' initial values (PuLP's own takes
    no start): HiGHS fixes the integer ones, solves the LP left and keeps the result as its
    first incumbent."""
    import numpy as np
    import pulp

    class WarmHiGHS(pulp.HiGHS):
        def __init__(self, warm: bool, **kw: Any) -> None:
            super().__init__(**kw)
            self.warm = warm

        def callSolver(self, lp: Any) -> None:
            if self.warm:
                pairs = [(v.index, float(v.varValue)) for v in lp.variables() if v.varValue is not None]
                if pairs:
                    idx, val = zip(*pairs)
                    lp.solverModel.setSolution(len(idx), np.asarray(idx, dtype=np.int32), np.asarray(val, dtype=float))
            interruptible_run(lp.solverModel)

    return WarmHiGHS
