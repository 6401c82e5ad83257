"""What MEAN, SUM and REDUCE_MAX share: validation, axis resolution, scratch requests and TFLM's visiting order.

TFLM (``micro/kernels/reduce_common.cc``, ``kernels/internal/reference/reduce.h``):

* inputs are ``(input, axis)``; the axis tensor must be INT32 (``PrepareSimple``); its values are read at Eval, so a
  non-constant axis tensor is allowed (we then resolve the axes at invoke);
* ``ResolveAxis``: negative axes get ``+= rank``, duplicates are dropped (first kept); an out-of-range axis fails
  Eval (int8/int16 MEAN only logs it and outputs zeros); we refuse it at prepare (constant axes) or invoke;
* ``Reduce`` walks the input in row-major order and folds every element into ``output[ReducedOutputOffset(...)]``.
  For one output element the reduced elements are therefore visited in row-major order over the reduced axes (in
  ascending axis order), whatever order the axis tensor lists them in. :func:`rows` reproduces exactly that order:
  kept axes first, reduced axes (ascending) last, flattened to ``(num_outputs, N)``. This matters for float32 sums,
  which are not associative: they are folded strictly left to right here (``np.add.accumulate``), never pairwise.
* the output's flat order is the input's row-major order with the reduced axes removed, whatever ``keep_dims`` says
  (the kernel never looks at the output shape; we refuse outputs whose element count does not fit).
* scratch buffers are planned like tensors (TFLM ``RequestScratchBufferInArena``), so their sizes and request order
  decide the arena head: MEAN/SUM request ``[4*num_outputs (int8/int16 only), 4*rank, 4*num_axis_entries]``,
  REDUCE_MAX ``[4*rank, 4*num_axis_entries]`` (the axis tensor's element count, duplicates included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import InputError
from ..quant import QMAX, QMIN, mbqm, quantize_multiplier, wrap_int32
from ._qutil import check_scales
from .bands import RowLocalTiler, Tiler, invoke_on_band
from .base import is_batch1_nhwc


@dataclass(frozen=True)
class ReduceIO:
    """Validated operands of a reduce op; ``axes`` is None when the axis tensor is only known at invoke."""

    input_type: str
    input_shape: tuple[int, ...]
    num_axis_entries: int
    axes: tuple[int, ...] | None


def resolve_axes(values, rank: int) -> tuple[int, ...]:
    """TFLM ResolveAxis: ``+= rank`` for negative axes, drop duplicates (keeping the first); ValueError if invalid."""
    if rank == 0:
        return ()
    out: list[int] = []
    for v in np.asarray(values).reshape(-1).tolist():
        axis = v + rank if v < 0 else v
        if not 0 <= axis < rank:
            raise ValueError(f"axis {v} out of range for a tensor of rank {rank}")
        if axis not in out:
            out.append(axis)
    return tuple(out)


def prepare_reduce(ctx, op, supported: tuple[str, ...]) -> ReduceIO:
    """Checks common to MEAN/SUM/REDUCE_MAX; resolves constant axes and checks the output's element count."""
    ctx.check_io_count(op, 2, 1)
    x, axis, y = ctx.require_input(op, 0), ctx.require_input(op, 1), ctx.output(op, 0)
    if axis.type_name != "INT32":
        raise ctx.fail(op, f"axis tensor must be INT32, got {axis.type_name}")
    if x.type_name not in supported:
        raise ctx.fail(op, f"input type {x.type_name} not supported (TFLM supports {', '.join(supported)}; "
                           "it refuses others when the op is invoked)")
    if y.type_name != x.type_name:
        raise ctx.fail(op, f"output type {y.type_name} differs from input type {x.type_name}")
    axes = None
    if axis.data is not None:
        try:
            axes = resolve_axes(axis.data, len(x.shape))
        except ValueError as e:
            raise ctx.fail(op, str(e)) from None
        expected = output_count(x.shape, axes)
        if y.num_elements != expected:
            raise ctx.fail(op, f"output has {y.num_elements} elements, the reduction of {x.shape} over axes "
                               f"{list(axes)} has {expected}")
    return ReduceIO(x.type_name, x.shape, axis.num_elements, axes)


