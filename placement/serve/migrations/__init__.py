"""Alembic migrations of the service's state database (``placement.serve.store``)."""
