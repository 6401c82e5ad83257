"""How each op is cut into tiles out of core: which input rows an output row band needs, how weights are split,
and how one tile is computed with the kernel's own code.

How an op runs (``Tiler.mode``):

- ``rows``: the output (4-D, batch 1) is cut into row bands along axis 1; each band needs a band of input rows (with
  the halo its filter reaches), declared by :meth:`Tiler.input_rows`. CONV_2D additionally streams its filter in
  output-channel tiles when the whole filter does not fit the weights pool: the input band stays resident while the
  channel tiles go by, and the output band is written once all its channels are done.
- ``channels``: FULLY_CONNECTED (batch 1): the input vector and the output are resident, the filter streams in
  output-channel tiles (computed by the optimized ``fc_band`` in channel groups when the interpreter is optimized
  and the layer is int8, else by the reference ``fc_channels``).
- ``whole``: every other op (and tiled ops whose tensors are not batch-1 NHWC): inputs are read whole into the input
  pool, the kernel's ``invoke`` runs on pool views, outputs are written whole. The op must fit its pools.
- ``alias``: RESHAPE-like ops of an activation share their input's records and move nothing.
- ``fused``: a constant-fill PAD whose only reader takes it in row bands is built inside that reader's reads.

Row-band computations call the kernels' band functions -- the optimized CONV_2D / DEPTHWISE_CONV_2D ones
(``conv_band``, ``depthwise_band``: the optimized kernels' GEMM and epilogue on the band, bit-exact with the
reference; a streamed filter's channel tiles are multiplied in groups, :mod:`..kernels.optimized._group`) when the
interpreter runs optimized kernels, else the reference ones (``conv_rows``, ``depthwise_rows``), and the reference
``pool_rows`` / ``pad_rows`` -- the same code that computes the whole tensor in memory -- or the kernel's
``invoke`` on band views for elementwise ops, whose result at a position depends only on the inputs at that position.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..kernels import (
    REFERENCE_KERNELS,
    average_pool,
    conv,
    depthwise_conv,
    fully_connected,
    max_pool,
    pad,
)
from ..kernels.base import is_batch1_nhwc
from ..kernels.conv import regular_steps
from ..kernels.optimized import conv as optimized_conv
from ..kernels.optimized import depthwise_conv as optimized_depthwise
from ..kernels.optimized import fully_connected as optimized_fc
from ..kernels.padding import input_rows_for
from ..kernels.pooling_common import input_rows as pool_input_rows

#: Elementwise ops (every type) whose kernels compute each output position from the same position of their inputs
#: (so running ``invoke`` on a row band of every tensor gives that band of the result).
ELEMENTWISE = frozenset({"ADD", "SUB", "MUL", "RELU", "RELU6", "LEAKY_RELU", "HARD_SWISH", "LOGISTIC", "TANH",
                         "QUANTIZE", "DEQUANTIZE", "MAXIMUM", "MINIMUM",
                         "ABS", "RSQRT", "ELU", "DIV", "SQUARED_DIFFERENCE", "ADD_N", "SELECT_V2",
                         # float and integer math, comparisons and logic: one output element per input element
                         "SQRT", "EXP", "LOG", "NEG", "SQUARE", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "CAST",
                         "PRELU", "FLOOR_DIV", "FLOOR_MOD", "EQUAL", "NOT_EQUAL", "GREATER",
                         "GREATER_EQUAL", "LESS", "LESS_EQUAL", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"})
#: Ops whose output row depends only on the same row of each input (elementwise ops of every type; SOFTMAX and
#: LOG_SOFTMAX normalise along the last axis, within a row): they run in row bands like an elementwise op.
ROW_LOCAL = ELEMENTWISE | {"SOFTMAX", "LOG_SOFTMAX"}


@dataclass
class TileSpec:
    """One output tile: output rows ``[y0, y1)`` (rows mode) and the weight channel tiles computed into it."""

    index: int
    y0: int
    y1: int
    channel_tiles: list[tuple[int, int]]


class Tiler:
    """Base: how an op reads its inputs and computes a band. ``mode`` is ``rows``, ``channels`` or ``whole``."""

    mode = "whole"
    #: input index -> axis along which a row band of the output reads that input (absent: read whole)
    row_inputs: ClassVar[dict[int, int]] = {}
    #: input index of a filter that may stream in output-channel tiles (CONV_2D, FULLY_CONNECTED)
    channel_input: int | None = None

    def input_rows(self, data: Any, k: int, y0: int, y1: int) -> tuple[int, int]:
        """Rows ``[lo, hi)`` of input ``k`` (along ``row_inputs[k]``) that output rows ``[y0, y1)`` need."""
        return y0, y1

    def compute(self, kernel: Any, op: Any, data: Any, band: BandViews) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass
class BandViews:
    """What a tile computation sees: per input its view and first row, the (channel-sliced) filter/bias, the output
    band view and its first row, the channel range, and an invoke context for kernels that need one."""

    inputs: dict[int, np.ndarray]
    row0: dict[int, int]
    out: np.ndarray
    y0: int
    c0: int
    c1: int
    ctx: Any
    memo: dict = field(default_factory=dict)    # what a band function keeps across the tile's channel tiles


class _ConvLike(Tiler):
    mode = "rows"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

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


class ConvTiler(_ConvLike):
    channel_input = 1

    def compute(self, kernel, op, data, band):
        w = band.inputs[1]
        bias = band.inputs.get(2)
        if getattr(data, "bands", None) is not None:    # the optimized kernel's band function
            optimized_conv.conv_band(data, band.inputs[0], w, bias, band.out, band.y0, band.row0[0], band.c0,
                                     band.memo)
            return
        out = band.out[..., band.c0:band.c1]
        per_row = out.shape[2] * w.shape[1] * w.shape[2] * w.shape[3] * 8
        step = max(1, IM2COL_BYTES // max(per_row, 1))
        for r in range(0, out.shape[1], step):
            conv.conv_rows(data, band.inputs[0], w, bias, out[:, r:r + step], band.y0 + r, band.row0[0], band.c0)


class DepthwiseTiler(_ConvLike):
    def compute(self, kernel, op, data, band):
        if getattr(data, "bands", None) is not None:    # the optimized kernel's band function
            optimized_depthwise.depthwise_band(data, band.inputs[0], band.inputs[1], band.inputs.get(2), band.out,
                                               band.y0, band.row0[0])
            return
        depthwise_conv.depthwise_rows(data, band.inputs[0], band.inputs[1], band.inputs.get(2), band.out, band.y0,
                                      band.row0[0])


class PoolTiler(Tiler):
    mode = "rows"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

    def __init__(self, rows_fn):
        self.rows_fn = rows_fn

    def input_rows(self, data, k, y0, y1):
        return pool_input_rows(data, y0, y1)

    def compute(self, kernel, op, data, band):
        y1 = band.y0 + band.out.shape[1]
        band.out[...] = self.rows_fn(data, band.inputs[0], band.row0[0], band.y0, y1)


class PadTiler(Tiler):
    mode = "rows"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}

    def input_rows(self, data, k, y0, y1):
        return pad.pad_input_rows(data, y0, y1)

    def compute(self, kernel, op, data, band):
        fill = data.fill if data.fill is not None else band.ctx.input(op, 2).reshape(-1)[0]
        pad.pad_rows(data, band.inputs[0], band.row0[0], band.out, band.y0, fill)


class DeclaredTiler(Tiler):
    """An op whose kernel declares its row bands (:class:`~microinterp.kernels.base.RowBands`): the kernel says
    which inputs it reads by rows, which rows a band needs, and computes the band."""

    mode = "rows"

    def __init__(self, bands: Any):
        self.bands = bands
        self.row_inputs = dict(bands.row_inputs)

    def input_rows(self, data, k, y0, y1):
        return self.bands.input_rows(data, k, y0, y1)

    def compute(self, kernel, op, data, band):
        self.bands.compute(data, band.inputs, band.row0, band.out, band.y0)


class TransposeTiler(Tiler):
    """Output rows ``[y0, y1)`` of a 4-D transpose are input indices ``[y0, y1)`` along axis ``perm[1]``."""

    mode = "rows"

    def __init__(self, axis: int):
        self.row_inputs = {0: axis}

    def compute(self, kernel, op, data, band):
        band.ctx.views[op.inputs[0]] = band.inputs[0]
        band.ctx.views[op.outputs[0]] = band.out
        kernel.invoke(band.ctx, op, data)


class ElementwiseTiler(Tiler):
    mode = "rows"

    def __init__(self, row_inputs: dict[int, int]):
        self.row_inputs = row_inputs

    def compute(self, kernel, op, data, band):
        for k, view in band.inputs.items():
            band.ctx.views[op.inputs[k]] = view
        band.ctx.views[op.outputs[0]] = band.out
        kernel.invoke(band.ctx, op, data)


class FullyConnectedTiler(Tiler):
    mode = "channels"
    channel_input = 1

    def compute(self, kernel, op, data, band):
        if getattr(data, "bands", None) is not None:    # the optimized kernel's band function
            optimized_fc.fc_band(data, band.inputs[0], band.inputs[1], band.out, band.c0, band.memo)
            return
        fully_connected.fc_channels(data, band.inputs[0], band.inputs[1], band.inputs.get(2), band.out, band.c0)


class WholeTiler(Tiler):
    mode = "whole"


class AliasTiler(Tiler):
    """RESHAPE / SQUEEZE / EXPAND_DIMS of an activation: the output is the input's bytes under another shape, so
    out of core it shares the input's records on the card and the op moves nothing."""

    mode = "alias"


