"""The ``placement`` command line (click)."""
