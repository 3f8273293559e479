"""Slurm's host lists: ``tux[0-3,7]``, zero-padded ``n[01-12]``, several brackets; expanded and
compressed."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

MAX_HOSTS = 1_000_000
"""Most hosts a host list may expand to (a cluster, not a typo like ``gpu[0-99999999999]``)."""


def split_outside(text: str, opening: str = "[", closing: str = "]") -> list[str]:
    """``text`` split on the commas outside ``opening``/``closing`` pairs (Slurm's host lists
    ``tux[0-2,7],gpu01`` and GRES strings ``gpu:a100:3(IDX:0,2-3),nic:1`` alike); an
    unbalanced closing or opening mark raises :class:`ValueError`."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += (ch == opening) - (ch == closing)
        if depth < 0:
            raise ValueError(f"unbalanced {closing!r} in {text!r}")
        cur += ch
    if depth != 0:
        raise ValueError(f"unbalanced {opening!r} in {text!r}")
    parts.append(cur)
    return parts


def expand_hostlist(text: str) -> list[str]:
    """``"tux[0-2,7],gpu01"`` -> ``["tux0", "tux1", "tux2", "tux7", "gpu01"]``."""
    try:
        parts = split_outside(text)
    except ValueError as e:
        raise ValueError(str(e).replace(" in ", " in host list ", 1)) from None
    out: list[str] = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        m = re.search(r"\[([^\[\]]*)\]", p)
        if not m:
            out.append(p)
            continue
        head, tail = p[: m.start()], p[m.end() :]
        for item in m.group(1).split(","):
            if "-" in item:
                a, b = item.split("-", 1)
                if not (a.isdigit() and b.isdigit()) or int(b) < int(a):
                    raise ValueError(f"bad range {item!r} in host list {text!r}")
                if int(b) - int(a) + 1 + len(out) > MAX_HOSTS:
                    raise ValueError(f"host list {text!r} names more than {MAX_HOSTS:,} hosts")
                width = len(a) if a.startswith("0") else 0
                out += expand_hostlist(
                    ",".join(f"{head}{str(k).zfill(width)}{tail}" for k in range(int(a), int(b) + 1))
                )
            elif item.isdigit():
                out += expand_hostlist(f"{head}{item}{tail}")
            else:
                raise ValueError(f"bad item {item!r} in host list {text!r}")
    return out


_HOST = re.compile(r"[^\s\[\],]+")
_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(hosts: Sequence[str]) -> str:
    """Slurm's compressed host list of ``hosts``, in their order: the inverse of
    :func:`expand_hostlist` (``expand_hostlist(compress_hostlist(h)) == h``).

    Neighbours sharing a prefix share one bracket (unless listing them is shorter);
    consecutive numbers become a range that keeps their zero-padding (``n08, n09, n10`` ->
    ``n[08-10]``, as Slurm writes it).

    >>> compress_hostlist(["tux0", "tux1", "tux2", "tux3", "tux7", "gpu01", "gpu02", "login"])
    'tux[0-3,7],gpu[01-02],login'
    """
    return compress_hosts(hosts, shortest=True)


def compress_hosts(hosts: Sequence[str], *, shortest: bool) -> str:
    """:func:`compress_hostlist`; ``shortest=False`` brackets every run of one prefix, as
    Slurm's ``hostlist_ranged_string`` does (``b[0,2]``, not ``b0,b2``)."""
    bad = [h for h in hosts if not isinstance(h, str) or not _HOST.fullmatch(h)]
    if bad:
        raise ValueError(f"host names must be non-empty, without spaces, ',', '[' or ']': {bad[:5]}")
    groups: list[tuple[str, list[str]]] = []  # (prefix, digit strings) or (name, []) for a plain name
    for h in hosts:
        m = _TRAILING_DIGITS.match(h)
        if m is None:
            groups.append((h, []))
        elif groups and groups[-1][1] and groups[-1][0] == m.group(1):
            groups[-1][1].append(m.group(2))
        else:
            groups.append((m.group(1), [m.group(2)]))
    out = []
    for prefix, digits in groups:
        if not digits:
            out.append(prefix)
        elif len(digits) == 1:
            out.append(prefix + digits[0])
        else:
            bracket = f"{prefix}[{','.join(_ranges(digits))}]"
            plain = ",".join(prefix + d for d in digits)
            out.append(bracket if len(bracket) <= len(plain) or not shortest else plain)
    return ",".join(out)


def _ranges(digits: list[str]) -> Iterator[str]:
    """``["08", "09", "10", "3"]`` -> ``"08-10", "3"``: each range expands back to exactly
    its strings (:func:`expand_hostlist` pads a range to the width of its first number
    when that number starts with 0)."""
    i = 0
    while i < len(digits):
        first = digits[i]
        width = len(first) if first.startswith("0") else 0
        j = i
        while j + 1 < len(digits) and digits[j + 1] == str(int(digits[j]) + 1).zfill(width):
            j += 1
        yield first if j == i else f"{first}-{digits[j]}"
        i = j + 1
