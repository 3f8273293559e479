"""Slurm batch scripts of a placement, and a ``slurm.conf`` / ``topology.conf`` describing
an instance's cluster.

Every placed job becomes ``<stem>.sbatch`` and ``<stem>.hosts`` (stem:
:func:`placement.integrations.names.file_stem`).  The script pins the job's nodes
(``--nodelist``, ``--nodes``), its ranks (``--ntasks``, one per worker) and its GPUs, one per
worker:

- when every node holds the same number k of the job's workers: ``--ntasks-per-node=k`` and
  ``--gres=gpu:k``, exact on every Slurm version;
- otherwise (say 3 + 1) no per-node GRES option can say it (``--gres`` and
  ``--gpus-per-node`` ask the same count of every node, and the largest would hold GPUs the
  job does not use), so the script asks one GPU per task (``--gpus-per-task=1``) laid out by
  the hostfile (``--distribution=arbitrary``): submitted as ``SLURM_HOSTFILE=<stem>.hosts
  sbatch <stem>.sbatch``, Slurm 23.11 and later allocate on each node the tasks, hence the
  GPUs, the hostfile puts there; earlier versions keep the nodes and the totals but choose
  the split themselves.

``--switches`` asks for the number of leaf switches the job spans, as :func:`topology_conf`
describes them.  In the job, ``srun --distribution=arbitrary`` with ``SLURM_HOSTFILE``
starts rank r on line r of the ``.hosts`` file (:func:`placement.integrations.ranks.rank_order`:
ring neighbours share a server, then a rack).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from placement.errors import InvalidInputError
from placement.integrations.names import file_stem
from placement.integrations.options import ExportOptions
from placement.integrations.ranks import job_ranks, rank_order, server_order
from placement.integrations.slurm.hostlist import compress_hostlist
from placement.integrations.slurm.keys import JOB_ID_LINE
from placement.integrations.tiers import tiers_of
from placement.model import Instance, Solution
from placement.problem import cluster_of

__all__ = ["sbatch_files", "slurm_conf", "topology_conf", "SwitchTree", "switch_tree", "gres_type"]

_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_TIME = re.compile(r"(\d+-)?\d+(:\d+){0,2}|UNLIMITED|INFINITE", re.IGNORECASE)
_PLAIN = re.compile(r"[\w.+@/-]+")


@dataclass(frozen=True)
class SwitchTree:
    """The instance's network as Slurm's ``topology/tree`` sees it: ``nodes`` (leaf switch
    -> servers), ``kids`` (switch -> child switches), ``leaf_of`` (server -> leaf switch)."""

    nodes: dict[str, list[str]] = field(default_factory=dict)
    kids: dict[str, list[str]] = field(default_factory=dict)
    leaf_of: dict[str, str] = field(default_factory=dict)


def switch_tree(instance: Instance) -> SwitchTree:
    """The bandwidth-domain tree of ``instance`` as switches (a tree whatever the graph:
    leaf-spine, fat tree, ring).  A domain is a switch named as
    :attr:`placement.integrations.tiers.Tiers.names` names it (the rack's switch when one switch
    links exactly its servers); its servers hang on it when it has no inner domain, and on
    an added leaf ``<name>-nodes`` when it has (Slurm refuses a switch with both nodes and
    switches).  A server in no domain (linked to no other) gets a leaf ``<server>-switch``;
    with no domain at all the tree is empty (no ``topology.conf``, no ``--switches``).
    Memoised on the instance."""
    tree = instance.derived.get("export.slurm.tree")
    if tree is not None:
        return tree
    cluster = cluster_of(instance)
    if not cluster.domains:  # no two servers linked: no network to describe
        instance.derived["export.slurm.tree"] = SwitchTree()
        return instance.derived["export.slurm.tree"]
    names = tiers_of(instance).names
    used = set(names)

    def fresh(base: str) -> str:
        name, k = base, 1
        while name in used:
            k += 1
            name = f"{base}-{k}"
        used.add(name)
        return name

    tree = SwitchTree()
    pos = instance.server_pos
    domains = sorted(cluster.domains, key=lambda d: pos[d.servers[0]])
    direct: dict[int, list[str]] = {}
    for sid in cluster.server_ids:
        chain = cluster.chain(sid)
        if chain:
            direct.setdefault(chain[0], []).append(sid)
        else:
            leaf = fresh(f"{sid}-switch")
            tree.nodes[leaf] = [sid]
            tree.leaf_of[sid] = leaf
    for d in domains:
        name = names[d.index]
        servers = direct.get(d.index, [])
        if not d.children:
            tree.nodes[name] = servers
            tree.leaf_of.update(dict.fromkeys(servers, name))
            continue
        tree.kids[name] = [names[c] for c in sorted(d.children, key=lambda c: pos[cluster.domains[c].servers[0]])]
        if servers:
            leaf = fresh(f"{name}-nodes")
            tree.nodes[leaf] = servers
            tree.kids[name].append(leaf)
            tree.leaf_of.update(dict.fromkeys(servers, leaf))
    tree = SwitchTree(dict(sorted(tree.nodes.items(), key=lambda kv: pos[kv[1][0]])), tree.kids, tree.leaf_of)
    instance.derived["export.slurm.tree"] = tree
    return tree


def _node_name_problems(instance: Instance, servers: list[str] | None = None) -> list[str]:
    return [
        f"server {sid!r}: not usable as a Slurm node name (letters, digits, '.', '_', '-'; a letter or digit first)"
        for sid in (servers if servers is not None else [s.id for s in instance.servers])
        if not _NODE_NAME.fullmatch(sid)
    ]


def _sbatch_value(text: str) -> str:
    """``text`` as one ``#SBATCH`` option value: bare when plain, else in double quotes
    (sbatch drops them and keeps what is inside, spaces and ``$`` included)."""
    return text if _PLAIN.fullmatch(text) else f'"{text}"'


def sbatch_files(
    instance: Instance,
    solution: Solution,
    *,
    command: str = "python train.py",
    partition: str | None = None,
    job_name_prefix: str = "",
    time_limit: str | None = None,
) -> dict[str, str]:
    """``{"<stem>.sbatch": script, "<stem>.hosts": one host per rank}`` for every placed job
    of ``solution`` (check it first: :func:`placement.export.export` does).

    >>> import placement
    >>> inst = placement.load_bundled("tiny")
    >>> files = sbatch_files(inst, placement.solve(inst, "greedy", seed=1))
    >>> print(files["j0.sbatch"].split("#SBATCH", 1)[1].split("export")[0].strip())  # doctest: +ELLIPSIS
    --job-name=j0
    #SBATCH --nodes=...
    """
    problems = []
    if "\n" in command or "\r" in command or not command.strip():
        problems.append(f"command must be one non-empty line, got {command!r}")
    if partition is not None and not _PLAIN.fullmatch(partition):
        problems.append(f"partition must be a Slurm partition name, got {partition!r}")
    if time_limit is not None and not _TIME.fullmatch(time_limit):
        problems.append(
            f"time_limit must be a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS), got {time_limit!r}"
        )
    placed = {j: {s: int(k) for s, k in a.items() if k > 0} for j, a in solution.assignment.items()}
    placed = {j: a for j, a in placed.items() if a}
    for j, a in placed.items():
        name = job_name_prefix + j
        if '"' in name or any(ord(c) < 32 for c in name):
            problems.append(f"job {j!r}: a Slurm job name cannot hold '\"' or control characters")
        unknown = [s for s in a if s not in instance.server_by_id]
        if unknown:
            problems.append(f"assignment[{j!r}]: unknown server(s) {unknown}")
            continue
        problems += _node_name_problems(instance, list(a))
    if problems:
        raise InvalidInputError(sorted(set(problems), key=problems.index), source="the Slurm export")
    tree = switch_tree(instance)
    files: dict[str, str] = {}
    for j in sorted(placed, key=lambda j: instance.job_pos.get(j, len(instance.jobs))):
        a = placed[j]
        job = instance.job_by_id.get(j)
        stem = file_stem(j)
        hosts = job_ranks(instance, solution, job) if job is not None else rank_order(instance, a)
        servers = server_order(instance, a)
        counts = {a[s] for s in servers}
        lines = [
            "#!/bin/bash",
            f"# placement: job {j!r} of instance {instance.name!r} ({solution.method}, {solution.status.value}):",
            f"# {len(hosts)} worker(s) on {len(servers)} node(s), {', '.join(f'{s}:{a[s]}' for s in servers)}.",
            f"# {JOB_ID_LINE} {json.dumps(j)}",
        ]
        mine = solution.gpus.get(j, {})
        chosen = {s: tuple(mine[s]) for s in servers if mine.get(s)}
        if chosen:
            lines += [
                "# GPUs chosen for their per-GPU factors: " + _gpu_list(chosen, ", "),
                "# Slurm picks a node's GPU indices itself (no sbatch option asks for given ones): compare with",
                "# SLURM_JOB_GPUS on each node; PLACEMENT_GPUS below says which were chosen.",
            ]
        if len(counts) > 1:
            lines += [
                "# The nodes hold different numbers of workers: submit with the hostfile,",
                f"#   SLURM_HOSTFILE={stem}.hosts sbatch {stem}.sbatch",
                "# so that Slurm (23.11+) allocates each node's GPUs as the hostfile lays out its tasks.",
            ]
        else:
            lines.append(f"# Submit from this folder: sbatch {stem}.sbatch (the job reads {stem}.hosts there).")
        opts = [f"--job-name={_sbatch_value(job_name_prefix + j)}"]
        if partition is not None:
            opts.append(f"--partition={partition}")
        if time_limit is not None:
            opts.append(f"--time={time_limit}")
        opts += [f"--nodes={len(servers)}", f"--nodelist={compress_hostlist(servers)}", f"--ntasks={len(hosts)}"]
        if len(counts) == 1:
            k = counts.pop()
            opts += [f"--ntasks-per-node={k}", f"--gres=gpu:{k}"]
        else:
            opts += ["--gpus-per-task=1", "--distribution=arbitrary"]
        if job is not None and job.cpus_per_worker is not None:
            opts.append(f"--cpus-per-task={max(1, math.ceil(job.cpus_per_worker))}")
        if job is not None and job.memory_gb_per_worker is not None:
            opts.append(f"--mem-per-gpu={max(1, math.ceil(job.memory_gb_per_worker * 1024))}M")
        if tree.nodes:
            opts.append(f"--switches={len({tree.leaf_of[s] for s in servers})}")
        lines += [f"#SBATCH {o}" for o in opts]
        lines += [
            "",
            "# rank r runs on line r of the hostfile"
            + (
                f" (Megatron's order: rank t + {job.unit} (r + {job.dp} s) is group (stage s, replica r))"
                if job is not None and job.is_hybrid
                else ""
            ),
            f'export SLURM_HOSTFILE="${{SLURM_SUBMIT_DIR:-.}}/{stem}.hosts"',
            *([f'export PLACEMENT_GPUS="{_gpu_list(chosen, ";")}"'] if chosen else []),
            f"srun --distribution=arbitrary {command}",
            "",
        ]
        files[f"{stem}.sbatch"] = "\n".join(lines)
        files[f"{stem}.hosts"] = "".join(f"{h}\n" for h in hosts)
    return files


def _gpu_list(chosen: Mapping[str, tuple[int, ...]], sep: str) -> str:
    """``node:i,j`` for each node's chosen GPUs, joined by ``sep``."""
    return sep.join(f"{s}:{','.join(str(g) for g in ids)}" for s, ids in chosen.items())


