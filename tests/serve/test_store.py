"""The state database: created at the schema's head by Alembic's migrations, reopened as it is,
and refused with a clear message when it is of a schema this version does not know or not a
placement state database at all."""

import sqlite3

import pytest
import sqlalchemy as sa

from placement.serve.store import HEAD, StateError, Store, url_of


def test_a_new_database_is_migrated_to_the_head_and_reopened_as_it_is(tmp_path):
    path = tmp_path / "s.db"
    store = Store.open(path)
    assert store.revision() == HEAD == "0001"
    with store.write() as conn:
        store.set_meta(conn, "k", "v")
    again = Store.open(path)  # migrate() on a database at the head changes nothing
    assert again.revision() == "0001"
    with again.read() as conn:
        assert again.get_meta(conn, "k") == "v"
        tables = set(sa.inspect(conn).get_table_names())
    assert {"meta", "jobs", "holdings", "observations", "estimates", "decisions"} <= tables
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
    assert store.revision() == "0001"
