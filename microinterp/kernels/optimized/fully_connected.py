"""FULLY_CONNECTED, optimized: the reference kernel's prepare and results; large int8 layers run as one float32 (or
float64) GEMM on raw int8 values plus the merged requantization epilogue (:mod:`._epilogue`). Bit-exact with
:mod:`microinterp.kernels.fully_connected`.

Fast path (int8 input, constant filter and bias, as prepared by the reference: ``data.weights`` holds ``w + w_off``
as float64 ``[accum, depth]``, ``data.bias`` the bias with the input zero point folded in, ``bias - zp_in sum_k
w'``): the input rows are copied into a float buffer ``[batches, accum + 1]`` whose last column is 1.0, the weight
matrix gets the folded bias as its last row, and the GEMM returns TFLM's exact accumulators. float32 when ``128
max_c sum_k |w'[c,k]| + |bias'_c| < 2^24`` (every partial sum exact), else float64. The epilogue gets each
channel's exact accumulator range (weights, int8 input range, bias).

Layers keep the reference (its bound call, see :meth:`FullyConnected.bind`) when it has its step-function
requantization and is faster than the GEMM plus epilogue (whose fixed cost is about 8 us): per-tensor int8 layers,
whose search index is the output code, below 1536 outputs (measured: 1x1280->1000 96 us against 107 us, 8x256->256
53 us against 40 us); per-channel layers below 512 outputs and 2^17 multiply-adds (a per-channel 1280->1000 layer:
120 us against 240 us); layers with one input value per batch (the reference's exhaustive table). int16x8 and
float32 layers, and anything not constant, also run the reference. With int4 weights the unpack scratch stays in the
arena plan; the fast path does not refill it on every invoke (the weights were unpacked at prepare).

Out of core (prepared with ``ctx.weights_resident = False``) a batch-1 int8 layer keeps per-channel metadata
(:class:`FullyConnectedBands`) and the pager's channel tiles call :func:`fc_band`, which gathers them into groups and
computes each group's exact accumulators as float32 slice products summed in float64.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import partial

import numpy as np

from .._qutil import copyto
from .._weight_stats import ChannelStats, fill_transposed
from ..base import HostBudget
from ..contract import Kernel
from ..fully_connected import KERNEL as REFERENCE
from ..fully_connected import FullyConnectedData
from ..fully_connected_bound import coded_thresholds
from ..fully_connected_channels import FullyConnectedTiler
from ._buffers import work_buffer
from ._epilogue import _F32_EXACT, Epilogue, gemm, gemm_weights_from
from ._group import GROUP_BYTES, block_rows, group_done, group_for

#: smaller layers keep the reference when it has per-channel step-function requantization: measured on the zoo,
#: the GEMM + epilogue wins from about 512 outputs or 2^17 multiply-adds on
_MIN_OUTPUTS = 512
_MIN_PRODUCT = 1 << 17
#: ... and below this many outputs when the step index is the int8 code itself (one channel of steps): a search per
#: output against the epilogue's fixed cost (measured: 1x1280->1000 96 us vs 107 us, 8x256->256 53 us vs 40 us)
_MIN_CODE_OUTPUTS = 1536


@dataclass(frozen=True)
class FastFullyConnectedData(FullyConnectedData):
    """The reference OpData (every field, so reference helpers accept it) plus the fast path's plan."""

    plan: FullyConnectedPlan | None = None      # None: the reference invoke runs
    bands: FullyConnectedBands | None = None    # out of core: what fc_band needs (None: the reference fc_channels)


#: Fewest taps per float32 slice worth slicing for (below it the float64 operand stays).
_MIN_CHUNK = 256


