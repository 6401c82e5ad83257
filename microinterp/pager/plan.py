"""Planning an out-of-core invoke: pools, tensor homes and every op's tiles, before anything runs.

Arena layout out of core (offsets grow to the right)::

    | scratch region | input pool | weights pool | output pool |  ...free...  | tail (persistent, variables) |

The tail is exactly what in-memory preparation allocates. The scratch region holds the largest set of scratch
buffers one op requested (only one op runs at a time). The rest is split into the three pools by ``pools``
(default input : weights : output = 1 : 2 : 1): separate pools, since one shared pool can deadlock.

Tile choice for a ``rows`` op: the largest band height ``b`` (a multiple of the output's rows per record) such that
every band's input rows (with halo, expanded to whole records) fit the input pool next to the resident inputs,
and the band's output fits the output pool; larger tiles mean fewer, larger SD commands. A filter streams in
output-channel tiles only when it does not fit the weights pool whole: then two channel tiles must fit (one being
used, one being loaded — the minimal parallel working set). ``tile`` caps every tile buffer (input band, weight
tile, output band) at that many bytes, as a fixed tile size does on an MCU.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arena import align_down, align_up
from ..bands.op_plan import OpPlan
from ..bands.tiling import TileSpec, line_bytes
from .layout import Home, record_bytes_for

ALIGN = 16


class NoFit(Exception):
    """An op cannot be tiled into the pools: ``pool`` needs ``need`` bytes, has ``have``."""

    def __init__(self, op_index: int, op_name: str, pool: str, need: int, have: int):
        super().__init__(f"op {op_index} ({op_name}): the {pool} pool needs {need} bytes, has {have}")
        self.op_index, self.op_name, self.pool, self.need, self.have = op_index, op_name, pool, need, have


@dataclass(frozen=True)
class Pools:
    """Byte sizes (and arena offsets) of the three pools; ``cap`` is the tile size limit (or None)."""

    input: int
    weights: int
    output: int
    input_at: int = 0
    weights_at: int = 0
    output_at: int = 0
    cap: int | None = None

    @classmethod
    def split(cls, start: int, nbytes: int, fractions: tuple[float, float, float], cap: int | None) -> Pools:
        """``nbytes`` (>= 0) shared in the ``fractions``: :meth:`fitted` with no minimum."""
        return cls.fitted(start, nbytes, (0, 0, 0), fractions, cap)

    @classmethod
    def fitted(cls, start: int, nbytes: int, minima: tuple[int, int, int], fractions: tuple[float, float, float],
               cap: int | None) -> Pools | None:
        """Pools of at least ``minima`` bytes each (multiples of :data:`ALIGN`), the rest of ``nbytes`` shared in
        the ``fractions`` (larger bands, fewer filter tiles); None when the minima do not fit."""
        left = nbytes - sum(minima)
        if left < 0:
            return None
        total = sum(fractions)
        # each share rounded down on its own, so every pool grows with the arena (a larger arena never fails where
        # a smaller one works); the at most 3 x 15 bytes left over stay unused
        a, b, c = (m + align_down(int(left * f / total), ALIGN) for m, f in zip(minima, fractions))
        return cls(a, b, c, start, start + a, start + a + b, cap)

    def limit(self, pool: str) -> int:
        size = getattr(self, pool)
        return size if self.cap is None else min(size, self.cap)


def fuse_pads(plans: list[OpPlan], graph_outputs: set[int], tensors: list[Any]) -> dict[int, OpPlan]:
    """Turn every PAD (constant fill) whose output has one reader, a row-band op reading it along rows, into a
    fused PAD; returns ``{padded tensor: its PAD plan}`` (those tensors get no home). A reader that can take the
    PAD as its own padding (``tiler.fold_pad``) is rewired to read the PAD's input: its plan gets a copy of the op
    with that input and the folded data (:func:`fold_data`), so the engine, the planner and the task graph read
    the PAD's input rows like any other band."""
    from ..bands.tiling import FusedPadTiler, PadTiler

    readers: dict[int, list[OpPlan]] = {}
    for p in plans:
        for ti in p.op.inputs:
            readers.setdefault(ti, []).append(p)
    virtual = {}
    for p in plans:
        if not isinstance(p.tiler, PadTiler) or p.data.fill is None:
            continue
        out = p.op.outputs[0]
        rs = readers.get(out, [])
        if out in graph_outputs or len(rs) != 1 or rs[0].tiler.mode != "rows":
            continue
        reader = rs[0]
        ks = [k for k, ti in enumerate(reader.op.inputs) if ti == out]
        if len(ks) == 1 and reader.tiler.row_inputs.get(ks[0]) == 1:
            p.tiler = FusedPadTiler()
            virtual[out] = p
            fold = getattr(reader.tiler, "fold_pad", None)
            x = p.op.inputs[0]
            if ks[0] == 0 and fold is not None and fold(reader.data, p.data, tensors[x], tensors[out]) is not None:
                reader.folded = p
                reader.op = dataclasses.replace(reader.op, inputs=(x,) + tuple(reader.op.inputs[1:]))
                reader.data = fold_data(reader, reader.data, tensors)
    return virtual


