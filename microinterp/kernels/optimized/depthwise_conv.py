"""DEPTHWISE_CONV_2D, optimized int8 path: the reference kernel's prepare and results (see
``kernels/depthwise_conv.py`` for TFLM's algorithm; this file computes the same integers), computed as float sums of
products on raw int8 values plus the merged requantization epilogue (:mod:`._epilogue`).

Exactness, decided at prepare from the actual (constant) weights:

* **Zero point folded into the bias.** TFLM sums ``w * (x - zp_in)`` over the taps inside the image (padded taps
  skipped), then adds the bias. We pad the image with ``zp_in`` itself, sum ``w * x`` over *all* taps and add
  ``bias' = bias - zp_in * sum_k w``: a padded tap contributes ``w * zp_in``, which the fold takes back, so the
  result is TFLM's accumulator, exactly (not wrapped to int32: the epilogue knows its range and wraps if needed).
* **float32 or float64, per layer.** Raw values satisfy ``|x| <= 128``, so every partial sum of a channel is an
  integer of magnitude at most ``128 * sum_k |w[k, c]| + |bias'_c|``; below 2^24 for every channel, float32 holds
  every step exactly whatever the summation order (einsum's or BLAS's), else the layer runs in float64 (exact below
  2^53). Channels the epilogue finds constant (their output does not depend on the input, e.g. dead channels with
  a huge bias) get zero weights and bias and do not count (:func:`._epilogue.gemm_weights` makes that choice).

Two computation schemes (the output tensor's H/W drive the loops, as in TFLM):

* **Taps as strided windows, one einsum per column phase.** With ``P`` the zero-point-padded image, output ``(oy,
  ox)`` reads ``P[s_h oy + ky d_h, s_w ox + kx d_w]``. Rows need nothing special: a window view with row strides
  ``s_h`` (output) and ``d_h`` (tap) reads them in place. Columns are split into phases: write ``kx d_w = s_w qx +
  b``; the tap reads phase image ``P_b[:, j] = P[:, s_w j + b]`` at column ``ox + qx``, so within a phase output
  pixels are adjacent and ``(ox, channel)`` merge into one contiguous run of ``out_w * C_out`` values (stride 1 has
  the single phase ``b = 0``). The taps of a phase form an arithmetic progression of ``qx``, so all of them are one
  ``as_strided`` view ``[KH, taps, N, out_h, out_w * C_out]`` and one ``einsum`` against the filter tiled ``out_w``
  times sums them (about 2 ns per output, against ~4 for a multiply and an add pass per tap). Each phase buffer is
  allocated at prepare with its zero-point borders; an invoke copies only the image interior into it (depth
  multiplier ``M > 1``: each input channel ``M`` times, so output channel ``oc`` reads buffer channel ``oc``).
  Then ``+ bias'`` (tiled) in one pass.
* **One input channel** (``C_in == 1``, any ``M``): a plain convolution. im2col is one copy of a strided ``[KH, KW,
  N, out_h, out_w]`` window view of the padded image into a tap-major buffer whose extra last row of ones meets the
  ``bias'`` row of the ``[KH*KW + 1, M]`` GEMM operand; one GEMM gives the accumulators with the bias. When
  :meth:`._epilogue.Epilogue.fold` allows it (exact float64 partial sums, checked at prepare), the operand is
  float64 with the requantization scale and rounding offset folded in, and the GEMM gives ``T`` itself
  (:meth:`._epilogue.Epilogue.finish` only clamps and stores).

Then :class:`._epilogue.Epilogue` requantizes into the output (merged float64 rounding where its per-channel
exactness condition holds, exact int64 MBQM elsewhere).

The buffers are host-side memory of the Python process, not arena memory: the arena plan (int4 scratch request,
persistent multipliers) is exactly the reference prepare's.

Reference invoke (not sped up): float32 and int16x8 kernels, non-constant filters or biases, stride or dilation 0,
empty tensors, input zero points outside [-128, 127], and accumulator bounds beyond 2^53 (none of these occur in
converter-made int8 models).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, fields

import numpy as np

from .._blas import matmul
from .._float_order import c_einsum
from .._qutil import copyto, unpack_int4
from .._weight_stats import accumulator_range
from ..contract import Kernel
from ..conv import regular_steps
from ..depthwise_conv import KERNEL as REFERENCE
from ..depthwise_conv import DepthwiseData, DepthwiseTiler
from ._buffers import work_buffer
from ._epilogue import Epilogue, gemm_weights, product_for
from .conv import BIND_OUTPUTS

_FOLD = True    # one input channel (the GEMM scheme): requantization scale folded into float64 weights when
                # Epilogue.fold allows it (the float64 GEMM costs less than the epilogue passes it saves; the taps
                # scheme's float64 einsum costs more: measured)


@dataclass(frozen=True)
class _Phase:
    """Column phase ``b``: the padded image's columns ``b, b + s_w, ...`` in a buffer whose borders (zp_in) are
    written once at prepare; where the input lands in it; the taps that read it as one strided window view."""

    buf: np.ndarray                     # (N, R, Wb, C_out) float
    dst: np.ndarray | None              # view (N, rows, cols, C_in, M) of buf's interior (None: all padding)
    src: tuple[slice, slice] | None     # input rows and columns that go there
    windows: np.ndarray                 # read-only view (KH, taps of this phase, N, out_h, out_w * C_out)
    weights: np.ndarray                 # (KH, taps of this phase, out_w * C_out): filter taps tiled out_w times
    kxs: tuple[int, ...] = ()           # the filter columns of this phase


@dataclass(frozen=True)
class _TapsPlan:
    phases: tuple[_Phase, ...]
    acc: np.ndarray                     # (N, out_h, out_w * C_out)
    tmp: np.ndarray | None              # same, for the phases after the first
    bias: np.ndarray | None             # (out_w * C_out,): bias' tiled out_w times (None when all zero)


@dataclass(frozen=True)
class _GemmPlan:
    padded: np.ndarray                  # (N, R, Qc) float, borders = zp_in
    dst: np.ndarray | None
    src: tuple[slice, slice] | None
    windows: np.ndarray                 # read-only view (KH, KW, N, out_h, out_w) of `padded`
    cols: np.ndarray                    # (KH * KW + 1, B * out_h * out_w) im2col buffer, last row 1.0
    cols_taps: np.ndarray               # view (KH, KW, B, out_h, out_w) of its first KH * KW rows
    weights: np.ndarray                 # (KH * KW + 1, M), last row bias'
    acc: np.ndarray                     # (B * out_h * out_w, M)
    step: int                           # B: samples per block (all N, or fewer in a batched model)


@dataclass(frozen=True)
class OptimizedDepthwiseData(DepthwiseData):
    """The reference OpData (so everything that reads it, e.g. row-band tiling, keeps working) plus the plan."""

    plan: _TapsPlan | _GemmPlan | None = None   # None: the reference invoke runs
    epilogue: Epilogue | None = None
    folded: bool = False                        # the sums are T itself (Epilogue.fold): Epilogue.finish requantizes
    bands: DepthwiseBands | None = None         # out of core: what depthwise_band needs (None: depthwise_rows runs)


class OptimizedDepthwiseTiler(DepthwiseTiler):
    """DEPTHWISE_CONV_2D row bands with the optimized kernel (:func:`depthwise_band`) when prepared out of core with
    it; a band of a dilated filter's taps' rows only (``band.runs``) runs the reference row by row."""

    def compute(self, kernel, op, data, band):
        if getattr(data, "bands", None) is None or band.runs:
            return super().compute(kernel, op, data, band)
        depthwise_band(data, band.inputs[0], band.inputs[1], band.inputs.get(2), band.out, band.y0, band.row0[0])


class OptimizedDepthwiseConv2D(Kernel):
    ops = ("DEPTHWISE_CONV_2D",)
    #: out of core: the reference bands, computed by this kernel's band functions
    bands = OptimizedDepthwiseTiler

    def prepare(self, ctx, op) -> OptimizedDepthwiseData:
        data = REFERENCE.prepare(ctx, op)
        if _reference_only(ctx, op, data):
            return _extend(data)
        if not getattr(ctx, "weights_resident", True):      # out of core: row bands, no whole-tensor plan
            if data.int4_packed is not None:
                return _extend(data)
            bias = ctx.input(op, 2)
            return _extend(data, bands=DepthwiseBands(data, _filter(ctx, op, data), ctx.input(op, 0).shape[3],
                                                      None if bias is None else bias.data))
        return _plan(ctx, op, data)

    def bind(self, ctx, op, data: OptimizedDepthwiseData):
        """The reference's bound float call where the reference runs (no plan): float32 with constant operands; a
        small layer's plan bound to the arena views (:func:`_bind_plan`)."""
        if data.plan is None:
            return REFERENCE.bind(ctx, op, data)
        return _bind_plan(data, ctx.input(op, 0), ctx.output(op, 0))

    def invoke(self, ctx, op, data: OptimizedDepthwiseData) -> None:
        plan = data.plan
        if plan is None:
            REFERENCE.invoke(ctx, op, data)
            return
        x = ctx.input(op, 0)
        finish = data.epilogue.finish if data.folded else data.epilogue
        if isinstance(plan, _TapsPlan):
            _run_taps(plan, x)
            finish(plan.acc, ctx.output(op, 0))
        else:
            _run_gemm(plan, x, finish, ctx.output(op, 0))


