"""Small helpers shared by the kernels (QUANTIZE, RELU*, LEAKY_RELU, PRELU, MAXIMUM/MINIMUM, LOGISTIC, TANH, the
convolutions, ...).

* :func:`qparams` -- what TFLM's ``TfLiteTensor::params`` holds: the *first* scale and zero point of a tensor (also for
  per-channel tensors), ``(0.0, 0)`` when the tensor is not quantized.
* :func:`round_to_int32` -- ``static_cast<int32_t>(roundf(v))`` as compiled for x86-64: round half away from zero,
  then ``cvttss2si``, which yields INT32_MIN for NaN and for anything outside [-2^31, 2^31). TFLM's float->int paths
  then add the zero point in int32 (wrapping) and clamp, so a huge positive value can end up at the *lowest* or
  the highest code depending on the zero point -- the wheel really does this.
* :func:`to_int32_arm` -- the same cast on a Cortex-M, which saturates (NaN -> 0): what a ``target=`` build uses
  (the prepare context's ``float_to_int32``).
* :func:`all_codes` / :func:`lookup` -- element-wise functions of one 8/16-bit input are evaluated once, in prepare,
  on every possible input code (the same vectorized formula), and invoke becomes a table lookup. The table is
  host memory of the OpData, not arena memory (TFLM computes per element; the result is identical).
* :func:`broadcast_shape` -- the shape TFLM's ``NdArrayDescsForElementwiseBroadcast`` iterates over, checked
  against the output tensor.
* :func:`unpack_int4` -- TFLM's ``UnpackDenseInt4IntoInt8`` for packed INT4 weights (CONV_2D, DEPTHWISE_CONV_2D,
  FULLY_CONNECTED).
* :func:`count_nonzero` -- NumPy's C function itself, for bound calls' "any of this mask?" tests: 0.05 us where
  ``mask.any()`` (a Python method and a reduction) takes 0.7; :func:`bind_minus_zero_test` uses it. :func:`copyto`
  and :func:`concatenate` likewise, for bound calls (no ``__array_function__`` dispatch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from ..quant import INT32_MIN, QMAX, QMIN, round_half_away

try:    # NumPy's C functions themselves: the public names add an __array_function__ dispatch (0.1-0.5 us a call;
    # a copy of a few elements: 0.2 -> 0.09 us)
    from numpy._core._multiarray_umath import concatenate, copyto, count_nonzero
except ImportError:         # another layout: the public functions
    concatenate, copyto, count_nonzero = np.concatenate, np.copyto, np.count_nonzero

__all__ = [
    "all_codes",
    "bind_copies",
    "bind_lookup",
    "bind_minus_zero_test",
    "broadcast_shape",
    "check_flat_or_broadcast",
    "clamp_to_type",
    "concatenate",
    "copyto",
    "count_nonzero",
    "extend_shape",
    "first_int32",
    "lookup",
    "qparams",
    "round_to_int32",
    "to_int32_arm",
    "to_int32_x86",
    "unpack_int4",
]


def first_int32(ctx, op, t, what: str) -> int:
    """``GetTensorData<int32_t>(t)[0]`` of a constant tensor, as TFLM reads an axis: the first four bytes as an
    int32 whatever the tensor's type claims (an INT64 tensor gives its low word, a FLOAT32 one its bit pattern);
    fewer than four bytes is refused."""
    raw = np.ascontiguousarray(t.data).reshape(-1).view(np.uint8)
    if raw.size < 4:
        raise ctx.fail(op, f"{what} tensor {t.name!r} holds {raw.size} bytes, not an int32")
    return int(raw[:4].view("<i4")[0])


def qparams(t) -> tuple[float, int]:
    """(scale, zero_point) as TFLM's ``TfLiteTensor::params``: first entry, or (0.0, 0) if unquantized."""
    q = t.quantization
    if q is None or q.scales.size == 0:
        return 0.0, 0
    return float(q.scales[0]), int(q.zero_points[0]) if q.zero_points.size else 0


def check_scales(ctx, op, *tensors) -> None:
    """Refuse quantized tensors without a positive finite scale: TFLM would divide by zero while computing a
    multiplier and run on garbage (``QuantizeMultiplier`` of inf/NaN); here that is a PrepareError."""
    for t in tensors:
        scale = qparams(t)[0]
        if not (0.0 < scale < float("inf")):
            raise ctx.fail(op, f"tensor {t.name!r} ({t.type_name}) needs a positive quantization scale, got {scale}")


