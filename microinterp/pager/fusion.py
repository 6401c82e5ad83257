"""Fused row bands out of core: a chain of row-local ops runs band by band with its intermediate bands in the arena,
so only the chain's first inputs and last output touch the card (MCUNetV2's patch-based inference, with line
buffers instead of recomputation).

**Chains** (:func:`find_chains`). Op ``q`` continues the chain of op ``p`` when both run in row bands (conv,
depthwise, pools, PAD, elementwise ops, ...), ``p`` has one output, that output is not a graph output and its only
reader is ``q``, which reads it once, along rows (a PAD fused into ``q``'s reads does not count; one built from the
tensor's rows would, and then there is no link). The chain runs when its last op's turn comes: every input of its
ops was produced before (each activation has its own home on the card, never overwritten) and nothing in between
reads an intermediate (its only reader is in the chain).

**Bands** (:func:`band_rows`). The tiles are row bands ``[y0, y1)`` of the last op's output. Going backwards, op
``i`` must have produced rows ``rows[i] = input_rows(op i+1, rows[i+1])`` of its output. Each intermediate tensor has
a **line buffer** in the input pool holding its rows ``[lo, done)``: for the next band its overlap rows (the halo a
3x3 filter reads twice) move to the front and only the new rows ``[done, hi)`` are computed -- every output row of
every op is computed exactly once, as in memory, so the MACs and the results are the in-memory ones.

**Planning** (:class:`ChainPlanner`). Every op's card-resident weights are in the arena at once (no filter streams
inside a chain), at the end of the weights pool; the rest of the weights pool joins the input pool (they are
adjacent in the arena), and that region holds the ops' whole (non-row) inputs, the line buffers (their largest
band) and, one op at a time, the rows an op reads from the card (the chain's first input bands, a residual ADD's
other operand); the output pool holds the last op's band. The band height is the largest (in whole records of
the output) that fits, by bisection. A chain that does not fit loses its first op until it fits or is one op long;
the per-op plans stay as they were, so fusing never makes a model fail that runs unfused.

Exactness: the band functions are the per-op ones (:mod:`.tiling`), fed views of the line buffers; a row band of
a row-local op only depends on its input rows, which the line buffer holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..arena import align_up
from .layout import line_bytes
from .plan import ALIGN, OpPlan, Planner, Pools, region_ranges
from .tiling import TileSpec

#: A chain's bands must have at least this many output rows (or the whole height).
MIN_ROWS = 4


@dataclass
class Chain:
    """Plans ``plans[0] -> ... -> plans[-1]``; ``links[i]`` is the input of ``plans[i + 1]`` that reads
    ``plans[i]``'s output; ``tiles`` are bands of the last op's output; ``capacity[i]`` the rows of line buffer
    ``i``."""

    plans: list[OpPlan]
    links: list[int]
    tiles: list[TileSpec] = field(default_factory=list)
    capacity: list[int] = field(default_factory=list)
    weights: int = 0                # bytes of the ops' card-resident weights (aligned), at the weights pool's end
    #: a tree (phased execution): per plan but the last, the position of the plan reading its output and the input
    #: slot it reads it as; None: a chain (plan ``i + 1`` reads plan ``i``'s output as its input ``links[i]``)
    readers: list[tuple[int, int]] | None = None

    @property
    def last(self) -> OpPlan:
        return self.plans[-1]

    def intermediates(self) -> list[int]:
        return [p.op.outputs[0] for p in self.plans[:-1]]

    def reader(self, i: int) -> tuple[int, int]:
        """Position of the plan reading plan ``i``'s output, and the input slot it reads it as."""
        return self.readers[i] if self.readers is not None else (i + 1, self.links[i])

    def sources(self, i: int) -> dict[int, int]:
        """Input slot -> position of the plan of this chain (or tree) producing it, for plan ``i``."""
        out = {}
        for j in range(len(self.plans) - 1):
            r, k = self.reader(j)
            if r == i:
                out[k] = j
        return out


