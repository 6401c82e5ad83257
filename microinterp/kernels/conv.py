"""CONV_2D: TFLM's reference convolution (``micro/kernels/conv.cc``, ``conv_common.cc``,
``kernels/internal/reference/integer_ops/conv.h`` ConvPerChannel and ``reference/conv.h`` for float32).

Layouts: input NHWC, filter OHWI (``[C_out, KH, KW, C_in / groups]``), output NHWC; ``groups = C_in / filter_C``
and output channel ``oc`` belongs to group ``oc // (C_out / groups)``.

Algorithm (docs/tflm-facts.md §4-§6):

* Prepare: padding from :mod:`.padding` (only the before-padding is used); per output channel
  ``eff_c = double(s_in) * double(s_w[c] or s_w[0]) / double(s_out)`` -> QuantizeMultiplier -> ``(M_c, shift_c)``
  (per-tensor filter scales are broadcast, so the per-channel code always runs); activation clamp from the output's
  scale/zero point with float32 ``roundf``. int4 filters: a scratch buffer of ``prod(filter dims)`` bytes is
  requested (it takes part in memory planning) and the packed weights are unpacked into it on every invoke
  (element ``2i`` in the low nibble, sign-extended).
* Invoke: ``acc[oc] = sum over taps inside the image of w * (x - zp_in)`` — taps outside the image are *skipped*
  (zero-point padding), loops run over the output tensor's H/W — then ``+ bias``, requantize, ``+ zp_out``, clamp.
  int8: int32 accumulator (wraps), double-rounding MBQM. 16x8 (int16 activations, int8 weights): no zero points are
  applied; int64 bias -> int64 accumulator and the single-rounding 16-bit-multiplier MBQM; int32 or no bias ->
  int32 accumulator and the int32 MBQM. float32: ``total += x * w`` in float32 in (ky, kx, ic) order, then
  ``+ bias``, clamp to the activation range (``FLT_MAX`` bounds for NONE).

Implementation: :func:`conv_rows` computes a band of output rows from an input view (so an out-of-core pager can
run row tiles with the same code); invoke calls it once for all rows. Integer convolutions are im2col + float64
matmul — exact, since every partial sum stays far below 2^53 — followed by vectorized int64 requantization. The
float path accumulates tap by tap in float32 to reproduce TFLM's rounding order exactly.

Refusals follow TFLM's Prepare (type combinations, missing quantization, per-channel scale counts, per-channel int4
filters). Shape inconsistencies that TFLM only DCHECKs (and that would make its release build read or write out of
bounds) are refused too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..quant import Requantizer, activation_range, activation_range_float, mbqm_int64, quantize_multiplier
from ._blas import matmul
from ._float_dot import sequential_dot_t
from ._qutil import unpack_int4
from ._x86_nan import add_bias_x86
from .bands import Tiler
from .base import is_batch1_nhwc
from .cmsis_nn.convolve_1_x_n import Helium1xN
from .cmsis_nn.convolve_1_x_n import plan as helium_1xn_plan
from .contract import PURE, Kernel
from .padding import (
    compute_padding_height_width,
    input_rows_for,
    windows,
)

INT32_TYPE = 2          # TensorType.INT32, as stored in Conv2DOptions.quantized_bias_type
from ._float_conv import BoundFloatConv, _float_filter_t, _outside_taps


@dataclass(frozen=True)
class ConvData:
    kind: str                   # "float32", "int8", "int16_acc32" or "int16_acc64"
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_h: int
    pad_w: int
    in_h: int
    groups: int
    input_offset: int           # -zp_in for int8, 0 otherwise
    output_offset: int          # zp_out for int8, 0 otherwise
    act_min: float
    act_max: float
    multipliers: np.ndarray | None  # persistent int32 per output channel
    shifts: np.ndarray | None       # persistent int32 per output channel
    has_bias: bool
    int4_scratch: int | None = None                 # scratch handle of the unpacked int4 filter
    int4_packed: np.ndarray | None = None           # packed int4 filter bytes (constant)
    filter_shape: tuple[int, ...] = ()
    requantizer: Requantizer | None = None          # int32 MBQM with (multipliers, shifts), prepared once
    filter_finite: bool = True      # float32: a constant filter without inf or NaN (taps outside the image then
                                    # need no skipping: see _outside_taps)
    float_filter_t: np.ndarray | None = None    # float32, one group, constant filter held in memory: [K, C_out]
    helium_1xn: Helium1xN | None = None     # target= on a Helium core where CMSIS-NN's 1xN kernel differs


# -- prepare helpers shared with DEPTHWISE_CONV_2D --------------------------------------------------------------------
def check_strides(ctx, op) -> tuple[int, int, int, int]:
    """Strides and dilations from the options. 0 works as in TFLM (every output row/tap reads the same input row);
    negative values are refused (TFLM would run them, skipping most taps; no converter writes them)."""
    o = op.options
    vals = tuple(int(o.get(k, 1)) for k in ("stride_h", "stride_w", "dilation_h_factor", "dilation_w_factor"))
    if min(vals) < 0:
        raise ctx.fail(op, f"strides and dilations must be >= 0, got (stride_h, stride_w, dilation_h, dilation_w) "
                           f"= {vals}")
    return vals  # type: ignore[return-value]


def eval_strides(vals: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """The strides and dilations Eval uses: TFLM's ConvParams / DepthwiseParams keep them as ``int16_t`` (Prepare
    computes the padding with the full ``int`` of the options), so a value of 2^16 or more wraps -- to 0, or to a
    negative step, which TFLM runs (its taps outside the image are skipped) and so does the reference here."""
    return tuple((v + (1 << 15)) % (1 << 16) - (1 << 15) for v in vals)  # type: ignore[return-value]


def regular_steps(data) -> bool:
    """True when every stride and dilation is positive: what the optimized plans and row bands assume."""
    return min(data.stride_h, data.stride_w, data.dilation_h, data.dilation_w) > 0


def populate_quantization(ctx, op, x, w, y, channels: int, activation: str) -> tuple[np.ndarray, np.ndarray, int, int]:
    """TFLM PopulateConvolutionQuantizationParams: per-channel (M, shift) as persistent int32 arrays + act range."""
    if x.quantization is None:
        raise ctx.fail(op, "input must be affine-quantized")
    if w.quantization is None:
        raise ctx.fail(op, "filter must be affine-quantized")
    if y.quantization is None:
        raise ctx.fail(op, "output must be affine-quantized")
    wq = w.quantization
    if wq.per_channel:
        if w.type_name not in ("INT8", "INT4"):
            raise ctx.fail(op, f"per-channel quantization needs an INT8 or INT4 filter, got {w.type_name}")
        if wq.scales.size != channels:
            raise ctx.fail(op, f"{wq.scales.size} filter scales for {channels} output channels")
        if not 0 <= wq.axis < len(w.shape) or w.shape[wq.axis] != channels:
            raise ctx.fail(op, f"filter quantized_dimension {wq.axis} does not hold the {channels} output channels")
    s_in, s_out = float(x.quantization.scale), float(y.quantization.scale)
    if not s_out > 0 or not np.isfinite(s_out):   # TFLM would derive multipliers from inf/NaN (undefined casts)
        raise ctx.fail(op, f"output scale must be positive and finite, got {s_out}")
    scales = wq.scales if wq.per_channel else np.repeat(wq.scales[:1], channels)
    pairs = [quantize_multiplier(s_in * float(s) / s_out) for s in scales]
    mult = ctx.persistent(np.array([p[0] for p in pairs], dtype=np.int32))
    shift = ctx.persistent(np.array([p[1] for p in pairs], dtype=np.int32))
    if y.type_name not in ("INT8", "INT16"):
        raise ctx.fail(op, f"output type {y.type_name} has no quantized activation range")
    _check_activation_quantizable(ctx, op, activation, s_out)
    act_min, act_max = activation_range(activation, s_out, y.quantization.zero_point, y.type_name)
    return mult, shift, act_min, act_max


def unused_channel_arrays(ctx, channels: int) -> None:
    """TFLM's ConvPrepare and DepthwiseConvPrepare allocate the per-channel multiplier and shift arrays (int32 per
    output channel, persistent) before they look at the type, so a float convolution keeps two it never reads."""
    ctx.persistent(np.zeros(channels, np.int32))
    ctx.persistent(np.zeros(channels, np.int32))


def _check_activation_quantizable(ctx, op, activation: str, scale: float) -> None:
    """CalculateActivationRangeQuantized fails when ``roundf(f / scale)`` (float32) leaves the int32 range for a
    bound f of the fused activation (e.g. RELU6 with a tiny output scale)."""
    bounds = {"RELU": (0.0,), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}.get(activation, ())
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for f in bounds:
            q = np.round(np.float32(f) / np.float32(scale))     # ties differ from roundf only at .5: irrelevant here
            if not (np.float32(-2.0**31) <= q <= np.float32(2.0**31)):
                raise ctx.fail(op, f"no_integer_overflow_from_quantization: {activation} bound {f} / output scale "
                                   f"{scale} does not fit int32")


def int4_filter_scratch(ctx, op, w) -> tuple[int | None, np.ndarray | None]:
    """(scratch handle, packed bytes) of an INT4 filter, (None, None) otherwise: TFLM requests a planned scratch
    buffer of ``prod(filter dims)`` bytes and unpacks the (constant) weights into it on every invoke."""
    if w.type_name != "INT4":
        return None, None
    if w.data is None:
        raise ctx.fail(op, "an INT4 filter must be a constant tensor")
    return ctx.request_scratch(op, w.num_elements), w.data


def filter_and_bias(ctx, op, data) -> tuple[np.ndarray, np.ndarray | None]:
    """Invoke-time filter (INT4: unpacked into its scratch buffer now) and bias (None without one)."""
    if data.int4_scratch is not None:
        w = unpack_int4(data.int4_packed, ctx.scratch(data.int4_scratch).view(np.int8).reshape(data.filter_shape))
    else:
        w = ctx.input(op, 1)
    return w, ctx.input(op, 2) if data.has_bias else None


def requantize(acc: np.ndarray, data, out_dtype: np.dtype, c0: int = 0) -> np.ndarray:
    """Accumulators with the bias added (int64 or integral float64, channels last) ->
    ``clamp(MBQM(acc, M_c, s_c) + zp_out, act_min, act_max)`` in ``out_dtype``.

    int32 accumulators (int8 and 16x8-with-int32-bias paths): the sum wraps to int32 as TFLM's does, then
    the double-rounding MBQM (``data.requantizer``). int64 accumulators (16x8 with int64 or no bias):
    :func:`~microinterp.quant.mbqm_int64`. ``acc`` may hold only output channels ``[c0, c0 + acc.shape[-1])`` (an
    out-of-core channel tile); their multipliers and shifts are used.
    """
    channels = acc.shape[-1]
    whole = c0 == 0 and channels == data.multipliers.size
    mult, shifts = (data.multipliers, data.shifts) if whole else \
        (data.multipliers[c0:c0 + channels], data.shifts[c0:c0 + channels])
    if data.kind == "int16_acc64":
        v = mbqm_int64(np.asarray(acc, np.int64), mult, shifts)
    else:
        x32 = acc if acc.dtype == np.int32 else np.asarray(acc, np.int64).astype(np.int32)   # wraps like C
        v = (data.requantizer if whole else Requantizer(mult, shifts))(x32)
    v += data.output_offset
    np.clip(v, data.act_min, data.act_max, out=v)
    return v.astype(out_dtype)


# -- the kernel -------------------------------------------------------------------------------------------------------
def conv_rows(data: ConvData, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray, y0: int,
              x_row0: int = 0, c0: int = 0) -> None:
    """Compute output rows ``[y0, y0 + out.shape[1])`` into ``out`` (an NHWC view of those rows).

    ``x`` holds input rows ``[x_row0, x_row0 + x.shape[1])`` (whole tensor or a band with its halo), ``w`` is the
    (unpacked) OHWI filter, ``bias`` the bias vector or None. With one group, ``w``, ``bias`` and ``out`` may hold
    only output channels ``[c0, c0 + w.shape[0])`` (an out-of-core channel tile).
    """
    n, oh, ow, c_out = out.shape
    if out.size == 0:
        return
    _, kh, kw, c_grp = w.shape
    is_float = data.kind == "float32"
    win = windows(x, y0=y0, out_h=oh, out_w=ow, filter_h=kh, filter_w=kw, stride_h=data.stride_h,
                  stride_w=data.stride_w, dilation_h=data.dilation_h, dilation_w=data.dilation_w, pad_h=data.pad_h,
                  pad_w=data.pad_w, in_h=data.in_h, x_row0=x_row0, offset=data.input_offset,
                  dtype=np.float32 if is_float else np.float64)
    per_group = c_out // data.groups
    rows = n * oh * ow
    acc = np.empty((rows, c_out), np.float32 if is_float else np.float64)
    skip_t = _outside_taps(data, x, y0, out.shape, w.shape, x_row0) if is_float else None
    whole = c0 == 0 and w.shape[0] == data.filter_shape[0] if data.filter_shape else False
    for g in range(data.groups):
        wg = w[g * per_group:(g + 1) * per_group].reshape(per_group, kh * kw * c_grp)
        if is_float:       # im2col with the taps first ([K, pixels], (ky, kx, ic) order)
            cols_t = np.ascontiguousarray(          # contiguous: the in-order einsum of the sums needs it
                win[..., g * c_grp:(g + 1) * c_grp].transpose(3, 4, 5, 0, 1, 2).reshape(kh * kw * c_grp, rows))
            w_t = data.float_filter_t if whole and data.groups == 1 else None
            acc[:, g * per_group:(g + 1) * per_group] = sequential_dot_t(cols_t, wg, skip_t, w_t)
            continue
        cols = win[..., g * c_grp:(g + 1) * c_grp].reshape(rows, kh * kw * c_grp)   # im2col, (ky, kx, ic) order
        matmul(cols, wg.T.astype(np.float64), out=acc[:, g * per_group:(g + 1) * per_group])
    if is_float:
        if bias is not None:
            add_bias_x86(acc, bias.astype(np.float32))
        np.clip(acc, np.float32(data.act_min), np.float32(data.act_max), out=acc)
        out[...] = acc.reshape(out.shape)
        return
    if bias is not None:
        acc += bias   # float64 stays exact: |acc| + |bias| < 2^53
    out[...] = requantize(acc, data, out.dtype, c0).reshape(out.shape)


class ConvRows(Tiler):
    """Out of core, CONV_2D and DEPTHWISE_CONV_2D in bands of output rows: a band reads the input rows its filter
    reaches (the halo), and a PAD before it may be folded into its own padding (:meth:`fold_pad`)."""

    mode = "rows"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

    @classmethod
    def for_op(cls, op: Any, data: Any, inputs: Sequence[Any], output: Any) -> Tiler | None:
        if not regular_steps(data) or not is_batch1_nhwc(inputs[0], output) or data.int4_scratch is not None:
            return None     # TFLM's int16 strides wrapped to 0 or below, or an int4 filter unpacked whole: whole
        return cls()

    def input_rows(self, data, k, y0, y1):
        return input_rows_for(y0, y1, data.stride_h, data.dilation_h, data.filter_shape[1], data.pad_h, data.in_h)

    @staticmethod
    def fold_pad(data: Any, pad_data: Any, x: Any, padded: Any) -> Any | None:
        """``data`` for reading a PAD's input ``x`` directly instead of its output ``padded``: the PAD's rows and
        columns become the convolution's own padding (``pad_h + top``, ``pad_w + left``, ``in_h`` of ``x``; the
        bottom and right ones are the taps past ``x``'s end). None when that is not exact.

        Exact when the fill is the input zero point (``-input_offset``) of a quantized kernel: a tap on a filled
        position then contributes ``(zp + offset) * w = 0``, exactly what a skipped padding tap contributes (the
        band functions skip taps outside the image), and every other tap reads the same raw value (PAD copies
        values without requantizing). The PAD must pad only rows and columns (batch and channels unchanged).
        float32 is left alone (``0 * inf`` is NaN, a skipped tap is nothing)."""
        if data.kind == "float32" or pad_data.fill is None or pad_data.fill != -data.input_offset:
            return None
        sl = pad_data.out_slices
        if len(x.shape) != 4 or len(padded.shape) != 4 or tuple(pad_data.box_shape) != tuple(x.shape) \
                or sl[0].start != 0 or sl[3].start != 0 or padded.shape[0] != x.shape[0] \
                or padded.shape[3] != x.shape[3]:
            return None
        return dataclasses.replace(data, pad_h=data.pad_h + sl[1].start, pad_w=data.pad_w + sl[2].start,
                                   in_h=x.shape[1])


#: Host bytes one conv_rows call may spend on its im2col matrix (float64): a band is computed in sub-bands so the
#: Python heap stays small while tiles go by (an MCU kernel needs no im2col at all).
IM2COL_BYTES = 1 << 21


class ConvTiler(ConvRows):
    """CONV_2D in row bands with :func:`conv_rows`; the filter may stream in output-channel tiles (not for grouped
    convolutions), the input band staying resident while they go by."""

    channel_input = 1

    @classmethod
    def for_op(cls, op, data, inputs, output):
        tiler = super().for_op(op, data, inputs, output)
        if tiler is not None and data.groups != 1:
            tiler.channel_input = None
        return tiler

    def compute(self, kernel, op, data, band):
        w = band.inputs[1]
        bias = band.inputs.get(2)
        out = band.out[..., band.c0:band.c1]
        per_row = out.shape[2] * w.shape[1] * w.shape[2] * w.shape[3] * 8
        step = max(1, IM2COL_BYTES // max(per_row, 1))
        for r in range(0, out.shape[1], step):
            conv_rows(data, band.inputs[0], w, bias, out[:, r:r + step], band.y0 + r, band.row0[0], band.c0)


class Conv2D(Kernel):
    ops = ("CONV_2D",)
    traits = PURE
    geometry = "filter"
    op_class = "conv"
    cost_family = "conv"
    opdata = 'iiii iii ii pp ii i'
    opdata_compression = "ii"
    #: out of core: row bands, the filter streamed in channel tiles (:class:`ConvTiler`)
    bands = ConvTiler

    def macs(self, op, tensors, elements: int) -> int:
        """Output elements x filter height x width x input depth."""
        return elements * math.prod(tensors[op.inputs[1]].shape[1:])

    def prepare(self, ctx, op) -> ConvData:
        ctx.check_io_count(op, (2, 3), 1)
        y = ctx.output(op, 0)
        x = ctx.require_input(op, 0)
        w = ctx.require_input(op, 1)
        bias_t = ctx.input(op, 2)
        if x.type_name != y.type_name:
            raise ctx.fail(op, f"input type {x.type_name} differs from output type {y.type_name}")
        combo = (x.type_name, w.type_name)
        if combo not in (("FLOAT32", "FLOAT32"), ("INT16", "INT8"), ("INT8", "INT8"), ("INT8", "INT4")):
            raise ctx.fail(op, f"Hybrid models are not supported on TFLite Micro (input {x.type_name}, "
                               f"filter {w.type_name})")
        _check_shapes(ctx, op, x, w, y, bias_t)
        stride_h, stride_w, dil_h, dil_w = check_strides(ctx, op)
        channels = w.shape[0]
        activation = op.options.get("fused_activation_function", "NONE")
        quantized = x.type_name != "FLOAT32"
        if quantized and w.quantization is not None and w.quantization.scales.size not in (1, channels):
            raise ctx.fail(op, f"filter has {w.quantization.scales.size} scales, expected 1 or {channels}")
        pad = compute_padding_height_width(stride_h, stride_w, dil_h, dil_w, x.shape[1], x.shape[2], w.shape[1],
                                           w.shape[2], op.options.get("padding", "SAME"))
        mult = shift = None
        if quantized:
            mult, shift, act_min, act_max = populate_quantization(ctx, op, x, w, y, channels, activation)
        else:
            unused_channel_arrays(ctx, channels)
            act_min, act_max = activation_range_float(activation)
        kind = _kind(ctx, op, x, bias_t)
        int4_scratch, int4_packed = int4_filter_scratch(ctx, op, w)
        zp_in = x.quantization.zero_point if quantized else 0
        zp_out = y.quantization.zero_point if quantized else 0
        stride_h, stride_w, dil_h, dil_w = eval_strides((stride_h, stride_w, dil_h, dil_w))
        helium = helium_1xn_plan(ctx, op, x, w, y, pad.width, stride_w, (dil_h, dil_w), -zp_in) \
            if kind == "int8" and ctx.device_image is not None else None
        return ConvData(kind, stride_h, stride_w, dil_h, dil_w, pad.height, pad.width, x.shape[1],
                        x.shape[3] // w.shape[3], -zp_in if kind == "int8" else 0, zp_out if kind == "int8" else 0,
                        act_min, act_max, mult, shift, bias_t is not None, int4_scratch, int4_packed, tuple(w.shape),
                        Requantizer(mult, shift) if kind in ("int8", "int16_acc32") else None,
                        kind != "float32" or (w.data is not None and bool(np.isfinite(w.data).all())),
                        _float_filter_t(ctx, w) if kind == "float32" and x.shape[3] == w.shape[3] else None,
                        helium)

    def bind(self, ctx, op, data: ConvData):
        """float32 in memory with a constant, ungrouped filter: :class:`BoundFloatConv` (None otherwise)."""
        if data.kind != "float32" or data.float_filter_t is None or data.groups != 1:
            return None
        w, bias = filter_and_bias(ctx, op, data)
        bound = BoundFloatConv.build(data, ctx.input(op, 0), w, bias, ctx.output(op, 0))
        return None if bound is None else bound.bound()

    def invoke(self, ctx, op, data: ConvData) -> None:
        w, bias = filter_and_bias(ctx, op, data)
        if data.helium_1xn is not None:
            helium_conv(data, w, bias, ctx.output(op, 0))
            return
        conv_rows(data, ctx.input(op, 0), w, bias, ctx.output(op, 0), 0)


def helium_conv(data: ConvData, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray) -> None:
    """What a Helium firmware's ``arm_convolve_1_x_n_s8`` computes (:mod:`.cmsis_nn.convolve_1_x_n`): its windows
    (read from the firmware arena's image), the reference sums and requantization."""
    n, _, out_x, oc = out.shape
    cols = data.helium_1xn.windows(n, -data.input_offset).reshape(n * out_x, -1).astype(np.float64)
    cols += data.input_offset
    acc = cols @ w.reshape(oc, -1).T.astype(np.float64)
    if bias is not None:
        acc += bias
    out[...] = requantize(acc, data, out.dtype).reshape(out.shape)


def _kind(ctx, op, x, bias_t) -> str:
    """Which TFLM code path runs, from the input and bias types (the Eval switch), checked at prepare time."""
    bias_type = bias_t.type_name if bias_t is not None else None
    if x.type_name == "FLOAT32":
        if bias_type not in (None, "FLOAT32"):
            raise ctx.fail(op, f"float convolution needs a FLOAT32 bias, got {bias_type}")
        return "float32"
    if x.type_name == "INT8":
        if bias_type not in (None, "INT32"):
            raise ctx.fail(op, f"int8 convolution needs an INT32 bias, got {bias_type}")
        return "int8"
    if bias_type == "INT32" or (bias_type is None and op.options.get("quantized_bias_type", 0) == INT32_TYPE):
        return "int16_acc32"   # no bias: the int32 path only when options.quantized_bias_type says INT32
    if bias_type in (None, "INT64"):
        return "int16_acc64"
    raise ctx.fail(op, f"Bias type {bias_type} not supported (16x8 convolution takes INT32 or INT64)")


def _check_shapes(ctx, op, x, w, y, bias_t) -> None:
    """Shape rules TFLM only DCHECKs (its release build would read/write out of bounds): refused here."""
    for name, t in (("input", x), ("filter", w), ("output", y)):
        if len(t.shape) != 4:
            raise ctx.fail(op, f"{name} must be 4-D, got shape {t.shape}")
    if x.shape[0] != y.shape[0]:
        raise ctx.fail(op, f"input batch {x.shape[0]} differs from output batch {y.shape[0]}")
    if w.shape[0] != y.shape[3]:
        raise ctx.fail(op, f"filter has {w.shape[0]} output channels, output has {y.shape[3]}")
    if w.shape[3] <= 0 or x.shape[3] % w.shape[3]:
        raise ctx.fail(op, f"input depth {x.shape[3]} is not a multiple of the filter depth {w.shape[3]}")
    groups = x.shape[3] // w.shape[3] if w.shape[3] else 0
    if groups == 0:
        raise ctx.fail(op, f"input depth {x.shape[3]} is not a positive multiple of filter depth {w.shape[3]}")
    if y.shape[3] % groups:
        raise ctx.fail(op, f"{y.shape[3]} output channels cannot be split into {groups} groups")
    if bias_t is not None and bias_t.num_elements != y.shape[3]:
        raise ctx.fail(op, f"bias has {bias_t.num_elements} elements, expected {y.shape[3]}")


KERNEL = Conv2D()
