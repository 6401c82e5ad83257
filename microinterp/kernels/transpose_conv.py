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

Multipliers: ``double(s_in)·double(s_w[c])/double(s_out)`` per output channel (per-tensor filter scales are
broadcast). Scratch requests, in order: the accumulator (``4·prod(out)`` int8, ``8·prod(out)`` int16), then
``8·len(bias)`` for an int16 bias. Prepare also allocates two persistent int32 arrays of ``C_out`` entries
(multipliers and shifts), for every type, as TFLM does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..quant import (
    activation_range,
    activation_range_float,
    mbqm,
    mbqm_int64,
    quantize_multipliers,
    wrap_int32,
)
from .bands import RowBands
from .base import is_batch1_nhwc
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


class TransposeConv:
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
    start = y0 + data.pad[0] - x_row0 * data.stride[0]        # the band's first output row in the band's canvas
    local = (out.shape[0], max(start + rows, 0), width, out.shape[3])
    if data.kind == "FLOAT32":
        canvas = _scatter_float(x, w, local, data.stride, (0, data.pad[1]))
    else:
        xi = x.astype(np.int64)
        if data.kind == "INT8":
            xi = xi - data.input_zp
        canvas = _scatter_int(xi, w, local, data.stride, (0, data.pad[1]))
    if start >= 0:
        acc = canvas[:, start:start + rows]
    else:       # output rows no input row reaches (kernel shorter than the stride): zero before the bias
        acc = np.zeros((out.shape[0], rows, width, out.shape[3]), canvas.dtype)
        acc[:, -start:] = canvas[:, :rows + start]
    if data.kind == "FLOAT32":
        if bias is not None:
            acc = acc + bias.astype(np.float32)
        out[...] = np.minimum(np.maximum(acc, np.float32(data.act_min)), np.float32(data.act_max))
        return
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


def _scatter_float(x: np.ndarray, w: np.ndarray, out_shape, stride, pad) -> np.ndarray:
    """Float scatter in TFLM's summation order.

    For one output element TFLM adds contributions in raster order of the input pixel, then by input channel.
    The input row grows as the tap row shrinks, so walking taps from the last (ky, kx) to the first and input
    channels upwards, each as one vectorized float32 add, reproduces that order exactly (skipped taps add
    nothing).
    """
    n, h, wd, c_in = x.shape
    c_out, kh, kw, _ = w.shape
    sh, sw = stride
    ch, cw = _scatter_layout(x.shape, w.shape, out_shape, stride, pad)
    canvas = np.zeros((n, ch, cw, c_out), np.float32)
    x = x.astype(np.float32)
    w = w.astype(np.float32)
    for ky in reversed(range(kh if h and wd else 0)):   # an empty input scatters nothing
        for kx in reversed(range(kw)):
            view = canvas[:, ky:ky + (h - 1) * sh + 1:sh, kx:kx + (wd - 1) * sw + 1:sw, :]
            for ic in range(c_in):
                view += x[:, :, :, ic:ic + 1] * w[:, ky, kx, ic]
    ph, pw = pad
    return canvas[:, ph:ph + out_shape[1], pw:pw + out_shape[2], :]


KERNEL = TransposeConv()