def feeds(plans: list[OpPlan], graph_outputs: set[int]) -> dict[int, tuple[OpPlan, int]]:
    """``{p: (q, k)}``: op ``p``'s output is read only by ``q``, once, as its row input ``k`` (see the module
    docstring), so ``q``'s bands can take it from a line buffer."""
    readers: dict[int, list[OpPlan]] = {}
    for p in plans:
        if p.mode == "fused":
            continue            # a fused PAD's reads happen in its reader's (folded or built: checked below)
        for ti in p.op.inputs:
            if ti >= 0:
                readers.setdefault(ti, []).append(p)
    fused_pad_inputs = {p.op.inputs[0] for p in plans if p.mode == "fused"}
    folded_pad_inputs = {p.folded.op.inputs[0] for p in plans if p.folded is not None}
    nxt: dict[int, tuple[OpPlan, int]] = {}
    for p in plans:
        if p.mode != "rows" or len(p.op.outputs) != 1 or p.streamed is not None:
            continue
        out = p.op.outputs[0]
        if out in graph_outputs or (out in fused_pad_inputs and out not in folded_pad_inputs):
            continue
        rs = readers.get(out, [])
        if len(rs) != 1 or rs[0].mode != "rows" or rs[0].streamed is not None:
            continue
        q = rs[0]
        ks = [k for k, ti in enumerate(q.op.inputs) if ti == out]
        if len(ks) == 1 and q.tiler.row_inputs.get(ks[0]) == 1:
            nxt[p.index] = (q, ks[0])
    return nxt


def find_chains(plans: list[OpPlan], graph_outputs: set[int]) -> list[Chain]:
    """Maximal disjoint chains of two or more row-band ops (see the module docstring). An op fed by several
    (a residual ADD of two computed branches) continues the chain of the feeder with the longest chain above it;
    the others end before it."""
    nxt = feeds(plans, graph_outputs)
    feeders: dict[int, list[int]] = {}
    for p, (q, _) in nxt.items():
        feeders.setdefault(q.index, []).append(p)
    depth: dict[int, int] = {}
    for p in plans:             # op order: every feeder comes before its reader
        depth[p.index] = 1 + max((depth[f] for f in feeders.get(p.index, [])), default=0)
    for fs in feeders.values():
        keep = max(fs, key=lambda f: (depth[f], -f))
        for f in fs:
            if f != keep:
                del nxt[f]
    heads = set(nxt) - {q.index for q, _ in nxt.values()}
    by_index = {p.index: p for p in plans}
    chains = []
    for h in sorted(heads):
        members, links = [by_index[h]], []
        while members[-1].index in nxt:
            q, k = nxt[members[-1].index]
            members.append(q)
            links.append(k)
        chains.append(Chain(members, links))
    return chains


def tree_chain(nodes: list[int], nxt: dict[int, tuple[OpPlan, int]], by_index: dict[int, OpPlan]) -> Chain:
    """The in-tree of fed ops (:func:`feeds`) ``nodes`` (op indices; every one but the last op feeds another of
    them, an op may be fed by several: both branches of a residual block) as a Chain: plans in op order,
    ``readers`` set."""
    order = sorted(nodes)
    pos = {op: i for i, op in enumerate(order)}
    readers = [(pos[nxt[op][0].index], nxt[op][1]) for op in order[:-1]]
    return Chain([by_index[i] for i in order], [k for _, k in readers], readers=readers)


def band_rows(chain: Chain, tensors: list[Any], y0: int, y1: int) -> list[tuple[int, int]]:
    """Output rows every op of the chain must have produced for rows ``[y0, y1)`` of the last op's output."""
    rows: list[tuple[int, int]] = [(0, 0)] * len(chain.plans)
    rows[-1] = (y0, y1)
    for i in range(len(chain.plans) - 2, -1, -1):
        j, k = chain.reader(i)
        q = chain.plans[j]
        lo, hi = q.tiler.input_rows(q.data, k, *rows[j])
        height = tensors[chain.plans[i].op.outputs[0]].shape[1]
        rows[i] = (max(lo, 0), min(max(hi, 0), height))
    return rows


def new_rows(rows: list[tuple[int, int]], done: list[int]) -> list[tuple[int, int]]:
    """The rows each op computes for a band, given what its line buffer already holds (``done``; the last op's
    band is always new)."""
    out = [(max(lo, done[i]), hi) for i, (lo, hi) in enumerate(rows[:-1])]
    return [*out, rows[-1]]


