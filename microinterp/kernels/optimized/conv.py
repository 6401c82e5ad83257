"""CONV_2D, optimized: the reference kernel's prepare and results, computed as one float GEMM on raw int8 values
plus the merged requantization epilogue (:mod:`._epilogue`). Bit-exact with :mod:`microinterp.kernels.conv`.

Fast path (int8 input, int8 or int4 constant filter, constant or no bias, one group, strides and dilations >= 1;
anything else runs the reference invoke):

* Zero point folded into the bias: TFLM's ``acc = sum_{taps in image} w (x - zp_in) + bias`` equals ``sum_{all
  taps} w x' + bias'`` with ``bias' = bias - zp_in sum_k w`` and ``x' = x`` inside the image, ``x' = zp_in`` on
  padded taps (their terms cancel against the bias). So the im2col buffer ``[rows, K + 1]`` holds raw input values,
  ``zp_in`` where a tap falls outside the image and a constant 1.0 column that multiplies the weight row ``bias'``:
  the GEMM returns TFLM's exact accumulator, bias included.
* GEMM precision, chosen once per layer (:func:`._epilogue.gemm_weights`): float32 when ``128 sum_k |w[c,k]| +
  |bias'_c| < 2^24`` for every channel — every partial sum of any summation order is then an integer below 2^24,
  exact in float32 — else float64 (exact below 2^53); ``plan.weights.dtype`` says which. Channels the epilogue
  finds constant (pruned filters: the bias alone decides the output) get zero columns, so their biases, often far
  beyond 2^24, do not force float64.
* im2col: the input is cast once into a zp-filled float32 image with the padding margins (allocated at prepare; the
  margins are never written again), and one strided copy of its ``as_strided`` windows fills the column buffer
  (also allocated at prepare; its 1.0 column is never overwritten). 1x1 convolutions without padding copy the
  (strided) input straight into the column buffer.
* Requantization: :class:`._epilogue.Epilogue` with each channel's exact accumulator range (weights, int8 input
  range, bias): merged float64 rounding for the channels whose exactness condition holds, a constant for channels
  whose output cannot change, the int64 MBQM for the rest (``plan.epilogue.kinds()``).
* Constant channels skip the GEMM: when the products saved outweigh a scatter (``K (C_out - live) >= 128
  live``), the weight operand keeps only the other columns and the product is scattered into an accumulator
  buffer whose constant columns stay 0 (pruned late layers of small CNNs: most of their channels).
* Folded GEMM (1x1 filters, ``C_in < 48``, at most 2^17 outputs, clamping activation: no signed rounding):
  :meth:`._epilogue.Epilogue.fold` scales the float64 operand by each channel's requantization scale and adds the
  rounding offset to the bias row when every partial sum stays an exact float64 (checked at prepare); the
  product is then ``T`` itself and :meth:`._epilogue.Epilogue.finish` only clamps and stores (three NumPy passes
  fewer than the float32 accumulator's epilogue, for a float64 GEMM that costs less than them at these sizes).
* The int4 unpack scratch the reference requests stays in the arena plan; the fast path unpacks the (constant)
  filter once at prepare instead of on every invoke.

These buffers are host-side scratch of the Python process, not arena memory: the arena plan (scratch requests,
persistent multipliers) is exactly the reference prepare's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

import numpy as np

from .._qutil import copyto, unpack_int4
from .._weight_stats import ChannelStats, accumulator_range
from ..base import HostBudget
from ..contract import Kernel
from ..conv import KERNEL as REFERENCE
from ..conv import ConvData, ConvTiler, regular_steps
from ._buffers import work_buffer
from ._epilogue import Epilogue, gemm, gemm_weights, product_for
from ._group import GROUP_BYTES, block_rows, group_done, group_for
from ._im2col import Im2col

_FOLD_BELOW = 48     # folded GEMM (float64, requantization scale inside) for 1x1 filters with C_in below this: the
                     # float64 product costs less than the epilogue passes it saves (measured; an im2col in float64
                     # costs more than that)

_FOLD_OUTPUTS = 1 << 17     # ... and at most this many outputs: on larger layers (mobilenet_v2's 1x1 expansions)
                             # the float64 product's memory traffic ate the gain in whole invokes (measured)
#: Most bytes of host buffers (the zp-filled image and the im2col block, float64 at worst) one layer's plan may take;
#: a layer above it (a mutated stride or dilation asking for gigabytes of padding) runs the reference invoke instead.
#: VGG16's largest layer (224x224 rows of 577 columns) takes ~230 MB.
_MAX_PLAN_BYTES = 512 << 20
_SCATTER_COST = 128     # constant channels skip the GEMM when K (C_out - live) >= this times the live channels
#: Layers with at most this many outputs bind their plan (:meth:`ConvPlan.bind`): their own accumulator and epilogue
#: buffers (float64: 1 MB at most), the Python of a call saved where it costs as much as the passes.
BIND_OUTPUTS = 1 << 16
#: Out of core, a band geometry whose im2col block and image take at most this many bytes keeps them (within the
#: interpreter's host budget); larger ones share one block (:class:`Im2col` ``shared=True``).
OWN_IM2COL_BYTES = 1 << 20


@dataclass(frozen=True)
class FastConvData(ConvData):
    """The reference OpData (every field, so reference helpers accept it) plus the fast path's plan."""

    plan: ConvPlan | None = None        # None: the reference invoke runs
    bands: ConvBands | None = None      # out of core: what conv_band needs (None: the reference conv_rows runs)