def _extend(data: DepthwiseData, **extra) -> OptimizedDepthwiseData:
    return OptimizedDepthwiseData(**{f.name: getattr(data, f.name) for f in fields(DepthwiseData)}, **extra)


def _reference_only(ctx, op, data: DepthwiseData) -> bool:
    x, w, y = ctx.input(op, 0), ctx.input(op, 1), ctx.output(op, 0)
    b = ctx.input(op, 2)
    return (data.kind != "int8" or (w.data is None and data.int4_packed is None)
            or (b is not None and b.data is None)
            or min(data.stride_h, data.stride_w, data.dilation_h, data.dilation_w) < 1
            or x.num_elements == 0 or y.num_elements == 0 or not -128 <= -data.input_offset <= 127)


def _filter(ctx, op, data: DepthwiseData) -> np.ndarray:
    """The constant filter as int64 ``[KH, KW, C_out]`` (int4 unpacked once, here)."""
    if data.int4_packed is not None:
        return unpack_int4(data.int4_packed, np.empty(data.filter_shape, np.int8))[0].astype(np.int64)
    return np.asarray(ctx.input(op, 1).data[0], np.int64)


#: One-channel depthwise layers of batched models run im2col, GEMM and epilogue on blocks of samples whose im2col
#: and accumulators take at most about this many bytes (measured on micro_speech at batch 64).
_BLOCK_BYTES = 1 << 18
#: Most bytes of host buffers (padded image, accumulators, float64 at worst) one layer's plan may take.
_MAX_PLAN_BYTES = 512 << 20


