"""The one wrapper of the exact backends (placement.methods.exact), with a scripted backend:
what every backend gets for free (start, cutoff, fallback, start beating the incumbent,
honest claims)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import placement
from placement.methods.exact import run_exact
from placement.methods.greedy import greedy
from placement.solving import BackendResult, Budget, Options, Termination


@dataclass
class Scripted:
    """A backend that returns what it is told, and records what it was handed."""

    result: BackendResult
    name: str = "scripted"
    trust_status: bool = True
    optimal_rtol: float = 1e-6
    calls: list[dict] = field(default_factory=list)

    def version(self) -> str:
        return "scripted 1"

    def run(self, instance, *, start, cutoff, budget, seed, threads):
        self.calls.append({"start": start, "cutoff": cutoff, "budget": budget, "seed": seed})
        return self.result


@pytest.fixture(scope="module")
def inst():
    return placement.load_bundled("library/tiny/hot")


@pytest.fixture(scope="module")
def start(inst):
    return greedy(inst, Options(time_limit_s=5)).assignment


@pytest.fixture(scope="module")
def optimum(inst):
    return placement.solve(inst, "brute_force", time_limit_s=60)


def test_the_backend_gets_the_greedy_start_and_its_cutoff(inst, start):
    b = Scripted(BackendResult(Termination.NO_SOLUTION))
    out = run_exact(inst, Options(time_limit_s=5, seed=7), b)
    (call,) = b.calls
    assert call["start"] == start and call["seed"] == 7
    assert call["cutoff"] == pytest.approx(placement.evaluate(inst, start).objective)
    assert out.assignment == start and "returned start" in out.path and not out.optimal


def test_no_cutoff_without_pruning(inst):
    b = Scripted(BackendResult(Termination.NO_SOLUTION))
    run_exact(inst, Options(time_limit_s=5), b, prune=False)
    assert b.calls[0]["cutoff"] is None


def test_an_invalid_incumbent_falls_back_to_the_start(inst, start):
    everything_on_one = {j.id: {inst.servers[0].id: j.workers} for j in inst.jobs}
    assert placement.validate(inst, everything_on_one)
    b = Scripted(BackendResult(Termination.OPTIMAL, everything_on_one, bound=0.0))
    out = run_exact(inst, Options(time_limit_s=5), b)
    assert out.assignment == start and not out.optimal and "invalid after rounding" in out.path


def test_a_pruned_model_reported_infeasible_returns_the_start(inst, start):
    out = run_exact(inst, Options(time_limit_s=5), Scripted(BackendResult(Termination.INFEASIBLE)))
    assert out.assignment == start and not out.infeasible


def test_infeasible_is_claimed_only_for_an_exact_unpruned_model(inst):
    claim = run_exact(inst, Options(time_limit_s=5), Scripted(BackendResult(Termination.INFEASIBLE)), prune=False)
    assert claim.assignment is None and claim.infeasible
    inexact = Scripted(BackendResult(Termination.INFEASIBLE, exact=False))
    assert not run_exact(inst, Options(time_limit_s=5), inexact, prune=False).infeasible


def test_the_start_beats_a_worse_incumbent(inst, start, optimum):
    worse = placement.solve(inst, "spread").assignment
    assert placement.evaluate(inst, worse).objective > placement.evaluate(inst, start).objective
    out = run_exact(inst, Options(time_limit_s=5), Scripted(BackendResult(Termination.FEASIBLE, worse)))
    assert out.assignment == start and "start better than incumbent: returned start" in out.path


def test_optimal_needs_a_proof_the_exact_objective_agrees_with(inst, optimum):
    best = dict(optimum.assignment)
    proven = Scripted(BackendResult(Termination.OPTIMAL, best, bound=optimum.objective))
    assert run_exact(inst, Options(time_limit_s=5), proven).optimal
    # a backend whose status is not trusted must also have its bound within tolerance
    loose = Scripted(BackendResult(Termination.OPTIMAL, best, bound=0.5 * optimum.objective), trust_status=False)
    out = run_exact(inst, Options(time_limit_s=5), loose, prune=False)
    assert not out.optimal and "exact gap" in (out.message or "")
    # a limit reached with a bound that proves the incumbent within tolerance is optimal too
    tight = Scripted(BackendResult(Termination.FEASIBLE, best, bound=optimum.objective))
    assert run_exact(inst, Options(time_limit_s=5), tight).optimal


def test_the_bound_is_capped_by_the_cutoff(inst, start):
    cutoff = placement.evaluate(inst, start).objective
    b = Scripted(BackendResult(Termination.FEASIBLE, start, bound=10 * cutoff))
    assert run_exact(inst, Options(time_limit_s=5), b).bound == pytest.approx(cutoff)


def test_options_are_keyword_only_and_carry_a_budget():
    with pytest.raises(TypeError):
        Options(5.0)  # type: ignore[misc]
    o = Options(time_limit_s=3.0)
    assert 2.0 < o.budget.left() <= 3.0
    b = Budget.seconds(10.0)
    assert b.share(0.5).end <= b.end and b.before(1.0).end == pytest.approx(b.end - 1.0)
    assert o.but(seed=4).seed == 4 and o.but(seed=4).budget == o.budget
