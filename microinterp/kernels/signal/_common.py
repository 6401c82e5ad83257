"""What TFLM's signal library kernels share (``signal/src/*.cc``, ``signal/micro/kernels/*.cc``).

* :func:`options` -- a kernel's custom options: a FlexBuffers map. TFLM reads it *by position* in the map's
  key-sorted value vector (``FlexbufferWrapper::ElementAs...(index)``), so the map must hold exactly the keys the
  kernel expects (an extra or missing key would shift every position): checked at prepare.
* :func:`msb32` -- ``MostSignificantBit32`` of a Python int; :func:`bit_length`, :func:`sqrt64`, :func:`log32` --
  the bit lengths, ``Sqrt64`` / ``Sqrt32`` (bit-by-bit integer square roots, rounded up when the remainder exceeds
  the root) and ``Log32`` (a segment-corrected log2 scaled to ln and to ``out_scale``) of whole arrays, exact.

The log2 correction table of ``Log32`` is ``round((log2(1 + k/128) - k/128) * 2^16)`` for k = 0..128 and a
trailing 0; computing it gives TFLM's constants (checked against the wheel by the FilterBankLog tests).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from flatbuffers import flexbuffers

from .._qutil import copyto

U32 = 0xFFFFFFFF
U64 = 0xFFFFFFFFFFFFFFFF


def options(ctx, op, expected: tuple[str, ...]) -> dict[str, Any]:
    """The op's FlexBuffers options as a dict, refused unless its keys are exactly ``expected``."""
    raw = op.custom_options
    if raw is None:
        raise ctx.fail(op, f"{op.key} needs its custom options (keys {', '.join(sorted(expected))})")
    try:
        values = flexbuffers.Loads(bytes(raw))
    except Exception as e:  # noqa: BLE001 - any parse failure of a malformed buffer is the model's fault
        raise ctx.fail(op, f"custom options are not a FlexBuffers map: {e}") from None
    if not isinstance(values, dict) or set(values) != set(expected):
        got = sorted(values) if isinstance(values, dict) else type(values).__name__
        raise ctx.fail(op, f"custom options must have exactly the keys {sorted(expected)} (TFLM reads them by "
                           f"position), got {got}")
    return {k: _scalar(ctx, op, k, v) for k, v in values.items()}


def _scalar(ctx, op, key: str, value: Any) -> int:
    """A FlexBuffers value read as TFLM's ``FlexbufferWrapper::ElementAsInt32/Int64/Bool`` reads it: null is 0,
    a bool or a float becomes an int (truncated), a numeric string is parsed; a vector, map or blob is refused."""
    if value is None:
        return 0
    if isinstance(value, (bool, int)):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ctx.fail(op, f"custom option {key!r} is {value}, not a number TFLM can read as an integer")
        return int(value)
    if isinstance(value, (str, bytes)):
        try:
            return int(value)
        except ValueError:
            return 0
    raise ctx.fail(op, f"custom option {key!r} is a {type(value).__name__}, not a scalar")


def msb32(x: int) -> int:
    """MostSignificantBit32: the bit length of ``x`` (32 for 0 with GCC's builtin, as TFLM's code has it)."""
    return x.bit_length() if x else 32


def bit_length(x: np.ndarray) -> np.ndarray:
    """The bit length of every non-negative integer of ``x`` below 2^53 (int64; 0 for 0): float64's exponent."""
    return np.frexp(np.asarray(x).astype(np.float64))[1].astype(np.int64)


#: Below 2^51 the correctly rounded float64 square root of an integer never rounds up to the next integer (for
#: ``v <= k^2 - 1``, ``k - sqrt(v) >= 1 / 2k`` exceeds half a unit in the last place of ``k`` while ``k^2 < 2^51``), so
#: its floor is the integer root.
_EXACT_ROOTS = np.uint64(1 << 51)


