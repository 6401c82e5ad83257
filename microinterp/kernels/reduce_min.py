"""REDUCE_MIN over constant or runtime axes: float32 and int8 (``micro/kernels/reduce.cc``, ``reduce_common.cc``
PrepareMinMaxHelper / EvalMinMaxHelper with ``kEvalMin``).

REDUCE_MAX's kernel with the opposite fold: ``current = in < current ? in : current`` from the type's maximum
(``FLT_MAX``, 127). The same rules follow: int8 needs equal input/output scale and zero point (no
requantization); for float32 NaN never wins, an all-``+inf`` row gives ``FLT_MAX``, and among equal zeros the first
one visited keeps its sign. Same scratch requests (``4*rank``, ``4*num_axis_entries``).
"""

from __future__ import annotations

import numpy as np

from .contract import PURE
from .reduce_max import ReduceMax, float_max


class ReduceMin(ReduceMax):
    ops = ("REDUCE_MIN",)
    traits = PURE
    name = "REDUCE_MIN"

    def fold(self, r: np.ndarray, type_name: str) -> np.ndarray:
        if type_name == "FLOAT32":
            return float_max(r, np.fmin, float(np.finfo(np.float32).max))
        return np.min(r, axis=1, initial=127)


KERNEL = ReduceMin()
