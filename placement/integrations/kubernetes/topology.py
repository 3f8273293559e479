"""The network tree of a Kubernetes cluster: from node labels (innermost level first) or from
Volcano HyperNodes; each server's first switch, each switch's parent and level."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from placement.integrations.kubernetes.keys import LEVEL_FAMILIES
from placement.integrations.kubernetes.nodes import Node, Nodes, Reader, label_key
from placement.integrations.levels import level_links, levels_needed
from placement.model import Link, Switch

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
"""Operators of a HyperNode member's label selector."""


@dataclass
class Tree:
    """Switches by level, each with its parent switch (``None`` at the top), and each
    server's first switch."""

    level: dict[str, int] = field(default_factory=dict)
    parent: dict[str, str | None] = field(default_factory=dict)
    uplink: dict[str, str] = field(default_factory=dict)
    levels: int = 0


def default_labels(servers: Sequence[Node]) -> list[str]:
    for _family, labels in LEVEL_FAMILIES:
        present = [k for k in labels if any(k in s.labels for s in servers)]
        if present:
            return present
    return []


def label_tree(r: Reader, servers: Sequence[Node], levels: Sequence[str]) -> Tree:
    tree = Tree(levels=len(levels))
    nowhere = {k for k in levels if servers and not any(s.labels.get(k) for s in servers)}
    for k in sorted(nowhere):
        r.problems.append(f"nodes: no GPU node has the level label {k!r} (choose others with level_labels)")
    witness: dict[str, tuple[str, str]] = {}  # switch -> (parent switch, node that says so)
    clash: set[tuple[str, str]] = set()
    for s in servers:
        vals = []
        for k in levels:
            v = s.labels.get(k)
            if not v and k not in nowhere:
                what = "has an empty value" if k in s.labels else "is missing"
                r.problems.append(
                    f"{s.where}.metadata.labels{label_key(k)} {what} on GPU node {s.name!r} (every GPU node needs "
                    f"each level label: {', '.join(levels)}; choose others with level_labels)"
                )
            vals.append(v)
        if not all(vals):
            continue
        path = [f"{k}={v}" for k, v in zip(levels, vals)]
        tree.uplink[s.name] = path[0]
        for lv, sw in enumerate(path):
            tree.level[sw] = lv
            up = path[lv + 1] if lv + 1 < len(path) else None
            tree.parent.setdefault(sw, up)
            if sw not in witness:
                witness[sw] = (up or "", s.name)
            elif witness[sw][0] != (up or "") and (sw, up or "") not in clash:
                clash.add((sw, up or ""))
                other, node = witness[sw]
                r.problems.append(
                    f"nodes: the level labels form no tree: {sw} lies under {other} (node {node!r}) and under "
                    f"{up} (node {s.name!r})"
                )
    return tree


@dataclass
class _HyperNode:
    index: int
    name: str
    tier: int
    nodes: list[tuple[Callable[[Node], bool], int]] = field(default_factory=list)
    children: list[tuple[str, int]] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"hypernodes.items[{self.index}]"


