"""The out-of-core engine: runs a prepared model tile by tile between the arena's pools and the SD image.

For every op (see :mod:`.tiling` for the three modes): resident constants that live on the SD card are read into
the weights pool once, resident non-row inputs into the input pool once; then for every output tile: read the
input row band(s) (one SD command per run of records, every record's checksum verified), for every channel tile
read the filter tile (alternating between the two halves of the weights pool) and compute into the output band,
then write the band back (one command, one checksum per record). Constants in flash are read in place.

Every tile is annotated with its work and its MCU cost (:mod:`.profile`). The plans are fixed once built, so every
invoke's tile records are the same: after the first complete invoke the engine keeps them and later invokes reuse
them (a throwaway record absorbs the counting) -- except with ``recover=True``, where a recovery adds reads to the
invoke it happens in, and in dry runs (:meth:`count`, for :meth:`Pager.simulate`), which always count afresh
with the :class:`~.execution.CountingExecution`: no byte moves and no kernel runs.

With ``recover=True`` a checksum failure on an activation record recomputes the producing op's tiles that wrote it
(recursively, from its own inputs) with buffers outside the arena, rewrites them and reads again; a corrupted weights
record is rewritten from the model (the card's original content). Each event is counted; a model input cannot be
recomputed and still raises.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..arena import align_up
from ..bands.chains import band_rows
from ..bands.op_plan import OpPlan
from ..bands.tiling import BandViews, line_bytes
from ..cost.mcu import McuProfile, op_class
from ..cost.work import op_work
from ..errors import IntegrityError
from ..kernels.pad import pad_input_rows, pad_rows
from ..runtime.profile import IoStep, OpRecord, TileRecord
from ..storage.format import RecordRun
from .chain_run import run_chain
from .execution import COUNTING, CountingExecution, LiveExecution
from .layout import Home
from .plan import ALIGN, PoolBuffers, region_ranges, row_runs

#: What an integrity error says to do (the CLI writes ``recover=True`` as ``--recover``).
REPAIR_HINT = ("to repair the image, run again with recover=True (on the command line: microinterp run MODEL "
               "--backing {path} --recover): damaged activations are recomputed and damaged weight records rewritten "
               "from the model (or delete the image: it is rebuilt)")


class Engine:
    """Executes the plans of an out-of-core interpreter (built by :class:`~microinterp.pager.Pager`)."""

    def __init__(self, pager: Any):
        # the pager's fixed state: its plans and chains, who produces each tensor, the pools, folded PADs
        self.plans: list[OpPlan] = pager.plans
        self.chain_of: dict[int, Any] = pager.chain_of
        self.producer: dict[int, int] = pager.producer
        self.pools = pager.pools
        self.virtual = pager.virtual
        self.current_record = OpRecord(-1, "", "", "")
        self.tensors = pager.tensors
        self.homes: list[Home | None] = pager.homes
        self.sd = pager.sd
        self.mcu: McuProfile = pager.mcu
        self.kernels = pager.cost_kernels
        self.views = pager.views
        self.ctx = pager.ctx
        self.recover = pager.recover
        self.recoveries: list[dict[str, Any]] = []
        # the effects of an invoke (storage IO, kernels); :meth:`count` swaps in the counting execution
        self.execution: LiveExecution | CountingExecution = LiveExecution(self.sd, self.ctx, self.views)
        # the plans and chains are fixed once built, so the row arithmetic of every band is too: computed once
        self._input_rows: dict[tuple, Any] = {}
        self._band_rows: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
        # the tile records of the last complete counted invoke (per op), reused by later invokes
        self._template: list[list[TileRecord]] | None = None
        self._recording = True
        self._null = TileRecord(-1)     # the throwaway record while records are reused: it keeps no steps

    def input_rows(self, plan: OpPlan, k: int, lo: int, hi: int) -> tuple[int, int]:
        """``plan.tiler.input_rows`` for output rows ``[lo, hi)``, remembered per plan, input and rows."""
        key = (plan.index, k, lo, hi)
        rows = self._input_rows.get(key)
        if rows is None:
            rows = self._input_rows[key] = plan.tiler.input_rows(plan.data, k, lo, hi)
        return rows

    def row_runs(self, plan: OpPlan, k: int, lo: int, hi: int) -> list[tuple[int, int]]:
        """:func:`.plan.row_runs` for output rows ``[lo, hi)``, remembered per plan, input and rows."""
        key = (plan.index, k, lo, hi, "runs")
        runs = self._input_rows.get(key)
        if runs is None:
            runs = self._input_rows[key] = row_runs(plan, k, lo, hi, plan.op.inputs[k] in self.virtual)
        return runs

    def band_rows(self, chain: Any, tile: Any) -> list[tuple[int, int]]:
        """:func:`.fusion.band_rows` of a chain's tile, remembered per chain (by its last op) and tile."""
        key = (chain.last.index, tile.y0, tile.y1)
        rows = self._band_rows.get(key)
        if rows is None:
            rows = self._band_rows[key] = band_rows(chain, self.tensors, tile.y0, tile.y1)
        return rows

    # -- SD access with counting (and recovery) ----------------------------------------------------------------------
    def step(self, rec: TileRecord, *fields: Any) -> None:
        """Append the typed step ``IoStep(*fields)`` to ``rec``; nothing for the throwaway record of a reused
        invoke (no step built either: this runs for every command and channel tile)."""
        if rec is not self._null:
            rec.io.append(IoStep(*fields))

    def _count_read(self, rec: TileRecord, run: RecordRun, pool: str, home: Home, r0: int, r1: int, role: str) -> None:
        rec.sd_read_commands += 1
        rec.sd_read_payload += run.payload
        rec.sd_read_bytes += run.span
        self.step(rec, "read", pool, run.span, run.payload, role, home.device, home.offset, r0 * home.record_bytes,
                  min(r1 * home.record_bytes, home.nbytes))

    def read_records(self, home: Home, r0: int, r1: int, out: np.ndarray, rec: TileRecord,
                     depth: int = 0, pool: str = "input", role: str = "resident") -> None:
        """Records ``[r0, r1)`` of ``home`` into ``out`` with one SD command, counted in ``rec`` as a read step of
        ``role`` (:class:`~.profile.IoStep`); a checksum failure is recovered (``recover=True``) and read again."""
        run = home.run(r0, r1)
        self._count_read(rec, run, pool, home, r0, r1, role)
        try:
            self.execution.read(home.device, home.record_offset(r0), run, out)
        except IntegrityError as e:
            if not self.recover:
                e.args = (f"{e}; {REPAIR_HINT.format(path=self.sd.path)}",)
                raise
            self._recover(home, r0, r1, depth)
            self._count_read(rec, run, pool, home, r0, r1, role)
            self.execution.read(home.device, home.record_offset(r0), run, out)

    def write_records(self, home: Home, r0: int, r1: int, data: np.ndarray, rec: TileRecord) -> None:
        run = home.run(r0, r1)
        self.execution.write("activations", home.record_offset(r0), run, data)
        rec.sd_write_commands += 1
        rec.sd_write_payload += run.payload
        rec.sd_write_bytes += run.span
        self.step(rec, "write", "output", run.span, run.payload, "", home.device, home.offset,
                  r0 * home.record_bytes, min(r1 * home.record_bytes, home.nbytes))

    def _recover(self, home: Home, r0: int, r1: int, depth: int) -> None:
        if depth > len(self.plans):
            raise IntegrityError(f"recovery of tensor {home.name!r} does not terminate")
        event = {"tensor": home.tensor, "name": home.name, "records": (r0, r1), "area": home.device}
        if home.device == "weights":
            t = self.tensors[home.tensor]
            raw = np.asarray(t.data).reshape(-1).view(np.uint8)
            rb = home.record_bytes
            for r in range(r0, r1):
                self.sd.repair_weights(home.record_offset(r), raw[r * rb:min((r + 1) * rb, home.nbytes)],
                                       key=home.key(r))
            event["action"] = "weights rewritten from the model"
        else:
            producer = self.producer.get(home.tensor)
            if producer is None:
                raise IntegrityError(f"tensor {home.name!r} records {r0}..{r1 - 1} are corrupted and it is a model "
                                     "input: nothing to recompute it from")
            plan = self.plans[producer]
            chain = self.chain_of.get(producer)
            lo, hi = r0 * home.record_bytes, min(r1 * home.record_bytes, home.nbytes)
            spans = [(t, self._tile_bytes(plan, t, home.tensor)) for t in (chain.tiles if chain else plan.tiles)]
            tiles = [t for t, (t_lo, t_hi) in spans if t_lo < hi and t_hi > lo]
            host = PoolBuffers(np.zeros(self.pools.input, np.uint8), np.zeros(self.pools.weights, np.uint8),
                            np.zeros(self.pools.output, np.uint8))
            scratch = OpRecord(plan.index, plan.op.key, op_class(plan.op.key), plan.mode)
            if chain is not None:       # the chain's tiles again (its intermediates are never on the card)
                sink = {p.index: OpRecord(p.index, p.op.key, op_class(p.op.key), "chain") for p in chain.plans}
                sink[plan.index] = scratch
                self.run_chain(chain, host, sink, only=[t.index for t in tiles], depth=depth + 1)
                for r in sink.values():
                    if r is not scratch:
                        scratch.tiles.extend(r.tiles)
            else:
                self.run_op(plan, host, scratch, only=[t.index for t in tiles], depth=depth + 1)
            event.update(action="recomputed", producer=plan.index, tiles=[t.index for t in tiles],
                         sd_read_bytes=scratch.sd_read_bytes, sd_write_bytes=scratch.sd_write_bytes)
        self.recoveries.append(event)
        self.current_record.recoveries += 1

    def _tile_bytes(self, plan: OpPlan, tile: Any, ti: int) -> tuple[int, int]:
        """Bytes ``[lo, hi)`` of output tensor ``ti`` that ``tile`` writes: its rows along axis 1 (whatever axis the
        tensor's records are cut along), or the whole tensor."""
        t = self.tensors[ti]
        if plan.mode != "rows":
            return 0, t.nbytes
        line = line_bytes(t.shape, t.dtype.itemsize, 1)
        return tile.y0 * line, tile.y1 * line

    # -- reading regions ---------------------------------------------------------------------------------------------
    def read_region(self, ti: int, axis: int, lo: int, hi: int, bufs: PoolBuffers, rec: TileRecord,
                    depth: int) -> tuple[np.ndarray, int]:
        """Input rows ``[lo, hi)`` along ``axis`` of tensor ``ti`` as an array of the tensor's dtype (and the row
        its first index is)."""
        t, home = self.tensors[ti], self.homes[ti]
        shape = list(t.shape)
        if hi <= lo:
            shape[axis] = 0
            return np.zeros(shape, t.dtype), lo
        pad = self.virtual.get(ti)
        if pad is not None:     # a fused PAD: read its input rows, pad them into a band of the input pool
            plo, phi = pad_input_rows(pad.data, lo, hi)
            reads = len(rec.io)
            x, x_row0 = self.read_region(pad.op.inputs[0], 1, plo, phi, bufs, rec, depth)
            shape[1] = hi - lo
            nbytes = math.prod(shape) * t.dtype.itemsize
            if len(rec.io) > reads:     # the padded band lives as long as the last read it is built from
                rec.io[-1] = rec.io[-1]._replace(band=align_up(nbytes, ALIGN))
            band = bufs.take("input", nbytes).view(t.dtype).reshape(shape)
            pad_rows(pad.data, x, x_row0, band, lo, pad.data.fill)
            return band, lo
        pieces = []
        for blo, bhi in region_ranges(t, axis, lo, hi):
            r0, r1 = home.record_range(blo, bhi)
            start = r0 * home.record_bytes
            nbytes = min(r1 * home.record_bytes, home.nbytes) - start
            buf = bufs.take("input", nbytes)
            self.read_records(home, r0, r1, buf, rec, depth, role="band")
            pieces.append(buf[blo - start:bhi - start])
        shape[axis] = hi - lo
        if len(pieces) == 1:
            return pieces[0].view(t.dtype).reshape(shape), lo
        return np.concatenate(pieces).view(t.dtype).reshape(shape), lo

    def read_whole(self, ti: int, pool: str, bufs: PoolBuffers, rec: TileRecord, depth: int) -> np.ndarray:
        t, home = self.tensors[ti], self.homes[ti]
        buf = bufs.take(pool, home.nbytes)
        if home.records:
            self.read_records(home, 0, home.records, buf, rec, depth, pool)
        return buf.view(t.dtype).reshape(t.shape)

    # -- running one op ----------------------------------------------------------------------------------------------
    def run_op(self, plan: OpPlan, bufs: PoolBuffers, record: OpRecord, only: list[int] | None = None,
               depth: int = 0) -> None:
        if plan.mode in ("alias", "fused"):   # shares its input's records / built inside its reader's reads
            return
        op = plan.op
        bufs.reset("weights")
        bufs.reset("input")
        setup = TileRecord(-1)
        flash_fixed = self._read_residents(plan, bufs, setup, depth)
        w_mark, in_mark = bufs.mark("weights"), bufs.mark("input")
        half = (bufs.weights.nbytes - w_mark) // 2
        filt_k = plan.streamed
        filt_ti = op.inputs[filt_k] if filt_k is not None else -1
        first = True
        reduce = plan.mode == "reduce"      # bands of input rows into one resident output, written after the last
        if reduce:
            bufs.reset("output", 0)
            self._tile_outputs(plan, plan.tiles[0], bufs)
            self.execution.start_reduction(plan)
        for tile in plan.tiles:
            if only is not None and tile.index not in only and not reduce:
                continue
            rec = self._new_tile(tile.index, (tile.y0, tile.y1) if plan.mode in ("rows", "reduce") else None,
                                 setup if first else None)
            bufs.reset("input", in_mark)
            if not reduce:
                bufs.reset("output", 0)
            band = self._tile_inputs(plan, tile, bufs, rec, depth)
            if not reduce:
                self._tile_outputs(plan, tile, bufs)
            self._read_flash(rec, flash_fixed)
            for n, (c0, c1) in enumerate(tile.channel_tiles):
                if filt_k is not None:      # the filter streams: channel tile n into half n % 2 of the pool
                    bufs.reset("weights", w_mark + (n % 2) * half)
                    band.inputs[filt_k] = self._read_channels(filt_ti, self.homes[filt_ti], c0, c1, bufs, rec,
                                                              depth)
                    self._slice_bias(plan, band, c0, c1)
                band.c0, band.c1 = c0, c1
                self.execution.compute(plan, band)
                self.step(rec, "compute", "cpu", c1 - c0, 0)
            if filt_k is not None:
                rec.channels = (tile.channel_tiles[0][0], tile.channel_tiles[-1][1])
            self._charge(plan, rec, first)
            last = tile is plan.tiles[-1]
            if reduce and last:
                self.execution.finish_reduction(plan)
            if last or not reduce:          # a reduction's output is written once, after its last band
                self._write_outputs(plan, tile, rec)
            self._annotate(rec)
            record.tiles.append(rec)
            first = False

    def _read_residents(self, plan: OpPlan, bufs: PoolBuffers, setup: TileRecord, depth: int) -> int:
        """An op's resident inputs, read once and charged to ``setup``: SD constants (except a streamed filter)
        into the weights pool, non-row activation inputs into the input pool. Returns the bytes of its constants
        in flash (read in place by every tile)."""
        flash = 0
        for k, ti in enumerate(plan.op.inputs):
            home = self.homes[ti] if ti >= 0 else None
            if home is None or k == plan.streamed:
                continue
            if home.device == "flash":
                flash += home.nbytes
            elif home.device == "weights":
                self.views[ti] = self.read_whole(ti, "weights", bufs, setup, depth)
            elif k not in plan.tiler.row_inputs:
                self.views[ti] = self.read_whole(ti, "input", bufs, setup, depth)
        return flash

    def _new_tile(self, index: int, rows: tuple[int, int] | None, setup: TileRecord | None) -> TileRecord:
        """A tile's record; the op's resident reads (``setup``) are charged to its first tile. While the engine
        reuses its records, the throwaway one."""
        if not self._recording:
            return self._null
        rec = TileRecord(index, rows)
        if setup is not None:
            for f in TileRecord.__dataclass_fields__:
                if f not in ("index", "rows", "channels"):
                    setattr(rec, f, getattr(setup, f))
            rec.io = list(setup.io)
        return rec

    def _read_flash(self, rec: TileRecord, flash: int) -> None:
        """Every tile reads the op's flash constants in place (after its band reads, before computing)."""
        rec.flash_read_bytes += flash
        if flash:
            self.step(rec, "flash", "weights", flash, flash)

    def _charge(self, plan: OpPlan, rec: TileRecord, first: bool) -> None:
        """A tile's work (MACs, elements of its rows, cached per plan) and compute cycles; the first tile of an op
        also pays the op's fixed cost and TFLM's per-op overhead."""
        if not self._recording:
            return
        work = plan.work.get(rec.rows)
        if work is None and plan.mode == "reduce":     # a band of input rows: its share of the whole op's work
            height = max(self.tensors[plan.op.inputs[0]].shape[1], 1)
            whole = op_work(plan.op, self.tensors)
            work = plan.work[rec.rows] = tuple(v * (rec.rows[1] - rec.rows[0]) // height for v in whole)
        elif work is None:
            work = plan.work[rec.rows] = op_work(plan.op, self.tensors, rows=rec.rows)
        rec.macs, rec.elements = work
        if plan.cost is None:   # the whole op's cycles, its fixed part, and its whole work (MACs, else elements)
            op, ts = plan.op, self.tensors
            total = op_work(op, ts)
            plan.cost = (self.mcu.op_cycles(op, ts, self.kernels), self.mcu.op_fixed_cycles(op, ts, self.kernels),
                         total[0] or total[1])
        cycles, fixed, whole = plan.cost
        share = (rec.macs or rec.elements) / whole if whole else 1.0
        rec.compute_cycles = (cycles - fixed) * share + \
            (fixed + self.mcu.interpreter_cycles_per_op if first else 0)

    def _slice_bias(self, plan: OpPlan, band: BandViews, c0: int, c1: int) -> None:
        op = plan.op
        if len(op.inputs) > 2 and op.inputs[2] >= 0:
            band.inputs[2] = self.views[op.inputs[2]][c0:c1]

    def _read_channels(self, ti: int, home: Home, c0: int, c1: int, bufs: PoolBuffers, rec: TileRecord,
                       depth: int) -> np.ndarray:
        t = self.tensors[ti]
        r0, r1 = home.record_range(c0 * home.row_bytes, c1 * home.row_bytes)
        start = r0 * home.record_bytes
        nbytes = min(r1 * home.record_bytes, home.nbytes) - start
        buf = bufs.take("weights", nbytes)
        self.read_records(home, r0, r1, buf, rec, depth, "weights", "stream")
        lo = c0 * home.row_bytes - start
        return buf[lo:lo + (c1 - c0) * home.row_bytes].view(t.dtype).reshape((c1 - c0,) + tuple(t.shape[1:]))

    def _tile_inputs(self, plan: OpPlan, tile: Any, bufs: PoolBuffers, rec: TileRecord, depth: int) -> BandViews:
        op, views = plan.op, self.views
        inputs: dict[int, np.ndarray] = {}
        row0: dict[int, int] = {}
        gathered: dict[int, list[tuple[int, int]]] = {}
        for k, ti in enumerate(op.inputs):
            if ti < 0:
                continue
            if plan.mode in ("rows", "reduce") and k in plan.tiler.row_inputs:
                runs = self.row_runs(plan, k, tile.y0, tile.y1)
                if len(runs) > 1:       # rows with gaps between them: each run read, handed over one after another
                    parts = [self.read_region(ti, 1, lo, hi, bufs, rec, depth)[0] for lo, hi in runs]
                    inputs[k], row0[k] = np.concatenate(parts, axis=1), runs[0][0]
                    gathered[k] = runs
                    continue
                lo, hi = self.input_rows(plan, k, tile.y0, tile.y1)
                inputs[k], row0[k] = self.read_region(ti, plan.tiler.row_inputs[k], lo, hi, bufs, rec, depth)
                if plan.tiler.row_inputs[k] == 1 and hi <= lo:
                    row0[k] = 0
            else:
                inputs[k] = views[ti]
        return BandViews(inputs, row0, None, tile.y0, 0, 0, self.ctx, runs=gathered)

    def _tile_outputs(self, plan: OpPlan, tile: Any, bufs: PoolBuffers) -> None:
        for ti in plan.op.outputs:
            if ti < 0 or self.homes[ti] is None:
                continue
            t = self.tensors[ti]
            shape = list(t.shape)
            if plan.mode == "rows":
                shape[1] = tile.y1 - tile.y0
            view = bufs.take("output", math.prod(shape) * t.dtype.itemsize).view(t.dtype)
            self.views[ti] = view.reshape(shape)

    def _write_outputs(self, plan: OpPlan, tile: Any, rec: TileRecord) -> None:
        for ti in plan.op.outputs:
            home = self.homes[ti] if ti >= 0 else None
            if home is None:
                continue
            lo, hi = self._tile_bytes(plan, tile, ti)
            if hi > lo:
                r0, r1 = home.record_range(lo, hi)
                self.write_records(home, r0, r1, self.views[ti], rec)

    def _annotate(self, rec: TileRecord) -> None:
        if not self._recording:
            return
        mcu = self.mcu
        rec.io_cycles = (mcu.flash_cycles(rec.flash_read_bytes)
                         + (mcu.sd_io_cycles(rec.sd_read_bytes, rec.sd_read_commands) if rec.sd_read_commands else 0)
                         + (mcu.sd_io_cycles(rec.sd_write_bytes, rec.sd_write_commands, write=True)
                            if rec.sd_write_commands else 0))
        hashed = rec.sd_read_payload + rec.sd_write_payload
        if not hashed:
            rec.hash_cycles = 0.0
        elif self.sd.encrypted:         # AES-GCM replaces the checksum: sealing / opening every record byte
            rec.hash_cycles = mcu.crypto_cycles(hashed)
        else:
            rec.hash_cycles = mcu.hash_cycles(hashed, self.sd.checksum.name)

    # -- a whole invoke ----------------------------------------------------------------------------------------------
    def invoke(self, bufs: PoolBuffers, progress: Any = None) -> list[OpRecord]:
        """Run every op (or chain) once; the per-op records (reused tiles after the first counted invoke, see the
        module docstring)."""
        replay = self._template is not None and not self.recover
        self._recording = not replay
        try:
            records = self._invoke(bufs, progress)
        finally:
            self._recording = True
        if replay:
            for record, tiles in zip(records, self._template):
                record.tiles = list(tiles)
        elif not self.recover:
            self._template = [list(r.tiles) for r in records]
        return records

    def count(self, bufs: PoolBuffers) -> list[OpRecord]:
        """The records an invoke would produce, counted afresh with the counting execution (a dry run)."""
        live, self.execution = self.execution, COUNTING
        try:
            return self._invoke(bufs, None)
        finally:
            self.execution = live

    def _invoke(self, bufs: PoolBuffers, progress: Any) -> list[OpRecord]:
        records = []
        by_index: dict[int, OpRecord] = {}
        for plan in self.plans:
            chain = self.chain_of.get(plan.index)
            record = OpRecord(plan.index, plan.op.key, op_class(plan.op.key), "chain" if chain else plan.mode,
                              chain=chain.last.index if chain else None)
            by_index[plan.index] = record
            self.current_record = record
            if chain is None:
                t0 = time.perf_counter()
                self.run_op(plan, bufs, record)
                record.host_seconds = time.perf_counter() - t0
            elif plan is chain.last:        # the chain runs when its last op's turn comes
                self.run_chain(chain, bufs, by_index)
            records.append(record)
            if progress is not None:
                progress(len(records), len(self.plans), record)
        return records

    # -- running a fused chain ---------------------------------------------------------------------------------------
    def run_chain(self, chain: Any, bufs: PoolBuffers, records: dict[int, OpRecord], only: list[int] | None = None,
                  depth: int = 0) -> None:
        """Run ``chain`` band by band: :func:`.chain_run.run_chain`."""
        run_chain(self, chain, bufs, records, only, depth)
