"""Optimized kernels: same OpData as the reference (they reuse its prepare), faster invoke, bit-exact.

``OPTIMIZED_KERNELS`` is the explicit list the resolver puts above the reference layer.
"""

from __future__ import annotations

OPTIMIZED_KERNELS: dict[str, object] = {}