def sqrt64(num: np.ndarray) -> np.ndarray:
    """TFLM's ``Sqrt64`` (``Sqrt32`` below 2^32) of every uint64: the bit-by-bit method, whose result is the floor of
    the square root and whose remainder is ``num - root^2``, then the root plus one when the remainder exceeds it,
    unless the root is already the half-width maximum (2^16 - 1 for ``Sqrt32``, 2^32 - 1 for ``Sqrt64``). The floor
    comes from float64's square root (within one of it) corrected in uint64 arithmetic, exact for every input."""
    num = np.asarray(num, np.uint64)
    if num.size and num.max() < _EXACT_ROOTS:    # the float64 root's floor is the integer root: one correction
        root = np.sqrt(num.astype(np.float64)).astype(np.uint64)
        if not (root == 0xFFFF).any():          # (2^16 - 1 is Sqrt32's maximum, not rounded up)
            root += num - root * root > root
            return root
    top = np.uint64(U32)
    root = np.minimum(np.floor(np.sqrt(num.astype(np.float64))), float(U32)).astype(np.uint64)
    for _ in range(2):
        root -= (root * root > num).astype(np.uint64)
        up = root < top
        nxt = root + np.uint64(1)
        root += (up & (nxt * nxt <= num)).astype(np.uint64)
    limit = np.where(num >> np.uint64(32) == 0, np.uint64(0xFFFF), top)
    root += ((num - root * root > root) & (root != limit)).astype(np.uint64)
    return root


LOG_SEGMENTS_LOG2 = 7
LOG_SCALE_LOG2 = 16
LOG_SCALE = 1 << LOG_SCALE_LOG2
LOG_COEFF = 45426                     # round(2^16 * ln 2)
LOG_LUT = np.array([round((math.log2(1 + k / 128) - k / 128) * LOG_SCALE) for k in range(129)] + [0], np.int64)


def log32(x: np.ndarray, out_scale: int) -> np.ndarray:
    """TFLM's ``Log32(x, out_scale)`` of every ``x > 1`` (int64, below 2^32): ``round(out_scale * ln(x))`` in its
    fixed point -- the integer part of log2 from the bit length, the fraction's 16 bits corrected by the 129-entry
    segment table, then the change to ln and the scale, each step cut to uint32 as the C code's are."""
    x = np.asarray(x, np.int64)
    integer = bit_length(x) - 1
    # the 16-bit fraction, shifted left below 2^16 and right above: (frac << 16) >> integer either way
    frac = ((x - (np.int64(1) << integer)) << LOG_SCALE_LOG2) >> integer
    base_seg = frac >> (LOG_SCALE_LOG2 - LOG_SEGMENTS_LOG2)
    seg_unit = LOG_SCALE >> LOG_SEGMENTS_LOG2
    c0, c1 = LOG_LUT[base_seg], LOG_LUT[base_seg + 1]
    rel_pos = ((c1 - c0) * (frac - seg_unit * base_seg)) >> LOG_SCALE_LOG2
    fraction = (frac + c0 + rel_pos) & U32
    log2 = ((integer << LOG_SCALE_LOG2) + fraction) & U32
    half = LOG_SCALE // 2
    loge = ((LOG_COEFF * log2 + half) >> LOG_SCALE_LOG2) & U32
    return ((out_scale * loge + half) & U32) >> LOG_SCALE_LOG2


