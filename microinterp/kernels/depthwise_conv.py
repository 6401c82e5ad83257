"""DEPTHWISE_CONV_2D: TFLM's reference depthwise convolution (``micro/kernels/depthwise_conv.cc``,
``depthwise_conv_common.cc``, ``reference/integer_ops/depthwise_conv.h`` DepthwiseConvPerChannel,
``reference/depthwiseconv_float.h``).

Layouts: input NHWC, filter ``[1, KH, KW, C_out]``, output NHWC with ``C_out = C_in * M`` where
``M = options.depth_multiplier`` is taken as-is (not derived from the shapes); output channel ``oc = ic * M + m``
reads input channel ``ic`` and filter column ``oc``.

Algorithm (docs/tflm-facts.md §4-§6): as CONV_2D per output channel — ``acc = sum over taps inside the image of
w[0, ky, kx, oc] * (x[iy, ix, ic] - zp_in)`` (taps outside the image skipped = zero-point padding; the loops use the
output tensor's H/W), ``+ bias[oc]``, per-channel requantization (filter quantized along dim 3), ``+ zp_out``, clamp.
int8 (int8 or packed int4 weights): int32 accumulator, double-rounding MBQM; int4 weights are unpacked every invoke
into a planned scratch buffer of ``prod(filter dims)`` bytes. 16x8: zero points not applied, int64 accumulator,
int64 bias only, single-rounding 16-bit-multiplier MBQM. float32: ``total += x * w`` in float32 in (ky, kx) order,
then ``+ bias``, clamp.

Implementation: :func:`depthwise_rows` computes a band of output rows from an input view (for row-tiled
out-of-core execution); invoke calls it for all rows. It loops over the KH*KW taps only, each tap a vectorized
multiply-add over (pixels, channels, multiplier), then one vectorized requantization.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..quant import Requantizer, activation_range_float
from ._float_conv import bound_windows_call
from ._float_dot import BoundDot, bias_as_tap, bind_finish, sequential_taps
from ._x86_nan import add_bias_x86
from .contract import Kernel, Traits
from .conv import (
    ConvRows,
    check_strides,
    eval_strides,
    filter_and_bias,
    int4_filter_scratch,
    populate_quantization,
    requantize,
    unused_channel_arrays,
)
from .padding import (
    bind_gather,
    compute_padding_height_width,
    fixed_windows,
    input_row_runs_for,
    outside_image,
    tap_rows,
    windows,
)


@dataclass(frozen=True)
class DepthwiseData:
    kind: str                   # "float32", "int8" or "int16_acc64"
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_h: int
    pad_w: int
    in_h: int
    depth_multiplier: int
    input_offset: int
    output_offset: int
    act_min: float
    act_max: float
    multipliers: np.ndarray | None
    shifts: np.ndarray | None
    has_bias: bool
    int4_scratch: int | None = None
    int4_packed: np.ndarray | None = None
    filter_shape: tuple[int, ...] = ()
    requantizer: Requantizer | None = None      # int8: the int32 MBQM with (multipliers, shifts), prepared once
    constant_operands: bool = False             # the filter and the bias (if any) are constants: bind may keep them


def depthwise_rows(data: DepthwiseData, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray,
                   y0: int, x_row0: int = 0) -> None:
    """Compute output rows ``[y0, y0 + out.shape[1])`` into ``out`` from ``x`` (input rows from ``x_row0`` on)."""
    n, oh, ow, c_out = out.shape
    if out.size == 0:
        return
    _, kh, kw, _ = w.shape
    c_in, m = x.shape[3], data.depth_multiplier
    acc_dtype = {"float32": np.float32, "int8": np.int32, "int16_acc64": np.int64}[data.kind]
    win = windows(x, y0=y0, out_h=oh, out_w=ow, filter_h=kh, filter_w=kw, stride_h=data.stride_h,
                  stride_w=data.stride_w, dilation_h=data.dilation_h, dilation_w=data.dilation_w, pad_h=data.pad_h,
                  pad_w=data.pad_w, in_h=data.in_h, x_row0=x_row0, offset=data.input_offset, dtype=acc_dtype)
    if data.kind == "float32":      # TFLM's sequential float32 sums, exact (NaN, inf, -0 included)
        xs_t = win.transpose(3, 4, 0, 1, 2, 5).reshape(kh * kw, n * oh * ow, c_in, 1)
        xs_t = np.broadcast_to(xs_t, (*xs_t.shape[:3], m)).reshape(kh * kw, n * oh * ow, c_out)
        skip_t = None
        if not np.isfinite(w).all():    # 0 * inf is NaN: taps outside the image must be left out, as TFLM does
            mask = outside_image(x, data, y0, oh, ow, kh, kw, x_row0)
            skip_t = None if mask is None else mask.transpose(3, 4, 0, 1, 2, 5).reshape(kh * kw, n * oh * ow)
        acc = sequential_taps(xs_t, np.asarray(w[0], np.float32).reshape(kh * kw, c_out), skip_t)
        if bias is not None:
            add_bias_x86(acc, bias.astype(np.float32), nan_from="bias")
        np.clip(acc, np.float32(data.act_min), np.float32(data.act_max), out=acc)
        out[...] = acc.reshape(out.shape)
        return
    taps = w[0].reshape(kh, kw, c_in, m).astype(acc_dtype)   # TFLM reads filter[0, ky, kx, oc]
    acc = np.zeros((n, oh, ow, c_in, m), acc_dtype)
    with np.errstate(over="ignore", invalid="ignore"):     # float inf is clamped to FLT_MAX below, as in TFLM
        for ky in range(kh):
            for kx in range(kw):
                acc += win[:, :, :, ky, kx, :, None] * taps[ky, kx]
    acc = acc.reshape(n, oh, ow, c_out)
    if data.kind == "float32":
        if bias is not None:
            acc += bias.astype(np.float32)
        np.clip(acc, np.float32(data.act_min), np.float32(data.act_max), out=acc)
        out[...] = acc
        return
    if bias is not None:
        acc += bias.astype(acc_dtype)   # int32 accumulators wrap like TFLM's
    out[...] = requantize(acc, data, out.dtype)


class DepthwiseTiler(ConvRows):
    """DEPTHWISE_CONV_2D in row bands with :func:`depthwise_rows`. A dilated filter reads only its taps' rows
    (:meth:`input_row_runs`): a band of one output row with dilation 4 reads 3 rows, not the 9 of their hull."""

    def input_row_runs(self, data, k, y0, y1):
        if k != 0 or data.dilation_h == 1:
            return super().input_row_runs(data, k, y0, y1)
        return input_row_runs_for(y0, y1, data.stride_h, data.dilation_h, data.filter_shape[1], data.pad_h,
                                  data.in_h)

    def compute(self, kernel, op, data, band):
        runs = band.runs.get(0)
        if runs is None:
            depthwise_rows(data, band.inputs[0], band.inputs[1], band.inputs.get(2), band.out, band.y0,
                           band.row0[0])
            return
        for i in range(band.out.shape[1]):
            x, tap_data = tap_rows(data, band.inputs[0], runs, band.y0 + i)
            depthwise_rows(tap_data, x, band.inputs[1], band.inputs.get(2), band.out[:, i:i + 1], 0, 0)


class DepthwiseConv2D(Kernel):
    ops = ("DEPTHWISE_CONV_2D",)
    traits = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=False, channelwise=True)
    geometry = "filter"
    op_class = "depthwise"
    cost_family = "depthwise"
    opdata = 'iiii iii ii pp ii i'
    opdata_compression = "ii"
    #: out of core: row bands (:class:`DepthwiseTiler`)
    bands = DepthwiseTiler

    def macs(self, op, tensors, elements: int) -> int:
        """Output elements x filter height x width."""
        return elements * math.prod(tensors[op.inputs[1]].shape[1:3])

    def prepare(self, ctx, op) -> DepthwiseData:
        ctx.check_io_count(op, (2, 3), 1)
        y = ctx.output(op, 0)
        x = ctx.require_input(op, 0)
        w = ctx.require_input(op, 1)
        bias_t = ctx.input(op, 2)
        for name, t in (("input", x), ("filter", w), ("output", y)):
            if len(t.shape) != 4:
                raise ctx.fail(op, f"{name} must be 4-D, got shape {t.shape}")
        channels = w.shape[3]
        if x.type_name == "INT8":
            if w.quantization is None:
                raise ctx.fail(op, "filter must be affine-quantized")
            if w.quantization.scales.size not in (1, channels):
                raise ctx.fail(op, f"filter has {w.quantization.scales.size} scales, expected 1 or {channels}")
        combo = (x.type_name, w.type_name)
        if combo not in (("FLOAT32", "FLOAT32"), ("INT16", "INT8"), ("INT8", "INT8"), ("INT8", "INT4")):
            raise ctx.fail(op, f"Hybrid models are not supported on TFLite Micro (input {x.type_name}, "
                               f"filter {w.type_name})")
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        multiplier = int(op.options.get("depth_multiplier", 1))
        _check_shapes(ctx, op, x, w, y, bias_t, multiplier)
        int4_scratch, int4_packed = int4_filter_scratch(ctx, op, w)
        stride_h, stride_w, dil_h, dil_w = check_strides(ctx, op)
        pad = compute_padding_height_width(stride_h, stride_w, dil_h, dil_w, x.shape[1], x.shape[2], w.shape[1],
                                           w.shape[2], op.options.get("padding", "SAME"))
        activation = op.options.get("fused_activation_function", "NONE")
        mult = shift = None
        if x.type_name == "FLOAT32":
            unused_channel_arrays(ctx, channels)
            act_min, act_max = activation_range_float(activation)
        else:
            mult, shift, act_min, act_max = populate_quantization(ctx, op, x, w, y, channels, activation)
        kind = _kind(ctx, op, x, bias_t)
        zp_in = x.quantization.zero_point if kind == "int8" else 0
        zp_out = y.quantization.zero_point if kind == "int8" else 0
        stride_h, stride_w, dil_h, dil_w = eval_strides((stride_h, stride_w, dil_h, dil_w))
        return DepthwiseData(kind, stride_h, stride_w, dil_h, dil_w, pad.height, pad.width, x.shape[1], multiplier,
                             -zp_in, zp_out, act_min, act_max, mult, shift, bias_t is not None, int4_scratch,
                             int4_packed, tuple(w.shape), Requantizer(mult, shift) if kind == "int8" else None,
                             w.data is not None and (bias_t is None or bias_t.data is not None))

    def bind(self, ctx, op, data: DepthwiseData):
        """float32 in memory with a constant filter and bias: :class:`BoundFloatDepthwise` (None otherwise)."""
        if data.kind != "float32" or not data.constant_operands:
            return None
        w, bias = filter_and_bias(ctx, op, data)
        bound = BoundFloatDepthwise.build(data, ctx.input(op, 0), w, bias, ctx.output(op, 0))
        return None if bound is None else bound.bound()

    def invoke(self, ctx, op, data: DepthwiseData) -> None:
        w, bias = filter_and_bias(ctx, op, data)
        depthwise_rows(data, ctx.input(op, 0), w, bias, ctx.output(op, 0), 0)


#: Output channels below which the bound float depthwise lays its taps out channels first.
PIXELS_INNER_BELOW = 16


class BoundFloatDepthwise:
    """A float DEPTHWISE_CONV_2D on fixed arena views: what :func:`depthwise_rows` computes, with what does not depend
    on the input values done once -- the tap buffer and its window view, the copy of the image into it, the
    taps-first buffer of every tap's inputs (each input channel repeated for its multiplier), the filter taps (and
    bias) in that buffer's channel order, the taps outside the image -- so an invoke is: refresh the image, write
    the taps, the sequential sums, the bias, the clamp into the output."""

    def __init__(self, dst, src, win, base, taps, bias, skip_t, lo, hi, out):
        self.dst, self.src, self.base = dst, src, base
        n, oh, ow, kh, kw, c_in = win.shape
        m = taps.shape[1] // c_in
        k = kh * kw
        self.shape = None
        # a constant bias without NaN and no tap left out: the bias as a last tap (1.f * bias) over a kept row of
        # ones after the taps, as the float conv does (_float_dot.bias_as_tap, on the [C, K] transposed taps)
        extra = int(bias is not None and skip_t is None and not np.isnan(bias).any())
        # few channels and no tap left out: a channels-first buffer [ky, kx, c_in, m, n, oy, ox], pixels innermost
        # (its transposing copy costs more than the channels-last einsum saves from 16 channels on)
        self.dot = None if skip_t is not None or c_in * m >= PIXELS_INNER_BELOW else BoundDot.taps_pixels_inner(
            np.ones((k + extra, c_in * m, n * oh * ow), np.float32), bias_as_tap(taps.T, bias)[1] if extra else taps)
        if self.dot is not None:
            self.finish = bind_finish(self.dot, None if extra else bias, "bias", lo, hi, out)
            self.xs_view = self.dot.xs_cn[:k].reshape(kh, kw, c_in, m, n, oh, ow)
            self.win_t = np.broadcast_to(win.transpose(3, 4, 5, 0, 1, 2)[:, :, :, None], self.xs_view.shape)
            return
        # the taps-first buffer as the window's axes with the multiplier before the input channels: [ky, kx, n, oy,
        # ox, m, c_in], so the copy's inner loop runs over the channels (not over m copies of one value); the
        # output channels are then in the order (m, c_in): the taps and the bias permuted alike, the totals
        # clamped into the output seen as [n, m, c_in]
        xs_t = np.ones((k + extra, n * oh * ow, m * c_in), np.float32)
        self.xs_view = xs_t[:k].reshape(kh, kw, n, oh, ow, m, c_in)
        self.win_t = np.broadcast_to(win.transpose(3, 4, 0, 1, 2, 5)[..., None, :], self.xs_view.shape)
        if m > 1:
            taps = np.ascontiguousarray(taps.reshape(k, c_in, m).transpose(0, 2, 1).reshape(k, -1))
            bias = None if bias is None else np.ascontiguousarray(bias.reshape(c_in, m).T)
            out = out.reshape(-1, c_in, m).transpose(0, 2, 1)
            self.shape = out.shape
        self.dot = BoundDot.taps(xs_t, bias_as_tap(taps.T, bias)[1] if extra else taps, skip_t)
        self.finish = bind_finish(self.dot, None if extra else bias, "bias", lo, hi, out, self.shape)

    @classmethod
    def build(cls, data: DepthwiseData, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
              out: np.ndarray) -> BoundFloatDepthwise | None:
        n, oh, ow, c_out = out.shape
        _, kh, kw, _ = w.shape
        fixed = fixed_windows(x, data, out, kh, kw)
        if fixed is None:
            return None         # the unusual geometries (windows() gathers their taps): depthwise_rows as it is
        dst, src, win, base = fixed
        taps = np.ascontiguousarray(np.asarray(w[0], np.float32).reshape(kh * kw, c_out))
        skip_t = None
        if not np.isfinite(taps).all():    # 0 * inf is NaN: taps outside the image must be left out, as TFLM does
            mask = outside_image(x, data, 0, oh, ow, kh, kw)
            skip_t = None if mask is None else np.ascontiguousarray(
                mask.transpose(3, 4, 0, 1, 2, 5).reshape(kh * kw, n * oh * ow))
        return cls(dst, src, win, base, taps,
                   None if bias is None else np.array(bias, np.float32), skip_t, np.float32(data.act_min),
                   np.float32(data.act_max), out.reshape(n * oh * ow, c_out))

    def bound(self) -> Callable[[], None]:
        """The invoke as a closure over its parts (:func:`.conv.bound_windows_call`)."""
        return bound_windows_call(self.dst, self.src, bind_gather(self.xs_view, self.win_t, self.base), self.finish)


def _kind(ctx, op, x, bias_t) -> str:
    bias_type = bias_t.type_name if bias_t is not None else None
    want = {"FLOAT32": "FLOAT32", "INT8": "INT32", "INT16": "INT64"}[x.type_name]
    if bias_type not in (None, want):
        raise ctx.fail(op, f"{x.type_name} depthwise convolution needs a {want} bias, got {bias_type}")
    return {"FLOAT32": "float32", "INT8": "int8", "INT16": "int16_acc64"}[x.type_name]


def _check_shapes(ctx, op, x, w, y, bias_t, multiplier: int) -> None:
    """Shape rules TFLM only DCHECKs (its release build would read/write out of bounds): refused here."""
    if x.shape[0] != y.shape[0]:
        raise ctx.fail(op, f"input batch {x.shape[0]} differs from output batch {y.shape[0]}")
    if w.shape[3] != y.shape[3]:
        raise ctx.fail(op, f"filter has {w.shape[3]} output channels, output has {y.shape[3]}")
    if multiplier < 1 or x.shape[3] * multiplier != y.shape[3]:
        raise ctx.fail(op, f"output depth {y.shape[3]} != input depth {x.shape[3]} x depth_multiplier {multiplier}")
    if bias_t is not None and bias_t.num_elements != y.shape[3]:
        raise ctx.fail(op, f"bias has {bias_t.num_elements} elements, expected {y.shape[3]}")


KERNEL = DepthwiseConv2D()