def _label_selector(r: Reader, sel: Any, where: str) -> Callable[[Node], bool] | None:
    """A Kubernetes label selector (``matchLabels``, ``matchExpressions``); empty matches nothing."""
    if not isinstance(sel, dict):
        r.problems.append(f"{where} must be an object, got {type(sel).__name__}")
        return None
    ok = True
    labels = r.mapping(sel, "matchLabels", where)
    for k, v in labels.items():
        if not isinstance(v, str):
            r.problems.append(f"{where}.matchLabels{label_key(k)} must be a string, got {v!r}")
            ok = False
    exprs: list[tuple[str, str, list[str]]] = []
    raw = sel.get("matchExpressions") or []
    if not isinstance(raw, list):
        r.problems.append(f"{where}.matchExpressions must be a list, got {type(raw).__name__}")
        raw, ok = [], False
    for n, e in enumerate(raw):
        at = f"{where}.matchExpressions[{n}]"
        e = e if isinstance(e, dict) else {}
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if not isinstance(key, str) or not key:
            r.problems.append(f"{at}.key must be a non-empty string, got {key!r}")
            ok = False
        if op not in SELECTOR_OPERATORS:
            r.problems.append(f"{at}.operator must be one of {', '.join(SELECTOR_OPERATORS)}, got {op!r}")
            ok = False
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            r.problems.append(f"{at}.values must be a list of strings, got {values!r}")
            ok = False
        elif op in ("In", "NotIn") and not values:
            r.problems.append(f"{at}.values must not be empty with operator {op}")
            ok = False
        elif op in ("Exists", "DoesNotExist") and values:
            r.problems.append(f"{at}.values must be empty with operator {op}, got {values!r}")
            ok = False
        if ok:
            exprs.append((str(key), str(op), list(values)))
    if not ok:
        return None
    if not labels and not exprs:
        return lambda n: False

    def match(n: Node) -> bool:
        if any(n.labels.get(k) != v for k, v in labels.items()):
            return False
        for key, op, values in exprs:
            has = key in n.labels
            if (
                (op == "In" and not (has and n.labels[key] in values))
                or (op == "NotIn" and has and n.labels[key] in values)
                or (op == "Exists" and not has)
                or (op == "DoesNotExist" and has)
            ):
                return False
        return True

    return match


def _named(name: str) -> Callable[[Node], bool]:
    return lambda n: n.name == name


def _searched(rx: re.Pattern[str]) -> Callable[[Node], bool]:
    """Volcano's ``regexp.MatchString``: the pattern is searched in the name, not anchored."""
    return lambda n: rx.search(n.name) is not None


def _member(r: Reader, hn: _HyperNode, k: int, m: Any) -> None:
    where = f"{hn.where}.spec.members[{k}]"
    if not isinstance(m, dict):
        r.problems.append(f"{where} must be an object, got {type(m).__name__}")
        return
    kind = m.get("type")
    if kind not in ("Node", "HyperNode"):
        r.problems.append(f"{where}.type must be 'Node' or 'HyperNode', got {kind!r}")
        return
    sel = r.mapping(m, "selector", where)
    given = [s for s in ("exactMatch", "regexMatch", "labelMatch") if sel.get(s) is not None]
    if len(given) != 1:
        r.problems.append(
            f"{where}.selector must give one of exactMatch, regexMatch, labelMatch, got "
            + (", ".join(given) if given else "none")
        )
        return
    how = given[0]
    at = f"{where}.selector.{how}"
    if kind == "HyperNode" and how != "exactMatch":
        r.problems.append(f"{at}: a HyperNode member is named by exactMatch (Volcano matches no pattern or label)")
        return
    if how == "exactMatch":
        name = r.mapping(sel, how, f"{where}.selector").get("name")
        if not isinstance(name, str) or not name:
            r.problems.append(f"{at}.name must be a non-empty string, got {name!r}")
        elif kind == "HyperNode":
            hn.children.append((name, k))
        else:
            hn.nodes.append((_named(name), k))
    elif how == "regexMatch":
        pattern = r.mapping(sel, how, f"{where}.selector").get("pattern")
        try:
            rx = re.compile(pattern) if isinstance(pattern, str) and pattern else None
        except re.error as e:
            r.problems.append(f"{at}.pattern {pattern!r} is not a regular expression: {e}")
            return
        if rx is None:
            r.problems.append(f"{at}.pattern must be a non-empty string, got {pattern!r}")
        else:
            hn.nodes.append((_searched(rx), k))
    else:
        match = _label_selector(r, sel[how], at)
        if match is not None:
            hn.nodes.append((match, k))