class FullyConnectedPlan:
    """Column buffer, GEMM weights and epilogue of one layer, built at prepare.

    The GEMM operand is float32 whenever it can be exact: with the whole sum (``128 sum_k |w| + |bias| < 2^24``
    for every channel, the bias as the operand's last row), else in slices of ``chunk`` taps whose partial sums
    (``128 chunk max|w| < 2^24``) are exact float32 integers, added in float64 (exact below 2^53) with the bias --
    four bytes per weight instead of float64's eight for the large layers (VGG16's first FC: 411 MB instead of 822);
    and when even that exceeds the interpreter's host budget, no operand at all: every slice is converted from the
    model's int8 filter at invoke (a few ms per hundred MB of weights)."""

    __slots__ = ("accum", "bias", "chunk", "cols", "epilogue", "inputs", "source", "weights")

    def __init__(self, data: FullyConnectedData, filt: np.ndarray, budget: HostBudget | None = None):
        """``filt``: the model's filter (integers, ``[depth, accum]`` after a reshape), read a slice at a time; the
        channel figures are the reference prepare's (``data.stats``, the accumulator range with the raw bias)."""
        accum, depth = data.accum, data.depth
        src = filt.reshape(-1, accum)[:depth]
        stats = data.stats
        self.epilogue = Epilogue(data.multiplier, data.shift, data.output_offset, int(data.act_min),
                                 int(data.act_max), (stats.lo, stats.hi))
        constant = self.epilogue.constant
        self.accum = accum
        self.inputs = data.batches * accum
        self.chunk = 0
        self.bias = None
        bound = np.where(constant, 0, 128 * stats.abs_sum + np.abs(data.bias))
        chunk = (_F32_EXACT - 1) // (128 * max(stats.abs_max, 1))
        self.source = None
        if int(bound.max(initial=0)) >= _F32_EXACT and chunk >= _MIN_CHUNK:
            # slices of float32 sums: half the memory of a float64 operand, written straight from the int8 filter;
            # beyond the interpreter's host budget not kept at all: each slice converted from the filter per invoke
            self.chunk = chunk
            self.bias = np.where(constant, 0, data.bias).astype(np.float64)
            if budget is None or budget.take(4 * accum * depth):
                self.weights = np.empty((accum, depth), np.float32)
                fill_transposed(self.weights, src, data.filter_offset)
                self.weights[:, constant] = 0
            else:
                self.source = (src, data.filter_offset, np.flatnonzero(constant))
                self.weights = np.empty((0, depth), np.float32)
        else:
            self.weights = gemm_weights_from(src, data.filter_offset, stats.abs_sum, data.bias, constant)
        self.cols = np.ones((data.batches, accum + 1), self.weights.dtype)

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """``out``: the output tensor (``batches * depth`` values, C-contiguous)."""
        copyto(self.cols[:, :self.accum], x.reshape(-1)[:self.inputs].reshape(len(self.cols), self.accum))
        if not self.chunk:
            self.epilogue(gemm(self.cols, self.weights, "fc_acc"), out)
            return
        acc = work_buffer("fc_acc64", (len(self.cols), self.weights.shape[1]), np.float64)
        acc[...] = self.bias
        for k0 in range(0, self.accum, self.chunk):
            k1 = min(self.accum, k0 + self.chunk)
            acc += gemm(self.cols[:, k0:k1], self._slice(k0, k1), "fc_acc")
        self.epilogue(acc, out)

    def _slice(self, k0: int, k1: int) -> np.ndarray:
        """Taps ``[k0, k1)`` of the float32 operand ``[K, C]``: kept, or converted from the filter now."""
        if self.source is None:
            return self.weights[k0:k1]
        src, offset, constant = self.source
        block = work_buffer("fc_slice", (src.shape[0], k1 - k0), np.float32)
        copyto(block, src[:, k0:k1])         # int8 to float32 in the copy: exact
        if offset:
            block += offset
        block[constant] = 0
        return block.T


