"""The MILP's push/pull phase of a parameter-server job (:mod:`placement.formulations.milp`):
its shards by modes (:class:`~placement.formulations.index.ShardIndex`) and the phase's
expected maximum, written exactly as the compute phase's (scenario rows, or the tail sum with
its product chain)."""

from __future__ import annotations

from typing import Any

from placement.formulations.index import JobIndex

__all__ = ["push_pull"]


def push_pull(
    prob: Any,
    j: JobIndex,
    tag: str,
    p: Any,
    xs: list[Any],
    ys: list[Any],
    zs: list[Any],
    probs: Any,
    shard_terms: dict[int, list[tuple[int, Any]]],
    b_modes: dict[int, list[list[Any]]],
) -> Any:
    """A parameter-server job's shards by modes (``formulations.index``), and its push/pull
    phase's expected maximum, exactly: returns that expectation as an expression."""
    import pulp

    sh = j.shards
    assert sh is not None
    us_all: list[list[Any]] = []
    count = []
    r: list[list[Any]] = []  # per shard server, per distinct value: its mode indicator
    for m, sp in enumerate(sh.servers):
        u = [pulp.LpVariable(f"u_{tag}_{m}_{k}", cat="Binary") for k in range(len(sh.modes[m]))]
        us_all.append(u)
        v = pulp.lpSum(u)
        prob += v <= 1
        for h in {mode[2] for mode in sh.modes[m]}:
            prob += pulp.lpSum(uk for uk, mode in zip(u, sh.modes[m]) if mode[2] == h) <= zs[h]
        z = pulp.lpSum(mode[0] * uk for uk, mode in zip(u, sh.modes[m]))
        count.append(z)
        shard_terms.setdefault(int(sp), []).append((j.jp, z))
        i = int(sh.local[m])
        if i >= 0:  # the workers there are the mode's
            local = pulp.lpSum(mode[1] * uk for uk, mode in zip(u, sh.modes[m]) if mode[1])
            prob += xs[i] >= local
            prob += xs[i] <= local + int(j.cap[i]) * (1 - v)
        r.append([pulp.lpSum(uk for uk, mode in zip(u, sh.modes[m]) if mode[3] == c) for c in range(len(sh.values[m]))])
    b_modes[j.jp] = us_all
    prob += pulp.lpSum(count) == sh.total * p
    if j.max_servers is not None:  # over the workers' and the shards' servers together
        union: dict[int, list[Any]] = {}
        for i, sp in enumerate(j.servers):
            union.setdefault(int(sp), []).append(ys[i])
        for m, sp in enumerate(sh.servers):
            union.setdefault(int(sp), []).append(pulp.lpSum(us_all[m]))
        os_ = []
        for sp, parts in union.items():
            o = pulp.LpVariable(f"o_{tag}_{sp}", cat="Binary")
            for part in parts:
                prob += o >= part
            os_.append(o)
        prob += pulp.lpSum(os_) <= j.max_servers
    if sh.scen is not None:
        taus = []
        for s, ps in enumerate(probs):
            tau = pulp.LpVariable(f"tau2_{tag}_{s}", 0)
            for m in range(len(sh.servers)):
                row = [(float(c) * float(sh.scen[m, s]), rc) for c, rc in zip(sh.values[m], r[m]) if c > 0]
                if row:
                    prob += tau >= pulp.lpSum(v * rc for v, rc in row)
            taus.append(float(ps) * tau)
        return pulp.lpSum(taus)
    assert sh.t is not None and sh.dt is not None and sh.q is not None
    terms = []
    for k in range(len(sh.t)):
        dt = float(sh.dt[k])
        if dt <= 0:
            continue
        links = [[(1.0 - float(q), rc) for q, rc in zip(sh.q[m][k], r[m]) if q < 1] for m in range(len(sh.servers))]
        if not any(links):
            continue  # no mode reaches t_k
        g = pulp.LpVariable(f"G2_{tag}_{k}", 0, 1)
        prev: Any = p
        for m, link in enumerate(links):
            if not link:
                continue
            ws = []
            for c, (drop, rc) in enumerate(link):
                w = pulp.LpVariable(f"w2_{tag}_{k}_{m}_{c}", 0, 1)
                prob += w >= prev + rc - 1
                ws.append(drop * w)
            pi = pulp.LpVariable(f"pi2_{tag}_{k}_{m}", 0, 1)
            prob += pi == prev - pulp.lpSum(ws)
            prev = pi
        prob += g >= p - prev
        terms.append(dt * g)
    return pulp.lpSum(terms)