class LineBuffer:
    """The rows ``[start, done)`` of an intermediate tensor, held from row 0 of ``array`` (``capacity`` rows along
    axis 1). Per band: :meth:`keep` drops the rows before the band's first needed row (the overlap rows move to the
    front), the producer writes its new rows into :meth:`rows` and marks them :meth:`produced`, the consumer reads
    them through :meth:`read`."""

    def __init__(self, array: Any):
        self.array = array
        self.start = self.done = 0

    def restart(self, row: int) -> None:
        """Forget what the buffer holds: the next rows produced start at ``row``."""
        self.start = self.done = row

    def keep(self, row: int, move: bool = True) -> tuple[int, int] | None:
        """Rows before ``row`` are no longer needed: the rows ``[row, done)`` move to the front (``move=False``:
        only the bookkeeping, for dry runs and for callers that move later). Returns the buffer rows ``[a, b)``
        that move to the front, if any."""
        moved = None
        if row > self.start:
            n = self.done - row
            if n > 0:
                moved = (row - self.start, self.done - self.start)
                if move:
                    self.array[:, :n] = self.array[:, moved[0]:moved[1]].copy()
            self.start = row
            self.done = max(self.done, row)
        return moved

    def rows(self, lo: int, hi: int) -> Any:
        """The view rows ``[lo, hi)`` are written to (``lo`` must be ``done``)."""
        return self.array[:, lo - self.start:hi - self.start]

    def produced(self, hi: int) -> None:
        self.done = hi

    def read(self, lo: int, hi: int) -> tuple[Any, int]:
        """Rows ``[lo, hi)`` clipped to what the buffer holds, and the row its first index is (0 when empty)."""
        lo, hi = max(lo, self.start), min(max(hi, lo), self.done)
        hi = max(hi, lo)
        return self.array[:, lo - self.start:hi - self.start], (lo if hi > lo else 0)


def band_layout(chain: Chain, tensors: list[Any], b: int) -> tuple[list[TileSpec], list[list[tuple[int, int]]],
                                                                    list[int]]:
    """Bands of ``b`` rows of the chain's last output: the tiles, every op's output rows per band
    (:func:`band_rows`) and the rows each line buffer must hold (the largest band of its tensor)."""
    last = chain.last
    height = tensors[last.op.outputs[0]].shape[1]
    channels = tensors[last.op.outputs[0]].shape[-1]
    tiles = [TileSpec(n, y0, min(height, y0 + b), [(0, channels)]) for n, y0 in enumerate(range(0, height, b))]
    bands = [band_rows(chain, tensors, t.y0, t.y1) for t in tiles]
    capacity = [max(r[i][1] - r[i][0] for r in bands) for i in range(len(chain.plans) - 1)]
    return tiles, bands, capacity