class FullyConnectedBands:
    """Out of core (prepared with ``ctx.weights_resident = False``, batch 1, int8): what :func:`fc_band` needs,
    without a weight-sized buffer. From the model's filter, once, a slice of channels at a time: each channel's exact
    accumulator range (for the epilogue, which wraps to int32 where TFLM's accumulator can overflow) and its folded
    bias ``bias' = bias + input_offset sum_k w``.

    **The product in float32, exactly.** The filter streams through the weights pool in narrow channel tiles; a
    tile's raw int8 rows are copied into a float32 host block as they pass, and once the block holds a group of up to
    :data:`GROUP_BYTES` (or the last tile arrived) the group's accumulators are computed at once: the raw input
    values (``|x| <= 128``) times the rows, summed over slices of ``L = 2^24 / (128 max |w|)`` taps (at least
    1024): every partial sum of a slice is an integer of magnitude at most ``2^24``, exact in float32 whatever the
    summation order. The slices' sums are added in float64 (exact below 2^53) with ``bias'``."""

    def __init__(self, data: FullyConnectedData, w: np.ndarray):
        accum, depth = data.accum, data.depth
        w2 = w.reshape(-1, accum)[:depth]
        self.zp_in = -data.input_offset
        bias = np.asarray(data.bias, np.int64).reshape(-1)[:depth]
        stats = ChannelStats(w2, self.zp_in, bias)
        self.ranges = (stats.lo, stats.hi)
        self.folded_bias = (bias - self.zp_in * stats.total).astype(np.float64)
        self.slice = max(1, min(accum, (1 << 24) // (128 * max(stats.abs_max, 1))))
        self.accum, self.depth = accum, depth
        self.group = max(1, min(depth, GROUP_BYTES // (4 * accum)))
        self.epilogues: dict[tuple[int, int], Epilogue] = {}

    def epilogue(self, data: FullyConnectedData, c0: int, c1: int) -> Epilogue:
        ep = self.epilogues.get((c0, c1))
        if ep is None:
            per_channel = np.ndim(data.multiplier) > 0
            m = data.multiplier[c0:c1] if per_channel else data.multiplier
            sh = data.shift[c0:c1] if per_channel else data.shift
            ep = self.epilogues[(c0, c1)] = Epilogue(m, sh, data.output_offset, int(data.act_min),
                                                     int(data.act_max), (self.ranges[0][c0:c1], self.ranges[1][c0:c1]))
        return ep

    def products(self, x: np.ndarray, block: np.ndarray) -> np.ndarray:
        """``block @ x`` (``block`` ``[channels, accum]`` float32 raw weights, ``x`` raw int8 values) as exact
        float64 sums of float32 slice products."""
        n, length = self.accum // self.slice, self.slice
        main = n * length
        xf = work_buffer("fc_band_x", (self.accum,), np.float32)
        copyto(xf, x.reshape(-1)[:self.accum])
        acc = np.zeros(len(block), np.float64)
        if n:       # the slices of every row, [n, channels, L], a view (rows are accum apart)
            slices = np.lib.stride_tricks.as_strided(block, (n, len(block), length),
                                                     (length * block.itemsize, block.strides[0], block.itemsize),
                                                     writeable=False)
            parts = np.matmul(slices, xf[:main].reshape(n, length, 1))
            acc += parts.reshape(n, len(block)).sum(axis=0, dtype=np.float64)
        if main < self.accum:
            acc += block[:, main:] @ xf[main:]
        return acc


def fc_band(data: FastFullyConnectedData, x: np.ndarray, w: np.ndarray, out: np.ndarray, c0: int,
            memo: dict) -> None:
    """Output channels ``[c0, c0 + w.shape[0])`` of a batch-1 int8 FULLY_CONNECTED from the raw filter rows ``w``
    (an out-of-core channel tile), bit-exact with the reference ``fc_channels``. Tiles arrive in channel order; they
    are gathered into groups (:class:`FullyConnectedBands`) and each group's outputs are written when it is complete:
    the pager writes the output once all channel tiles are done."""
    bands = data.bands
    ct = w.shape[0]
    group = group_for(memo, "band_group", c0, ct, bands.group, bands.accum, np.float32)
    copyto(group.block[group.filled:group.filled + ct], w.reshape(ct, -1)[:, :bands.accum])
    group.filled += ct
    c1 = c0 + ct
    if group_done(memo, group, c1, ct, bands.depth, bands.group):
        acc = bands.products(x, block_rows(group))
        acc += bands.folded_bias[group.c0:c1]
        bands.epilogue(data, group.c0, c1)(acc[None, :], out.reshape(-1)[group.c0:c1][None, :])


def _bands(ctx, op, data: FullyConnectedData) -> FullyConnectedBands | None:
    w = ctx.input(op, 1)
    if data.type_name != "INT8" or data.int64_acc or data.batches != 1 or data.filter_offset != 0 \
            or data.scratch is not None or w is None or w.data is None or w.type_name != "INT8":
        return None
    bias = ctx.input(op, 2)
    if bias is not None and bias.data is None:
        return None
    return FullyConnectedBands(data, w.data)


def _plan(ctx, op, data: FullyConnectedData) -> FullyConnectedPlan | None:
    filt = ctx.input(op, 1).data if data.unpacked_int4 is None else data.unpacked_int4
    if data.type_name != "INT8" or data.int64_acc or filt is None or data.operand is None or data.table is not None:
        return None
    outputs = data.batches * data.depth
    if data.steps is not None:
        if coded_thresholds(data) is not None:
            if outputs < _MIN_CODE_OUTPUTS:
                return None
        elif outputs < _MIN_OUTPUTS and outputs * data.accum < _MIN_PRODUCT:
            return None
    return FullyConnectedPlan(data, filt, ctx.host_budget)    # (a runtime bias is refused by the reference prepare)


class OptimizedFullyConnectedTiler(FullyConnectedTiler):
    """FULLY_CONNECTED channel tiles with the optimized GEMM in channel groups (:func:`fc_band`) when prepared out of core."""

    def compute(self, kernel, op, data, band):
        if getattr(data, "bands", None) is None:
            return super().compute(kernel, op, data, band)
        fc_band(data, band.inputs[0], band.inputs[1], band.out, band.c0, band.memo)


class FullyConnected(Kernel):
    ops = ("FULLY_CONNECTED",)
    #: out of core: the reference bands, computed by this kernel's band functions
    bands = OptimizedFullyConnectedTiler

    def prepare(self, ctx, op) -> FastFullyConnectedData:
        # without the reference's weight-sized operand: the plan keeps its own, and only a layer without a plan
        # gets the reference's (lean preparation: one operand per layer, never both)
        data = REFERENCE.prepare(ctx, op, operands=False)
        if not getattr(ctx, "weights_resident", True):      # out of core: channel tiles, no whole-tensor plan
            base = {f.name: getattr(data, f.name) for f in fields(FullyConnectedData)}
            return FastFullyConnectedData(**base, bands=_bands(ctx, op, data))
        plan = _plan(ctx, op, data)
        if plan is None:
            data = REFERENCE.operands(ctx, op, data)
        base = {f.name: getattr(data, f.name) for f in fields(FullyConnectedData)}
        return FastFullyConnectedData(**base, plan=plan)

    def invoke(self, ctx, op, data: FastFullyConnectedData) -> None:
        if data.plan is None:
            REFERENCE.invoke(ctx, op, data)
            return
        data.plan.run(ctx.input(op, 0), ctx.output(op, 0))

    def bind(self, ctx, op, data: FastFullyConnectedData):
        """The interpreter's flat invoke loop: the plan on the op's fixed views, else the reference's call."""
        if data.plan is None:
            return REFERENCE.bind(ctx, op, data)
        return partial(data.plan.run, ctx.input(op, 0), ctx.output(op, 0))


KERNEL = FullyConnected()
