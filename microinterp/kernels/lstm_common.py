"""Building blocks of TFLM's own LSTM (``micro/kernels/lstm_eval.{h,cc}``, ``lstm_eval_common.cc``).

Integer pieces work on int64 NumPy arrays and reproduce the C code exactly:

* :func:`sigmoid_int16` / :func:`tanh_int16`: ``reference_integer_ops::Logistic`` / ``Tanh`` for int16: the
  256-entry ``sigmoid_table_uint16`` (sigmoid(i/24) in 0.16) with linear interpolation. The input is Q3.12
  (the gate FC output scale 2^-12) for sigmoid; tanh takes ``(multiplier, left_shift)`` derived from the
  cell-state scale power (``tanh_params``); the output is Q0.15. :func:`sigmoid_lut` / :func:`tanh_lut`
  tabulate them for all 65536 inputs.
* :class:`Requantizer` / :func:`mul_int16`: MBQM (double rounding) as in ``reference_integer_ops::
  MulElementwise`` (int16 x int16 -> MBQM + output offset, clamped to the output type).
* :func:`add_saturating_int16`: ``AddElementWise`` (int32 sum clamped to int16).

Float: :func:`clamp_float` (``ActivationFunctionWithMinMax`` with kTfLiteActNone's range); the gates use
LOGISTIC's float function (:func:`.logistic.logistic_float`) and the C library's ``tanhf`` (:mod:`microinterp.libm`).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..quant import mbqm, wrap_int32

#: ``sigmoid_table_uint16`` of TFLM's ``kernels/internal/common.h``: sigmoid(i/24) in 0.16 fixed point.
SIGMOID_TABLE_UINT16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
    42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
    49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
    55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
    59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
    62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
    64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
    65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
    65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
    65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
    65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
], dtype=np.int64)

INT16_MIN, INT16_MAX = -32768, 32767
_U32 = 0xFFFFFFFF


def _scaled_input(x, multiplier: int, left_shift: int) -> np.ndarray:
    """``(x·multiplier + round) >> left_shift`` with the power-of-two case (multiplier 0 -> 3 << shift)."""
    if multiplier == 0:
        multiplier, left_shift = 3 << left_shift, 0
    rounding = (1 << (left_shift - 1)) if left_shift > 0 else 0
    return wrap_int32(np.asarray(x, np.int64) * multiplier + rounding) >> left_shift


def _interpolate(abs_v: np.ndarray, frac_bits: int, saturated: int) -> np.ndarray:
    """``(T[h] << f) + frac·(T[h+1] − T[h])``, ``h = |v| >> f`` (uint32); ``saturated`` when h >= 255."""
    h = abs_v >> frac_bits
    hc = np.minimum(h, 254)
    ua, ub = SIGMOID_TABLE_UINT16[hc], SIGMOID_TABLE_UINT16[hc + 1]
    frac = abs_v & ((1 << frac_bits) - 1)
    return np.where(h >= 255, saturated, ((ua << frac_bits) + frac * (ub - ua)) & _U32)


def sigmoid_int16(x, multiplier: int = 0, left_shift: int = 0) -> np.ndarray:
    """``reference_integer_ops::Logistic`` for int16 (LSTM gates call it with multiplier 0, shift 0)."""
    v = _scaled_input(x, multiplier, left_shift)
    r = _interpolate(np.abs(v), 9, 0x7FFF << 10)
    r = np.where(v >= 0, r + (1 << 9), ((1 << 25) - r + (1 << 9) - 1)) & _U32
    return (r >> 10).astype(np.int16)


def tanh_params(cell_state_scale_power: int) -> tuple[int, int]:
    """(input_multiplier, input_left_shift) that ``lstm_internal::Tanh`` passes for scale ``2^power``."""
    shift = 15 + cell_state_scale_power - 3
    return (3, -shift) if shift < 0 else (0, shift)


def tanh_int16(x, multiplier: int, left_shift: int) -> np.ndarray:
    """``reference_integer_ops::Tanh`` for int16."""
    v = _scaled_input(x, multiplier, left_shift)
    r = _interpolate(np.abs(v), 8, 0xFFFF << 8)
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return wrap_int32(r >> 8).astype(np.int16)


@cache
def sigmoid_lut() -> np.ndarray:
    """:func:`sigmoid_int16` of every int16 value, indexed by ``x + 32768`` (one lookup per gate)."""
    return sigmoid_int16(np.arange(INT16_MIN, INT16_MAX + 1)).astype(np.int64)


@cache
def tanh_lut(multiplier: int, left_shift: int) -> np.ndarray:
    """:func:`tanh_int16` of every int16 value, indexed by ``x + 32768``."""
    return tanh_int16(np.arange(INT16_MIN, INT16_MAX + 1), multiplier, left_shift).astype(np.int64)


class Requantizer:
    """MultiplyByQuantizedMultiplier (int32, double rounding) with fixed multipliers, lean for small vectors.

    Same result as :func:`microinterp.quant.mbqm` (``RDBPOT(SRDHM(x·2^left, M), right)``) for int32 ``x`` and
    positive ``M``; the multiplier/shift may be scalars or arrays broadcasting against ``x``.
    """

    def __init__(self, multiplier, shift):
        shift = np.asarray(shift, np.int64)
        self.m = np.asarray(multiplier, np.int64)
        self.left = np.maximum(shift, 0)
        self.right = np.maximum(-shift, 0)
        self.mask = (np.int64(1) << self.right) - 1
        self.half = self.mask >> 1
        self.any_left = bool(np.any(self.left))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.any_left:
            x = wrap_int32(x << self.left)
        ab = x * self.m                                     # |ab| < 2^62
        neg = ab < 0
        t = ab + np.where(neg, 1 - (1 << 30), 1 << 30)
        q = (t >> 31) + (neg & ((t & 0x7FFFFFFF) != 0))    # C division by 2^31 truncates toward zero
        return (q >> self.right) + ((q & self.mask) > self.half + (q < 0))


def mul_int16(a, b, multiplier: int, shift: int, offset: int, lo: int, hi: int) -> np.ndarray:
    """``MulElementwise``: clamp(offset + MBQM(a·b, M, s), lo, hi) for symmetric int16 inputs."""
    prod = np.asarray(a, np.int64) * np.asarray(b, np.int64)
    return np.clip(mbqm(prod, multiplier, shift) + offset, lo, hi)


def add_saturating_int16(a, b) -> np.ndarray:
    return np.clip(np.asarray(a, np.int64) + np.asarray(b, np.int64), INT16_MIN, INT16_MAX)


# -- float ------------------------------------------------------------------------------------------------
FLT_MAX = np.float32(np.finfo(np.float32).max)


def clamp_float(x: np.ndarray) -> np.ndarray:
    """``ActivationFunctionWithMinMax`` with kTfLiteActNone's range [lowest, max]: ±inf become ±FLT_MAX."""
    return np.minimum(np.maximum(x, -FLT_MAX), FLT_MAX)
