"""Fused row bands out of core: a chain of row-local ops runs band by band with its intermediate bands in the arena,
so only the chain's first inputs and last output touch the card (MCUNetV2's patch-based inference, with line
buffers instead of recomputation).

**Chains** (:func:`~microinterp.bands.chains.find_chains`). Op ``q`` continues the chain of op ``p`` when both run in row bands (conv,
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

from ..arena import align_up
from ..bands.chains import MIN_ROWS, Chain, band_layout, band_rows, feeds, find_chains, new_rows
from ..bands.op_plan import OpPlan
from ..bands.tiling import TileSpec, line_bytes
from .plan import ALIGN, Planner, Pools, region_ranges

__all__ = ["MIN_ROWS", "Chain", "ChainPlanner", "band_layout", "band_rows", "feeds", "find_chains", "new_rows"]

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
