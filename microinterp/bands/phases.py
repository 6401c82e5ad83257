"""Phased execution in memory: the runtime of ``Interpreter(..., planner="phased")`` (the plan is
:mod:`microinterp.planner.phased`'s).

Every segment runs when its last op's turn comes, band by band, with the kernels' band functions -- the same ones
the out-of-core tiles call (:mod:`microinterp.bands.tiling`: the optimized CONV_2D / DEPTHWISE_CONV_2D band GEMMs
when the interpreter is optimized, the reference ``pool_rows`` / ``pad_rows``, elementwise ``invoke`` on band
views) -- and the line buffers of :class:`~microinterp.bands.chains.LineBuffer`. All views are fixed arena views, so
the whole band schedule of a segment is worked out once at build time as a list of steps (move the overlap rows of
a line buffer to its front; compute one op's new rows); an invoke replays the steps.

The ops are prepared a second time for bands (``weights_resident = False`` on a sizing arena, as out of core:
the optimized convolutions then keep per-channel metadata for their band functions); the interpreter's own prepare
keeps deciding the arena tail, so the tail is TFLM's. Ops with scratch buffers, and ops of plugins or explicit
registrations, run whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arena import SizingArena
from ..kernels.base import InvokeContext, PrepareContext
from .chains import LineBuffer, new_rows
from .op_plan import OpPlan
from .tiling import WHOLE, BandViews, band_kernel, has_bands, is_builtin, tiler_for


def band_plans(model: Any, resolver: Any, optimized: bool) -> list[OpPlan]:
    """The main subgraph's ops with their band kernels, band-prepared data and tilers (a whole tiler for ops that
    must run whole)."""
    sg = model.main
    ctx = PrepareContext(model, sg, SizingArena())
    ctx.weights_resident = False
    plans = []
    for op in sg.operators:
        kernel = band_kernel(resolver, op.key, optimized)
        shipped = resolver.shipped(op.key)
        if not (is_builtin(kernel) or has_bands(op, kernel, shipped)) or op.subgraph_refs:
            plans.append(OpPlan(op.index, op, kernel, None, WHOLE))
            continue
        before = len(ctx.scratch_requests)
        data = kernel.prepare(ctx, op)
        tiler = tiler_for(op, data, sg.tensors, kernel, shipped) if len(ctx.scratch_requests) == before else WHOLE
        if len(op.outputs) != 1:        # phases carry one band per op: a SPLIT's several outputs run whole there
            tiler = WHOLE
        plans.append(OpPlan(op.index, op, kernel, data, tiler))
    return plans


class SegmentRun:
    """One segment of a phased plan as a call without arguments, over the interpreter's views (line buffers for
    its intermediates, whole tensors for the rest)."""

    def __init__(self, segment: Any, views: list[np.ndarray | None], scratch_views: list[np.ndarray]):
        # elementwise tilers point the context's views at the bands: a private list, not the interpreter's
        self.ctx = InvokeContext(list(views), scratch_views)
        plans = segment.chain.plans
        lines = [LineBuffer(views[ti]) for ti in segment.intermediates()]
        out = views[segment.output]
        steps: list[tuple] = []
        for b, tile in enumerate(segment.tiles):
            rows = segment.rows[b]
            if b == 0:
                for line, (lo, _) in zip(lines, rows):
                    line.restart(lo)
            for i, (lo, hi) in enumerate(new_rows(rows, [line.done for line in lines])):
                sources = segment.chain.sources(i)
                if i < len(lines):
                    moved = lines[i].keep(rows[i][0], move=False)
                    if moved is not None:
                        steps.append((None, lines[i].array, moved))
                if hi <= lo:
                    continue
                p = plans[i]
                inputs: dict[int, np.ndarray] = {}
                row0: dict[int, int] = {}
                for k, ti in enumerate(p.op.inputs):
                    if ti < 0:
                        continue
                    if k in sources:
                        inputs[k], row0[k] = lines[sources[k]].read(*p.tiler.input_rows(p.data, k, lo, hi))
                    elif k in p.tiler.row_inputs:
                        inputs[k], row0[k] = _rows(views[ti], p.tiler.row_inputs[k],
                                                   *p.tiler.input_rows(p.data, k, lo, hi))
                    else:
                        inputs[k] = views[ti]
                band_out = lines[i].rows(lo, hi) if i < len(lines) else out[:, lo:hi]
                steps.append((p, inputs, row0, band_out, lo, band_out.shape[-1]))
                if i < len(lines):
                    lines[i].produced(hi)
        self.steps = steps

    def __call__(self) -> None:
        ctx = self.ctx
        for step in self.steps:
            p = step[0]
            if p is None:                   # the overlap rows of a line buffer move to its front
                array, (a, b) = step[1], step[2]
                array[:, :b - a] = array[:, a:b].copy()
                continue
            _, inputs, row0, out, y0, c1 = step
            p.tiler.compute(p.kernel, p.op, p.data, BandViews(inputs, row0, out, y0, 0, c1, ctx))


def _rows(view: np.ndarray, axis: int, lo: int, hi: int) -> tuple[np.ndarray, int]:
    """Rows ``[lo, hi)`` of a whole tensor along ``axis`` and the row its first index is (as the pager reads)."""
    lo, hi = max(lo, 0), min(hi, view.shape[axis])
    hi = max(hi, lo)
    index = (slice(None),) * axis + (slice(lo, hi),)
    return view[index], (lo if hi > lo or axis != 1 else 0)
