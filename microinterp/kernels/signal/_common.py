"""What TFLM's signal library kernels share (``signal/src/*.cc``, ``signal/micro/kernels/*.cc``).

* :func:`options` -- a kernel's custom options: a FlexBuffers map. TFLM reads it *by position* in the map's
  key-sorted value vector (``FlexbufferWrapper::ElementAs...(index)``), so the map must hold exactly the keys the
  kernel expects (an extra or missing key would shift every position): checked at prepare.
* :func:`msb32`, :func:`sqrt32`, :func:`sqrt64`, :func:`log32` -- ``MostSignificantBit32``, ``Sqrt32``,
  ``Sqrt64`` (bit-by-bit integer square roots, rounded up when the remainder exceeds the root) and ``Log32`` (a
  segment-corrected log2 scaled to ln and to ``out_scale``), on Python ints, one value at a time as the C loops.

The log2 correction table of ``Log32`` is ``round((log2(1 + k/128) - k/128) * 2^16)`` for k = 0..128 and a
trailing 0; computing it gives TFLM's constants (checked against the wheel by the FilterBankLog tests).
"""

from __future__ import annotations

import math
from typing import Any

from flatbuffers import flexbuffers

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


def _isqrt(num: int, bits: int) -> int:
    """TFLM's bit-by-bit square root of a ``bits``-bit unsigned ``num`` (``Sqrt32`` / ``Sqrt64``): the digit-by-digit
    method, whose result is the floor of the square root and whose remainder is ``num - root^2``; then the root plus
    one when the remainder exceeds it, unless the root is already the half-width maximum. The floor is
    ``math.isqrt``'s (exact for every integer), so only the rounding step is TFLM's code."""
    root = math.isqrt(num)
    if num - root * root > root and root != (1 << (bits // 2)) - 1:
        root += 1
    return root


def sqrt32(num: int) -> int:
    return _isqrt(num, 32) if num else 0


def sqrt64(num: int) -> int:
    return sqrt32(num) if (num >> 32) == 0 else _isqrt(num, 64) & U32


LOG_SEGMENTS_LOG2 = 7
LOG_SCALE_LOG2 = 16
LOG_SCALE = 1 << LOG_SCALE_LOG2
LOG_COEFF = 45426                     # round(2^16 * ln 2)
LOG_LUT = [round((math.log2(1 + k / 128) - k / 128) * LOG_SCALE) for k in range(129)] + [0]


def _log2_fraction(x: int, log2x: int) -> int:
    frac = x - (1 << log2x)
    if log2x < LOG_SCALE_LOG2:
        frac <<= LOG_SCALE_LOG2 - log2x
    else:
        frac >>= log2x - LOG_SCALE_LOG2
    base_seg = frac >> (LOG_SCALE_LOG2 - LOG_SEGMENTS_LOG2)
    seg_unit = LOG_SCALE >> LOG_SEGMENTS_LOG2
    c0, c1 = LOG_LUT[base_seg], LOG_LUT[base_seg + 1]
    rel_pos = ((c1 - c0) * (frac - seg_unit * base_seg)) >> LOG_SCALE_LOG2
    return (frac + c0 + rel_pos) & U32


def log32(x: int, out_scale: int) -> int:
    """Log32(x, out_scale) for ``x > 1``: ``round(out_scale * ln(x))`` in TFLM's fixed point (uint32 result)."""
    integer = msb32(x) - 1
    log2 = ((integer << LOG_SCALE_LOG2) + _log2_fraction(x, integer)) & U32
    half = LOG_SCALE // 2
    loge = ((LOG_COEFF * log2 + half) >> LOG_SCALE_LOG2) & U32
    return ((out_scale * loge + half) & U32) >> LOG_SCALE_LOG2