#: :class:`BoundLog32`'s segment table, indexed by ``((x << 17) >> bit_length(x)) >> 9`` (128 .. 255; the rows
#: below serve x = 0): ``LOG_COEFF`` times the segment's correction less ``2 * 2^16`` (the two ``2^16`` the fraction
#: and the integer part leave out) plus the rounding ``2^15`` of ``loge``, and the difference to the next segment's.
_LOG_SEGMENTS = np.stack([np.concatenate([np.zeros(128, np.int64), LOG_LUT[:128] - 2 * LOG_SCALE]) * LOG_COEFF
                          + LOG_SCALE // 2, np.concatenate([np.zeros(128, np.int64), LOG_LUT[1:129] - LOG_LUT[:128]])])


class BoundLog32:
    """``min(Log32((x << bits) & U32, out_scale), 32767)`` where that shifted value exceeds 1, else 0, of the fixed
    uint32 view ``x`` into the fixed int16 view ``out`` (SignalFilterBankLog), as a call on kept int64 buffers: the
    same integers as :func:`log32` in about twenty NumPy calls without temporaries. With ``e`` the bit length of
    ``v`` (``integer = e - 1``) and ``m = (v << 17) >> e`` (in ``[2^16, 2^17)``), ``log32``'s fraction
    ``((v - 2^integer) << 16) >> integer`` is ``m - 2^16`` (``2^(integer + 16)`` divides exactly), its segment
    ``(m >> 9) - 128`` and its position in the segment ``m & 511``; the fraction plus the correction lies in ``[0,
    2^17)`` (a first segment's correction step is positive, any later fraction is at least 512) and ``log2`` below
    2^22, so the uint32 masks before ``loge`` change nothing and are left out; ``log2`` is then ``(e << 16) + m +
    base + rel`` with ``base`` the table entry less ``2 * 2^16``, and ``LOG_COEFF * log2 + 2^15`` is ``LOG_COEFF *
    ((e << 16) + m + rel)`` plus a per-segment constant -- both of the segment's entries come from one ``take``. The
    values 0 and 1 give 0 through the same steps (``log2`` is 0: ``m = 0`` reads an all-zero segment, and ``m =
    2^16`` cancels ``e = 1``), as the C code's branch does."""

    def __init__(self, x: np.ndarray, out: np.ndarray, bits: int, out_scale: int):
        n = x.shape[-1]
        self.x, self.out, self.bits, self.scale = x, out, np.array(bits, np.int64), np.array(out_scale, np.int64)
        self.v, self.t, self.b, self.u = (np.empty(n, np.int64) for _ in range(4))
        self.segment = np.empty((2, n), np.int64)                 # [LOG_COEFF * base + 2^15, step]
        self.f, self.e = np.empty(n, np.float64), np.empty(n, np.intc)

    def __call__(self) -> None:
        v, t, b, u, f, e, segment = self.v, self.t, self.b, self.u, self.f, self.e, self.segment
        copyto(v, self.x)
        if self.bits:
            np.left_shift(v, self.bits, v)
            np.bitwise_and(v, _U32, v)
        copyto(f, v)
        np.frexp(f, f, e)                    # e: the bit length (exact below 2^53)
        np.left_shift(v, _SEVENTEEN, t)
        np.right_shift(t, e, t)          # m
        np.right_shift(t, _NINE, b)
        _LOG_SEGMENTS.take(b, 1, segment, "wrap")
        np.bitwise_and(t, _SEGMENT, u)
        np.multiply(segment[1], u, u)
        np.right_shift(u, _SIXTEEN, u)   # rel_pos
        np.add(t, u, t)
        np.left_shift(e, _SIXTEEN, u)
        np.add(t, u, t)                  # log2 less the segment's base
        np.multiply(t, _LOG_COEFF, t)
        np.add(t, segment[0], t)
        np.right_shift(t, _SIXTEEN, t)   # loge
        np.multiply(t, self.scale, t)
        np.add(t, _HALF, t)
        np.bitwise_and(t, _U32, t)       # out_scale * loge + round in uint32
        np.right_shift(t, _SIXTEEN, t)
        np.minimum(t, _INT16_MAX, out=t)
        copyto(self.out, t, casting="unsafe")


# 0-d arrays: a NumPy scalar operand costs a ufunc call more
_U32, _NINE, _SIXTEEN, _SEVENTEEN = (np.array(v, np.int64) for v in (U32, 9, 16, 17))
_SEGMENT, _LOG_COEFF, _HALF, _INT16_MAX = (np.array(v, np.int64) for v in (511, LOG_COEFF, LOG_SCALE // 2, 32767))