def prepare_mean_or_sum(ctx, op, supported: tuple[str, ...]) -> tuple[ReduceIO, int, int, int, int]:
    """TFLM PrepareMeanOrSumHelper: :func:`prepare_reduce`, then for int8/int16 ``(M, s) = QuantizeMultiplier(
    double(s_in) / double(s_out))`` and the zero points, then the planned scratch requests (with the int32 sums
    buffer for int8/int16). Returns ``(io, M, s, zp_in, zp_out)`` (zeros for float32)."""
    io = prepare_reduce(ctx, op, supported)
    x, y = ctx.require_input(op, 0), ctx.output(op, 0)
    quantized = io.input_type != "FLOAT32"
    multiplier = shift = in_zp = out_zp = 0
    if quantized:
        if x.quantization is None or y.quantization is None:
            raise ctx.fail(op, f"{io.input_type} {op.name} needs quantized input and output tensors")
        check_scales(ctx, op, x, y)
        multiplier, shift = quantize_multiplier(x.quantization.scale / y.quantization.scale)
        in_zp, out_zp = x.quantization.zero_point, y.quantization.zero_point
    request_scratch(ctx, op, io, with_sums=quantized)
    return io, multiplier, shift, in_zp, out_zp


def request_scratch(ctx, op, io: ReduceIO, with_sums: bool) -> None:
    """TFLM's planned scratch requests, in order: [int32 sums per output,] resolved-index array, resolved-axis array."""
    if with_sums:
        ctx.request_scratch(op, 4 * ctx.output(op, 0).num_elements)
    ctx.request_scratch(op, 4 * len(io.input_shape))
    ctx.request_scratch(op, 4 * io.num_axis_entries)


def runtime_axes(ctx, op, io: ReduceIO) -> tuple[int, ...]:
    """The resolved axes: from prepare, or read from the (non-constant) axis tensor now, as TFLM's Eval does."""
    if io.axes is not None:
        return io.axes
    try:
        axes = resolve_axes(ctx.input(op, 1), len(io.input_shape))
    except ValueError as e:
        raise InputError(f"op {op.index} ({op.name}): {e} (TFLM fails the invoke)") from None
    out = ctx.output(op, 0)
    if out.size != output_count(io.input_shape, axes):
        raise InputError(f"op {op.index} ({op.name}): axes {list(axes)} do not match the output shape {out.shape}")
    return axes


def output_count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([d for i, d in enumerate(shape) if i not in axes], dtype=np.int64))


