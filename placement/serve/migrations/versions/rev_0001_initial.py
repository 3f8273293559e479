"""The first schema: meta, jobs, holdings, observations, estimates, decisions.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("spec", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("stages", sa.Text, nullable=True),
        sa.Column("placed_at", sa.Float, nullable=False),
        sa.Column("reserved_until", sa.Float, nullable=True),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.Column("ended_at", sa.Float, nullable=True),
        sa.Column("decision_id", sa.Integer, nullable=True),
    )
    op.create_index("ix_jobs_state", "jobs", ["state"])
    op.create_table(
        "holdings",
        sa.Column("job_id", sa.String(255), sa.ForeignKey("jobs.id"), primary_key=True),
        sa.Column("server", sa.String(255), primary_key=True),
        sa.Column("workers", sa.Integer, nullable=False),
        sa.Column("shards", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_table(
        "observations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("job", sa.String(255), nullable=False),
        sa.Column("worker", sa.String(255), nullable=False),
        sa.Column("server", sa.String(255), nullable=False),
        sa.Column("iteration", sa.BigInteger, nullable=False),
        sa.Column("duration", sa.Float, nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
    )
    op.create_index("ix_observations_received_at", "observations", ["received_at"])
    op.create_table(
        "estimates",
        sa.Column("server", sa.String(255), primary_key=True),
        sa.Column("slowdown", sa.Text, nullable=False),
        sa.Column("samples", sa.Integer, nullable=False),
        sa.Column("fitted_at", sa.Float, nullable=False),
    )
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("request", sa.Text, nullable=False),
        sa.Column("response", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for t in ("decisions", "estimates", "observations", "holdings", "jobs", "meta"):
        op.drop_table(t)
