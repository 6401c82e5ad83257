"""PADV2, optimized: TFLM runs PAD's kernel for it, and so do we (see ``pad.py``: border-only fill, one copy)."""

from __future__ import annotations

from ..padv2 import KERNEL as REFERENCE
from .pad import FastPad

KERNEL = FastPad(REFERENCE)
