"""The state database: created at the schema's head by Alembic's migrations, reopened as it is,
and refused with a clear message when it is of a schema this version does not know or not a
placement state database at all."""

import sqlite3

import pytest
import sqlalchemy as sa

from placement.serve.store import HEAD, StateError, Store, engine_for, url_of


def test_a_new_database_is_migrated_to_the_head_and_reopened_as_it_is(tmp_path):
    path = tmp_path / "s.db"
    store = Store.open(path)
    assert store.revision() == HEAD == "0003"
    with store.write() as conn:
        store.set_meta(conn, "k", "v")
    again = Store.open(path)  # migrate() on a database at the head changes nothing
    assert again.revision() == HEAD
    with again.read() as conn:
        assert again.get_meta(conn, "k") == "v"
        tables = set(sa.inspect(conn).get_table_names())
    assert {"meta", "jobs", "holdings", "observations", "estimates", "decisions", "gangs", "pods"} <= tables
    with sqlite3.connect(path) as raw:  # durable: write-ahead log, every commit synced
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_database_of_a_newer_schema_is_refused_not_misread(tmp_path):
    path = tmp_path / "s.db"
    Store.open(path)
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE alembic_version SET version_num = '0042'")
    with pytest.raises(StateError) as e:
        Store.open(path)
    assert "'0042'" in str(e.value) and "newer" in str(e.value)


def test_a_database_that_is_not_a_placement_state_is_refused(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE payroll (name TEXT)")
    with pytest.raises(StateError, match="not a placement state database"):
        Store.open(path)
    with sqlite3.connect(path) as raw:  # and it was left alone
        assert [r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")] == ["payroll"]


def test_state_urls(tmp_path):
    assert url_of("postgresql://u@h/db") == "postgresql://u@h/db"
    assert url_of(tmp_path / "x.sqlite") == f"sqlite:///{(tmp_path / 'x.sqlite').resolve()}"


def test_migrate_is_idempotent_on_a_live_store(tmp_path):
    store = Store.open(tmp_path / "s.db")
    store.migrate()
    store.migrate()
    assert store.revision() == HEAD


def test_a_database_of_the_first_schema_is_upgraded_and_keeps_its_rows(tmp_path):
    """A state written by the first release (revision 0001) opens here: upgraded to the
    head, every row kept."""
    import placement
    from placement.serve.service import Service

    path = tmp_path / "old.db"
    old = Store(engine_for(url_of(path)), url_of(path))
    old.migrate(to="0001")
    assert old.revision() == "0001"
    with old.write() as conn:
        tables = set(sa.inspect(conn).get_table_names())
    assert "gangs" not in tables
    with old.write() as conn:
        conn.execute(sa.text("INSERT INTO meta (key, value) VALUES ('version', '0')"))
        conn.execute(sa.text("INSERT INTO jobs (id, spec, state, placed_at) VALUES ('a', '{}', 'running', 1.0)"))
        conn.execute(sa.text("INSERT INTO holdings (job_id, server, workers, shards) VALUES ('a', 's0', 4, 0)"))
    svc = Service(Store.open(path), placement.load_bundled("demo"))
    assert svc.store.revision() == HEAD
    assert svc.state()["assignment"] == {"a": {"s0": 4}}
    with svc.store.read() as conn:  # 0003: a running job's start order and the end of its restart
        columns = {c["name"] for c in sa.inspect(conn).get_columns("jobs")}
    assert {"started_seq", "paused_until"} <= columns


def test_a_database_of_the_second_schema_is_upgraded_and_its_running_jobs_replan(tmp_path):
    """A state of revision 0002 (before a running job's start order and restart were kept)
    opens here at the head with its rows; its running jobs are re-planned as before."""
    import placement
    from placement.serve.service import Service

    path = tmp_path / "old.db"
    old = Store(engine_for(url_of(path)), url_of(path))
    old.migrate(to="0002")
    assert old.revision() == "0002"
    spec = '{"id": "a", "workers": 4, "compute_ms": 100, "gradient_mb": 50, "iterations": 1000}'
    with old.write() as conn:
        conn.execute(sa.text("INSERT INTO meta (key, value) VALUES ('version', '0')"))
        conn.execute(sa.text(f"INSERT INTO jobs (id, spec, state, placed_at) VALUES ('a', '{spec}', 'running', 1.0)"))
        conn.execute(sa.text("INSERT INTO holdings (job_id, server, workers, shards) VALUES ('a', 's0', 4, 0)"))
        conn.execute(sa.text("INSERT INTO gangs (id, size, job, created_at) VALUES ('ns/g', 2, '{}', 1.0)"))
    svc = Service(Store.open(path), placement.load_bundled("demo"))
    assert svc.store.revision() == HEAD
    with svc.store.read() as conn:
        # the running job numbered in start order (so re-plans see it in order), no restart pending
        assert conn.execute(sa.text("SELECT started_seq, paused_until FROM jobs")).all() == [(1, None)]
        assert conn.execute(sa.text("SELECT value FROM meta WHERE key = 'starts'")).scalar_one() == "1"
        assert conn.execute(sa.text("SELECT id FROM gangs")).scalars().all() == ["ns/g"]
    out = svc.replan()
    assert out["priced"] == 1 and out["moves"] == []  # alone on an idle cluster: nowhere better