def to_int32_x86(v) -> np.ndarray:
    """``static_cast<int32_t>`` of integral-valued doubles on x86-64 (int64 result): NaN or out of range -> INT32_MIN."""
    v = np.asarray(v, dtype=np.float64)
    ok = (v >= -2.0 ** 31) & (v < 2.0 ** 31)  # False for NaN
    if not ok.all():
        v = np.where(ok, v, float(INT32_MIN))
    return v.astype(np.int64)


def to_int32_arm(v) -> np.ndarray:
    """``static_cast<int32_t>`` of integral-valued doubles on a Cortex-M (int64 result): VCVT, and libgcc's
    ``__aeabi_f2iz`` on soft-float builds, saturate out-of-range values to INT32_MIN/INT32_MAX and give 0 for NaN."""
    v = np.asarray(v, dtype=np.float64)
    return np.nan_to_num(np.clip(v, -2.0 ** 31, 2.0 ** 31 - 1), nan=0.0).astype(np.int64)


def round_to_int32(v) -> np.ndarray:
    """``static_cast<int32_t>(roundf(v))`` for float32 ``v`` (half away from zero; x86 out-of-range -> INT32_MIN)."""
    return to_int32_x86(round_half_away(v))


LUT_INDEX = {"INT8": np.uint8, "UINT8": np.uint8, "INT16": np.uint16}


