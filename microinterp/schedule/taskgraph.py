"""The task graph of out-of-core invokes, built from the pager's own tile records.

One source of truth: every task comes from a step of a :class:`~microinterp.runtime.profile.TileRecord` ``io`` list
(what :meth:`Interpreter.simulate` / ``invoke`` record), so the graph moves exactly the tiles, commands and bytes the
pager moves. Per frame and per tile, in the tile's step order:

- ``read`` (IO resource): one task per SD read command, into the ``input`` or ``weights`` pool; its buffer is the
  payload it reads (aligned to 16 bytes, as the engine's bump allocator takes it);
- ``compute`` (CPU): one task per channel tile computed; the tile's ``compute_cycles`` are split over its compute
  steps in proportion to their channels; in-place flash reads (``flash`` steps) are CPU time too (the kernel reads
  flash through the bus) and go to the tile's first compute; the first compute of a tile allocates the tile's
  output band in the ``output`` pool;
- ``write`` (IO): one task per SD write command; the tile's last write frees its output band.

Durations: ``McuProfile.sd_io_cycles(physical bytes, 1, write)`` per command. Checksums (``hash_cycles``): when the
profile has a hash engine for the image's algorithm (the STM32F746's CRC unit for crc32) the engine checks each
record as the DMA moves it, so a command's checksum cycles are added to that IO task (the IO chain is DMA + CRC
unit, serial); without an engine the CPU verifies what it read before computing and checksums what it writes
before the write is issued, so the tile's checksum cycles are added to its compute tasks.

Edges (data dependencies, plus the SwapNN order): a tile's input reads precede its weight reads (so weight reads
overlap compute); each compute needs every read before it in its tile; each write needs the tile's last compute;
a read of an activation needs the writes that produced the records it covers (exact byte ranges: every read and write
step is a typed :class:`~microinterp.runtime.profile.IoStep` that names its role, the tensor's home and the bytes it
moves, recorded by the engine as it issues the command; steps without them, as a profile's JSON has them, fall back
to per-layer barriers and say so in :attr:`TaskGraph.precise`). Across frames, frame f+1 may overwrite a tensor's records only after frame f
read them (a zero-time ``join`` task per tensor collects frame f's reads).

Buffers: a read holds its buffer until the last compute that uses it (a streamed weight tile: its compute; an input
band: the tile's last compute; an op's resident reads, which the pager charges to its first tile: the op's last
compute); a compute's output band is held until the tile's last write. ``seq`` is the pager's sequential order
within a frame; the sequential pool usage along it (:attr:`TaskGraph.peak`) is what the engine uses, and what the
simulator's deadlock-free allocation rule relies on (:mod:`.simulator`).

Options (scheduling ideas, see docs/scheduler.md): ``input_reuse=False`` builds SwapNN's task graph where every
compute task reads its own input tile (the pager keeps the input band resident across the channel tiles of a
streamed filter — the default, and what the counters match). It moves more bytes than the pager (``TaskGraph.totals``
says how many); the default moves exactly the pager's bytes. ``single_buffer_io_bound=True`` reads the next weight tile
of an IO-bound op (its IO cycles exceed its compute cycles: FULLY_CONNECTED, most depthwise layers) only after the
previous tile's compute: prefetching buys such an op almost nothing (the CPU waits for the card either way) and it
leaves half of the weights pool to the next frame when frames are pipelined. Same bytes.
"""

from __future__ import annotations

import bisect
from typing import Any

from ..arena import align_up
from ..pager.plan import ALIGN
from .tasks import COMPUTE, JOIN, POOLS, READ, WRITE, Task, TaskGraph


