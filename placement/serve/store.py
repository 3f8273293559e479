"""The service's durable state: SQLite by default (WAL, every commit synced), any SQLAlchemy URL
otherwise; the schema is Alembic's (``placement/serve/migrations``), upgraded on open, and a
database of a schema this version does not know is refused, never misread.

Tables: ``meta`` (the cluster as a ``placement-instance/1`` document, the holdings' version),
``jobs`` (each job's spec, state and times), ``holdings`` (the GPUs each reserved or running job
holds, per server), ``observations`` (per-worker iteration rows, the ``estimate --logs``
format), ``estimates`` (each server's fitted distribution and when), ``decisions`` (every
placement decision, request and answer), and for the Kubernetes extender ``gangs`` (a gang's
size and job) and ``pods`` (the node each pod of a gang was given)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import sqlalchemy as sa
    from sqlalchemy.engine import Connection, Engine
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

from placement.errors import InvalidInputError

__all__ = [
    "StateError",
    "Store",
    "metadata",
    "jobs",
    "holdings",
    "observations",
    "estimates",
    "decisions",
    "meta",
    "gangs",
    "pods",
    "HEAD",
    "ACTIVE",
    "url_of",
    "engine_for",
]

HEAD = "0003"
"""The schema revision this version writes (Alembic's head)."""

ACTIVE = ("reserved", "running")
"""Job states that hold GPUs."""

DECISION_LOCK_KEY = 0x706C6163  # "plac"
"""The PostgreSQL advisory lock placement decisions take turns on."""

metadata = sa.MetaData()
meta = sa.Table(
    "meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.String(255), primary_key=True),
    sa.Column("spec", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False, index=True),
    sa.Column("stages", sa.Text, nullable=True),
    sa.Column("placed_at", sa.Float, nullable=False),
    sa.Column("reserved_until", sa.Float, nullable=True),
    sa.Column("started_at", sa.Float, nullable=True),
    sa.Column("ended_at", sa.Float, nullable=True),
    sa.Column("decision_id", sa.Integer, nullable=True),
    sa.Column("started_seq", sa.Integer, nullable=True),
    sa.Column("paused_until", sa.Float, nullable=True),
)
holdings = sa.Table(
    "holdings",
    metadata,
    sa.Column("job_id", sa.String(255), sa.ForeignKey("jobs.id"), primary_key=True),
    sa.Column("server", sa.String(255), primary_key=True),
    sa.Column("workers", sa.Integer, nullable=False),
    sa.Column("shards", sa.Integer, nullable=False, server_default="0"),
)
observations = sa.Table(
    "observations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("job", sa.String(255), nullable=False),
    sa.Column("worker", sa.String(255), nullable=False),
    sa.Column("server", sa.String(255), nullable=False),
    sa.Column("iteration", sa.BigInteger, nullable=False),
    sa.Column("duration", sa.Float, nullable=False),
    sa.Column("received_at", sa.Float, nullable=False, index=True),
)
estimates = sa.Table(
    "estimates",
    metadata,
    sa.Column("server", sa.String(255), primary_key=True),
    sa.Column("slowdown", sa.Text, nullable=False),
    sa.Column("samples", sa.Integer, nullable=False),
    sa.Column("fitted_at", sa.Float, nullable=False),
)
decisions = sa.Table(
    "decisions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("request", sa.Text, nullable=False),
    sa.Column("response", sa.Text, nullable=False),
)


gangs = sa.Table(
    "gangs",
    metadata,
    sa.Column("id", sa.String(255), primary_key=True),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("job", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
pods = sa.Table(
    "pods",
    metadata,
    sa.Column("uid", sa.String(255), primary_key=True),
    sa.Column("gang", sa.String(255), nullable=False, index=True),
    sa.Column("namespace", sa.String(255), nullable=False),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("node", sa.String(255), nullable=False),
    sa.Column("pinned_at", sa.Float, nullable=False),
)


class StateError(InvalidInputError):
    """The state database cannot be used: a schema this version does not know, or not a
    placement state database at all."""

    kind = "state database"


def url_of(state: str | Path) -> str:
    """A SQLAlchemy URL from ``--state``: a URL as given, a path as a SQLite file."""
    s = str(state)
    if "://" in s:
        return s
    return f"sqlite:///{Path(s).resolve()}"


def _sqlite_engine(url: str) -> Engine:
    engine = sa.create_engine(url, connect_args={"timeout": 60.0, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi: Any, _record: Any) -> None:
        dbapi.isolation_level = None  # transactions are begun below, IMMEDIATE: one writer at a time
        cur = dbapi.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")  # a commit is on disk before it is acknowledged
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=60000")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def engine_for(url: str) -> Engine:
    """The SQLAlchemy engine of a state URL: SQLite with its durability settings, any other
    database with connections checked before use (one restarted meanwhile is reconnected)."""
    return _sqlite_engine(url) if url.startswith("sqlite") else sa.create_engine(url, pool_pre_ping=True)


@dataclass
class Store:
    """The state database, opened (and migrated to :data:`HEAD`) by :meth:`open`."""

    engine: Engine
    url: str

    @classmethod
    def open(cls, state: str | Path) -> Store:
        """The state at ``state`` (a path or URL), migrated to :data:`HEAD`."""
        url = url_of(state)
        store = cls(engine_for(url), url)
        store.migrate()
        return store

    # ------------------------------------------------------------------ schema
    def migrate(self, to: str = "head") -> None:
        """Upgrade the schema to :data:`HEAD` (or the revision ``to``; a new database is
        created); refuse a database whose revision this version does not know, or one with
        tables but no revision."""
        from alembic import command
        from alembic.config import Config
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        cfg = Config()
        cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        known = {s.revision for s in ScriptDirectory.from_config(cfg).walk_revisions()}
        with self.engine.begin() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
            tables = set(sa.inspect(conn).get_table_names())
            if current is None and tables - {"alembic_version"}:
                raise StateError(
                    [
                        f"{self.url} has tables ({', '.join(sorted(tables)[:5])}) but no placement schema "
                        "revision: not a placement state database; give another --state"
                    ]
                )
            if current is not None and current not in known:
                raise StateError(
                    [
                        f"{self.url} is at schema revision {current!r}, which this version of placement "
                        f"does not know (it knows {', '.join(sorted(known))}): it was written by a newer "
                        "placement; upgrade placement or give another --state"
                    ]
                )
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, to)

    def revision(self) -> str | None:
        from alembic.runtime.migration import MigrationContext

        with self.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    # ------------------------------------------------------------------ access
    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One transaction (IMMEDIATE on SQLite): committed, and so durable, when the block ends."""
        with self.engine.begin() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    @property
    def has_decision_lock(self) -> bool:
        """Whether :meth:`decision_lock` locks anything (PostgreSQL's advisory locks)."""
        return self.engine.dialect.name == "postgresql"

    def decision_lock(self, conn: Connection) -> None:
        """Hold, until ``conn``'s transaction ends, the lock every placement decision takes
        (PostgreSQL: a transaction-level advisory lock; SQLite: its write lock, which
        ``BEGIN IMMEDIATE`` has already taken)."""
        if self.has_decision_lock:
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": DECISION_LOCK_KEY})

    def get_meta(self, conn: Connection, key: str, *, lock: bool = False) -> str | None:
        """``key``'s value; with ``lock``, the row stays locked until the transaction ends
        (``SELECT ... FOR UPDATE`` where the database has it: two replicas' decisions on
        PostgreSQL queue here; SQLite's ``BEGIN IMMEDIATE`` already admits one writer)."""
        q = sa.select(meta.c.value).where(meta.c.key == key)
        return conn.execute(q.with_for_update() if lock else q).scalar_one_or_none()

    def set_meta(self, conn: Connection, key: str, value: str) -> None:
        if self.get_meta(conn, key) is None:
            conn.execute(meta.insert().values(key=key, value=value))
        else:
            conn.execute(meta.update().where(meta.c.key == key).values(value=value))

    def held(self, conn: Connection) -> dict[str, dict[str, int]]:
        """``{job: {server: workers}}`` of every job that holds GPUs (reserved or running)."""
        rows = conn.execute(
            sa.select(holdings.c.job_id, holdings.c.server, holdings.c.workers)
            .join(jobs, jobs.c.id == holdings.c.job_id)
            .where(jobs.c.state.in_(ACTIVE))
        )
        out: dict[str, dict[str, int]] = {}
        for jid, sid, k in rows:
            if k > 0:
                out.setdefault(jid, {})[sid] = int(k)
        return out

    def insert_rows(self, conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            conn.execute(table.insert(), [dict(r) for r in rows])

    @staticmethod
    def dumps(x: Any) -> str:
        return json.dumps(x, sort_keys=True, separators=(",", ":"))
