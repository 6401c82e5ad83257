"""Optimized kernels: same OpData as the reference (they reuse its prepare), faster invoke, bit-exact.

``OPTIMIZED_KERNELS`` is what the resolver puts above the reference layer, derived from this package's modules
(:mod:`..registry`). An optimized kernel declares its ``ops`` and inherits every other declaration of the reference
kernel it replaces unless it makes its own (the band functions of the convolutions and FULLY_CONNECTED).
"""

from __future__ import annotations

from ..registry import optimized

OPTIMIZED_KERNELS = optimized()
