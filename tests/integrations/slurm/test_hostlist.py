"""Slurm host lists: compressed as Slurm writes them, expanded back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placement.integrations.slurm import (
    compress_hostlist,
    expand_hostlist,
)

# ----------------------------------------------------------------------------- host lists


def test_compress_hostlist_writes_slurm_brackets():
    assert compress_hostlist(["tux0", "tux1", "tux2", "tux3", "tux7", "gpu01", "gpu02"]) == "tux[0-3,7],gpu[01-02]"
    assert compress_hostlist(["n08", "n09", "n10", "n11"]) == "n[08-11]"
    assert compress_hostlist(["gpu8", "gpu09"]) == "gpu[8,09]"
    assert compress_hostlist(["n8", "n09"]) == "n8,n09"  # shorter without the bracket
    assert compress_hostlist(["login", "a1", "b1", "a2"]) == "login,a1,b1,a2"
    assert compress_hostlist(["x007", "x008", "x010"]) == "x[007-008,010]"
    assert compress_hostlist([]) == ""


@pytest.mark.parametrize("bad", [["a,b"], ["a[1]"], ["a b"], [""], ["ok", "x]"]])
def test_compress_hostlist_refuses_names_a_host_list_cannot_hold(bad):
    with pytest.raises(ValueError, match="host names"):
        compress_hostlist(bad)


_names = st.one_of(
    st.builds(
        lambda p, n, w: f"{p}{str(n).zfill(w)}",
        st.sampled_from(["tux", "gpu", "n", "rack1-node", "a.b_", ""]),
        st.integers(0, 1200),
        st.integers(0, 4),
    ),
    st.text("abz019-_.", min_size=1, max_size=6),
)


@given(st.lists(_names, max_size=30))
def test_compress_then_expand_gives_the_hosts_back(hosts):
    text = compress_hostlist(hosts)
    assert expand_hostlist(text) == hosts
    assert len(text) <= len(",".join(hosts))


@given(st.lists(st.integers(0, 60), min_size=1, max_size=40).map(lambda ks: [f"gpu{k:03d}" for k in sorted(set(ks))]))
def test_sorted_padded_hosts_make_one_bracket(hosts):
    text = compress_hostlist(hosts)
    assert text.count("[") <= 1 and expand_hostlist(text) == hosts


# ----------------------------------------------------------------------------- topology