def all_codes(type_name: str) -> np.ndarray:
    """Every value of an 8/16-bit type, ordered by bit pattern: ``lut[x.view(unsigned)]`` then looks ``x`` up."""
    index = LUT_INDEX[type_name]
    dtype = {"INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16}[type_name]
    return np.arange(np.iinfo(index).max + 1, dtype=index).view(dtype)


def lookup(lut: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``lut[x]`` for an 8/16-bit ``x`` whose table was built over :func:`all_codes`."""
    return lut.take(np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}"))


def bind_lookup(lut: np.ndarray, x: np.ndarray, out: np.ndarray) -> Callable[[], None] | None:
    """:func:`lookup` of the fixed view ``x`` into ``out`` as a call without arguments: the unsigned view of ``x``
    taken once and the table's own ``take`` into the output (None unless both are contiguous, of one size, and the
    table has the output's type)."""
    if not (x.flags.c_contiguous and out.flags.c_contiguous) or x.size != out.size or lut.dtype != out.dtype:
        return None
    codes = x.view(f"u{x.dtype.itemsize}").reshape(-1)
    # a table of every code: each is a valid position, and "wrap" mode checks none ("raise" checks each)
    mode = "wrap" if lut.size >= 1 << (8 * x.dtype.itemsize) else "raise"
    return functools.partial(lut.take, codes, None, out.reshape(-1), mode)


#: Below this many elements :func:`bind_select` is one masked copy (three plain loops cost more there).
SELECT_BLEND_SIZE = 2048


def bind_select(mask: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    """``out = mask ? a : b`` for float32 views fixed at bind (``mask`` bool, ``a`` and ``b`` broadcasting to
    ``out``; ``b`` may be ``out`` itself), bit for bit, as a call without arguments. Large outputs blend the bits:
    ``t = a ^ b``, ``t *= mask``, ``out = b ^ t`` -- three vector loops, where NumPy's masked copy goes element by
    element (45 against 12 us for 27 648 elements); small ones are the masked copy."""
    if out.size < SELECT_BLEND_SIZE:
        if b is out:
            return functools.partial(copyto, out, a, "same_kind", mask)     # where= positional: no dict a call

        def masked() -> None:
            copyto(out, b)
            copyto(out, a, where=mask)
        return masked
    au, bu, yu, m = a.view(np.uint32), b.view(np.uint32), out.view(np.uint32), mask.view(np.uint8)
    t = np.empty(out.shape, np.uint32)
    xor, multiply = np.bitwise_xor, np.multiply

    def blend() -> None:
        xor(au, bu, out=t)
        multiply(t, m, out=t)
        xor(bu, t, out=yu)
    return blend


def select(cond, a, b) -> np.ndarray:
    """``cond ? a : b`` for float32 (broadcasting), bit for bit (NaN payloads and -0.0 survive).

    A branch-free bit blend ``(a & m) | (b & ~m)`` with ``m`` all ones where ``cond``; several times faster than
    ``np.where`` on unpredictable masks and safer than ``np.maximum``/``np.clip`` (whose SIMD paths may turn -0.0
    into +0.0, which TFLM's ``?:`` does not).
    """
    a = np.asarray(a, dtype=np.float32).view(np.int32)
    b = np.asarray(b, dtype=np.float32).view(np.int32)
    m = np.empty(np.broadcast_shapes(np.shape(cond), a.shape, b.shape), dtype=np.int32)
    m[...] = cond
    np.negative(m, out=m)
    r = a & m
    r |= b & ~m
    return r.view(np.float32)


def clamp_to_type(x, type_name: str) -> np.ndarray:
    """Clamp int values to the range of ``type_name`` (``std::min(std::max(x, qmin), qmax)``)."""
    return np.clip(x, QMIN[type_name], QMAX[type_name])


def extend_shape(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    """``RuntimeShape::ExtendedShape(rank, shape)``: pad with leading 1s."""
    return (1,) * (rank - len(shape)) + tuple(shape)


def broadcast_shape(a: Sequence[int], b: Sequence[int], out: Sequence[int], max_rank: int) -> str | None:
    """Why TFLM's ``NdArrayDescsForElementwiseBroadcast`` + output loop would misbehave, or None if fine.

    TFLM extends both inputs and the output to ``max_rank`` dims; where the inputs differ one must be 1; the loop
    runs over the *output* dims, so they must equal the broadcast dims (TFLM only DCHECKs this and would read out of
    bounds otherwise).
    """
    if max(len(a), len(b), len(out)) > max_rank:
        return (f"broadcasting supports at most {max_rank} dimensions (TFLM's shape buffer; more is undefined "
                f"behaviour), got {tuple(a)}, {tuple(b)} -> {tuple(out)}")
    try:
        bshape = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        return f"shapes {tuple(a)} and {tuple(b)} do not broadcast"
    if extend_shape(bshape, max_rank) != extend_shape(out, max_rank):
        return f"output shape {tuple(out)} is not the broadcast shape {bshape} of {tuple(a)} and {tuple(b)}"
    return None



def check_flat_or_broadcast(ctx, op, a, b, out, max_rank: int) -> bool:
    """TFLM's two paths of a binary op: equal input shapes run flat (any rank; the output needs as many elements),
    otherwise a ``*Slow`` broadcast over at most ``max_rank`` dims (:func:`broadcast_shape`). Returns whether the op
    broadcasts; raises ``ctx.fail`` for shapes TFLM would read or write out of bounds with."""
    if tuple(a.shape) != tuple(b.shape):
        problem = broadcast_shape(a.shape, b.shape, out.shape, max_rank)
        if problem:
            raise ctx.fail(op, problem)
        return True
    if a.num_elements != out.num_elements:
        raise ctx.fail(op, f"input shape {a.shape} and output shape {out.shape} differ in size")
    return False


def unpack_int4(packed: np.ndarray, out: np.ndarray) -> np.ndarray:
    """UnpackDenseInt4IntoInt8: element 2i = low nibble of byte i, 2i+1 = high nibble, both sign-extended; fills
    ``out`` (int8, any shape, ``out.size`` elements) and returns it."""
    b = np.asarray(packed).reshape(-1).view(np.int8)
    flat = out.reshape(-1)
    n = flat.size
    flat[0::2] = ((b[:(n + 1) // 2] << 4) >> 4)
    flat[1::2] = b[:n // 2] >> 4
    return out


#: From this many elements :func:`bind_minus_zero_test` reduces instead of comparing into a mask.
MINUS_ZERO_REDUCE_FROM = 4096


def bind_minus_zero_test(x: np.ndarray) -> Callable[[], bool]:
    """Whether the fixed float32 array ``x`` holds a ``-0.f``, as a call: its word, ``0x80000000``, is the least
    int32, so on large arrays one minimum reduction tells; on small ones a compare into a kept mask and
    :func:`count_nonzero` cost less than the reduction's call."""
    bits = x.view(np.int32)
    if bits.size >= MINUS_ZERO_REDUCE_FROM:
        least = np.minimum.reduce
        return lambda: least(bits, axis=None) == INT32_MIN
    mask, word = np.empty(bits.shape, bool), np.int32(INT32_MIN)
    return lambda: bool(count_nonzero(np.equal(bits, word, out=mask)))


def bind_copies(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> Callable[[], None] | None:
    """``dst[...] = src`` for every pair of fixed views, as a call without arguments (None when a pair's shapes
    differ -- views of some rows of a tensor, a phased segment's line buffers, whose op the segment runs)."""
    if any(dst.shape != src.shape for dst, src in pairs):
        return None
    if len(pairs) == 1:
        return functools.partial(copyto, *pairs[0])

    def copies() -> None:
        for dst, src in pairs:
            copyto(dst, src)
    return copies
