"""ARG_MIN: index of the first minimum along a (run-time) axis; float32/int8 input, int32 output.

See :mod:`._arg_min_max` for TFLM's algorithm and pitfalls.
"""

from __future__ import annotations

from ._arg_min_max import ArgMinMax

KERNEL = ArgMinMax("ARG_MIN", is_arg_max=False)