def fold_data(p: OpPlan, data: Any, tensors: list[Any]) -> Any:
    """``data`` as plan ``p`` uses it: with the PAD it reads through folded in (``p.folded``), else as it is."""
    if p.folded is None:
        return data
    pad = p.folded
    return p.tiler.fold_pad(data, pad.data, tensors[pad.op.inputs[0]], tensors[pad.op.outputs[0]])


def layout_homes(tensors: list[Any], plans: list[OpPlan], inputs: list[int], variables: set[int],
                 flash_budget: int, virtual: dict[int, OpPlan] | None = None) -> tuple[list[Home | None], int, int, int]:
    """Homes of every tensor; returns ``(homes, weights bytes, activation bytes, weight records)``. Tensors in
    ``virtual`` (fused PAD outputs) get none."""
    virtual = virtual or {}
    homes: list[Home | None] = [None] * len(tensors)
    axis: dict[int, int] = {}
    aligned: set[int] = set()
    streamed: set[int] = set()
    for p in plans:
        if p.tiler.mode == "rows":      # (a reduction's output is written whole: no row records)
            for out in p.op.outputs:    # every output of a row-band op (SPLIT has several) in whole rows
                if out >= 0:
                    axis[out] = max(axis.get(out, 1), 1)
                    aligned.add(out)
        for k, a in p.tiler.row_inputs.items():
            ti = p.op.inputs[k]
            axis[ti] = max(axis.get(ti, a), a)
        if p.tiler.channel_input is not None and p.tiler.channel_input < len(p.op.inputs):
            streamed.add(p.op.inputs[p.tiler.channel_input])
    flash_used = weights_at = act_at = records = 0
    for p in plans:
        for ti in p.op.inputs:
            t = tensors[ti] if ti >= 0 else None
            if t is None or t.data is None or homes[ti] is not None or t.dtype is None:
                continue
            if flash_used + t.nbytes <= flash_budget:
                flash_used += t.nbytes
                homes[ti] = Home(ti, t.name, t.nbytes, "flash")
                continue
            row = line_bytes(t.shape, t.dtype.itemsize, 0) if ti in streamed and len(t.shape) >= 2 else t.nbytes
            rb = record_bytes_for(t.nbytes, row, aligned_rows=True) if ti in streamed else t.nbytes
            home = Home(ti, t.name, t.nbytes, "weights", weights_at, max(rb, 1), row)
            homes[ti] = home
            weights_at += home.span
            records += home.records
    produced = {ti for p in plans for ti in p.op.outputs if ti >= 0}
    readers: dict[int, list[OpPlan]] = {}
    for p in plans:
        for ti in p.op.inputs:
            readers.setdefault(ti, []).append(p)
    for p in plans:     # an alias whose output is read by row bands cannot share records shaped for its input
        if p.tiler.mode == "alias" and any(q.tiler.row_inputs for q in readers.get(p.op.outputs[0], [])):
            from ..bands.tiling import WHOLE

            p.tiler = WHOLE
    aliased = {p.op.outputs[0]: p.op.inputs[0] for p in plans if p.tiler.mode == "alias"}
    # a tensor an op reads that no op writes and the model does not take as input gets a home too (the pager
    # writes it zeroed, as a fresh arena holds it in memory)
    read = {ti for ti in readers if ti >= 0}
    for ti in sorted(produced | set(inputs) | read):
        if ti in aliased or ti in virtual:
            continue
        t = tensors[ti]
        if t.data is not None or ti in variables or t.dtype is None or homes[ti] is not None:
            continue
        a = axis.get(ti, 0)
        shape = t.shape if t.shape else (1,)
        a = min(a, len(shape) - 1)
        row = line_bytes(shape, t.dtype.itemsize, a)
        if ti in aligned and a > 1:        # a deeper consumer axis than the producer's rows: one line per record
            rb = row
        else:
            rb = record_bytes_for(t.nbytes, row, aligned_rows=ti in aligned)
        home = Home(ti, t.name, t.nbytes, "activations", act_at, max(rb, 1), row)
        homes[ti] = home
        act_at += home.span
    for p in plans:     # in op order, so chains of aliases resolve
        if p.tiler.mode == "alias":
            homes[p.op.outputs[0]] = homes[p.op.inputs[0]]
    return homes, weights_at, act_at, records


