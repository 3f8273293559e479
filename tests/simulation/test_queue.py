"""The queue counts, on a loaded cluster: the proactive loop's speed is not bought with the
queued jobs' waiting.  While jobs wait for GPUs, a move that ends a running job sooner starts
them sooner, so the move margin is none then (``QUEUED_MOVE_MARGIN``); while none wait, a move
serves its own job only and must beat the estimates' resolution (``MOVE_MARGIN``)."""

from __future__ import annotations

from placement.bench.online import CELLS, GENERATED
from placement.instances.generate import from_source
from placement.simulation import simulate
from placement.simulation.workload import read_trace


def test_on_a_loaded_cluster_one_gpu_jobs_queue_no_longer_than_under_consolidation():
    """The grid's `flat128` cell (cluster04 days 28-30, 606 jobs, on one switch of 16
    servers, 30% hot), seed 0: queueing is about half of every job's JCT."""
    cell = CELLS["grid-c04d28-flat128"]
    inst, w = from_source(GENERATED[cell.cluster]), read_trace(cell.trace, **cell.trace_options)
    cons = simulate(inst, w, method="consolidate", knowledge="oblivious", dynamics=cell.dynamics).summary
    loop = simulate(inst, w, method="auto", knowledge="estimated", dynamics=cell.dynamics).summary
    assert cons["avg_queue_s"] > 0.4 * cons["avg_jct_s"]  # loaded: queueing dominates
    assert loop["avg_queue_w1_s"] <= cons["avg_queue_w1_s"]
    assert loop["avg_queue_s"] <= cons["avg_queue_s"] and loop["avg_jct_s"] < cons["avg_jct_s"]
