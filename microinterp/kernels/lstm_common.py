"""Building blocks of TFLM's own LSTM (``micro/kernels/lstm_eval.{h,cc}``, ``lstm_eval_common.cc``).

* :func:`sigmoid_lut` / :func:`tanh_lut`: ``reference_integer_ops::Logistic`` / ``Tanh`` for int16
  (:func:`microinterp.quant.logistic_int16` / :func:`~microinterp.quant.tanh_int16`: the 256-entry
  ``sigmoid_table_uint16`` with linear interpolation) tabulated for all 65536 inputs, one lookup per gate. The input
  is Q3.12 (the gate FC output scale 2^-12) for sigmoid; tanh takes ``(multiplier, left_shift)`` derived from the
  cell-state scale power (:func:`tanh_params`); the output is Q0.15.
* The MBQMs (double rounding, as ``reference_integer_ops::MulElementwise``) are
  :class:`microinterp.quant.Requantizer` objects prepared once per op.

Float: :func:`clamp_float` (``ActivationFunctionWithMinMax`` with kTfLiteActNone's range); the gates use
LOGISTIC's float function (:func:`.logistic.logistic_float`) and the C library's ``tanhf`` (:mod:`microinterp.libm`).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..quant import QuantizationOverflow, logistic_int16, tanh_int16
from .binary_common import FLT_MAX

INT16_MIN, INT16_MAX = -32768, 32767


def tanh_params(cell_state_scale_power: int) -> tuple[int, int]:
    """(input_multiplier, input_left_shift) that ``lstm_internal::Tanh`` passes for scale ``2^power``."""
    shift = 15 + cell_state_scale_power - 3
    if not -31 <= shift <= 31:
        # TFLM shifts an int32 by it: undefined beyond 31 (a cell-state scale of 2^-149, a damaged model)
        raise QuantizationOverflow(f"cell state scale 2^{cell_state_scale_power} makes the tanh input shift {shift}, "
                                   "beyond what TFLM's int32 arithmetic defines")
    return (3, -shift) if shift < 0 else (0, shift)


@cache
def sigmoid_lut() -> np.ndarray:
    """int16 Logistic (multiplier 0, shift 0) of every int16 value, indexed by ``x + 32768``."""
    return logistic_int16(np.arange(INT16_MIN, INT16_MAX + 1)).astype(np.int64)


@cache
def tanh_lut(multiplier: int, left_shift: int) -> np.ndarray:
    """int16 Tanh of every int16 value, indexed by ``x + 32768``."""
    return tanh_int16(np.arange(INT16_MIN, INT16_MAX + 1), multiplier, left_shift).astype(np.int64)


@cache
def sum_table(function: str | None = None, params: tuple[int, int] = (0, 0), clip: int | None = None) -> np.ndarray:
    """A table indexed directly by the sum ``v`` of two int16 values (``v`` in [-65536, 65534]; NumPy counts
    negative indices from the end) holding ``F(sat16(v))``: F is the identity (``function=None``), the int16
    ``"sigmoid"`` or ``"tanh"`` with ``params`` (:func:`tanh_lut`); with ``clip`` the saturated value is first
    clamped to ``[-clip, clip]``. A saturating add and the function of its result become one look-up. int32 values
    (their products with Q0.15 values stay in int32)."""
    v = np.arange(2 * 65536, dtype=np.int64)
    v = np.minimum(np.maximum(np.where(v < 65536, v, v - 2 * 65536), INT16_MIN), INT16_MAX)
    if clip is not None:
        v = np.minimum(np.maximum(v, -clip), clip)
    if function is not None:
        v = (sigmoid_lut() if function == "sigmoid" else tanh_lut(*params))[v + 32768]
    v = v.astype(np.int32)
    v.flags.writeable = False
    return v


# -- float ------------------------------------------------------------------------------------------------
def clamp_float(x: np.ndarray) -> np.ndarray:
    """``ActivationFunctionWithMinMax`` with kTfLiteActNone's range [lowest, max]: ±inf become ±FLT_MAX."""
    return np.minimum(np.maximum(x, -FLT_MAX), FLT_MAX)