def gres_type(gpu_type: str) -> str | None:
    """The Slurm GRES type of an instance's GPU type: ``None`` (untyped ``gpu:<n>``) for
    ``"unknown"``, else the name with every character Slurm does not take in a type
    (anything but letters, digits, ``_``, ``.``, ``-``) as ``_``."""
    if gpu_type == "unknown":
        return None
    return re.sub(r"[^A-Za-z0-9_.-]", "_", gpu_type) or None


def slurm_conf(
    instance: Instance,
    *,
    cluster_name: str = "placement",
    control_host: str = "localhost",
    control_addr: str | None = None,
    port: int = 6817,
    state_dir: str = "/var/spool/slurmctld",
    log_file: str | None = None,
    slurm_user: str = "slurm",
    auth: str = "munge",
    partition: str = "gpu",
    node_addr: str | None = None,
    cloud: bool = False,
) -> str:
    """A ``slurm.conf`` for the instance's cluster: one ``NodeName`` line per server
    (``Gres=gpu:<type>:<n>``, :func:`gres_type`; ``CPUs`` from the server, or one per GPU
    when the instance gives none, as every task needs a CPU; ``RealMemory`` in MB =
    ``memory_gb`` x 1024 when given), one partition ``partition`` holding every node, the
    ``topology/tree`` plugin when the cluster has switches (:func:`topology_conf`), the
    ``select/cons_tres`` selector.  GPUs in use are jobs, not configuration: not written.

    ``control_host``/``control_addr``: ``SlurmctldHost=<host>(<addr>)``; ``port``: the
    controller's port (slurmd: ``port + 1``); ``auth``: ``"munge"`` or ``"none"`` (AuthType
    and CredType); ``node_addr``: one address for every node (``NodeAddr`` and
    ``NodeHostname``, for a controller without the nodes' names in DNS); ``cloud``: nodes
    declared ``State=CLOUD`` with no-op power-saving programs, so that a controller without
    any slurmd schedules on them (``sbatch --test-only`` evaluates a job against them).
    """
    problems = _node_name_problems(instance)
    if auth not in ("munge", "none"):
        problems.append(f"auth must be 'munge' or 'none', got {auth!r}")
    if not 0 < port < 65535:
        problems.append(f"port must be in 1..65534, got {port}")
    for label, value in (("cluster_name", cluster_name), ("partition", partition), ("control_host", control_host)):
        if not _NODE_NAME.fullmatch(value):
            problems.append(f"{label} must be a plain name (letters, digits, '.', '_', '-'), got {value!r}")
    for label, path in (("state_dir", state_dir), ("log_file", log_file)):
        if path is not None and (not path.startswith("/") or any(c.isspace() for c in path)):
            problems.append(f"{label} must be an absolute path without spaces, got {path!r}")
    if problems:
        raise InvalidInputError(problems, source="slurm.conf")
    tree = switch_tree(instance)
    host = f"{control_host}({control_addr})" if control_addr else control_host
    memory = any(s.memory_gb is not None for s in instance.servers)
    lines = [
        f"# The cluster of instance {instance.name!r}, written by placement.",
        f"ClusterName={cluster_name}",
        f"SlurmctldHost={host}",
        f"SlurmctldPort={port}",
        f"SlurmdPort={port + 1}",
        f"SlurmUser={slurm_user}",
        f"AuthType=auth/{auth}",
        f"CredType=cred/{auth}",
        f"StateSaveLocation={state_dir}",
        f"SlurmctldPidFile={state_dir}/slurmctld.pid",
        "SlurmdSpoolDir=/var/spool/slurmd",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        f"SelectTypeParameters={'CR_Core_Memory' if memory else 'CR_Core'}",
        "GresTypes=gpu",
        "ProctrackType=proctrack/linuxproc",
        "MpiDefault=none",
        "ReturnToService=2",
        "MailProg=/bin/true",
    ]
    if log_file is not None:
        lines.append(f"SlurmctldLogFile={log_file}")
    if tree.nodes:
        lines.append("TopologyPlugin=topology/tree")
    if cloud:
        lines += [
            "SuspendProgram=/bin/true",
            "ResumeProgram=/bin/true",
            "SuspendTime=3600",
            "ResumeTimeout=3600",
            "PrivateData=cloud",
        ]
    lines.append("")
    for s in instance.servers:
        parts = [f"NodeName={s.id}"]
        if node_addr is not None:
            parts += [f"NodeAddr={node_addr}", f"NodeHostname={node_addr}"]
        if s.gpus > 0:
            t = gres_type(s.gpu_type)
            parts.append(f"Gres=gpu:{t}:{s.gpus}" if t else f"Gres=gpu:{s.gpus}")
        parts.append(f"CPUs={max(1, int(s.cpus)) if s.cpus is not None else max(1, s.gpus)}")
        if s.memory_gb is not None:
            parts.append(f"RealMemory={max(1, math.floor(s.memory_gb * 1024))}")
        parts.append(f"State={'CLOUD' if cloud else 'UNKNOWN'}")
        lines.append(" ".join(parts))
    nodes = compress_hostlist([s.id for s in instance.servers])
    lines += ["", f"PartitionName={partition} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP", ""]
    return "\n".join(lines)