class FusedPadTiler(Tiler):
    """A PAD whose only reader takes it in row bands: the reader's band of padded rows is built on the fly from the
    PAD's input rows (``pad_rows`` into the input pool), so the padded tensor never goes to the card. A CONV_2D /
    DEPTHWISE_CONV_2D reader whose zero padding can stand for the PAD (:meth:`_ConvLike.fold_pad`) reads the PAD's
    input directly instead: no padded band at all."""

    mode = "fused"
    row_inputs: ClassVar[dict[int, int]] = {0: 1}


WHOLE = WholeTiler()
ALIAS = AliasTiler()
ALIASES = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"})


#: Optimized kernels with row-band functions (prepared with ``weights_resident = False`` they keep per-channel
#: metadata instead of whole-tensor plans).
BAND_KERNELS = {"CONV_2D": optimized_conv.KERNEL,
                "DEPTHWISE_CONV_2D": optimized_depthwise.KERNEL,
                "FULLY_CONNECTED": optimized_fc.KERNEL}


def band_kernel(resolver: Any, key: str, optimized: bool) -> Any:
    """The kernel whose band functions run an op in bands: the optimized CONV_2D / DEPTHWISE_CONV_2D when the
    interpreter is optimized and resolves to them, else what the resolver gives for the reference layer (plugins and
    explicit registrations stay themselves, and run whole)."""
    if optimized and key in BAND_KERNELS and resolver.find(key, True) is BAND_KERNELS[key]:
        return BAND_KERNELS[key]
    return resolver.find(key, False)