class ConvPlan:
    """Everything the fast invoke needs, built at prepare: buffers, views, GEMM weights and the epilogue."""

    __slots__ = ("epilogue", "folded", "full", "im2col", "live", "rows", "weights")

    def __init__(self, data: ConvData, x_shape, w: np.ndarray, bias: np.ndarray | None, y_shape,
                 budget: HostBudget | None = None) -> None:
        n = x_shape[0]
        c_out, kh, kw, c_in = w.shape
        _, oh, ow, _ = y_shape
        zp_in = -data.input_offset
        k = kh * kw * c_in
        w2 = w.reshape(c_out, k).astype(np.int64)
        bias64 = np.zeros(c_out, np.int64) if bias is None else bias.astype(np.int64).reshape(-1)
        self.epilogue = Epilogue(data.multipliers, data.shifts, data.output_offset, int(data.act_min),
                                 int(data.act_max), accumulator_range(w2, zp_in, bias64))
        self.weights = gemm_weights(w2, bias64 - zp_in * w2.sum(axis=1), self.epilogue.constant)
        fold = kh == kw == 1 and k < _FOLD_BELOW and n * oh * ow * c_out <= _FOLD_OUTPUTS and not self.epilogue.signed
        folded = self.epilogue.fold(self.weights.astype(np.int64)) if fold else None
        self.folded = folded is not None
        if self.folded:
            self.weights = folded
        # channels with a constant output need no products: the GEMM runs on the others' columns, scattered into
        # an accumulator buffer whose constant columns stay 0 (what their zero weight columns would give), when
        # the products saved outweigh the scatter (about 70 multiply-adds per scattered value, measured)
        live = np.flatnonzero(~self.epilogue.constant)
        self.full = None
        if not self.folded and (k + 1) * (c_out - len(live)) >= _SCATTER_COST * len(live):
            self.full = np.zeros((n * oh * ow, c_out), self.weights.dtype)
            self.weights = np.ascontiguousarray(self.weights[:, live])
        self.live = live
        # the layer's own im2col block while the interpreter's host budget lasts; beyond it the block is the one
        # every layer shares (its 1.0 column and margins rewritten when another layer used it since)
        self.im2col = Im2col(data, x_shape, y_shape, (kh, kw), self.weights.dtype, shared=True)
        if budget is None or budget.take(self.im2col.nbytes):
            self.im2col.own()
        self.rows = self.im2col.rows

    def bind(self, x: np.ndarray, out: np.ndarray):
        """:meth:`run` on the fixed views ``x`` and ``out`` as a call without arguments, for small layers (at most
        :data:`BIND_OUTPUTS` outputs, the block the layer's own, no scatter): the im2col fill, the product into a
        kept accumulator, the epilogue bound to it (:meth:`._epilogue.Epilogue.bind`). None otherwise."""
        im = self.im2col
        if im.shared or self.full is not None or out.size > BIND_OUTPUTS or not out.flags.c_contiguous:
            return None
        acc = np.empty((self.rows, self.weights.shape[1]), self.weights.dtype)
        finish = self.epilogue.bind(acc, out, folded=self.folded)
        if finish is None:
            return None
        fill, cols, w = im.filler(x), im.cols, self.weights
        product = product_for(cols, w)

        def call() -> None:
            fill()
            product(cols, w, out=acc)
            finish()
        return call

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        cols = self.im2col.fill(x)
        if self.full is not None:
            if len(self.live):
                self.full[:, self.live] = gemm(cols, self.weights, "conv_acc")
            self.epilogue(self.full, out)
        elif self.folded:
            self.epilogue.finish(gemm(cols, self.weights, "conv_acc"), out)
        else:
            self.epilogue(gemm(cols, self.weights, "conv_acc"), out)