class ChainPlanner:
    """Fits chains into the pools (see the module docstring); uses the per-op :class:`~.plan.Planner`'s sizes."""

    def __init__(self, planner: Planner):
        self.planner = planner
        self.tensors = planner.tensors
        self.homes = planner.homes

    def plan(self, chains: list[Chain], pools: Pools) -> list[Chain]:
        """The chains that fit, cut greedily into segments: a segment grows while it fits with bands of at least
        ``min(MIN_ROWS, height)`` output rows (thinner bands cost more per-band work and SD commands than the
        intermediate traffic they save), and is kept at its longest length that moves fewer SD bytes than its ops
        one by one (smaller bands re-read more halo rows of the chain's inputs); each kept segment gets its
        tiles."""
        planned = []
        for chain in chains:
            seg = 0
            while seg < len(chain.plans) - 1:
                end = seg + 1           # segment plans[seg..end]
                best = None
                while end < len(chain.plans):
                    trial = Chain(chain.plans[seg:end + 1], chain.links[seg:end])
                    if not self._fit(trial, pools):
                        break
                    if self.moved(trial) < self.moved_unfused(trial.plans):
                        best = trial
                    end += 1
                if best is None:
                    seg += 1
                    continue
                planned.append(best)
                seg += len(best.plans)
        return planned

    def moved(self, chain: Chain) -> int:
        """SD bytes (whole sectors) the chain's bands move per invoke: every op's card reads band by band and the
        last op's output band by band (weights and whole inputs move the same either way)."""
        total = 0
        done = [0] * (len(chain.plans) - 1)
        out = chain.last.op.outputs[0]
        for t in chain.tiles:
            rows = band_rows(chain, self.tensors, t.y0, t.y1)
            for i, (lo, hi) in enumerate(new_rows(rows, done)):
                if hi > lo:
                    total += self._reads(chain, i, lo, hi, physical=True)
            done = [r[1] for r in rows[:-1]]
            total += self.sd_bytes(out, 1, t.y0, t.y1)
        return total

    def moved_unfused(self, plans: list[OpPlan]) -> int:
        """SD bytes (whole sectors) the same ops' bands move one by one with their own tiles (chains hold no
        streamed filter, so the weights move the same)."""
        total = 0
        for p in plans:
            for t in p.tiles:
                for k, axis in p.tiler.row_inputs.items():
                    lo, hi = p.tiler.input_rows(p.data, k, t.y0, t.y1)
                    total += self.sd_bytes(p.op.inputs[k], axis, lo, hi)
                total += self.sd_bytes(p.op.outputs[0], 1, t.y0, t.y1)
        return total

    def _weights(self, chain: Chain) -> int:
        total = 0
        for p in chain.plans:
            total += sum(align_up(self.homes[p.op.inputs[j]].nbytes, ALIGN) for j in self.planner._sd_consts(p.op))
        return total

    def _line(self, ti: int) -> int:
        t = self.tensors[ti]
        return line_bytes(t.shape, t.dtype.itemsize, 1)

    def _reads(self, chain: Chain, i: int, y0: int, y1: int, physical: bool = False) -> int:
        """Input-pool bytes op ``i`` reads from the card for its output rows ``[y0, y1)`` (``physical``: the SD
        bytes those commands move, whole sectors)."""
        p, total = chain.plans[i], 0
        for k, axis in p.tiler.row_inputs.items():
            if i > 0 and k == chain.links[i - 1]:
                continue
            lo, hi = p.tiler.input_rows(p.data, k, y0, y1)
            total += (self.sd_bytes if physical else self.planner.region_bytes)(p.op.inputs[k], axis, lo, hi)
        return total

    def sd_bytes(self, ti: int, axis: int, lo: int, hi: int) -> int:
        """SD bytes (whole sectors, one command per range) a read of rows ``[lo, hi)`` of ``ti`` moves."""
        pad = self.planner.virtual.get(ti)
        if pad is not None:
            from ..kernels.pad import pad_input_rows

            plo, phi = pad_input_rows(pad.data, lo, hi)
            return self.sd_bytes(pad.op.inputs[0], 1, plo, phi) if phi > plo else 0
        home, total = self.homes[ti], 0
        for blo, bhi in region_ranges(self.tensors[ti], axis, lo, hi):
            total += home.run(*home.record_range(blo, bhi)).span
        return total

    def layout(self, chain: Chain, b: int) -> tuple[list[TileSpec], list[int], int, int, int]:
        """Tiles of height ``b``, line-buffer capacities, and the worst input-pool, biggest single read and
        output-pool bytes."""
        last = chain.last
        tiles, bands, capacity = band_layout(chain, self.tensors, b)
        lines = sum(align_up(c * self._line(ti), ALIGN) for c, ti in zip(capacity, chain.intermediates()))
        fixed = sum(self.planner._whole_inputs(p) for p in chain.plans) + lines
        done = [0] * (len(chain.plans) - 1)
        worst = biggest = 0
        for rows in bands:
            for i, (lo, hi) in enumerate(new_rows(rows, done)):
                if hi > lo:
                    r = self._reads(chain, i, lo, hi)
                    worst, biggest = max(worst, fixed + r), max(biggest, r)
            done = [r[1] for r in rows[:-1]]
        out = align_up(b * self._line(last.op.outputs[0]), ALIGN)
        return tiles, capacity, max(worst, fixed), biggest, out

    def _fit(self, chain: Chain, pools: Pools) -> bool:
        chain.weights = self._weights(chain)
        if chain.weights > pools.weights:
            return False
        room = pools.input + pools.weights - chain.weights       # the input pool and the weights pool's rest
        last = chain.last
        out_t = self.tensors[last.op.outputs[0]]
        height = out_t.shape[1]
        home = self.homes[last.op.outputs[0]]
        line = self._line(last.op.outputs[0])
        q = max(1, home.record_bytes // line) if line and home.record_bytes >= line else 1
        cap = pools.cap if pools.cap is not None else float("inf")

        def fits(b: int) -> bool:
            _, _, need_in, biggest, out = self.layout(chain, b)
            return need_in <= room and biggest <= cap and out <= pools.limit("output")

        steps = -(-height // q)
        least = -(-min(MIN_ROWS, height) // q) * q
        if not fits(least):
            return False
        lo, hi = 1, steps
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid * q):
                lo = mid
            else:
                hi = mid - 1
        chain.tiles, chain.capacity, *_ = self.layout(chain, lo * q)
        return True