def hypernode_tree(r: Reader, doc: Any, nodes: Nodes) -> tuple[Tree, list[int]]:
    hns: dict[str, _HyperNode] = {}
    for i, item in r.items(doc, "hypernodes", "HyperNode", "kubectl get hypernodes -o json"):
        where = f"hypernodes.items[{i}]"
        name = r.name(item, where)
        spec = r.mapping(item, "spec", where)
        tier = spec.get("tier")
        if isinstance(tier, bool) or not isinstance(tier, int) or tier < 0:
            r.problems.append(f"{where}.spec.tier must be an integer >= 0, got {tier!r}")
            continue
        members = spec.get("members")
        if not isinstance(members, list) or not members:
            r.problems.append(f"{where}.spec.members must be a non-empty list, got {members!r}")
            continue
        if name is None:
            continue
        if name in hns:
            r.problems.append(f"{where}.metadata.name duplicates HyperNode {name!r} of {hns[name].where}")
            continue
        hn = hns[name] = _HyperNode(i, name, tier)
        for k, m in enumerate(members):
            _member(r, hn, k, m)

    tiers = sorted({h.tier for h in hns.values()})
    pos = {t: k for k, t in enumerate(tiers)}
    tree = Tree(levels=len(tiers))
    sw = {h: f"hypernode/{h}" for h in hns}
    for h in hns.values():
        tree.level[sw[h.name]] = pos[h.tier]
        tree.parent[sw[h.name]] = None
    parent_of: dict[str, tuple[str, int]] = {}
    for h in hns.values():
        for child, k in h.children:
            at = f"{h.where}.spec.members[{k}].selector.exactMatch.name"
            if child not in hns:
                r.problems.append(f"{at} names HyperNode {child!r}, which is not in the list")
            elif child in parent_of and parent_of[child][0] != h.name:
                r.problems.append(
                    f"{at}: HyperNode {child!r} is a member of both {parent_of[child][0]!r} and {h.name!r}"
                )
            elif child not in parent_of:
                parent_of[child] = (h.name, k)
                if hns[child].tier >= h.tier:
                    r.problems.append(
                        f"{at}: HyperNode {child!r} (tier {hns[child].tier}) is a member of {h.name!r} "
                        f"(tier {h.tier}); a member must be of a lower tier"
                    )
                tree.parent[sw[child]] = sw[h.name]
    reported: set[str] = set()
    for start in hns:
        chain, at_hn = [start], start
        while at_hn in parent_of and parent_of[at_hn][0] not in chain:
            at_hn = parent_of[at_hn][0]
            chain.append(at_hn)
        if at_hn in parent_of and parent_of[at_hn][0] in chain:
            cycle = chain[chain.index(parent_of[at_hn][0]) :]
            if not reported & set(cycle):
                reported |= set(cycle)
                r.problems.append(f"hypernodes: HyperNodes form a cycle: {' -> '.join(cycle + [cycle[0]])}")
    for node in nodes.servers:
        homes = [(h, k) for h in hns.values() for match, k in h.nodes if match(node)]
        first = homes[0][0].name if homes else None
        others = sorted({h.name for h, _ in homes if h.name != first})
        if not homes:
            r.problems.append(f"{node.where}: GPU node {node.name!r} is a member of no HyperNode")
        elif others:
            r.problems.append(
                f"{node.where}: GPU node {node.name!r} is a member of several HyperNodes: "
                + ", ".join(repr(x) for x in [first, *others])
            )
        else:
            tree.uplink[node.name] = sw[homes[0][0].name]
    return tree, tiers


def reached(tree: Tree) -> tuple[list[str], list[str]]:
    """The switches above some server, by level, and those of them without a parent."""
    used: list[str] = []
    seen: set[str] = set()
    for first in tree.uplink.values():
        sw: str | None = first
        while sw is not None and sw not in seen:
            seen.add(sw)
            used.append(sw)
            sw = tree.parent.get(sw)
    used.sort(key=lambda s: tree.level[s])
    return used, [s for s in used if tree.parent.get(s) is None]


def needed_levels(tree: Tree) -> int:
    """Bandwidths the tree needs (:func:`placement.integrations.levels.levels_needed`)."""
    return levels_needed(tree.level, tree.parent, reached(tree)[0], depth=tree.levels)


def tree_links(tree: Tree, gbps: Sequence[float], root: str) -> tuple[list[Switch], list[Link]]:
    """The switches above some server and the links, by the rule of
    :func:`placement.integrations.levels.level_links`; several top switches are joined by
    ``root`` at level ``tree.levels``."""
    return level_links(tree.uplink, tree.parent, tree.level, reached(tree)[0], gbps, root, depth=tree.levels)