class ConvBands:
    """Out of core (prepared with ``ctx.weights_resident = False``): what :func:`conv_band` needs, without a
    weight-sized buffer. Per-channel metadata from the model's filter, computed once: the accumulator ranges (for
    the epilogue), the channels whose output is constant, and the GEMM precision (float32 when ``128 sum_k |w| +
    |bias'| < 2^24`` for every other channel, as :func:`._epilogue.gemm_weights` decides). Cached by geometry: the
    im2col descriptions (:class:`Im2col`, on the shared host blocks); by channel range: the epilogues. The GEMM
    operand is built from the filter tile the pager read into the weights pool; operands are kept across invokes
    while the interpreter's :class:`~microinterp.kernels.base.HostBudget` allows."""

    def __init__(self, data: ConvData, w: np.ndarray, bias: np.ndarray | None, budget: HostBudget) -> None:
        c_out, kh, kw, c_in = w.shape
        self.k, self.kernel_hw, self.zp_in, self.c_out = kh * kw * c_in, (kh, kw), -data.input_offset, c_out
        bias64 = np.zeros(c_out, np.int64) if bias is None else bias.astype(np.int64).reshape(-1)
        stats = ChannelStats(w.reshape(c_out, self.k), self.zp_in, bias64)
        self.ranges = (stats.lo, stats.hi)
        full = Epilogue(data.multipliers, data.shifts, data.output_offset, int(data.act_min), int(data.act_max),
                        self.ranges)
        self.constant = full.constant
        bound = 128 * stats.abs_sum + np.abs(bias64 - self.zp_in * stats.total)
        self.dtype = np.float32 if int(bound[~self.constant].max(initial=0)) < (1 << 24) else np.float64
        # the folded GEMM of the in-memory plan (1x1 filters, few input channels, unsigned rounding): a float64
        # operand with the requantization inside, so the epilogue only clamps (Epilogue.fold checks exactness)
        self.fold = kh == kw == 1 and self.k < _FOLD_BELOW and not full.signed
        if self.fold:
            self.dtype = np.float64
        # channels per GEMM group when the filter streams in narrower tiles
        self.group = max(1, min(c_out, GROUP_BYTES // ((self.k + 1) * np.dtype(self.dtype).itemsize)))
        self.budget = budget
        self.geometries: dict[tuple, Im2col] = {}
        self.epilogues: dict[tuple[int, int], Epilogue] = {}
        self.operands: dict[tuple[int, int], tuple[np.ndarray, bool]] = {}      # (c0, channels) -> operand

    def im2col(self, data: ConvData, x_shape, y_shape, pad_h: int) -> Im2col:
        key = (tuple(x_shape), tuple(y_shape[:3]), pad_h)      # not the channels: one im2col per band
        geo = self.geometries.get(key)
        if geo is None:
            geo = Im2col(dataclasses.replace(data, pad_h=pad_h), x_shape, y_shape, self.kernel_hw, self.dtype,
                         shared=True)
            # a small block of its own while the budget allows: the bands of a fused chain alternate between
            # layers, and a shared block would be re-initialised at every switch
            if geo.nbytes <= OWN_IM2COL_BYTES and self.budget.take(geo.nbytes):
                geo.own()
            self.geometries[key] = geo
        return geo

    def epilogue(self, data: ConvData, c0: int, c1: int) -> Epilogue:
        ep = self.epilogues.get((c0, c1))
        if ep is None:
            ep = self.epilogues[(c0, c1)] = Epilogue(
                data.multipliers[c0:c1], data.shifts[c0:c1], data.output_offset, int(data.act_min),
                int(data.act_max), (self.ranges[0][c0:c1], self.ranges[1][c0:c1]))
        return ep

    def fill_operand(self, w: np.ndarray, bias: np.ndarray | None, c0: int, op: np.ndarray) -> None:
        """Write the unfolded operand of the filter tile ``w`` (channels ``[c0, c0 + len(w))``) into ``op``
        (``[C_tile, K + 1]``): the tile's rows, ``bias' = bias - zp_in sum_k w`` last, constant channels zeroed
        (their accumulators are not used)."""
        ct, k = w.shape[0], self.k
        w2 = w.reshape(ct, k)
        copyto(op[:, :k], w2)
        folded_bias = -self.zp_in * w2.sum(axis=1, dtype=np.int64)
        if bias is not None:
            folded_bias += bias.reshape(-1).astype(np.int64)
        op[:, k] = folded_bias
        const = self.constant[c0:c0 + ct]
        if const.any():
            op[const] = 0

    def operand(self, data: ConvData, w: np.ndarray, bias: np.ndarray | None, c0: int) -> tuple[np.ndarray, bool]:
        """``(operand, folded)`` of a whole channel tile. Unfolded: ``[C_tile, K + 1]`` (:meth:`fill_operand`; the
        GEMM takes its transpose). Folded (:attr:`fold`, when that channel range's epilogue allows it): ``[K + 1,
        C_tile]`` float64 with the requantization scale and offset inside (:meth:`._epilogue.Epilogue.fold`).
        Built from the tile in the pool and kept for the same channel range while the host budget allows: every
        read into the pool is verified against the record's checksum (or tag), so the pool holds the bytes it was
        built from whenever a tile is computed."""
        ct = w.shape[0]
        hit = self.operands.get((c0, ct))
        if hit is not None:
            return hit
        op = np.empty((ct, self.k + 1), self.dtype)
        self.fill_operand(w, bias, c0, op)
        result = (op, False)
        if self.fold:
            folded = self.epilogue(data, c0, c0 + ct).fold(op.T.astype(np.int64))
            if folded is not None:
                result = (np.ascontiguousarray(folded), True)
        if self.budget.take(result[0].nbytes):
            self.operands[(c0, ct)] = result
        return result


def conv_band(data: FastConvData, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray, y0: int,
              x_row0: int, c0: int, memo: dict) -> None:
    """Channels ``[c0, c0 + w.shape[0])`` of the output band ``out`` (all channels of output rows ``[y0, y0 +
    out.shape[1])``) from the input band ``x`` (rows ``[x_row0, ...)``) and the filter tile ``w``, bit-exact with
    the reference ``conv_rows``.

    A row band is the same convolution on the band's rows with the padding moved: output row ``y0 + r`` reads
    input row ``(y0 + r) s_h - pad_h + ...``, i.e. band row ``r s_h - pad_h'`` with ``pad_h' = pad_h + x_row0 -
    y0 s_h``; taps past the band's last row are past the image's (the band carries its halo otherwise), so the
    band is a convolution of a ``band rows``-high image. The im2col block is filled once per band (``memo`` is
    the band's: the pager keeps the input band resident while the filter's channel tiles stream by, in order).

    A tile holding every channel runs its GEMM and epilogue at once. Narrower tiles are gathered into a group of
    up to :attr:`ConvBands.group` channels (their operands copied out of the pool as they arrive), and the group's
    GEMM and epilogue run when it is full or the band's last tile has arrived: the pager writes the output band
    only after all its channel tiles, so the results are the same, computed by fewer and wider GEMMs."""
    bands = data.bands
    geo = bands.im2col(data, x.shape, out.shape, data.pad_h + x_row0 - y0 * data.stride_h)
    if memo.get("im2col") is not geo or not geo.holds():
        geo.fill(x)
        memo["im2col"] = geo
    ct = w.shape[0]
    if ct == bands.c_out:
        op, folded = bands.operand(data, w, bias, c0)
        _finish(bands.epilogue(data, c0, c0 + ct), geo.cols, op if folded else op.T, folded, out)
        return
    group = group_for(memo, "band_group", c0, ct, bands.group, bands.k + 1, bands.dtype)
    bands.fill_operand(w, bias, c0, group.block[group.filled:group.filled + ct])
    group.filled += ct
    c1 = c0 + ct
    if group_done(memo, group, c1, ct, bands.c_out, bands.group):
        if not geo.holds():
            raise RuntimeError("conv_band: the shared im2col block was claimed while a channel group was pending")
        _finish(bands.epilogue(data, group.c0, c1), geo.cols, block_rows(group).T, False, out[..., group.c0:c1])


def _finish(ep: Epilogue, cols: np.ndarray, operand: np.ndarray, folded: bool, out: np.ndarray) -> None:
    """``out = epilogue(cols @ operand)`` (``out`` possibly a channel slice: through a contiguous buffer)."""
    target = out if out.flags.c_contiguous else work_buffer("conv_band_out", out.shape, np.int8)
    if folded:
        ep.finish(gemm(cols, operand, "conv_band_acc"), target)
    else:
        ep(gemm(cols, operand, "conv_band_acc"), target)
    if target is not out:
        out[...] = target


def _plan(ctx, op, data: ConvData) -> ConvPlan | None:
    if not regular_steps(data):
        return None
    found = _fast_weights(ctx, op, data)
    if found is None:
        return None
    weights, bias = found
    x, y = ctx.input(op, 0), ctx.output(op, 0)
    n, _, _, c_in = x.shape
    c_out, kh, kw, _ = data.filter_shape
    _, oh, ow, _ = y.shape
    image = n * ((oh - 1) * data.stride_h + (kh - 1) * data.dilation_h + 1) * \
        ((ow - 1) * data.stride_w + (kw - 1) * data.dilation_w + 1) * c_in
    if 8 * (image + n * oh * ow * (kh * kw * c_in + 1 + c_out)) > _MAX_PLAN_BYTES:
        return None
    return ConvPlan(data, x.shape, weights, bias, y.shape, ctx.host_budget)


def _fast_weights(ctx, op, data: ConvData) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The constant filter (int4 unpacked) and bias when the fast path applies, else None."""
    w, y, bias = ctx.input(op, 1), ctx.output(op, 0), ctx.input(op, 2)
    if data.kind != "int8" or data.groups != 1 or y.type_name != "INT8":
        return None
    if min(data.stride_h, data.stride_w, data.dilation_h, data.dilation_w) < 1 or y.num_elements == 0:
        return None
    if data.int4_packed is not None:
        weights = unpack_int4(data.int4_packed, np.empty(data.filter_shape, np.int8))
    elif w.data is not None:
        weights = w.data
    else:
        return None
    if bias is not None and bias.data is None:
        return None
    return weights, None if bias is None else bias.data


def _bands(ctx, op, data: ConvData) -> ConvBands | None:
    if data.int4_packed is not None or not regular_steps(data):
        return None             # out of core, int4 filters run whole (the reference path)
    found = _fast_weights(ctx, op, data)
    return None if found is None else ConvBands(data, *found, ctx.host_budget)


class OptimizedConvTiler(ConvTiler):
    """CONV_2D row bands with the optimized GEMM and epilogue (:func:`conv_band`) when prepared out of core with them."""

    def compute(self, kernel, op, data, band):
        if getattr(data, "bands", None) is None:
            return super().compute(kernel, op, data, band)
        conv_band(data, band.inputs[0], band.inputs[1], band.inputs.get(2), band.out, band.y0, band.row0[0], band.c0,
                  band.memo)


class Conv2D(Kernel):
    ops = ("CONV_2D",)
    #: out of core: the reference bands, computed by this kernel's band functions
    bands = OptimizedConvTiler

    def prepare(self, ctx, op) -> FastConvData:
        data = REFERENCE.prepare(ctx, op)
        base = {f.name: getattr(data, f.name) for f in fields(ConvData)}
        if data.helium_1xn is not None:        # the firmware's own windows: the reference invoke computes them
            return FastConvData(**base)
        if not getattr(ctx, "weights_resident", True):      # out of core: row bands, no whole-tensor plan
            return FastConvData(**base, bands=_bands(ctx, op, data))
        return FastConvData(**base, plan=_plan(ctx, op, data))

    def bind(self, ctx, op, data: FastConvData):
        """Where no optimized plan applies (float32): the reference kernel's bound call; a small layer's plan bound
        to the arena views (:meth:`ConvPlan.bind`)."""
        if data.plan is None:
            return REFERENCE.bind(ctx, op, data)
        x, out = ctx.input(op, 0), ctx.output(op, 0)
        if x.shape[1] != data.in_h or out.size != data.plan.rows * out.shape[-1]:
            return None         # views of some rows (a phased segment's line buffers): the segment runs it
        return data.plan.bind(x, out.reshape(data.plan.rows, out.shape[-1]))

    def invoke(self, ctx, op, data: FastConvData) -> None:
        if data.plan is None:
            REFERENCE.invoke(ctx, op, data)
            return
        out = ctx.output(op, 0)
        data.plan.run(ctx.input(op, 0), out.reshape(data.plan.rows, out.shape[-1]))


KERNEL = Conv2D()