def reduced_count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def rows(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``x`` as ``(num_outputs, N)``: row r holds output r's reduced elements in TFLM's visiting order."""
    kept = [d for d in range(x.ndim) if d not in axes]
    order = kept + sorted(axes)
    n_out = int(np.prod([x.shape[d] for d in kept], dtype=np.int64))
    return np.transpose(x, order).reshape(n_out, reduced_count(x.shape, axes))


def float_sum(r: np.ndarray) -> np.ndarray:
    """Sequential float32 fold ``((0 + x0) + x1) + ...`` of each row, as TFLM's Reduce loop adds.

    ``np.add.accumulate`` folds strictly left to right (``np.sum`` would sum pairwise and round differently). It
    starts from ``x0`` instead of ``+0.0``; the two only differ when every element is ``-0.0``, which the final
    ``+ 0.0`` maps back to TFLM's ``+0.0``.
    """
    if r.shape[1] == 0:
        return np.zeros(r.shape[0], np.float32)
    return np.add.accumulate(r, axis=1, dtype=np.float32)[:, -1] + np.float32(0.0)


def int_sum(r: np.ndarray) -> np.ndarray:
    """int32 sum of each row with TFLM's wrap-around (``AddTensorValuesWithExpectedOverflow``), held in int64."""
    return wrap_int32(r.sum(axis=1, dtype=np.int64))


def requantize_sums(r: np.ndarray, type_name: str, input_zp: int, multiplier: int, shift: int,
                    output_zp: int) -> np.ndarray:
    """TFLM QuantizedMeanOrSum<T, int32> after the multiplier is chosen: per output,
    ``clamp(MBQM(int32(sum - zp_in*N), M, s) + zp_out)`` with the int32 double-rounding MBQM."""
    return requantize_totals(r.sum(axis=1, dtype=np.int64), r.shape[1], type_name, input_zp, multiplier, shift,
                             output_zp)


def requantize_totals(sums: np.ndarray, n: int, type_name: str, input_zp: int, multiplier: int, shift: int,
                      output_zp: int) -> np.ndarray:
    """:func:`requantize_sums` from each output's exact sum of its ``n`` elements (wrapped to int32 here, as the C
    loop's int32 accumulator does: the wrap of a sum is the sum of wraps, so partial sums may be added first)."""
    shifted = wrap_int32(wrap_int32(np.asarray(sums, np.int64)) - np.int64(input_zp) * n)
    out = wrap_int32(mbqm(shifted, multiplier, shift) + output_zp)
    return np.clip(out, QMIN[type_name], QMAX[type_name])


class ReduceRowsTiler(Tiler):
    """Out of core, a MEAN, SUM, REDUCE_MAX or REDUCE_MIN whose axes include the rows (axis 1) of a batch-1 4-D input,
    in bands of input rows: each band's elements continue every output's sequence (the reduced axes are visited in
    ascending order, rows outermost), so the running totals -- float32 folded left to right from ``+0.f``, exact
    integer sums, or the max/min fold continued from its running value -- reach what the whole tensor gives; the last
    band writes the output (the mean's division, the requantization)."""

    mode = "reduce"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

    def __init__(self, kind: str, axes: tuple[int, ...], count: int):
        self.kind, self.axes, self.count = kind, axes, count
        self.totals: np.ndarray | None = None

    def start(self, data: Any) -> None:
        self.totals = None

    def compute(self, kernel, op, data, band):
        r = rows(band.inputs[0], self.axes)
        if self.kind == "fold":         # REDUCE_MAX / REDUCE_MIN: the kernel's own left fold, continued from the
            if self.totals is not None:     # running value (which the fold meets first, as it met it before)
                r = np.concatenate([self.totals[:, None].astype(r.dtype), r], axis=1)
            self.totals = kernel.fold(r, data.io.input_type)
            return
        if data.io.input_type == "FLOAT32":
            running = np.zeros(len(r), np.float32) if self.totals is None else self.totals
            # the C loop's fold, continued: [total, x0, x1, ...] added left to right
            with np.errstate(over="ignore", invalid="ignore"):
                self.totals = np.add.accumulate(np.concatenate([running[:, None], r], axis=1), axis=1,
                                                dtype=np.float32)[:, -1]
        else:
            sums = r.sum(axis=1, dtype=np.int64)
            self.totals = sums if self.totals is None else self.totals + sums

    def finish(self, data: Any, out: np.ndarray) -> None:
        n = max(self.count, 1)
        if self.kind == "fold":
            out.reshape(-1)[...] = self.totals
            return
        if data.io.input_type == "FLOAT32":
            result = self.totals / np.float32(n) if self.kind == "mean" else self.totals
        else:
            m, s = (data.folded or fold_mean_multiplier(data.multiplier, data.shift, n)) if self.kind == "mean" \
                else (data.multiplier, data.shift)
            result = requantize_totals(self.totals, self.count, data.io.input_type, data.input_zp, m, s,
                                       data.output_zp)
        out.reshape(-1)[...] = result


class KeptRowsTiler(Tiler):
    """Out of core, a reduction over columns and/or channels whose whole output is no larger than one input row, in
    mode ``reduce``: the output stays resident and each band of input rows gives the same rows of it, by the kernel's
    own ``invoke`` on the band views (a small output cut into bands would make records of many rows, so every band
    would need most of the input)."""

    mode = "reduce"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

    def start(self, data: Any) -> None:
        """Nothing runs across bands."""

    def compute(self, kernel, op, data, band):
        n = band.inputs[0].shape[1]
        out = band.out
        band.out = out[:, band.y0:band.y0 + n]
        try:
            invoke_on_band(kernel, op, data, band)
        finally:
            band.out = out
            band.ctx.views[op.outputs[0]] = out

    def finish(self, data: Any, out: np.ndarray) -> None:
        """Every band wrote its own rows."""


def fold_mean_multiplier(multiplier: int, shift: int, n: int) -> tuple[int, int]:
    """Fold 1/N into (M, s) as TFLM's QuantizedMeanOrSum does (int64 truncating division)."""
    k = min(n.bit_length() - 1, 32, 31 + shift)
    return int((multiplier << k) // n), shift - k


class ReduceRows:
    """The band declaration of MEAN and SUM (``kind``) and of REDUCE_MAX / REDUCE_MIN (``fold``), for constant axes
    of a batch-1 4-D input:

    - axes that include the rows: :class:`ReduceRowsTiler` (bands of input rows into running totals);
    - axes among the columns and channels, with the rows still axis 1 of the output: every output row is the
      reduction of the same input row (its elements visited in the same order, over the same count), so the kernel's
      own ``invoke`` runs on band views: in bands of output rows (a :class:`~.bands.RowLocalTiler`), or, when the
      whole output is no larger than one input row, with the output resident (:class:`KeptRowsTiler`).

    Any other reduction runs whole."""

    def __init__(self, kind: str):
        self.kind = kind

    def for_op(self, op: Any, data: Any, inputs: Any, output: Any) -> Tiler | None:
        axes = data.io.axes
        if axes is None or not is_batch1_nhwc(inputs[0]) or output is None:
            return None
        if 1 in axes:
            return ReduceRowsTiler(self.kind, axes, reduced_count(inputs[0].shape, axes))
        rows_kept = 0 not in axes and len(output.shape) >= 2 and tuple(output.shape[:2]) == (1, inputs[0].shape[1])
        if not rows_kept:
            return None
        return KeptRowsTiler() if output.nbytes <= inputs[0].nbytes // inputs[0].shape[1] else RowLocalTiler({0: 1})
