"""A running job's start order (re-plans see the running jobs in the order they started, as
the simulator does) and the end of its restart after a move (it stays where it is until then).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("started_seq", sa.Integer, nullable=True))
        batch.add_column(sa.Column("paused_until", sa.Float, nullable=True))
    # the jobs already running, numbered in the order they started (ties by id)
    conn = op.get_bind()
    running = (
        conn.execute(sa.text("SELECT id FROM jobs WHERE state = 'running' ORDER BY started_at, id")).scalars().all()
    )
    for seq, jid in enumerate(running, start=1):
        conn.execute(sa.text("UPDATE jobs SET started_seq = :s WHERE id = :j"), {"s": seq, "j": jid})
    if running:
        conn.execute(sa.text("DELETE FROM meta WHERE key = 'starts'"))
        conn.execute(sa.text("INSERT INTO meta (key, value) VALUES ('starts', :v)"), {"v": str(len(running))})


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("paused_until")
        batch.drop_column("started_seq")