def topology_conf(instance: Instance) -> str:
    """A ``topology.conf`` (``topology/tree``) of the instance's network: its bandwidth
    domains as switches (:func:`switch_tree`), leaves first.  Empty (comments only) when no
    two servers are linked.

    >>> import placement
    >>> print(topology_conf(placement.load_bundled("tiny")))  # doctest: +ELLIPSIS
    # ...
    SwitchName=... Nodes=...
    """
    problems = _node_name_problems(instance)
    if problems:
        raise InvalidInputError(problems, source="topology.conf")
    tree = switch_tree(instance)
    lines = [f"# The network of instance {instance.name!r} (its bandwidth domains), written by placement."]
    lines += [f"SwitchName={sw} Nodes={compress_hostlist(ns)}" for sw, ns in tree.nodes.items()]
    lines += [f"SwitchName={sw} Switches={compress_hostlist(cs)}" for sw, cs in _upward(tree.kids)]
    return "\n".join(lines) + "\n"


def _upward(kids: Mapping[str, list[str]]) -> list[tuple[str, list[str]]]:
    """The switches with children, each after its children (lowest level first)."""
    height: dict[str, int] = {}

    def h(sw: str) -> int:
        if sw not in height:
            height[sw] = 1 + max((h(c) for c in kids.get(sw, ())), default=0) if sw in kids else 0
        return height[sw]

    return sorted(kids.items(), key=lambda kv: h(kv[0]))


def export_problems(instance: Instance, solution: Solution) -> list[str]:
    """What keeps ``solution`` from a Slurm export: a heterogeneous job's components may not
    share nodes in Slurm, and one component cannot hold GPU and GPU-less tasks, so no honest
    script pins workers and shards yet."""
    return [
        f"job {j!r} is a parameter-server job: the Slurm export does not place shards yet "
        "(use --to volcano or podgroup)"
        for j in sorted(solution.shards)
    ]


def slurm_files(instance: Instance, solution: Solution, options: ExportOptions) -> dict[str, str]:
    """:func:`sbatch_files` with the export's options (the ``slurm`` target)."""
    return sbatch_files(
        instance, solution, command=options.command, partition=options.partition, time_limit=options.time_limit
    )
