"""Pictures: a placement drawn on its cluster (:func:`show`)."""

from __future__ import annotations

from placement.visual.show import FORMATS, show

__all__ = ["FORMATS", "show"]