# -- building ----------------------------------------------------------------------------------------------------------
class _Builder:
    def __init__(self, records: list[Any], mcu: Any, checksum: str, hash_on_cpu: bool, input_reuse: bool,
                 single_buffer_io_bound: bool = False):
        self.records, self.mcu = records, mcu
        self.checksum, self.hash_on_cpu = checksum, hash_on_cpu
        self.input_reuse = input_reuse
        self.single_buffer_io_bound = single_buffer_io_bound
        self.tasks: list[Task] = []
        self.precise = True         # until a read or write step without its location turns up
        self.next_buf = 0

    def _sequence(self) -> Any:
        """``(record, tiles)`` in execution order: the ops of a fused chain (records with ``chain`` set) take turns
        band by band when the chain's last op's turn comes."""
        members: dict[int, list[Any]] = {}
        for rec in self.records:
            if getattr(rec, "chain", None) is not None:
                members.setdefault(rec.chain, []).append(rec)
        for rec in self.records:
            chain = getattr(rec, "chain", None)
            if chain is None:
                yield rec, rec.tiles
                continue
            if rec.index != chain:
                continue
            bands = sorted({t.index for t in rec.tiles})
            for band in bands:
                for m in members[chain]:
                    ts = [t for t in m.tiles if t.index == band]
                    if ts:
                        yield m, ts

    def new(self, kind: str, frame: int, op: int, layer: int, tile: int, seq: int) -> Task:
        t = Task(len(self.tasks), kind, frame, op, layer, tile, seq)
        self.tasks.append(t)
        return t

    def buf(self) -> int:
        self.next_buf += 1
        return self.next_buf - 1

    @staticmethod
    def edge(a: Task, b: Task) -> None:
        a.succ.append(b.id)
        b.npred += 1

    def io_cycles(self, nbytes: int, payload: int, write: bool) -> tuple[float, float]:
        io = self.mcu.sd_io_cycles(nbytes, 1, write=write)
        h = self.mcu.hash_cycles(payload, self.checksum) if payload else 0.0
        return io, h

    def frame(self, f: int) -> tuple[list[Task], dict[int, list[Task]],
                                                              dict[int, list[Task]], dict[Any, list[Task]]]:
        """Tasks of frame ``f``; returns (tasks in seq order, writes by home offset and op/tile, reads by home)."""
        seq = 0
        order: list[Task] = []
        writes: dict[tuple[int, int], list[Task]] = {}      # (op, tile) -> its writes
        writes_of: dict[int, list[Task]] = {}               # home offset -> writes (fallback barrier)
        reads_of: dict[int, list[Task]] = {}                # home offset -> reads of that activation
        pending_deps: list[tuple[Task, int, int, int]] = []
        chain_last: dict[int, Task] = {}                    # fused chain -> its last compute so far
        # activation home -> [(byte lo, byte hi, op, tile)] of the writes that produce it
        producers: dict[int, list[tuple[int, int, int, int]]] = {}
        for layer, (rec, tiles) in enumerate(self._sequence()):
            if not rec.tiles:
                continue
            op_resident: list[tuple[str, int, int]] = []
            last_compute_of_op: Task | None = None
            io_bound = self.single_buffer_io_bound and rec.bound == "io"
            in_chain = getattr(rec, "chain", None) is not None
            for tile in tiles:
                chan_total = sum(e[2] for e in tile.io if e[0] == "compute") or 1
                computes = [e for e in tile.io if e[0] == "compute"]
                n_comp = len(computes)
                flash = sum(e[2] for e in tile.io if e[0] == "flash")
                sw_hash = tile.hash_cycles if self.hash_on_cpu else 0.0
                band_bufs: list[tuple[str, int, int]] = []
                stream_buf: tuple[str, int, int] | None = None
                pre: list[Task] = []             # reads since the last compute
                first_input: Task | None = None
                last_input: Task | None = None
                band_reads: list[tuple[Task, int]] = []
                out_payload = sum(align_up(e[3], ALIGN) for e in tile.io if e[0] == "write")
                out_buf = (self.buf(), out_payload)
                compute_tasks: list[Task] = []
                cn = 0
                for step_i, step in enumerate(tile.io):
                    kind = step[0]
                    if kind == "read":
                        pool, physical, payload = step[1], step[2], step[3]
                        t = self.new(READ, f, rec.index, layer, tile.index, seq)
                        seq += 1
                        t.pool, t.nbytes, t.payload = pool, physical, payload
                        t.alloc, t.buffer, t.buf_id = pool, align_up(payload, ALIGN), self.buf()
                        if in_chain and pool == "input":    # inside the chain's region (input pool + the weights
                            t.buffer = 0                    # pool's rest, planned by fusion.py): not counted here
                        io, h = self.io_cycles(physical, payload, False)
                        t.cycles = io + (0.0 if self.hash_on_cpu else h)
                        t.hash_cycles = h
                        if _located(step):
                            role = step.role
                            if step.band and not in_chain:  # a fused PAD's band lives with this read
                                t.buffer += step.band
                            if step.area == "activations":
                                pending_deps.append((t, step.home, step.lo, step.hi))
                                reads_of.setdefault(step.home, []).append(t)
                        else:
                            self.precise = False
                            role = _guess_role(rec, tile, step_i, pool)
                        entry = (pool, t.buffer, t.buf_id)
                        if role == "resident":
                            op_resident.append(entry)
                        elif role == "band":
                            band_bufs.append(entry)
                            band_reads.append((t, len(pre)))
                        else:
                            stream_buf = entry
                            if io_bound and compute_tasks:     # single-buffered: after the previous tile's compute
                                self.edge(compute_tasks[-1], t)
                        if pool == "input":
                            first_input = first_input or t
                            last_input = t
                        elif last_input is not None:
                            self.edge(last_input, t)       # the input tile is read before its weight tiles
                        pre.append(t)
                        order.append(t)
                    elif kind == "compute":
                        c = self.new(COMPUTE, f, rec.index, layer, tile.index, seq)
                        seq += 1
                        share = step[2] / chan_total if chan_total else 1.0 / n_comp
                        c.channels = step[2]
                        c.cycles = tile.compute_cycles * share + sw_hash * share
                        c.hash_cycles = sw_hash * share
                        if cn == 0:
                            c.cycles += self.mcu.flash_cycles(flash)
                            c.alloc, c.buffer, c.buf_id = "output", out_buf[1], out_buf[0]
                        prev = compute_tasks[-1] if compute_tasks else None
                        if prev is not None:
                            self.edge(prev, c)
                        for r in pre:
                            self.edge(r, c)
                        if stream_buf is not None:
                            c.frees.append(stream_buf)
                            stream_buf = None
                        if not self.input_reuse and cn + 1 < n_comp and band_reads:
                            # SwapNN: every compute task reads its own input tile
                            c.frees.extend(band_bufs)
                        pre = []
                        compute_tasks.append(c)
                        order.append(c)
                        cn += 1
                        if not self.input_reuse and cn < n_comp and band_reads:
                            # re-read the band(s) before the next channel tile's weights
                            new_bufs = []
                            for r0_task, _ in band_reads:
                                r = self.new(READ, f, rec.index, layer, tile.index, seq)
                                seq += 1
                                for a in ("pool", "nbytes", "payload", "alloc", "buffer", "cycles", "hash_cycles"):
                                    setattr(r, a, getattr(r0_task, a))
                                r.buf_id = self.buf()
                                new_bufs.append((r.pool, r.buffer, r.buf_id))
                                for d in [x for x in pending_deps if x[0] is r0_task]:
                                    pending_deps.append((r,) + d[1:])
                                self.edge(c, r)          # after the previous compute freed the band
                                pre.append(r)
                                order.append(r)
                                last_input = r
                            band_bufs = new_bufs
                    elif kind == "write":
                        physical, payload = step[2], step[3]
                        w = self.new(WRITE, f, rec.index, layer, tile.index, seq)
                        seq += 1
                        w.pool, w.nbytes, w.payload = "output", physical, payload
                        io, h = self.io_cycles(physical, payload, True)
                        w.cycles = io + (0.0 if self.hash_on_cpu else h)
                        w.hash_cycles = h
                        if compute_tasks:
                            self.edge(compute_tasks[-1], w)
                        prev_w = writes.get((rec.index, tile.index))
                        if prev_w:
                            self.edge(prev_w[-1], w)
                        writes.setdefault((rec.index, tile.index), []).append(w)
                        order.append(w)
                        if not _located(step):
                            self.precise = False
                        elif step.area == "activations":
                            writes_of.setdefault(step.home, []).append(w)
                            producers.setdefault(step.home, []).append((step.lo, step.hi, rec.index, tile.index))
                if not compute_tasks:        # a tile without compute steps (an in-memory record): one task
                    c = self.new(COMPUTE, f, rec.index, layer, tile.index, seq)
                    seq += 1
                    c.cycles = tile.compute_cycles + self.mcu.flash_cycles(flash) + tile.hash_cycles
                    for r in pre:
                        self.edge(r, c)
                    compute_tasks.append(c)
                    order.append(c)
                    for w in writes.get((rec.index, tile.index), []):
                        self.edge(c, w)
                last = compute_tasks[-1]
                if in_chain:    # a fused chain's ops pass bands through line buffers: they compute in turn
                    prev = chain_last.get(rec.chain)
                    if prev is not None:
                        self.edge(prev, compute_tasks[0])
                    chain_last[rec.chain] = last
                last.frees.extend(band_bufs)
                if stream_buf is not None:
                    last.frees.append(stream_buf)
                tw = writes.get((rec.index, tile.index))
                if tw and out_buf[1]:
                    tw[-1].frees.append(("output", out_buf[1], out_buf[0]))
                elif out_buf[1] or compute_tasks[0].alloc:
                    last.frees.append(("output", out_buf[1], out_buf[0]))
                last_compute_of_op = last
                # the next tile's first read comes after this tile's reads (in-order allocation keeps this too)
            if last_compute_of_op is not None:
                last_compute_of_op.frees.extend(op_resident)
        # data dependencies of reads on the writes that produced their records
        by_op_tile = writes
        for prods in producers.values():
            prods.sort()
        prod_lo = {k: [r[0] for r in v] for k, v in producers.items()}
        for t, key, lo, hi in pending_deps:
            prods = producers.get(key)
            if not prods:
                continue      # a model input: on the card before the frame starts
            if not self.precise:
                break
            los = prod_lo[key]
            i = max(0, bisect.bisect_right(los, lo) - 1)
            while i < len(prods) and prods[i][0] < hi:
                _, phi, op_i, tile_i = prods[i]
                if phi > lo:
                    ws = by_op_tile.get((op_i, tile_i))
                    if ws:
                        self.edge(ws[-1], t)
                i += 1
        if not self.precise:
            self._barriers(order, writes_of)
        return order, writes_of, reads_of, writes

    def _barriers(self, order: list[Task], writes_of: dict[int, list[Task]]) -> None:
        """Fallback: every read of a layer's input waits for all writes of earlier layers (whole-layer barriers)."""
        done: list[Task] = []
        current_layer = -1
        layer_writes: list[Task] = []
        for t in order:
            if t.layer != current_layer:
                done.extend(layer_writes)
                layer_writes = []
                current_layer = t.layer
                if done:
                    # a join collects the previous layers' writes
                    j = self.new(JOIN, t.frame, t.op, t.layer, -1, t.seq)
                    for w in done:
                        self.edge(w, j)
                    done = [j]
            if t.kind == READ and t.pool == "input" and done:
                self.edge(done[0], t)
            if t.kind == WRITE:
                layer_writes.append(t)


