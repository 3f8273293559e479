"""Alembic's environment for the service's state: run on the connection :meth:`Store.migrate`
hands over (no alembic.ini, no URL of its own)."""

from __future__ import annotations

try:
    from alembic import context
except ImportError as e:  # the serve extra is not installed
    raise ImportError(f"{e.name} is missing: pip install 'placement[serve]'") from e

# run by Alembic (its context is set up); imported otherwise (an import check), it does nothing
config = getattr(context, "config", None)
if config is not None:
    context.configure(connection=config.attributes["connection"], target_metadata=None, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
