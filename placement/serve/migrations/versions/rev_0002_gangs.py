"""Gangs and their pods, for the Kubernetes scheduler extender: a gang's size and job (posted,
or read from its PodGroup), and the node each of its pods was given.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gangs",
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("job", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "pods",
        sa.Column("uid", sa.String(255), primary_key=True),
        sa.Column("gang", sa.String(255), nullable=False),
        sa.Column("namespace", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("node", sa.String(255), nullable=False),
        sa.Column("pinned_at", sa.Float, nullable=False),
    )
    op.create_index("ix_pods_gang", "pods", ["gang"])


def downgrade() -> None:
    op.drop_table("pods")
    op.drop_table("gangs")