def _located(step: Any) -> bool:
    """A typed step (:class:`~microinterp.runtime.profile.IoStep`) that says which records it moves; a bare
    ``[kind, pool, bytes, payload]`` entry (a profile's JSON) does not."""
    return len(step) > 5 and bool(step[5])


def _guess_role(rec: Any, tile: Any, step_i: int, pool: str) -> str:
    """The role of a read whose step does not say it: a weights read right before a compute of a tile with several
    computes is a channel tile, other reads are resident unless they are a row-band op's input rows."""
    nxt = tile.io[step_i + 1][0] if step_i + 1 < len(tile.io) else ""
    streams = sum(1 for e in tile.io if e[0] == "compute") > 1
    if pool == "weights":
        return "stream" if streams and nxt == "compute" else "resident"
    if rec.mode != "rows":
        return "resident"
    return "band"


def build_graph(records: list[Any], *, pager: Any = None, mcu: Any, checksum: str = "crc32", frames: int = 1,
                input_reuse: bool = True, single_buffer_io_bound: bool = False,
                hash_on_cpu: bool | None = None,
                pools: dict[str, int] | None = None) -> TaskGraph:
    """The task graph of ``frames`` consecutive invokes whose per-op records are ``records`` (from
    ``Interpreter.simulate()`` or ``.profile``): their typed IO steps give the dependencies. ``pager``
    (``interp.runtime`` out of core) gives the pool sizes when ``pools`` is not passed."""
    if hash_on_cpu is None:
        hash_on_cpu = not (mcu.has_hash_accelerator and checksum in mcu.hash_accel_algorithms)
    if pools is None:
        pools = ({"input": pager.pools.input, "weights": pager.pools.weights, "output": pager.pools.output}
                 if pager is not None else {"input": 0, "weights": 0, "output": 0})
    b = _Builder(records, mcu, checksum, hash_on_cpu, input_reuse, single_buffer_io_bound)
    frames = max(1, int(frames))
    per_frame = []
    for f in range(frames):
        per_frame.append(b.frame(f))
    precise = b.precise
    if not precise:      # rebuild every frame with barriers only
        b = _Builder(records, mcu, checksum, hash_on_cpu, input_reuse, single_buffer_io_bound)
        b.precise = False
        per_frame = [b.frame(f) for f in range(frames)]
    tasks = b.tasks
    # write-after-read across frames: frame f+1 overwrites a tensor's records only after frame f read them all
    for f in range(1, frames):
        _, _, reads_prev, _ = per_frame[f - 1]
        _, writes_of, _, _ = per_frame[f]
        for key, ws in writes_of.items():
            rs = reads_prev.get(key)
            if not rs:
                continue
            j = b.new(JOIN, f, ws[0].op, ws[0].layer, -1, ws[0].seq)
            for r in rs:
                b.edge(r, j)
            for w in ws:
                b.edge(j, w)
    order0 = per_frame[0][0]
    seq_len = len(order0)
    peak = _sequential_peaks(order0, seq_len)
    suffix = {pool: _suffix_max(v) for pool, v in peak.items()}
    ops = [{"index": r.index, "op": r.op, "mode": r.mode, "tiles": len(r.tiles)} for r in records]
    return TaskGraph(tasks, frames, dict(pools), peak, suffix, seq_len, precise, mcu.clock_hz, hash_on_cpu,
                     {"input_reuse": input_reuse, "single_buffer_io_bound": single_buffer_io_bound,
                      "checksum": checksum}, ops)


def _sequential_peaks(order: list[Task], n: int) -> dict[str, list[int]]:
    """Pool usage of the pager's sequential order: peak[pool][seq] = live bytes once task ``seq`` allocated."""
    usage = {p: 0 for p in POOLS}
    peak = {p: [0] * n for p in POOLS}
    live: dict[int, int] = {}
    for t in order:
        if t.kind == JOIN:
            continue
        if t.alloc and t.buf_id not in live:
            usage[t.alloc] += t.buffer
            live[t.buf_id] = t.buffer
        for p in POOLS:
            peak[p][t.seq] = usage[p]
        for pool, nbytes, bid in t.frees:
            if bid in live:
                usage[pool] -= live.pop(bid)
    return peak


def _suffix_max(v: list[int]) -> list[int]:
    out = list(v) + [0]
    for i in range(len(v) - 1, -1, -1):
        out[i] = max(out[i], out[i + 1])
    return out
