"""TRANSPOSE_CONV: TFLM's scatter-based reference kernel (int8 per-channel, 16x8 and float32).

TFLM (``micro/kernels/transpose_conv.cc``, ``reference/integer_ops/transpose_conv.h``,
``reference/transpose_conv.h``):

* inputs: 0 = output_shape (ignored: TFLM has no dynamic shapes, the output tensor's shape is used),
  1 = filter ``[C_out, KH, KW, C_in]``, 2 = input ``[N, H, W, C_in]``, 3 = bias (optional); dilation is 1.
* padding: ``ComputePaddingHeightWidth`` (:mod:`.padding`) with ``in := output H/W`` and dilation 1:
  ``out = SAME ? ceil(in/s) : (in + s - k) / s``; ``pad = max(0, (out - 1)·s + k - in) // 2``.
* scatter: every input pixel ``(iy, ix)`` and tap ``(ky, kx)`` adds ``x·w`` into
  ``acc[iy·sh - pad_h + ky, ix·sw - pad_w + kx]`` when inside the output. int8: ``acc`` is an int32 scratch
  buffer and ``x - zp_in`` is used; out = clamp(MBQM(acc + bias[c], M_c, s_c) + zp_out) (double-rounding
  MBQM). 16x8: ``acc`` is int64, no input or output offset is applied (the activation range still uses the
  output zero point), out = clamp(MBQM64(acc + bias)). The int16 bias of old 16x8 models is widened into a
  second scratch buffer; an int32 bias is reinterpreted as int64 by TFLM (garbage), so it is refused here.
* float: the output itself is the accumulator, summed in float32 in the scatter order (input pixel raster
  order, then input channel), then ``+ bias`` and clamped to the fused activation range.

Float here is a gather: for one output element the input pixels that reach it come in raster order exactly when
the taps go from the last ``(ky, kx)`` to the first, so every output is a sequential dot product
(:func:`._float_dot.sequential_dot`) over the taps in that order and the input channels, with the taps that reach
no input pixel skipped -- TFLM's sums in TFLM's order, NaN operands as x86 picks them. The gather (which input
pixel each output pixel and tap reads) depends only on the geometry: :meth:`TransposeConv.bind` builds it once for
the whole op, a band builds its own.

Multipliers: ``double(s_in)·double(s_w[c])/double(s_out)`` per output channel (per-tensor filter scales are
broadcast). Scratch requests, in order: the accumulator (``4·prod(out)`` int8, ``8·prod(out)`` int16), then
``8·len(bias)`` for an int16 bias. Prepare also allocates two persistent int32 arrays of ``C_out`` entries
(multipliers and shifts), for every type, as TFLM does.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy._core import umath as np_umath

from ..quant import (
    activation_range,
    activation_range_float,
    mbqm,
    mbqm_int64,
    quantize_multipliers,
    wrap_int32,
)
from ._float_dot import BiasClamp, sequential_dot_core
from ._float_order import EINSUM_IN_ORDER, REDUCE_ROWS_IN_ORDER, c_einsum
from ._qutil import copyto
from ._x86_nan import add_bias_x86, repair_nans
from .bands import RowBands
from .base import is_batch1_nhwc
from .binary_common import FLT_LOWEST, FLT_MAX
from .contract import PURE, Kernel
from .conv import eval_strides
from .padding import compute_padding_height_width


@dataclass(frozen=True)
class TransposeConvData:
    kind: str                      # "INT8", "INT16" or "FLOAT32"
    stride: tuple[int, int]        # (sh, sw)
    pad: tuple[int, int]           # (pad_h, pad_w)
    input_zp: int
    output_zp: int
    multipliers: np.ndarray        # per output channel (int32, persistent)
    shifts: np.ndarray
    act_min: float
    act_max: float
    has_bias: bool
    filter_h: int                  # kernel rows and input rows: which input rows a band of output rows reads
    in_h: int


class TransposeConv(Kernel):
    ops = ("TRANSPOSE_CONV",)
    traits = PURE
    op_class = "conv"
    def macs(self, op, tensors, elements: int) -> int:
        """Output elements x filter height x width x input depth."""
        return elements * math.prod(tensors[op.inputs[1]].shape[1:])

    def prepare(self, ctx, op) -> TransposeConvData:
        ctx.check_io_count(op, (3, 4), 1)
        w, x, y = ctx.require_input(op, 1), ctx.require_input(op, 2), ctx.output(op, 0)
        bias = ctx.input(op, 3)
        kind = x.type_name
        if kind not in ("INT8", "INT16", "FLOAT32"):
            raise ctx.fail(op, f"input type {kind} not supported")
        if not (w.type_name == kind or (kind == "INT16" and w.type_name == "INT8")):
            raise ctx.fail(op, f"hybrid models are not supported ({kind} input, {w.type_name} filter)")
        if y.type_name != kind:
            raise ctx.fail(op, f"output type {y.type_name} differs from input type {kind}")
        if w.data is None:
            raise ctx.fail(op, "the filter must be a constant tensor")
        if len(x.shape) != 4 or len(w.shape) != 4 or len(y.shape) != 4:
            raise ctx.fail(op, "input, filter and output must be 4-D")
        c_out, kh, kw, c_in = w.shape
        if x.shape[0] != y.shape[0] or x.shape[3] != c_in or y.shape[3] != c_out:
            raise ctx.fail(op, f"shapes do not match: input {x.shape}, filter {w.shape}, output {y.shape}")
        sh, sw = int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1))
        if sh <= 0 or sw <= 0:
            raise ctx.fail(op, f"strides must be positive, got {sh}x{sw}")
        padding = op.options.get("padding", "SAME")
        act = op.options.get("fused_activation_function", "NONE")

        # Persistent per-channel multiplier and shift arrays (TFLM's Prepare allocates them for every type).
        mult = np.zeros(c_out, np.int32)
        shift = np.zeros(c_out, np.int32)
        out_elems = int(np.prod(y.shape))
        if kind == "INT8":
            ctx.request_scratch(op, out_elems * 4)
        elif kind == "INT16":
            ctx.request_scratch(op, out_elems * 8)
        input_zp = output_zp = 0
        act_min, act_max = activation_range_float(act)
        if kind != "FLOAT32":
            qw, qx, qy = w.quantization, x.quantization, y.quantization
            if qw is None or qx is None or qy is None:
                raise ctx.fail(op, "quantized transpose conv needs quantization on input, filter and output")
            n = qw.scales.size
            if n != 1 and n != c_out:
                raise ctx.fail(op, f"filter has {n} scales, expected 1 or {c_out}")
            if n > 1 and w.shape[qw.axis] != c_out:
                raise ctx.fail(op, "per-channel filter must be quantized along dimension 0")
            if bias is not None:
                want = "INT32" if kind == "INT8" else ("INT64", "INT16")
                if bias.type_name not in (want if isinstance(want, tuple) else (want,)):
                    raise ctx.fail(op, f"bias type {bias.type_name} not supported with {kind} input")
            scales = np.broadcast_to(qw.scales.astype(np.float64), (c_out,))
            m, s = quantize_multipliers(np.float64(qx.scale) * scales / np.float64(qy.scale))
            mult, shift = m.astype(np.int32), s.astype(np.int32)
            input_zp, output_zp = qx.zero_point, qy.zero_point
            act_min, act_max = activation_range(act, qy.scale, output_zp, kind)
            if kind == "INT16" and bias is not None and bias.type_name == "INT16":
                ctx.request_scratch(op, bias.num_elements * 8)
        elif bias is not None and bias.type_name != "FLOAT32":
            raise ctx.fail(op, f"bias type {bias.type_name} not supported with FLOAT32 input")
        if bias is not None and bias.num_elements != c_out:
            raise ctx.fail(op, f"bias has {bias.num_elements} elements, expected {c_out}")
        p = compute_padding_height_width(sh, sw, 1, 1, y.shape[1], y.shape[2], kh, kw, padding)
        pad = (p.height, p.width)
        esh, esw, _, _ = eval_strides((sh, sw, 1, 1))      # ConvParams keeps them as int16
        if esh <= 0 or esw <= 0:
            # TFLM would scatter with that step (skipping positions outside the output); not emulated here
            raise ctx.fail(op, f"strides {sh}x{sw} wrap to {esh}x{esw} in TFLM's int16 ConvParams")
        return TransposeConvData(kind, (esh, esw), pad, input_zp, output_zp, ctx.persistent(mult),
                                 ctx.persistent(shift), act_min, act_max, bias is not None, kh, x.shape[1])

    def bind(self, ctx, op, data: TransposeConvData):
        """float32 in memory (the filter is constant, prepare checks it): the gather and its filter matrices built
        once (:class:`FloatGather`), each invoke one sequential dot product per stride phase and batch, the bias and
        the clamp (None for the integer kinds)."""
        if data.kind != "FLOAT32":
            return None
        x, out = ctx.input(op, 2), ctx.output(op, 0)
        gather = FloatGather.build(data, x.shape, ctx.input(op, 1), ctx.input(op, 3) if data.has_bias else None,
                                   0, 0, out.shape[1], out.shape[2])
        return gather.bound(x, out)       # under the runtime's quiet errstate

    def invoke(self, ctx, op, data: TransposeConvData) -> None:
        bias = ctx.input(op, 3) if data.has_bias else None
        transpose_conv_rows(data, ctx.input(op, 2), 0, ctx.input(op, 1), bias, ctx.output(op, 0), 0)

    #: out of core: a band of output rows reads the input rows that scatter into it (input 2; the output shape,
    #: the filter and the bias are passed whole)
    bands = RowBands({2: 1}, lambda data, k, y0, y1: input_rows(data, y0, y1),
                         lambda data, inputs, row0, out, y0: transpose_conv_rows(
                             data, inputs[2], row0[2], inputs[1], inputs.get(3) if data.has_bias else None, out, y0),
                         lambda op, data, inputs, output: (len(inputs) > 2 and inputs[2] is not None
                                                           and not inputs[2].is_constant
                                                           and is_batch1_nhwc(inputs[2], output)))


def input_rows(data: TransposeConvData, y0: int, y1: int) -> tuple[int, int]:
    """Input rows ``[lo, hi)`` that scatter into output rows ``[y0, y1)``: input row ``i`` reaches canvas rows
    ``i*sh .. i*sh + kh - 1``, and output row ``y`` is canvas row ``y + pad_h``."""
    sh, kh = data.stride[0], data.filter_h
    c0, c1 = y0 + data.pad[0], y1 + data.pad[0]
    lo = max(0, -(-(c0 - kh + 1) // sh))
    hi = min(data.in_h, (c1 - 1) // sh + 1)
    return lo, max(lo, hi)


def transpose_conv_rows(data: TransposeConvData, x: np.ndarray, x_row0: int, w: np.ndarray, bias: Any,
                        out: np.ndarray, y0: int) -> None:
    """Output rows ``[y0, y0 + out rows)`` from input rows ``[x_row0, x_row0 + x rows)`` (every row that scatters
    into them: :func:`input_rows`); the whole op is ``x_row0 = y0 = 0``. The band's canvas starts at canvas row
    ``x_row0 * sh``; each output element gets the same contributions in the same order as from the whole input."""
    rows, width = out.shape[1], out.shape[2]
    if data.kind == "FLOAT32":
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            FloatGather.build(data, x.shape, w, bias, x_row0, y0, rows, width).run(x, out)
        return
    start = y0 + data.pad[0] - x_row0 * data.stride[0]        # the band's first output row in the band's canvas
    local = (out.shape[0], max(start + rows, 0), width, out.shape[3])
    xi = x.astype(np.int64)
    if data.kind == "INT8":
        xi = xi - data.input_zp
    canvas = _scatter_int(xi, w, local, data.stride, (0, data.pad[1]))
    if start >= 0:
        acc = canvas[:, start:start + rows]
    else:       # output rows no input row reaches (kernel shorter than the stride): zero before the bias
        acc = np.zeros((out.shape[0], rows, width, out.shape[3]), canvas.dtype)
        acc[:, -start:] = canvas[:, :rows + start]
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    if data.kind == "INT8":
        res = mbqm(wrap_int32(acc), data.multipliers, data.shifts) + data.output_zp
    else:
        res = mbqm_int64(acc, data.multipliers, data.shifts)
    out[...] = np.clip(res, data.act_min, data.act_max)


def _scatter_layout(x_shape, w_shape, out_shape, stride, pad):
    """Size of the uncropped scatter canvas and the crop window of the output inside it."""
    _, h, wd, _ = x_shape
    _, kh, kw, _ = w_shape
    sh, sw = stride
    ch = max((h - 1) * sh + kh, pad[0] + out_shape[1])
    cw = max((wd - 1) * sw + kw, pad[1] + out_shape[2])
    return ch, cw


def _scatter_int(x: np.ndarray, w: np.ndarray, out_shape, stride, pad) -> np.ndarray:
    """Integer scatter: one exact float64 matmul for all taps, then shifted adds (order is irrelevant)."""
    n, h, wd, c_in = x.shape
    c_out, kh, kw, _ = w.shape
    sh, sw = stride
    ch, cw = _scatter_layout(x.shape, w.shape, out_shape, stride, pad)
    # [N*H*W, C_in] @ [C_in, KH*KW*C_out]; |values| < 2^53 so float64 is exact.
    wmat = np.transpose(w.astype(np.float64), (3, 1, 2, 0)).reshape(c_in, kh * kw * c_out)
    taps = (x.reshape(-1, c_in).astype(np.float64) @ wmat).reshape(n, h, wd, kh, kw, c_out).astype(np.int64)
    canvas = np.zeros((n, ch, cw, c_out), np.int64)
    for ky in range(kh if h and wd else 0):         # an empty input scatters nothing (TFLM's loops do not run)
        for kx in range(kw):
            rows, cols = slice(ky, ky + (h - 1) * sh + 1, sh), slice(kx, kx + (wd - 1) * sw + 1, sw)
            canvas[:, rows, cols, :] += taps[:, :, :, ky, kx, :]
    ph, pw = pad
    return canvas[:, ph:ph + out_shape[1], pw:pw + out_shape[2], :]


#: Where both operands are NaN, which one's NaN the wheel keeps (measured): in ``output += x * w`` the product's, in
#: ``acc += bias`` ...
SUM_NAN_FROM = "product"
BIAS_NAN_FROM = "total"


@dataclass(frozen=True)
class Phase:
    """The output pixels of one stride phase (``(y + pad_h) % sh``, ``(x + pad_w) % sw`` fixed): the taps that can
    reach them (every other tap lands on other phases) and, per tap and input channel, the element of the band's
    flattened input each pixel reads (``index_t``, the zero past the end where the tap reaches no input pixel;
    ``skip_t`` marks those, None when there are none)."""

    pixels: np.ndarray
    taps: tuple[tuple[int, int], ...]
    index_t: np.ndarray
    skip_t: np.ndarray | None
    w: np.ndarray               # [C_out, taps * C_in] float32, in the taps' order
    w_t: np.ndarray             # its transpose, contiguous


@dataclass(frozen=True)
class FloatGather:
    """The float gather of a band of output rows (see the module docstring), grouped by stride phase: every phase is
    one :func:`._float_dot.sequential_dot_core` over its taps from the last ``(ky, kx)`` to the first and the input
    channels -- TFLM's summation order for each of its outputs."""

    phases: tuple[Phase, ...]
    bias: np.ndarray | None
    act: tuple[np.float32, np.float32]
    flat: np.ndarray            # one batch of the band's input, flattened, and a zero past the end (skipped taps)
    acc: np.ndarray             # [pixels, C_out] totals
    merged: Merged | None = None    # small layers: every phase in one product (:func:`_merge`)

    @classmethod
    def build(cls, data: TransposeConvData, x_shape: tuple[int, ...], w: Any, bias: Any, x_row0: int, y0: int,
              rows: int, width: int) -> FloatGather:
        _, hb, in_w, c_in = x_shape
        w = np.asarray(w, np.float32)
        _, kh, kw, _ = w.shape
        sh, sw = data.stride
        cy = (np.arange(y0, y0 + rows) + data.pad[0])[:, None]
        cx = (np.arange(width) + data.pad[1])[None, :]
        phase_y, phase_x = np.broadcast_arrays(cy % sh, cx % sw)
        channel = np.arange(c_in)[None, :, None]
        # a tap that reaches no input pixel reads the zero past the input: with a finite filter its product is a
        # zero, which leaves every total (never -0.f, as it starts from +0.f) as it is -- nothing to skip
        finite = bool(np.isfinite(w).all())
        phases = []
        for py in range(sh):
            for px in range(sw):
                where = np.flatnonzero(((phase_y == py) & (phase_x == px)).reshape(-1))
                if not where.size:
                    continue
                taps = tuple((ky, kx) for ky in reversed(range(py % sh, kh, sh)) for kx in
                             reversed(range(px % sw, kw, sw)))
                yy, xx = cy.reshape(-1)[where // width], cx.reshape(-1)[where % width]
                ky = np.array([t[0] for t in taps], np.int64)[:, None]
                kx = np.array([t[1] for t in taps], np.int64)[:, None]
                iy, ix = (yy[None] - ky) // sh, (xx[None] - kx) // sw              # [taps, pixels]
                valid = (iy >= x_row0) & (iy < min(x_row0 + hb, data.in_h)) & (ix >= 0) & (ix < in_w)
                base = ((iy - x_row0) * in_w + ix) * c_in
                index = np.where(valid[:, None], base[:, None] + channel, hb * in_w * c_in)
                index_t = index.reshape(len(taps) * c_in, where.size).astype(np.intp)
                skip_t = None if valid.all() or finite else np.ascontiguousarray(
                    np.repeat(~valid[:, None], c_in, axis=1).reshape(len(taps) * c_in, where.size))
                wm = np.ascontiguousarray(np.stack([w[:, a, b, :] for a, b in taps], axis=1).reshape(
                    w.shape[0], -1)) if taps else np.zeros((w.shape[0], 0), np.float32)
                phases.append(Phase(where, taps, index_t, skip_t, wm, np.ascontiguousarray(wm.T)))
        phases = tuple(phases)
        return cls(phases, None if bias is None else np.array(bias, np.float32),
                   (np.float32(data.act_min), np.float32(data.act_max)), np.zeros(hb * in_w * c_in + 1, np.float32),
                   np.empty((rows * width, w.shape[0]), np.float32),
                   _merge(phases, rows * width, w.shape[0], hb * in_w * c_in))

    def bound(self, x: np.ndarray, out: np.ndarray):
        """:meth:`run` on fixed views as a call without arguments: for one batch with every phase merged, the copy
        in, the merged product, the bias and the clamp of :class:`._float_dot.BiasClamp` (a total from ``+0.f`` is
        never ``-0.f``: the clip ufunc is exact); :meth:`run` otherwise."""
        m = self.merged
        if m is None or out.shape[0] != 1:
            return functools.partial(self.run, x, out)
        flat, head, src = self.flat, self.flat[:-1], x[0].reshape(-1)
        o = out[0].reshape(self.acc.shape)
        if self.bias is None:
            # no bias: the clamp in place on the contiguous [C_out, pixels] totals, then one transposing copy (a
            # clip into the transposed output cost twice that); skipped without an activation while the totals'
            # NaN-test sum is finite (no total +-inf or NaN: the clamp to +-FLT_MAX would change nothing)
            lo, hi = (np.array(v, np.float32) for v in self.act)
            totals, totals_t, clip, isfinite = m.totals, m.totals.T, np_umath.clip, math.isfinite
            free = bool(lo <= FLT_LOWEST and hi >= FLT_MAX)

            def unbiased() -> None:
                copyto(head, src)
                if not (isfinite(m.sums(flat)) and free):
                    clip(totals, lo, hi, out=totals)
                copyto(o, totals_t)
            return unbiased
        finish = BiasClamp(self.bias, BIAS_NAN_FROM, *self.act, o)

        def call() -> None:
            copyto(head, src)
            finish(m.dot(flat))
        return call

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """``out`` (the band's output rows) from ``x`` (the band's input rows), under an errstate that ignores
        float errors."""
        flat = self.flat
        lo, hi = self.act
        for b in range(out.shape[0]):
            flat[:-1] = x[b].reshape(-1)
            if self.merged is not None:
                acc = self.merged.dot(flat)
            else:
                acc = self.acc
                for ph in self.phases:
                    if not ph.taps:         # no tap reaches these pixels: TFLM's zeroed output
                        acc[ph.pixels] = 0
                        continue
                    acc[ph.pixels] = sequential_dot_core(flat[ph.index_t], ph.w, ph.skip_t, ph.w_t, SUM_NAN_FROM)
            if self.bias is not None:
                add_bias_x86(acc, self.bias, BIAS_NAN_FROM)
            o = out[b].reshape(acc.shape)
            np.maximum(acc, lo, out=o)
            np.minimum(o, hi, out=o)


#: A layer whose phases all fit one product of at most this many elements is computed as one.
MERGED_ELEMENTS = 1 << 16


@dataclass(frozen=True)
class Merged:
    """Every phase of a small layer in one product, the filter gathered per pixel (:func:`_merge`): ``[C_out, K,
    pixels]`` products (pixels innermost, NumPy's long inner loops) reduced over ``K`` in order, with the buffers
    kept."""

    index_t: np.ndarray         # [K, pixels]
    skip_t: np.ndarray | None   # [K, pixels]
    w: np.ndarray               # [C_out, K, pixels]
    cols_t: np.ndarray          # buffers: the gathered inputs, the products, the totals
    products: np.ndarray | None     # None: by einsum (no tap skipped, pixels more than one)
    totals: np.ndarray
    ones: np.ndarray            # the NaN test's other operand: one per total

    def dot(self, flat: np.ndarray) -> np.ndarray:
        """``[pixels, C_out]`` totals: the products of every tap, skipped ones ``-0.f``, added in order from ``0.f``
        (NaN outputs again with the hardware's rules), as :func:`._float_dot.sequential_dot_core` adds them."""
        self.sums(flat)
        return self.totals.T

    def sums(self, flat: np.ndarray) -> Any:
        """:meth:`dot` into the kept ``[C_out, pixels]`` totals, returning the NaN test's sum of them (finite: no
        total is +-inf or NaN)."""
        flat.take(self.index_t, None, self.cols_t, "wrap")    # every index valid: "wrap" checks none
        if self.products is None:       # einsum adds the rounded products tap after tap (pixels innermost)
            c_einsum("ckp,kp->cp", self.w, self.cols_t, out=self.totals)
        else:
            np.multiply(self.w, self.cols_t[None], out=self.products)
            if self.skip_t is not None:
                copyto(self.products, np.float32(-0.0), where=self.skip_t[None])
            np.add.reduce(self.products, axis=1, out=self.totals, initial=np.float32(0.0))
        s = self.totals.reshape(-1).dot(self.ones)
        if math.isnan(s):       # a NaN total (or inf - inf in this sum)
            repair_nans(self.totals.T, lambda i, j: (self.cols_t[:, i], self.w[j, :, i]), self.skip_t,
                         SUM_NAN_FROM)
        return s


def _merge(phases: tuple[Phase, ...], pixels: int, c_out: int, zero: int) -> Merged | None:
    """The phases of a small layer as one :class:`Merged`: column ``p`` holds pixel ``p``'s taps in its phase's
    order, then padding up to the longest phase (taps reading the input's zero ``zero`` with a zero filter, skipped
    too: they add nothing). None for a product above :data:`MERGED_ELEMENTS`."""
    k = max((ph.index_t.shape[0] for ph in phases), default=0)
    if not k or k * pixels * c_out > MERGED_ELEMENTS or not REDUCE_ROWS_IN_ORDER:
        return None
    index_t = np.full((k, pixels), zero, np.intp)
    skip_t = np.ones((k, pixels), bool)
    w = np.zeros((c_out, k, pixels), np.float32)
    for ph in phases:
        n = ph.index_t.shape[0]
        index_t[:n, ph.pixels] = ph.index_t
        skip_t[:n, ph.pixels] = False if ph.skip_t is None else ph.skip_t
        w[:, :n, ph.pixels] = ph.w[:, :, None]
    finite = all(ph.skip_t is None for ph in phases) and bool(np.isfinite(w).all())
    products = None if finite and EINSUM_IN_ORDER and pixels > 1 else np.empty((c_out, k, pixels), np.float32)
    return Merged(index_t, None if finite else skip_t, w, np.empty((k, pixels), np.float32), products,
                  np.empty((c_out, pixels), np.float32), np.ones(c_out * pixels, np.float32))


KERNEL = TransposeConv()