def has_bands(op: Any, kernel: Any) -> bool:
    """A built-in kernel whose band functions the tiles may call (reference, or optimized with bands)."""
    return REFERENCE_KERNELS.get(op.key) is kernel or BAND_KERNELS.get(op.key) is kernel


def tiler_for(op: Any, data: Any, tensors: list[Any], is_reference: bool) -> Tiler:
    """The tiler for ``op`` (its reference ``data`` decides what the band functions can do). Ops run by a kernel
    other than the reference one (plugins, explicit registrations) run whole: only ``invoke`` is known of them."""
    key = op.key
    ins = [tensors[i] if i >= 0 else None for i in op.inputs]
    out = tensors[op.outputs[0]] if op.outputs and op.outputs[0] >= 0 else None
    if not is_reference or out is None or len(op.outputs) != 1:
        return WHOLE
    if out.num_elements == 0 or any(t is not None and t.data is None and t.num_elements == 0 for t in ins):
        return WHOLE                # an empty tensor has no rows to band (and no band to fuse)
    if key in ALIASES and ins and ins[0] is not None and ins[0].data is None and not ins[0].is_variable \
            and ins[0].nbytes == out.nbytes and ins[0].dtype == out.dtype:
        return ALIAS
    if key in ("CONV_2D", "DEPTHWISE_CONV_2D") and not regular_steps(data):
        return WHOLE                # TFLM's int16 strides wrapped to 0 or below: no row bands
    bands = getattr(REFERENCE_KERNELS.get(key), "row_bands", None)
    if bands is not None:           # the kernel declares how it runs in row bands
        return DeclaredTiler(bands) if bands.applies(op, data, ins, out) else WHOLE
    if ins and ins[0] is not None and ins[0].is_constant and key not in ELEMENTWISE:
        return WHOLE                # a constant main input (a rewired model) has no records to band
    if key == "CONV_2D" and is_batch1_nhwc(ins[0], out) and data.int4_scratch is None:
        tiler = ConvTiler()
        if data.groups != 1:
            tiler.channel_input = None
        return tiler
    if key == "DEPTHWISE_CONV_2D" and is_batch1_nhwc(ins[0], out) and data.int4_scratch is None:
        return DepthwiseTiler()
    if key in ("MAX_POOL_2D", "AVERAGE_POOL_2D") and is_batch1_nhwc(ins[0], out):
        return PoolTiler(max_pool.pool_rows if key == "MAX_POOL_2D" else average_pool.pool_rows)
    if key in ("PAD", "PADV2") and is_batch1_nhwc(ins[0], out) and data.box_shape == ins[0].shape:
        return PadTiler()
    if key == "TRANSPOSE" and is_batch1_nhwc(ins[0], out) and data.perm[0] == 0:
        return TransposeTiler(int(data.perm[1]))
    if key == "CONCATENATION" and is_batch1_nhwc(out, *ins) and data.axis % 4 != 1:
        # joined along another axis than the rows: a band of output rows is the same rows of every input
        if any(t.data is not None and t.shape[1] > 1 for t in ins):
            return WHOLE
        return ElementwiseTiler({k: 1 for k, t in enumerate(ins) if t.data is None})
    if key in ROW_LOCAL and is_batch1_nhwc(out):
        rows = {}
        for k, t in enumerate(ins):
            if t is None:
                continue
            if t.data is not None:      # a constant is passed whole: it must not vary along the row axis
                if len(t.shape) >= 3 and t.shape[-3] > 1:
                    return WHOLE
                continue
            if t.shape == out.shape:
                rows[k] = 1
            elif not (len(t.shape) <= 4 and (len(t.shape) < 3 or t.shape[-3] == 1)):
                return WHOLE        # broadcasts along the row axis in a way a band cannot follow
        return ElementwiseTiler(rows)
    if key == "FULLY_CONNECTED" and getattr(data, "batches", 0) == 1 and data.type_name in ("INT8", "INT16") \
            and data.scratch is None:
        return FullyConnectedTiler()
    return WHOLE
