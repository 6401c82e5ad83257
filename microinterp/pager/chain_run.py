"""Running a fused chain (:mod:`.fusion`) out of core: the engine's loop for ops whose intermediates stay in the arena.

Resident weights and whole inputs of every op first; then per band every op's new rows, intermediates in line buffers
in the input pool (:class:`~.fusion.LineBuffer`), the last op's band written to the card. Each op's record gets one
tile per band in which it computed rows. The weights of every op sit at the weights pool's end and the rest of that
pool joins the input pool (``fusion.ChainPlanner`` sized the chain for exactly this region).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..bands.chains import LineBuffer, new_rows
from ..bands.tiling import BandViews
from ..runtime.profile import OpRecord, TileRecord
from .plan import PoolBuffers


def run_chain(engine: Any, chain: Any, bufs: PoolBuffers, records: dict[int, OpRecord], only: list[int] | None = None,
              depth: int = 0) -> None:
    """Run ``chain`` band by band (:mod:`.fusion`): resident weights and whole inputs of every op first, then per
    band every op's new rows, intermediates in line buffers in the input pool, the last op's band written to
    the card. Each op's records get one tile per band in which it computed rows."""
    plans, tensors, views = chain.plans, engine.tensors, engine.views
    joint = getattr(bufs, "joint", None)
    if joint is not None:       # the weights at the weights pool's end, the rest of it joins the input pool
        room = joint.nbytes - chain.weights
        bufs = PoolBuffers(joint[:room], joint[room:], bufs.output)
    else:                       # a recovery's host buffers: one region, split the same way
        region = np.concatenate([bufs.input, bufs.weights])
        room = region.nbytes - chain.weights
        bufs = PoolBuffers(region[:room], region[room:], bufs.output)
    bufs.reset("output", 0)
    setups, flash_fixed, firsts = [], [], []
    for p in plans:         # chain ops stream no filter: every card constant is resident
        t0 = time.perf_counter()
        setup = TileRecord(-1)
        flash_fixed.append(engine._read_residents(p, bufs, setup, depth))
        setups.append(setup)
        firsts.append(True)
        records[p.index].host_seconds += time.perf_counter() - t0
    lines = []
    for cap, ti in zip(chain.capacity, chain.intermediates()):
        t = tensors[ti]
        shape = (t.shape[0], cap, *t.shape[2:])
        lines.append(LineBuffer(bufs.take("input", math.prod(shape) * t.dtype.itemsize).view(t.dtype)
                                .reshape(shape)))
    mark = bufs.mark("input")
    previous = None
    for tile in chain.tiles:
        if only is not None and tile.index not in only:
            continue
        rows = engine.band_rows(chain, tile)
        if previous is None or tile.index != previous + 1:       # the buffers do not hold the last band
            for line, (lo, _) in zip(lines, rows):
                line.restart(lo)
        previous = tile.index
        for i, (lo, hi) in enumerate(new_rows(rows, [line.done for line in lines])):
            t0 = time.perf_counter()
            p = plans[i]
            if i < len(lines):
                engine.execution.keep(lines[i], rows[i][0])
            if hi <= lo:
                continue
            rec = engine._new_tile(tile.index, (lo, hi), setups[i] if firsts[i] else None)
            bufs.reset("input", mark)
            inputs: dict[int, np.ndarray] = {}
            row0: dict[int, int] = {}
            for k, ti in enumerate(p.op.inputs):
                if ti < 0:
                    continue
                if i > 0 and k == chain.links[i - 1]:
                    inputs[k], row0[k] = lines[i - 1].read(*engine.input_rows(p, k, lo, hi))
                elif k in p.tiler.row_inputs:
                    qlo, qhi = engine.input_rows(p, k, lo, hi)
                    inputs[k], row0[k] = engine.read_region(ti, p.tiler.row_inputs[k], qlo, qhi, bufs, rec, depth)
                    if p.tiler.row_inputs[k] == 1 and qhi <= qlo:
                        row0[k] = 0
                else:
                    inputs[k] = views[ti]
            out_ti = p.op.outputs[0]
            if i < len(lines):
                views[out_ti] = lines[i].rows(lo, hi)
            else:
                bufs.reset("output", 0)
                t = tensors[out_ti]
                shape = (t.shape[0], hi - lo, *t.shape[2:])
                views[out_ti] = bufs.take("output", math.prod(shape) * t.dtype.itemsize).view(
                    t.dtype).reshape(shape)
            band = BandViews(inputs, row0, None, lo, 0, p.channel_tiles[0][1], engine.ctx)
            engine._read_flash(rec, flash_fixed[i])
            engine.execution.compute(p, band)
            engine.step(rec, "compute", "cpu", band.c1, 0)
            engine._charge(p, rec, firsts[i])
            if i == len(lines):
                engine._write_outputs(p, tile, rec)
            else:
                lines[i].produced(hi)
            engine._annotate(rec)
            records[p.index].tiles.append(rec)
            records[p.index].host_seconds += time.perf_counter() - t0
            firsts[i] = False

