"""FULLY_CONNECTED: TFLM ``micro/kernels/fully_connected.cc``, ``fully_connected_common.cc``,
``reference/integer_ops/fully_connected.h``, ``reference/fully_connected.h``.

Shapes come from the model (no resize; ``keep_num_dims`` only shaped the output tensor at conversion):
``depth = out.shape[-1]``, ``batches = out.size / depth``, ``accum = filter.shape[-1]``; the input is read flat as
``[batches, accum]`` and filter row ``c`` is ``filter.flat[c*accum : (c+1)*accum]``.

Quantized::

    acc[b, c] = sum_k (w[c,k] + w_off) * (x[b,k] + x_off) + bias[c]
    int8 : x_off = -zp_in; w_off = -zp_w (per-tensor only; per-channel ignores the filter zero point)
           y = clamp(MBQM(acc, M_c, s_c) + zp_out, act_min, act_max)            int32 accumulator (wraps)
    int16: the same offsets and output zero point (the wheel's templated kernel applies them to int16 too);
           int64 bias or NO bias -> int64 acc + MBQM_int64 (single rounding, 16-bit multiplier);
           int32 bias -> int32 acc + the double-rounding int32 MBQM

Multipliers: per-channel (filter has > 1 scale; int8 or int16 input, not int4) ``double(s_in) * double(s_w[c]) /
double(s_out)`` each through QuantizeMultiplier (two int32 arrays in persistent memory, as TFLM allocates them);
per-tensor the same with ``s_w[0]``, and with a bias Prepare fails unless
``|s_in * s_w - s_bias| / s_out <= 0.02`` (all double; an unquantized bias has scale 0).

INT4 weights (int8 input, per-tensor only): TFLM requests a scratch buffer of ``prod(filter.shape)`` bytes in
Prepare (before anything else) and unpacks the weights into it on every Eval (two per byte, element ``2i`` in the low
nibble, sign-extended); the same scratch is requested and filled here.

float32: ``total = 0f; for k: total += x*w`` sequentially in float32 (no FMA), ``+ bias``, then the float activation
clamp (NONE clamps to +-FLT_MAX). Emulated with a loop over ``k`` on whole ``[batches, depth]`` float32 arrays.

Implementation: constant weights are converted once at prepare to a float64 ``[accum, depth]`` matrix with the
filter offset applied; the input offset is folded into the bias (``bias - zp_in * sum_k w'``). The accumulation is one
float64 matmul (exact: every partial sum is an integer below 2^53), rounded to int64, plus the folded bias as int64.
Prepare also computes each channel's exact accumulator range from the weights and the input type's range; for int8
outputs, when no int32 accumulator can wrap (the usual case), ``MBQM + zp_out`` then the clamp is a non-decreasing
step function of the accumulator with 255 steps, evaluated with one ``searchsorted`` (:mod:`._step_requant`). The
weights then get the bias (plus the steps' key offsets) as one more row, ``gemm``, in float32 when every partial sum
``128 sum_k |w'| + |bias|`` and every threshold stays below 2^24 (half the memory traffic), else float64. (int16
outputs keep the MBQM arithmetic: a search among 65535 thresholds misses the cache.)

Tiny graphs (hello_world: 1x16, 16x16, 16x1) spend their time on the number of NumPy calls, so :meth:`bind` gives the
interpreter's invoke loop one prebuilt call per op on the op's fixed views and preallocated buffers
(:mod:`.fully_connected_bound`):

- int8 input with ``accum == 1`` (one input value per batch): an exhaustive ``[256, depth]`` table computed at
  prepare with the arithmetic above over every input value; invoke copies one row (bytes) per batch;
- the step path: copy the input into a ``[x, 1]`` row, one product with ``gemm`` into a preallocated accumulator,
  one ``searchsorted`` whose index is cast straight to the int8 code (one channel of steps; -inf thresholds in front
  make the index congruent to the code modulo 256) or picks the code from the steps' values (per channel); one
  output value (``batches == depth == 1``): a vector dot and a ``bisect`` on Python floats.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..quant import (
    INT32_MAX,
    INT32_MIN,
    QMAX,
    QMIN,
    Requantizer,
    activation_range,
    mbqm_int64,
    quantize_multiplier,
    wrap_int32,
)
from ._blas import matmul
from ._float_dot import BoundDot, bias_as_tap, bind_finish
from ._qutil import copyto, unpack_int4
from ._step_requant import StepRequantizer, requantization_steps
from ._weight_stats import ChannelStats, fill_transposed
from .binary_common import float_activation_range
from .contract import PURE, Kernel
from .fully_connected_bound import bind_steps, bind_table
from .fully_connected_channels import FullyConnectedTiler, sequential_dot_float32


@dataclass(frozen=True)
class FullyConnectedData:
    type_name: str                      # FLOAT32, INT8 or INT16 (the input/output type)
    batches: int
    depth: int
    accum: int
    act_min: Any
    act_max: Any
    weights: np.ndarray | None          # float64 [accum, depth] (quantized) / float32 (float); None: not constant
    bias: np.ndarray | None             # int64 [depth] folded bias (quantized) / float32 bias (float) / None
    input_offset: int = 0
    filter_offset: int = 0
    output_offset: int = 0
    multiplier: Any = 0                 # int, or int64 [depth] per channel
    shift: Any = 0
    int64_acc: bool = False             # 16x8 with an int64 bias
    wrap: bool = False                  # the int32 accumulator can overflow: wrap like C
    unpacked_int4: np.ndarray | None = None     # int8 weights written into the scratch on every invoke
    scratch: int | None = None
    requantizer: Requantizer | None = None      # the int32 MBQM with (multiplier, shift), prepared once
    steps: StepRequantizer | None = None        # clamp(MBQM(acc) + zp_out) as a step function (constant weights,
    gemm: np.ndarray | None = None              # no wrap); float64 [accum + 1, depth]: the weights (``weights`` is
                                                # a view of its first rows), then bias + the steps' key_offset
    table: np.ndarray | None = None             # int8 input, accum 1: [256, depth] outputs, row = input & 0xFF
    whole_input: bool = True                    # the input holds exactly batches * accum elements
    input_shape: tuple[int, ...] = ()           # the input as (*output.shape[:-1], accum): products come out shaped
    input_shaped: bool = False                  # the input tensor already has input_shape
    small: bool = False                         # batches * accum * depth < _SMALL_PRODUCT: np.dot, no BLAS guard
    operand: str | None = None                  # constant weights: the operand kept ("float64", "gemm32", "gemm64"),
                                                # built by FullyConnected.operands (the optimized kernel may not)
    stats: Any = None                           # constant weights: their ChannelStats (raw bias), for the optimized
                                                # plan too (one pass over the weights at prepare, not two)


#: Most codes an output may have for the step-function requantization (int8: 255 thresholds, 2 KiB).
_MAX_STEPS = 255
#: Most output channels of an exhaustive table (int8 input, accum 1): 256 rows of that many codes.
_MAX_TABLE_DEPTH = 4096
#: float64 / float32 represent every integer below these: the bounds on a product's partial sums.
_EXACT_F64 = 1 << 53
_EXACT_F32 = 1 << 24
#: Below this many multiply-adds the product is one plain np.dot: OpenBLAS runs such small products on one thread
#: anyway, and _blas.matmul's thread-count calls would cost more than the product.
_SMALL_PRODUCT = 1 << 16




class FullyConnected(Kernel):
    ops = ("FULLY_CONNECTED",)
    traits = PURE
    op_class = "fc"
    cost_family = "fully_connected"
    opdata = 'iiii i iii i pp b'
    opdata_compression = "ii"
    #: out of core: channel tiles of a streamed filter (:class:`FullyConnectedTiler`)
    bands = FullyConnectedTiler

    def allocates_nothing(self, op, tensors) -> bool:
        """int8 with a per-tensor int8 filter (TFLM's arrays: per-channel filters only; scratch: int4 ones only)."""
        if len(op.inputs) < 2 or min(op.inputs[:2]) < 0:
            return False
        x, w = tensors[op.inputs[0]], tensors[op.inputs[1]]
        return (x.type_name == "INT8" and w.type_name == "INT8" and w.quantization is not None
                and w.quantization.scales.size == 1)

    def macs(self, op, tensors, elements: int) -> int:
        """Batches x output channels x accumulation depth."""
        return elements * tensors[op.inputs[1]].shape[-1]

    def prepare(self, ctx, op, operands: bool = True) -> FullyConnectedData:
        """Validate, quantize and derive (see the module docstring). ``operands=False`` leaves out the weight-sized
        operand of a quantized layer (:meth:`operands` builds it): the optimized kernel builds its own instead."""
        ctx.check_io_count(op, (2, 3), 1)
        x, w, out = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
        bias = ctx.input(op, 2)
        t = x.type_name
        if out.type_name != t:
            raise ctx.fail(op, f"input type {t} differs from output type {out.type_name}")
        allowed = {"FLOAT32": ("FLOAT32",), "INT8": ("INT8", "INT4"), "INT16": ("INT8",)}
        if t not in allowed:
            raise ctx.fail(op, f"input type {t} not supported (FLOAT32, INT8, INT16)")
        if w.type_name not in allowed[t]:
            raise ctx.fail(op, f"input type {t} with filter type {w.type_name} not supported")
        if len(w.shape) < 2 or not out.shape:
            raise ctx.fail(op, f"filter {w.shape} must have >= 2 dims and the output >= 1 (got {out.shape})")
        depth, accum = out.shape[-1], w.shape[-1]
        batches = out.num_elements // depth if depth else 0
        rows = w.num_elements // accum if accum else 0
        if depth > rows:
            raise ctx.fail(op, f"output depth {depth} exceeds the {rows} filter rows")
        if x.num_elements < batches * accum:
            raise ctx.fail(op, f"input has {x.num_elements} elements, needs batches*accum = {batches}*{accum}")

        scratch = unpacked = None
        if w.type_name == "INT4":  # TFLM requests the unpack buffer first thing in Prepare
            scratch = ctx.request_scratch(op, w.num_elements)
            if w.data is None:
                raise ctx.fail(op, "INT4 filter must be constant")
            unpacked = unpack_int4(w.data, np.empty(w.num_elements, np.int8))
        wdata = unpacked if unpacked is not None else w.data

        act = op.options.get("fused_activation_function", "NONE")
        if t == "FLOAT32":
            if bias is not None and bias.type_name != "FLOAT32":
                raise ctx.fail(op, f"float FULLY_CONNECTED needs a FLOAT32 bias, got {bias.type_name}")
            weights = None if wdata is None else np.ascontiguousarray(
                wdata.reshape(-1, accum)[:depth].T.astype(np.float32))
            bvals = None
            if bias is not None:
                if bias.data is None:
                    raise ctx.fail(op, "bias must be a constant tensor")
                bvals = np.array(bias.data.reshape(-1)[:depth], dtype=np.float32)
            lo, hi = float_activation_range(act)
            return FullyConnectedData(t, batches, depth, accum, lo, hi, weights, bvals)

        return self._prepare_quantized(ctx, op, x, w, bias, out, t, batches, depth, accum, act, wdata,
                                       unpacked, scratch, operands)

    def _prepare_quantized(self, ctx, op, x, w, bias, out, t, batches, depth, accum, act, wdata, unpacked,
                           scratch, operands: bool) -> FullyConnectedData:
        for tensor in (x, w, out):
            if tensor.quantization is None:
                raise ctx.fail(op, f"tensor {tensor.name!r} has no quantization parameters")
        qx, qw, qo = x.quantization, w.quantization, out.quantization
        if not qo.scale > 0:
            raise ctx.fail(op, f"output scale must be positive, got {qo.scale}")
        if bias is not None and bias.num_elements != depth:
            raise ctx.fail(op, f"bias has {bias.num_elements} elements for {depth} output channels")
        per_channel = qw.scales.size > 1
        if per_channel:
            if w.type_name == "INT4":
                raise ctx.fail(op, "per-channel quantization is not supported with INT4 weights")
            axis = qw.axis if qw.axis >= 0 else qw.axis + len(w.shape)
            if not 0 <= axis < len(w.shape) or qw.scales.size != w.shape[axis]:
                raise ctx.fail(op, f"{qw.scales.size} filter scales do not match filter dim {qw.axis} of {w.shape}")
            if qw.scales.size < depth:
                raise ctx.fail(op, f"{qw.scales.size} per-channel scales for {depth} output channels")
            ms, ss = zip(*(quantize_multiplier(float(qx.scale) * float(s) / float(qo.scale)) for s in qw.scales))
            # TFLM keeps the two int32 arrays in persistent (tail) memory.
            ctx.persistent(np.array(ms, dtype=np.int32))
            ctx.persistent(np.array(ss, dtype=np.int32))
            multiplier = np.array(ms[:depth], dtype=np.int64)
            shift = np.array(ss[:depth], dtype=np.int64)
        else:
            product = float(qx.scale) * float(qw.scale)
            if bias is not None:
                s_bias = float(bias.quantization.scale) if bias.quantization is not None else 0.0
                if not abs(product - s_bias) / float(qo.scale) <= 0.02:
                    raise ctx.fail(op, f"bias scale {s_bias} differs from input*filter scale {product} by more "
                                       "than 0.02 output scales")
            multiplier, shift = quantize_multiplier(product / float(qo.scale))

        if t == "INT8":
            bias_type = "INT32"
            int64_acc = False
        else:  # 16x8: the bias type selects the accumulator (no bias: int64, checked against the wheel)
            bias_type = bias.type_name if bias is not None else "INT64"
            int64_acc = bias_type == "INT64"
        if bias is not None:
            if bias.type_name != bias_type and not (t == "INT16" and bias.type_name in ("INT32", "INT64")):
                raise ctx.fail(op, f"{t} FULLY_CONNECTED needs an {bias_type} bias, got {bias.type_name}")
            if bias.data is None:
                raise ctx.fail(op, "bias must be a constant tensor")

        input_offset = -qx.zero_point
        filter_offset = 0 if per_channel else -qw.zero_point
        output_offset = qo.zero_point
        lo, hi = activation_range(act, qo.scale, qo.zero_point, t)

        bias64 = np.zeros(depth, dtype=np.int64)
        if bias is not None:
            bias64 += bias.data.reshape(-1)[:depth].astype(np.int64)
        weights = None
        wrap = not int64_acc
        steps = gemm = wsrc = stats = None
        operand = None
        if wdata is not None and getattr(ctx, "weights_resident", True):  # out of core: weights stream at invoke
            # the model's filter as [depth, accum] integers; every figure derived from it a slice at a time
            wsrc = wdata.reshape(-1, accum)[:depth]
            stats = ChannelStats(wsrc, -input_offset, bias64, filter_offset, QMIN[t], QMAX[t])
            # Exact range of each channel's accumulator over all inputs: x + x_off spans [qmin, qmax] + x_off.
            acc_min, acc_max = int(stats.lo.min(initial=0)), int(stats.hi.max(initial=0))
            bias64 = bias64 + input_offset * stats.total
            wrap = wrap and (acc_min < INT32_MIN or acc_max > INT32_MAX)
            if not wrap and hi - lo <= _MAX_STEPS:
                steps = requantization_steps(multiplier, shift, output_offset, lo, hi, acc_min, acc_max,
                                             int64_acc=int64_acc, channels=depth if per_channel else 1,
                                             values_dtype=out.dtype)
            operand = "float64"
            if steps is not None:
                # [x, 1] @ gemm = x @ weights + bias + key_offset: exact while every partial sum of raw inputs
                # (|x| <= 2^(bits-1)) times the weights, and the bias row, stays below 2^53
                # (float32, which halves the weights' memory traffic, where that bound and the thresholds are
                # below 2^24)
                key_bias = bias64 + steps.key_offset.astype(np.int64)
                x_abs = max(-QMIN[t], QMAX[t])
                bound = int((x_abs * stats.abs_sum + np.abs(key_bias)).max(initial=0))
                if bound < _EXACT_F64:
                    small_keys = bound < _EXACT_F32 and np.abs(steps.thresholds).max() < _EXACT_F32
                    operand = "gemm32" if small_keys else "gemm64"
                else:
                    steps = None
        data = FullyConnectedData(t, batches, depth, accum, lo, hi, weights, bias64, input_offset, filter_offset,
                                  output_offset, multiplier, shift, int64_acc, wrap, unpacked, scratch,
                                  None if int64_acc else Requantizer(multiplier, shift), steps, gemm,
                                  None, x.num_elements == batches * accum, (*out.shape[:-1], accum),
                                  x.shape == (*out.shape[:-1], accum), batches * accum * depth < _SMALL_PRODUCT,
                                  operand, stats)
        if t == "INT8" and accum == 1 and wsrc is not None and depth <= _MAX_TABLE_DEPTH:
            # Exhaustive: the reference arithmetic on all 256 inputs (row r holds input int8(r), so a negative
            # input indexes its row as Python and NumPy wrap negative indices).
            inputs = np.arange(256, dtype=np.uint8).view(np.int8).astype(np.int64)[:, None]
            acc = inputs * (wsrc[:, 0].astype(np.int64) + filter_offset) + bias64
            data = replace(data, table=_requantize(data, acc, data.wrap).astype(out.dtype))
        return self.operands(ctx, op, data) if operands else data

    @staticmethod
    def operands(ctx, op, data: FullyConnectedData) -> FullyConnectedData:
        """``data`` with its weight-sized operand (``data.operand`` says which): the float64 ``[accum, depth]``
        weights, or the step function's ``[accum + 1, depth]`` GEMM operand with the key bias as its last row, written
        a slice of channels at a time from the model's filter."""
        if data.operand is None or data.weights is not None or data.table is not None:
            return data
        wsrc = (data.unpacked_int4 if data.unpacked_int4 is not None else ctx.input(op, 1).data)
        wsrc = wsrc.reshape(-1, data.accum)[:data.depth]
        if data.operand == "float64":
            weights = np.empty((data.accum, data.depth), np.float64)
            fill_transposed(weights, wsrc, data.filter_offset)
            return replace(data, weights=weights)
        gemm = np.empty((data.accum + 1, data.depth), np.float32 if data.operand == "gemm32" else np.float64)
        fill_transposed(gemm[:data.accum], wsrc, data.filter_offset)
        gemm[data.accum] = data.bias + data.steps.key_offset.astype(np.int64)
        return replace(data, weights=gemm[:data.accum], gemm=gemm)

    def invoke(self, ctx, op, data: FullyConnectedData) -> None:
        out = ctx.views[op.outputs[0]]
        x = ctx.views[op.inputs[0]]
        if data.scratch is not None:
            ctx.scratch(data.scratch)[:data.unpacked_int4.size] = data.unpacked_int4.view(np.uint8)
        if data.table is not None:
            out[...] = data.table[x.reshape(-1)[:data.batches]].reshape(out.shape)
            return
        steps = data.steps
        if steps is not None:           # the usual case: product, bias, searchsorted, store
            if not data.input_shaped:
                x = (x.reshape(data.input_shape) if data.whole_input else
                     x.reshape(-1)[:data.batches * data.accum].reshape(data.input_shape))
            acc = np.dot(x, data.weights) if data.small else _product(x, data.weights)
            acc += data.gemm[-1]
            out[...] = steps.values[steps.index(acc.astype(steps.thresholds.dtype, copy=False))]
            return
        x = x.reshape(-1)[:data.batches * data.accum].reshape(data.batches, data.accum)
        if data.type_name == "FLOAT32":
            out[...] = self._float(ctx, op, x, data).reshape(out.shape)
            return
        weights, bias = data.weights, data.bias
        if weights is None:  # non-constant filter: convert now
            wq = ctx.input(op, 1).reshape(-1, data.accum)[:data.depth].astype(np.int64) + data.filter_offset
            weights = wq.T.astype(np.float64)
            bias = bias + data.input_offset * wq.sum(axis=1)
        acc = _product(x, weights).astype(np.int64) + bias
        y = _requantize(data, acc, data.wrap or data.weights is None)
        out[...] = y.reshape(out.shape)

    def bind(self, ctx, op, data: FullyConnectedData):
        """The op as a call without arguments on its (fixed) views, for the interpreter's flat invoke loop; None
        where :meth:`invoke` runs instead (int4 scratch, non-contiguous views, no table and no step function)."""
        x, out = ctx.views[op.inputs[0]], ctx.views[op.outputs[0]]
        if data.scratch is not None or not (x.flags.c_contiguous and out.flags.c_contiguous) or not out.size:
            return None
        if data.type_name == "FLOAT32":
            return _bind_float(x, out, data, ctx.views[op.inputs[1]])
        if data.table is not None:
            return bind_table(x, out, data)
        if data.gemm is not None:
            return bind_steps(x, out, data)
        return None

    @staticmethod
    def _float(ctx, op, x: np.ndarray, data: FullyConnectedData) -> np.ndarray:
        weights = data.weights
        if weights is None:
            weights = np.ascontiguousarray(ctx.input(op, 1).reshape(-1, data.accum)[:data.depth].T)
        return sequential_dot_float32(x, weights, data.bias, data.act_min, data.act_max)


def _bind_float(x: np.ndarray, out: np.ndarray, data: FullyConnectedData, filt: np.ndarray):
    """float32: TFLM's sequential sums (:class:`._float_dot.BoundDot`, under the runtime's quiet errstate) on the
    fixed views -- the prepared weights, or the filter's own view when it is given at invoke --, the bias, the
    activation clamp into the output."""
    rows = x.reshape(-1)[:data.batches * data.accum].reshape(data.batches, data.accum)
    w_t, refresh_w, tap = data.weights, None, None
    if data.weights is not None:
        w = data.weights.T                      # [depth, accum] view of the prepared [accum, depth] weights
        tap = bias_as_tap(w, data.bias)
    elif filt.flags.c_contiguous:
        w = filt.reshape(-1, data.accum)[:data.depth]
        # a filter given at invoke: its transpose kept and refreshed, so one batch's sums can run as the
        # channels-innermost einsum (without it one row of outputs forms a block of products); for one batch a
        # constant bias without NaN kept as its last row, a last tap over the row of ones (bias_as_tap's rule)
        fold = data.batches == 1 and data.bias is not None and not np.isnan(data.bias).any()
        w_t = np.empty((data.accum + fold, data.depth), np.float32)
        refresh_w = (w_t[:data.accum], w.T)
        if fold:
            w_t[-1] = data.bias
            tap = (w_t.T, w_t)
    else:
        return None
    cols_t = np.ones((data.accum + 1, data.batches), np.float32)
    out = out.reshape(data.batches, data.depth)
    if tap is not None:             # the bias as a last tap over a kept row of ones
        dot, bias = BoundDot(cols_t, tap[0], None, tap[1], out=out), None
    else:
        dot, bias = BoundDot(cols_t[:-1], w, None, w_t, out=out if data.bias is None else None), data.bias
    finish = bind_finish(dot, bias, "bias", data.act_min, data.act_max, out)
    taps = cols_t[:-1]

    def call() -> None:
        copyto(taps, rows.T)
        if refresh_w is not None:
            copyto(*refresh_w)
        finish()
    return call


def _requantize(data: FullyConnectedData, acc: np.ndarray, wrap: bool) -> np.ndarray:
    """The output codes of exact int64 accumulators ``acc`` (channels last): int32 wrap where asked, MBQM (int32
    double rounding, or the 16x8 int64 one), output offset, activation clamp; int64."""
    if data.int64_acc:
        y = mbqm_int64(acc, data.multiplier, data.shift)
    else:
        y = data.requantizer(wrap_int32(acc) if wrap else acc)
    y += data.output_offset
    np.maximum(y, data.act_min, out=y)
    np.minimum(y, data.act_max, out=y)
    return y


def _product(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``x @ weights`` in float64 (exact integer sums)."""
    if x.size * weights.shape[1] < _SMALL_PRODUCT:
        return np.dot(x, weights)
    return matmul(x.astype(np.float64), weights)


KERNEL = FullyConnected()