def _plan(ctx, op, data: DepthwiseData) -> OptimizedDepthwiseData:
    if not regular_steps(data):
        return _extend(data)
    x, y = ctx.input(op, 0), ctx.output(op, 0)
    w = _filter(ctx, op, data)
    kh, kw, c_out = w.shape
    zp_in = -data.input_offset
    bias = np.zeros(c_out, np.int64) if ctx.input(op, 2) is None else ctx.input(op, 2).data.astype(np.int64)
    w_ck = w.reshape(kh * kw, c_out).T
    epilogue = Epilogue(data.multipliers, data.shifts, data.output_offset, int(data.act_min), int(data.act_max),
                        accumulator_range(w_ck, zp_in, bias))
    operand = gemm_weights(w_ck, bias - zp_in * w_ck.sum(axis=1), epilogue.constant)   # [K + 1, C_out], bias' last
    if 256 * int(np.abs(w_ck).sum(axis=1).max(initial=0)) + int(np.abs(bias).max(initial=0)) >= 1 << 53:
        return _extend(data)                    # float64 could round (impossible for int8 weights in practice)
    n, in_h, in_w, c_in = x.shape
    _, oh, ow, _ = y.shape
    padded = n * ((oh - 1) * data.stride_h + (kh - 1) * data.dilation_h + 1) * \
        ((ow - 1) * data.stride_w + (kw - 1) * data.dilation_w + 1) * c_out
    if 8 * (padded + n * oh * ow * c_out * (kh * kw + 3)) > _MAX_PLAN_BYTES:
        return _extend(data)    # a mutated stride/dilation asking for gigabytes of padding: the reference runs
    folded = epilogue.fold(operand.astype(np.int64)) if c_in == 1 and _FOLD else None
    if folded is not None:
        operand = folded
    if c_in == 1:
        plan = _gemm_plan(data, operand, zp_in, (n, in_h, in_w), y.shape, (kh, kw))
    else:
        plan = _taps_plan(data, operand, zp_in, (n, in_h, in_w, c_in), y.shape, (kh, kw))
    return _extend(data, plan=plan, epilogue=epilogue, folded=folded is not None)