# -- tile planning ----------------------------------------------------------------------------------------------------
def row_runs(p: OpPlan, k: int, y0: int, y1: int, virtual: bool) -> list[tuple[int, int]]:
    """The runs of rows of input ``k`` that a tile of output rows ``[y0, y1)`` of plan ``p`` reads: the tiler's
    ``input_row_runs`` along the rows (a dilated filter skips the rows between its taps), else the one run
    ``input_rows`` (a fused PAD's band is built whole, other axes are read whole)."""
    if virtual or p.tiler.row_inputs.get(k) != 1:
        lo, hi = p.tiler.input_rows(p.data, k, y0, y1)
        return [(lo, hi)]
    runs = p.tiler.input_row_runs(p.data, k, y0, y1)
    return runs or [p.tiler.input_rows(p.data, k, y0, y1)]


def region_ranges(t: Any, axis: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """Byte ranges of tensor ``t`` with index ``[lo, hi)`` along ``axis`` (one range per leading index)."""
    if hi <= lo:
        return []
    shape = t.shape
    line = line_bytes(shape, t.dtype.itemsize, axis)
    stride = shape[axis] * line
    lead = math.prod(shape[:axis])
    return [(n * stride + lo * line, n * stride + hi * line) for n in range(lead)]


def covered_bytes(home: Home, ranges: list[tuple[int, int]]) -> int:
    """Payload bytes of the whole records covering ``ranges`` (what a read moves into a pool)."""
    total = 0
    for lo, hi in ranges:
        r0, r1 = home.record_range(lo, hi)
        total += align_up(min(r1 * home.record_bytes, home.nbytes) - r0 * home.record_bytes, ALIGN)
    return total


class Planner:
    """Plans the tiles of every op for one set of pools (raises :class:`NoFit` for the first op that cannot)."""

    def __init__(self, tensors: list[Any], homes: list[Home | None], virtual: dict[int, OpPlan] | None = None):
        self.tensors = tensors
        self.homes = homes
        self.virtual = virtual or {}

    def region_bytes(self, ti: int, axis: int, lo: int, hi: int) -> int:
        """Input-pool bytes a read of rows ``[lo, hi)`` of tensor ``ti`` takes (a fused PAD's output: its input's
        records plus the padded band built from them)."""
        if ti in self.virtual:
            from ..kernels.pad import pad_input_rows

            pad = self.virtual[ti]
            plo, phi = pad_input_rows(pad.data, lo, hi)
            t = self.tensors[ti]
            band = align_up(max(hi - lo, 0) * line_bytes(t.shape, t.dtype.itemsize, 1), ALIGN)
            return band + self.region_bytes(pad.op.inputs[0], 1, plo, phi)
        return covered_bytes(self.homes[ti], region_ranges(self.tensors[ti], axis, lo, hi))

    def row_runs(self, p: OpPlan, k: int, y0: int, y1: int) -> list[tuple[int, int]]:
        """The runs of rows of input ``k`` a tile of output rows ``[y0, y1)`` reads (:func:`row_runs`)."""
        return row_runs(p, k, y0, y1, p.op.inputs[k] in self.virtual)

    def _sd_consts(self, op: Any) -> list[int]:
        return [k for k, ti in enumerate(op.inputs) if ti >= 0 and self.homes[ti] is not None
                and self.homes[ti].device == "weights"]

    def _whole_inputs(self, p: OpPlan) -> int:
        total = 0
        for k, ti in enumerate(p.op.inputs):
            h = self.homes[ti] if ti >= 0 else None
            if h is not None and h.device == "activations" and k not in p.tiler.row_inputs:
                total += align_up(h.nbytes, ALIGN)
        return total

    def _weights(self, p: OpPlan, pools: Pools) -> None:
        """Decide whether the op's SD filter is resident or streams, and its channel tiles."""
        consts = self._sd_consts(p.op)
        k = p.tiler.channel_input if p.tiler.channel_input in consts else None
        fixed = sum(align_up(self.homes[p.op.inputs[j]].nbytes, ALIGN) for j in consts if j != k)
        p.streamed = None
        channels = self._channels(p)
        p.channel_tiles = [(0, channels)]
        if k is None:
            if fixed > pools.weights:
                raise NoFit(p.index, p.op.key, "weights", fixed, pools.weights)
            return
        home = self.homes[p.op.inputs[k]]
        if fixed + align_up(home.nbytes, ALIGN) <= pools.weights and home.nbytes <= pools.limit("weights"):
            return
        per_record = max(1, home.record_bytes // home.row_bytes)
        record = align_up(per_record * home.row_bytes, ALIGN)
        budget = min((pools.weights - fixed) // 2, pools.limit("weights"))
        ct = (budget // record) * per_record if budget > 0 else 0
        if ct <= 0:
            raise NoFit(p.index, p.op.key, "weights", fixed + 2 * record, pools.weights)
        p.streamed = k
        p.channel_tiles = [(c, min(c + ct, channels)) for c in range(0, channels, ct)]

    def _channels(self, p: OpPlan) -> int:
        out = self.tensors[p.op.outputs[0]]
        return out.shape[-1] if out.shape else 1

    def plan(self, p: OpPlan, pools: Pools) -> None:
        if p.mode in ("alias", "fused"):
            p.tiles = []
            return
        self._weights(p, pools)
        if p.mode in ("rows", "reduce"):
            self._plan_rows(p, pools)
            return
        need_in = self._whole_inputs(p)
        if need_in > pools.input:
            raise NoFit(p.index, p.op.key, "input", need_in, pools.input)
        need_out = sum(align_up(self.homes[ti].nbytes, ALIGN) for ti in p.op.outputs
                       if ti >= 0 and self.homes[ti] is not None)
        if need_out > pools.output:
            raise NoFit(p.index, p.op.key, "output", need_out, pools.output)
        p.tiles = [TileSpec(0, 0, 0, p.channel_tiles)]

    def _plan_rows(self, p: OpPlan, pools: Pools) -> None:
        """Bands of output rows (``rows``), or of input rows with the whole output resident (``reduce``: a reduction
        over the rows), as high as the pools allow, in whole records of the banded tensor."""
        reduce = p.mode == "reduce"
        banded = [p.op.inputs[0]] if reduce else [ti for ti in p.op.outputs if ti >= 0]
        height = self.tensors[banded[0]].shape[1]
        lines = [line_bytes(self.tensors[ti].shape, self.tensors[ti].dtype.itemsize, 1) for ti in banded]
        q = 1           # bands of whole records of every banded tensor
        for ti, line in zip(banded, lines):
            rb = self.homes[ti].record_bytes
            q = math.lcm(q, max(1, rb // line) if line and rb >= line else 1)
        resident = self._whole_inputs(p)
        whole_out = sum(align_up(self.homes[ti].nbytes, ALIGN) for ti in p.op.outputs
                        if ti >= 0 and self.homes[ti] is not None) if reduce else 0

        def cost(y0: int, y1: int) -> tuple[int, int, int]:
            band = 0
            biggest = 0
            for k, a in p.tiler.row_inputs.items():
                ti = p.op.inputs[k]
                nbytes = sum(self.region_bytes(ti, a, lo, hi) for lo, hi in self.row_runs(p, k, y0, y1))
                band += nbytes
                biggest = max(biggest, nbytes)
            return resident + band, biggest, whole_out if reduce else \
                sum(align_up((y1 - y0) * line, ALIGN) for line in lines)

        def fits(b: int) -> tuple[bool, int, int]:
            worst_in = worst_out = 0
            ok = True
            for y0 in range(0, height, b):
                total_in, biggest, out = cost(y0, min(height, y0 + b))
                worst_in, worst_out = max(worst_in, total_in), max(worst_out, out)
                cap = pools.cap if pools.cap is not None else math.inf
                if total_in > pools.input or biggest > cap or out > pools.limit("output"):
                    ok = False
            return ok, worst_in, worst_out

        steps = -(-height // q)
        ok, need_in, need_out = fits(q)
        if not ok:
            if need_in > pools.input or (pools.cap is not None and need_in > pools.cap):
                raise NoFit(p.index, p.op.key, "input", need_in, pools.limit("input"))
            raise NoFit(p.index, p.op.key, "output", need_out, pools.limit("output"))
        lo, hi = 1, steps                 # largest k with fits(k * q), by bisection
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid * q)[0]:
                lo = mid
            else:
                hi = mid - 1
        b = lo * q
        p.tiles = [TileSpec(i, y0, min(height, y0 + b), p.channel_tiles) for i, y0 in enumerate(range(0, height, b))]


@dataclass(frozen=True)
class PoolNeeds:
    """The smallest input, weights and output pools every op fits, and the op (``"op I (OP)"``) that needs each."""

    sizes: tuple[int, int, int]
    ops: tuple[str, str, str]

    def describe(self) -> str:
        """``"N (input, for op I (OP)), ..."``: each pool's need and its op (pools nobody needs left out)."""
        return ", ".join(f"{n} ({pool}, for {op})" for pool, n, op in zip(("input", "weights", "output"), self.sizes,
                                                                           self.ops) if n)


def pool_minima(planner: Planner, plans: list[OpPlan], cap: int | None = None) -> PoolNeeds:
    """The smallest pools every op fits (one-row bands, two one-record filter tiles): each op planned with one pool
    empty and the others unbounded names what that pool needs. The three needs of an op do not depend on each
    other, so pools of these sizes run every op (with tiles capped at ``cap`` bytes, when one is)."""
    huge = 1 << 50
    need, by = [0, 0, 0], ["", "", ""]
    for p in plans:
        for i, name in enumerate(("input", "weights", "output")):
            sizes = [huge, huge, huge]
            sizes[i] = 0
            try:
                planner.plan(p, Pools(*sizes, cap=cap))
            except NoFit as e:
                if e.pool == name and align_up(e.need, ALIGN) > need[i]:
                    need[i], by[i] = align_up(e.need, ALIGN), f"op {e.op_index} ({e.op_name})"
    return PoolNeeds((need[0], need[1], need[2]), (by[0], by[1], by[2]))


class PoolBuffers:
    """The three pool buffers (arena views, or host arrays during a recovery) with bump positions."""

    def __init__(self, inp: np.ndarray, weights: np.ndarray, out: np.ndarray):
        self.input, self.weights, self.output = inp, weights, out
        self.pos = {"input": 0, "weights": 0, "output": 0}

    def take(self, pool: str, nbytes: int) -> np.ndarray:
        at = self.pos[pool]
        buf = getattr(self, pool)[at:at + nbytes]
        if buf.nbytes != nbytes:
            raise RuntimeError(f"{pool} pool overrun: {at} + {nbytes} > {getattr(self, pool).nbytes}")
        self.pos[pool] = at + align_up(nbytes, ALIGN)
        return buf

    def mark(self, pool: str) -> int:
        return self.pos[pool]

    def reset(self, pool: str, at: int = 0) -> None:
        self.pos[pool] = at
