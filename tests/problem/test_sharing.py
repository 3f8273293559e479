"""What a simulation shares between decisions stays read-only: a job's read-only override map
is kept as it is (every job of a horizon bucket shares one), a plain dict is copied, and the
memoised merged distributions cannot be written into."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from placement.model import Job, Slowdown
from placement.problem.arrays import _merged


def test_a_read_only_override_map_is_shared_and_a_dict_is_copied():
    shared = MappingProxyType({"s1": Slowdown((1.0, 2.0), (0.9, 0.1))})
    a = Job("a", 2, 100.0, 10.0, slowdown=shared)
    b = Job("b", 2, 100.0, 10.0, slowdown=shared)
    assert a.slowdown is shared and b.slowdown is shared
    plain = {"s1": Slowdown((1.0, 3.0), (0.5, 0.5))}
    c = Job("c", 2, 100.0, 10.0, slowdown=plain)
    plain["s2"] = Slowdown()
    assert set(c.slowdown) == {"s1"}
    with pytest.raises(TypeError):
        c.slowdown["s3"] = Slowdown()  # type: ignore[index]


def test_merged_distributions_are_memoised_read_only_and_exact():
    v, p = _merged((2.0, 1.0, 2.0, 5.0), (0.25, 0.5, 0.25, 0.0))
    assert v.tolist() == [1.0, 2.0] and p.tolist() == pytest.approx([0.5, 0.5])
    again = _merged([2.0, 1.0, 2.0, 5.0], [0.25, 0.5, 0.25, 0.0])
    assert again[0] is v and again[1] is p  # one computation per distinct value
    with pytest.raises(ValueError):
        v[0] = 3.0
    assert np.isclose(p.sum(), 1.0)