def _interior(pad: int, phase: int, stride: int, in_size: int, count: int) -> tuple[int, int, slice]:
    """Phase rows ``[i0, i1)`` (of ``count``) holding image rows ``stride * i + phase - pad``, and those rows."""
    i0 = max(0, -((phase - pad) // stride))                 # ceil((pad - phase) / stride)
    i1 = min(count, -((phase - pad - in_size) // stride))   # ceil((in_size + pad - phase) / stride)
    if i1 <= i0:
        return 0, 0, slice(0, 0)
    r0 = stride * i0 + phase - pad
    return i0, i1, slice(r0, r0 + stride * (i1 - i0 - 1) + 1, stride)


def _taps_plan(data: DepthwiseData, operand: np.ndarray, zp_in: int, in_shape, out_shape, kernel) -> _TapsPlan:
    n = in_shape[0]
    _, oh, ow, c_out = out_shape
    kh, kw = kernel
    w = operand[:-1].reshape(kh, kw, c_out)
    sw, dw = data.stride_w, data.dilation_w
    rows = (oh - 1) * data.stride_h + (kh - 1) * data.dilation_h + 1
    phases = []
    by_phase: dict[int, list[int]] = {}
    for kx in range(kw if sw else 0):       # the column phases some filter column reads (at most kw of them)
        by_phase.setdefault(kx * dw % sw, []).append(kx)
    for b, kxs in sorted(by_phase.items()):
        phases.append(_phase(data, w[:, kxs], [kx * dw // sw for kx in kxs], zp_in, in_shape, out_shape, rows,
                             b, tuple(kxs)))
    acc = np.zeros((n, oh, ow * c_out), operand.dtype)
    tmp = np.zeros_like(acc) if len(phases) > 1 else None
    bias = np.tile(operand[-1], ow) if operand[-1].any() else None
    return _TapsPlan(tuple(phases), acc, tmp, bias)


def _phase(data: DepthwiseData, w: np.ndarray, qxs: list[int], zp_in: int, in_shape, out_shape, rows: int,
           b: int, kxs: tuple[int, ...] = ()) -> _Phase:
    """Column phase ``b`` read by the filter columns ``w`` (``[KH, nx, C_out]``) at phase columns ``ox + qxs``."""
    n, in_h, in_w, c_in = in_shape
    _, oh, ow, c_out = out_shape
    step = qxs[1] - qxs[0] if len(qxs) > 1 else 0          # an arithmetic progression (step dilation / gcd)
    width = ow + qxs[-1]
    buf = np.full((n, rows, width, c_out), zp_in, w.dtype)
    i0, i1, src_rows = _interior(data.pad_h, 0, 1, in_h, rows)
    j0, j1, src_cols = _interior(data.pad_w, b, data.stride_w, in_w, width)
    dst, src = None, None
    if i0 < i1 and j0 < j1:
        dst, src = buf.reshape(n, rows, width, c_in, c_out // c_in)[:, i0:i1, j0:j1], (src_rows, src_cols)
    st = buf.strides
    windows = np.lib.stride_tricks.as_strided(
        buf[:, :, qxs[0]:], (w.shape[0], len(qxs), n, oh, ow * c_out),
        (data.dilation_h * st[1], step * st[2], st[0], data.stride_h * st[1], st[3]), writeable=False)
    return _Phase(buf, dst, src, windows, np.tile(w, (1, 1, ow)), kxs)


def _tap_sources(plan: _TapsPlan, x: np.ndarray) -> list[np.ndarray | None]:
    """The view of ``x`` each phase copies into its buffer (None: the phase is all padding)."""
    return [None if ph.dst is None else x[:, ph.src[0], ph.src[1], :, None] for ph in plan.phases]


def _run_taps(plan: _TapsPlan, x: np.ndarray, sources: list[np.ndarray | None] | None = None) -> None:
    """Per phase one sum of products over its taps (einsum's float loops, ``c_einsum`` being what ``np.einsum``
    calls; exact, see the module docstring); ``sources``: :func:`_tap_sources` of ``x``, made once by a bound
    call."""
    acc, tmp = plan.acc, plan.tmp
    for k, (ph, src) in enumerate(zip(plan.phases, sources or _tap_sources(plan, x))):
        if src is not None:
            copyto(ph.dst, src)
        c_einsum("ijnyz,ijz->nyz", ph.windows, ph.weights, out=acc if k == 0 else tmp)
        if k:
            np.add(acc, tmp, out=acc)
    if plan.bias is not None:
        np.add(acc, plan.bias, out=acc)


def _bind_plan(data: OptimizedDepthwiseData, x: np.ndarray, out: np.ndarray):
    """What :meth:`OptimizedDepthwiseConv2D.invoke` runs, on the fixed views ``x`` and ``out`` as a call without
    arguments, for small layers (at most :data:`.conv.BIND_OUTPUTS` outputs; the GEMM scheme in one block): the
    sources resolved once, the epilogue bound to the plan's accumulator (:meth:`._epilogue.Epilogue.bind`), a small
    product without BLAS's thread calls. None otherwise."""
    plan = data.plan
    if out.size > BIND_OUTPUTS or not out.flags.c_contiguous or out.size != plan.acc.size or x.shape[1] != data.in_h:
        return None             # also views of some rows (a phased segment's line buffers): the segment runs it
    if isinstance(plan, _GemmPlan) and plan.step != plan.windows.shape[2]:
        return None
    finish = data.epilogue.bind(plan.acc, out, folded=data.folded)
    if finish is None:
        return None
    if isinstance(plan, _TapsPlan):
        sources = _tap_sources(plan, x)

        def taps() -> None:
            _run_taps(plan, x, sources)
            finish()
        return taps
    src = None if plan.dst is None else x[:, plan.src[0], plan.src[1], 0]
    return functools.partial(_run_gemm, plan, x, lambda acc, y: finish(), out, src,
                             product_for(plan.cols.T, plan.weights))


def _gemm_plan(data: DepthwiseData, operand: np.ndarray, zp_in: int, in_shape, out_shape, kernel) -> _GemmPlan:
    n, in_h, in_w = in_shape
    _, oh, ow, m = out_shape
    kh, kw = kernel
    sh, sw, dh, dw = data.stride_h, data.stride_w, data.dilation_h, data.dilation_w
    rows_needed, cols_needed = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    padded = np.full((n, rows_needed, cols_needed), zp_in, operand.dtype)
    i0, i1, rows = _interior(data.pad_h, 0, 1, in_h, rows_needed)
    j0, j1, cols = _interior(data.pad_w, 0, 1, in_w, cols_needed)
    dst, src = (None, None) if i0 == i1 or j0 == j1 else (padded[:, i0:i1, j0:j1], (rows, cols))
    st = padded.strides
    windows = np.lib.stride_tricks.as_strided(padded, (kh, kw, n, oh, ow), (dh * st[1], dw * st[2], st[0],
                                                                           sh * st[1], sw * st[2]), writeable=False)
    per = oh * ow
    step = min(n, max(1, _BLOCK_BYTES // (per * operand.itemsize * (kh * kw + 1 + m))))
    im2col = np.ones((kh * kw + 1, step * per), operand.dtype)
    return _GemmPlan(padded, dst, src, windows, im2col, im2col[:-1].reshape(kh, kw, step, oh, ow),
                     np.ascontiguousarray(operand), np.zeros((step * per, m), operand.dtype), step)


def _run_gemm(plan: _GemmPlan, x: np.ndarray, finish, out: np.ndarray, src: np.ndarray | None = None,
             product=matmul) -> None:
    """im2col (tap-major), GEMM and ``finish(acc, out)`` (the epilogue), a block of ``plan.step`` samples at a
    time: a batched model's whole im2col would leave the cache between its copy, its GEMM and the epilogue
    (micro_speech at batch 64: 10 MB); a block of about :data:`_BLOCK_BYTES` stays in it. ``src``: the view of
    ``x`` the image interior is copied from, made once by a bound call; ``product``: its one-block product."""
    if plan.dst is not None:
        copyto(plan.dst, src if src is not None else x[:, plan.src[0], plan.src[1], 0])
    n, step = plan.windows.shape[2], plan.step
    if step == n:
        copyto(plan.cols_taps, plan.windows)     # im2col in one copy, tap-major
        product(plan.cols.T, plan.weights, out=plan.acc)
        finish(plan.acc, out)
        return
    per = plan.windows.shape[3] * plan.windows.shape[4]
    out2 = out.reshape(n * per, -1)
    for s0 in range(0, n, step):
        b = min(n, s0 + step) - s0
        copyto(plan.cols_taps[:, :, :b], plan.windows[:, :, s0:s0 + b])
        acc = plan.acc[:b * per]
        matmul(plan.cols[:, :b * per].T, plan.weights, out=acc)
        finish(acc, out2[s0 * per:(s0 + b) * per])


class DepthwiseBands:
    """Out of core (prepared with ``ctx.weights_resident = False``): what :func:`depthwise_band` needs, without a
    plan for the whole tensor. From the model's filter, once: the epilogue (all channels: the depthwise filter does
    not stream), its constant channels and the sum precision (:func:`._epilogue.gemm_weights`'s choice). Cached by
    band geometry: a taps or GEMM plan (buffers, window views) whose weight buffers are refilled from the filter the
    pager read into the pool at every call."""

    def __init__(self, data: DepthwiseData, w: np.ndarray, c_in: int, bias: np.ndarray | None) -> None:
        kh, kw, c_out = w.shape
        self.kernel, self.c_in, self.zp_in = (kh, kw), c_in, -data.input_offset
        bias64 = np.zeros(c_out, np.int64) if bias is None else bias.astype(np.int64).reshape(-1)
        w_ck = w.reshape(kh * kw, c_out).T
        self.epilogue = Epilogue(data.multipliers, data.shifts, data.output_offset, int(data.act_min),
                                 int(data.act_max), accumulator_range(w_ck, self.zp_in, bias64))
        self.dtype = gemm_weights(w_ck, bias64 - self.zp_in * w_ck.sum(axis=1), self.epilogue.constant).dtype
        self.plans: dict[tuple, _TapsPlan | _GemmPlan] = {}
        self.loaded: set[int] = set()               # id() of the plans whose weight buffers are filled

    def plan(self, data: DepthwiseData, x_shape, y_shape, pad_h: int) -> _TapsPlan | _GemmPlan:
        key = (tuple(x_shape), tuple(y_shape), pad_h)
        plan = self.plans.get(key)
        if plan is None:
            geometry = dataclasses.replace(data, pad_h=pad_h)
            placeholder = np.ones((self.kernel[0] * self.kernel[1] + 1, y_shape[3]), self.dtype)  # a bias buffer
            if self.c_in == 1:
                plan = _gemm_plan(geometry, placeholder, self.zp_in, x_shape[:3], y_shape, self.kernel)
            else:
                plan = _taps_plan(geometry, placeholder, self.zp_in, x_shape, y_shape, self.kernel)
            self.plans[key] = plan
        return plan

    def load(self, plan: _TapsPlan | _GemmPlan, w: np.ndarray, bias: np.ndarray | None, ow: int) -> None:
        """Fill ``plan``'s weight buffers from the filter ``w`` (``[1, KH, KW, C_out]`` int8) and the bias:
        ``[K + 1, C_out]`` with ``bias' = bias - zp_in sum_k w`` last, constant channels zeroed -- unless they
        hold them already: the filter does not stream, and every read of it into the pool is verified against the
        record's checksum, so a plan loaded once holds what the pool holds."""
        if id(plan) in self.loaded:
            return
        self.loaded.add(id(plan))
        kh, kw = self.kernel
        c_out = w.shape[3]
        operand = work_buffer("depthwise_band_operand", (kh * kw + 1, c_out), self.dtype)
        w2 = w.reshape(kh * kw, c_out)
        copyto(operand[:-1], w2)
        folded = -self.zp_in * w2.sum(axis=0, dtype=np.int64)
        if bias is not None:
            folded += bias.reshape(-1)
        operand[-1] = folded
        if self.epilogue.constant.any():
            operand[:, self.epilogue.constant] = 0
        if isinstance(plan, _GemmPlan):
            copyto(plan.weights, operand)
            return
        taps = operand[:-1].reshape(kh, kw, c_out)
        for ph in plan.phases:
            ph.weights.reshape(kh, len(ph.kxs), ow, c_out)[...] = taps[:, list(ph.kxs), None, :]
        plan.bias.reshape(ow, c_out)[...] = operand[-1]


def depthwise_band(data: OptimizedDepthwiseData, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                   out: np.ndarray, y0: int, x_row0: int) -> None:
    """Output rows ``[y0, y0 + out.shape[1])`` from the input band ``x`` (rows ``[x_row0, ...)``), bit-exact with
    the reference ``depthwise_rows``: the band is the same depthwise convolution on the band's rows with ``pad_h' =
    pad_h + x_row0 - y0 s_h`` (see :func:`.conv.conv_band`), computed by that geometry's plan with the pool's
    filter, then the epilogue."""
    bands = data.bands
    plan = bands.plan(data, x.shape, out.shape, data.pad_h + x_row0 - y0 * data.stride_h)
    bands.load(plan, w, bias, out.shape[2])
    if isinstance(plan, _TapsPlan):
        _run_taps(plan, x)
        bands.epilogue(plan.acc, out)
    else:
        _run_gemm(plan, x, bands.epilogue, out)


KERNEL = OptimizedDepthwiseConv2D()
