"""DEPTHWISE_CONV_2D, optimized int8 path: the reference kernel's prepare and results, without its int32/int64
window tensor (see ``kernels/depthwise_conv.py`` for TFLM's algorithm; this file computes the same integers).

Exactness, decided at prepare from the actual (constant) weights:

* **Zero point folded into the bias.** TFLM sums ``w * (x - zp_in)`` over the taps inside the image (padded taps
  skipped). We pad the image with ``zp_in`` itself and sum ``w * x`` over *all* taps, then add ``bias' = bias -
  zp_in * sum_k w``: a padded tap contributes ``w * zp_in`` to the sum and the same amount is taken back by the
  fold, so the integer result is identical. TFLM's int32 accumulator may wrap; only the result modulo 2^32 matters
  for that, so ``bias'`` is kept as a wrapped int32 and added in int32 (NumPy int32 addition wraps as C does).
* **Taps in float32.** Each raw value satisfies ``|x| <= X = max(128, |zp_in|)``, so every partial sum of a channel
  is bounded by ``X * sum_k |w[k, c]|``; below 2^24 every float32 step is an exact integer operation, whatever the
  order (BLAS included). Otherwise the layer runs in float64 (exact below 2^53). The float result is cast to
  int32 exactly (the bound is also checked against 2^31, else the reference invoke runs).

Two computation schemes (the output tensor's H/W drive the loops, as in TFLM):

* **Taps as 1-D offsets (polyphase).** With ``P`` the zero-point-padded image, output ``(oy, ox)`` reads
  ``P[s_h oy + ky d_h, s_w ox + kx d_w]``. Write ``ky d_h = s_h qy + a`` (and ``kx d_w = s_w qx + b``): the tap
  reads phase image ``P_ab[i, j] = P[s_h i + a, s_w j + b]`` at ``(oy + qy, ox + qx)`` — a stride-1 problem per
  phase (stride 1 is the single phase ``a = b = 0``). Each used phase is a preallocated buffer of ``Hq x Wq``
  pixels (``Wq = out_w + max qx``), flattened: the tap is then the contiguous slice at offset ``qy Wq + qx``, and
  the output is computed at ``out_h x Wq`` positions of which the ``Wq - out_w`` last of each row are thrown away.
  Channels are innermost; ``T`` pixels are grouped so that each multiply-add runs over ``T * C`` contiguous values
  against the per-channel weights tiled ``T`` times. Depth multiplier ``M > 1``: each input channel is copied ``M``
  times into the phase buffers, after which output channel ``oc`` simply reads buffer channel ``oc``. The padding
  borders are written once at prepare (the buffers persist); each invoke copies only the image interior.
* **One input channel** (``C_in == 1``, any ``M``): a plain convolution, im2col (one copy of a strided
  ``[KH, KW, N, out_h, out_w]`` window view of the padded image into a preallocated tap-major buffer) and one float
  GEMM with the ``[KH*KW, M]`` filter.

Then the int32 epilogue: float -> int32 (exact), ``+ bias'`` (int32, wraps), the prepared double-rounding MBQM of
the reference (``quant.Requantizer``), ``+ zp_out``, clamp, int8.

Reference invoke (not sped up): float32 and int16x8 kernels, non-constant filters or biases, stride or dilation 0,
empty tensors, and layers whose accumulator bound reaches 2^31 (impossible for int8 weights below ~130 000 taps).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .._blas import matmul
from .._qutil import unpack_int4
from ..depthwise_conv import KERNEL as REFERENCE
from ..depthwise_conv import DepthwiseData

_F32_EXACT = 1 << 24    # float32 represents every integer of magnitude <= 2^24


@dataclass(frozen=True)
class _Phase:
    """Column phase ``b``: the padded image's columns ``b, b + s_w, ...`` in a buffer whose borders (zp_in) are
    written once at prepare; where the input lands in it; the taps that read it as one strided window view."""

    buf: np.ndarray                     # (N, R, Wb, C_out) float
    dst: np.ndarray | None              # view (N, rows, cols, C_in, M) of buf's interior (None: all padding)
    src: tuple[slice, slice] | None     # input rows and columns that go there
    windows: np.ndarray                 # read-only view (KH, taps of this phase, N, out_h, out_w * C_out)
    weights: np.ndarray                 # (KH, taps of this phase, out_w * C_out): filter taps tiled out_w times


@dataclass(frozen=True)
class _TapsPlan:
    phases: tuple[_Phase, ...]
    acc: np.ndarray                     # (N, out_h, out_w * C_out)
    tmp: np.ndarray | None              # same, for the phases after the first
    valid: np.ndarray                   # view (N, out_h, out_w, C_out) of acc


@dataclass(frozen=True)
class _GemmPlan:
    padded: np.ndarray                  # (N, R, Qc) float, borders = zp_in
    dst: np.ndarray | None
    src: tuple[slice, slice] | None
    windows: np.ndarray                 # read-only view (KH, KW, N, out_h, out_w) of `padded`
    cols: np.ndarray                    # (KH * KW, N * out_h * out_w) im2col buffer
    weights: np.ndarray                 # (K, M)
    acc: np.ndarray                     # (N * out_h * out_w, M)
    valid: np.ndarray                   # view (N, out_h, out_w, M) of acc


@dataclass(frozen=True)
class OptimizedDepthwiseData(DepthwiseData):
    """The reference OpData (so everything that reads it, e.g. row-band tiling, keeps working) plus the plan."""

    plan: _TapsPlan | _GemmPlan | None = None   # None: the reference invoke runs
    bias: np.ndarray | None = None      # int32 (wrapped) folded bias bias - zp_in * sum_k w, per output channel
    acc32: np.ndarray | None = None     # (N, out_h, out_w, C_out) int32 epilogue buffer


class OptimizedDepthwiseConv2D:
    def prepare(self, ctx, op) -> OptimizedDepthwiseData:
        data = REFERENCE.prepare(ctx, op)
        if _reference_only(ctx, op, data):
            return _extend(data)
        return _plan(ctx, op, data)

    def invoke(self, ctx, op, data: OptimizedDepthwiseData) -> None:
        plan = data.plan
        if plan is None:
            REFERENCE.invoke(ctx, op, data)
            return
        x = ctx.input(op, 0)
        if isinstance(plan, _TapsPlan):
            _run_taps(plan, x)
        else:
            _run_gemm(plan, x)
        acc32 = data.acc32
        np.copyto(acc32, plan.valid, casting="unsafe")     # exact: integers below 2^31
        acc32 += data.bias                                  # int32, wraps like TFLM's accumulator
        v = data.requantizer(acc32)
        v += data.output_offset
        np.clip(v, data.act_min, data.act_max, out=v)
        np.copyto(ctx.output(op, 0), v, casting="unsafe")


def _extend(data: DepthwiseData, **extra) -> OptimizedDepthwiseData:
    return OptimizedDepthwiseData(**{f.name: getattr(data, f.name) for f in fields(DepthwiseData)}, **extra)


def _reference_only(ctx, op, data: DepthwiseData) -> bool:
    x, w, y = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
    b = ctx.input(op, 2)
    return (data.kind != "int8" or (w.data is None and data.int4_packed is None)
            or (b is not None and b.data is None) or min(data.stride_h, data.stride_w, data.dilation_h,
                                                         data.dilation_w) < 1
            or x.num_elements == 0 or y.num_elements == 0)


def _filter(ctx, op, data: DepthwiseData) -> np.ndarray:
    """The constant filter as int64 ``[KH, KW, C_out]`` (int4 unpacked once, here)."""
    w = ctx.input(op, 1)
    if data.int4_packed is not None:
        w8 = unpack_int4(data.int4_packed, np.empty(data.filter_shape, np.int8))
        return w8[0].astype(np.int64)
    return np.asarray(w.data[0], np.int64)


def _plan(ctx, op, data: DepthwiseData) -> OptimizedDepthwiseData:
    x, y = ctx.input(op, 0), ctx.output(op, 0)
    w = _filter(ctx, op, data)
    zp_in = -data.input_offset
    bias = np.zeros(w.shape[2], np.int64) if ctx.input(op, 2) is None else ctx.input(op, 2).data.astype(np.int64)
    bound = max(128, abs(zp_in)) * int(np.abs(w).sum(axis=(0, 1)).max(initial=0))
    if bound >= 1 << 31:
        return _extend(data)
    dtype = np.float32 if bound < _F32_EXACT else np.float64
    folded = bias - zp_in * w.sum(axis=(0, 1))
    folded32 = ((folded + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    n, in_h, in_w, c_in = x.shape
    if c_in == 1:
        plan = _gemm_plan(data, w, dtype, zp_in, (n, in_h, in_w), y.shape)
    else:
        plan = _taps_plan(data, w, dtype, zp_in, (n, in_h, in_w, c_in), y.shape)
    return _extend(data, plan=plan, bias=folded32.astype(np.int32), acc32=np.empty(y.shape, np.int32))


def _interior(pad: int, phase: int, stride: int, in_size: int, count: int) -> tuple[int, int, slice]:
    """Phase rows ``[i0, i1)`` (of ``count``) holding image rows ``stride * i + phase - pad``, and those rows."""
    i0 = max(0, -((phase - pad) // stride))                 # ceil((pad - phase) / stride)
    i1 = min(count, -((phase - pad - in_size) // stride))   # ceil((in_size + pad - phase) / stride)
    if i1 <= i0:
        return 0, 0, slice(0, 0)
    r0 = stride * i0 + phase - pad
    return i0, i1, slice(r0, r0 + stride * (i1 - i0 - 1) + 1, stride)


def _taps_plan(data: DepthwiseData, w: np.ndarray, dtype, zp_in: int, in_shape, out_shape) -> _TapsPlan:
    n = in_shape[0]
    _, oh, ow, c_out = out_shape
    kh, kw = w.shape[:2]
    sw, dw = data.stride_w, data.dilation_w
    rows = (oh - 1) * data.stride_h + (kh - 1) * data.dilation_h + 1
    phases = []
    for b in range(sw):
        kxs = [kx for kx in range(kw) if kx * dw % sw == b]
        if kxs:
            phases.append(_phase(data, w[:, kxs], [kx * dw // sw for kx in kxs], dtype, zp_in, in_shape, out_shape,
                                 rows, b))
    acc = np.zeros((n, oh, ow * c_out), dtype)
    tmp = np.zeros_like(acc) if len(phases) > 1 else None
    return _TapsPlan(tuple(phases), acc, tmp, acc.reshape(n, oh, ow, c_out))


def _phase(data: DepthwiseData, w: np.ndarray, qxs: list[int], dtype, zp_in: int, in_shape, out_shape, rows: int,
           b: int) -> _Phase:
    """Column phase ``b`` read by the filter columns ``w`` (``[KH, nx, C_out]``) at phase columns ``ox + qxs``."""
    n, in_h, in_w, c_in = in_shape
    _, oh, ow, c_out = out_shape
    step = qxs[1] - qxs[0] if len(qxs) > 1 else 0          # an arithmetic progression (step dilation / gcd)
    width = ow + qxs[-1]
    buf = np.full((n, rows, width, c_out), zp_in, dtype)
    i0, i1, src_rows = _interior(data.pad_h, 0, 1, in_h, rows)
    j0, j1, src_cols = _interior(data.pad_w, b, data.stride_w, in_w, width)
    dst, src = None, None
    if i0 < i1 and j0 < j1:
        dst, src = buf.reshape(n, rows, width, c_in, c_out // c_in)[:, i0:i1, j0:j1], (src_rows, src_cols)
    st = buf.strides
    windows = np.lib.stride_tricks.as_strided(
        buf[:, :, qxs[0]:], (w.shape[0], len(qxs), n, oh, ow * c_out),
        (data.dilation_h * st[1], step * st[2], st[0], data.stride_h * st[1], st[3]), writeable=False)
    return _Phase(buf, dst, src, windows, np.tile(w.astype(dtype), (1, 1, ow)))


def _run_taps(plan: _TapsPlan, x: np.ndarray) -> None:
    """Per phase one sum of products over its taps (einsum's float loops; exact, see the module docstring)."""
    acc, tmp = plan.acc, plan.tmp
    for k, ph in enumerate(plan.phases):
        if ph.dst is not None:
            rows, cols = ph.src
            np.copyto(ph.dst, x[:, rows, cols, :, None])
        np.einsum("ijnyz,ijz->nyz", ph.windows, ph.weights, out=acc if k == 0 else tmp)
        if k:
            np.add(acc, tmp, out=acc)


def _gemm_plan(data: DepthwiseData, w: np.ndarray, dtype, zp_in: int, in_shape, out_shape) -> _GemmPlan:
    n, in_h, in_w = in_shape
    _, oh, ow, m = out_shape
    kh, kw = w.shape[:2]
    sh, sw, dh, dw = data.stride_h, data.stride_w, data.dilation_h, data.dilation_w
    rows_needed, cols_needed = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    padded = np.full((n, rows_needed, cols_needed), zp_in, dtype)
    i0, i1, rows = _interior(data.pad_h, 0, 1, in_h, rows_needed)
    j0, j1, cols = _interior(data.pad_w, 0, 1, in_w, cols_needed)
    dst, src = (None, None) if i0 == i1 or j0 == j1 else (padded[:, i0:i1, j0:j1], (rows, cols))
    st = padded.strides
    windows = np.lib.stride_tricks.as_strided(padded, (kh, kw, n, oh, ow), (dh * st[1], dw * st[2], st[0],
                                                                           sh * st[1], sw * st[2]), writeable=False)
    acc = np.zeros((n * oh * ow, m), dtype)
    return _GemmPlan(padded, dst, src, windows, np.zeros((kh * kw, n * oh * ow), dtype),
                     np.ascontiguousarray(w.reshape(kh * kw, m).astype(dtype)), acc, acc.reshape(n, oh, ow, m))


def _run_gemm(plan: _GemmPlan, x: np.ndarray) -> None:
    if plan.dst is not None:
        rows, cols = plan.src
        np.copyto(plan.dst, x[:, rows, cols, 0])
    np.copyto(plan.cols.reshape(plan.windows.shape), plan.windows)     # im2col in one copy, tap-major
    matmul(plan.cols.T, plan.weights, out=plan.acc)


KERNEL = OptimizedDepthwiseConv2D()
