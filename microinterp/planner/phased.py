"""The phased planner (CSDF): row-local ops run in row-band phases, so an intermediate tensor holds only the rows its
reader still needs -- never the whole map -- and an op's output may overwrite the input rows already consumed.

Minakova & Stefanov execute each layer of a CNN in phases over parts of its input, keeping the rows a filter reads
twice in a reuse buffer; microinterp does the same with the line buffers of its out-of-core fused chains
(:mod:`microinterp.pager.fusion`), in memory:

**Segments.** The row-band chains of :func:`~microinterp.bands.chains.find_chains` (an op whose only reader takes
its output along rows continues the chain: conv, depthwise, pools, PAD, elementwise ops, ...) are cut into
segments. A segment ``ops[a..b]`` runs when its last op's turn comes, in bands of one output row of its last op:
going backwards every op computes the rows the next one needs that it has not computed yet (every output row of
every op exactly once, so the MACs and the results are the in-memory ones). Its intermediates are *line buffers*
of ``capacity`` rows (the largest band of rows it must hold); the rows a filter reads again (the halo) stay, the
rest moves out. The cut is a dynamic program over each chain minimising the largest *working set* of a segment
(line buffers + every whole activation it reads or writes), then the kernel calls: with downsampling a long
segment needs tall line buffers (one output row of a 3-row map needs a third of every earlier map), so cutting at a
low-resolution tensor can be smaller than one long phase.

**Overwriting an input.** When a whole input ``I`` of a segment is read only along rows by it and by nobody after
it, the output ``O`` may live in the same bytes, ``O``'s address ``shift`` bytes below ``I``'s: band ``b`` writes
``O`` rows ``[y0, y1)`` after every read of this band, and no row ``I`` still needs (``need(b)``: the lowest row any
op reads in band ``b`` or later) may be overwritten: ``shift <= need(b) * line(I) - y1 * line(O)`` for every band
(16-byte aligned, never positive). ``I`` and ``O`` then take one buffer of ``max(size(O), size(I) - shift)``
bytes. A segment of one op is phased only for this (e.g. an elementwise ADD writes over its input one row late).

**Lifetimes.** TFLM's allocation infos (:mod:`.lifetimes`) with: every tensor a segment touches alive over the
segment's whole scope range (its ops interleave), line buffers sized by their capacity, and each merged pair as one
buffer. TFLM's greedy planner and the optimal search (:mod:`.optimal`) place them; the smaller plan wins. Offline
offsets in the model are ignored (they place whole tensors).

**Cost** (CSDF's trade-off): the extra kernel calls (``calls - ops``) each pay the op class's fixed cycles, and the
line buffers' moved rows cost the ``other`` class's per-element cycles per byte (a memmove); no MAC is repeated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..bands.chains import Chain, LineBuffer, band_layout, feeds, new_rows, tree_chain
from ..bands.tiling import line_bytes
from ..cost.mcu import kernel_set
from .greedy import plan_greedy, plan_size
from .lifetimes import AllocationInfo, BufferRequest, align_up
from .optimal import lower_bound, plan_optimal


@dataclass
class Segment:
    """Ops ``chain.plans`` run in one-row bands of the last op's output (``tiles``); ``rows[b]`` are the rows each op
    must have produced for band ``b``; ``capacity[i]`` the rows of line buffer ``i``; ``merge = (I, shift)``: the
    output is placed ``shift`` bytes from input ``I``'s address, overwriting the rows already consumed."""

    chain: Chain
    tiles: list[Any]
    rows: list[list[tuple[int, int]]]
    capacity: list[int]
    line_sizes: list[int]
    whole: dict[int, int]                       # whole activation tensor -> aligned bytes (inputs and the output)
    merge: tuple[int, int] | None = None
    merged_size: int = 0
    calls: int = 0                              # kernel calls per invoke (all ops, all bands)
    moved: int = 0                              # line-buffer bytes moved per invoke
    op_calls: list[int] = field(default_factory=list)   # kernel calls per op

    @property
    def ops(self) -> list[int]:
        return [p.index for p in self.chain.plans]

    @property
    def output(self) -> int:
        return self.chain.last.op.outputs[0]

    def intermediates(self) -> list[int]:
        return self.chain.intermediates()

    @property
    def working_set(self) -> int:
        """Bytes alive while the segment runs: line buffers and whole tensors (a merged pair counted once)."""
        whole = sum(self.whole.values())
        if self.merge is not None:
            whole += self.merged_size - self.whole[self.merge[0]] - self.whole[self.output]
        return whole + sum(self.line_sizes)


@dataclass
class PhasedPlan:
    """Segments and the plan: ``requests`` per owner (sizes and lifetimes as phased), ``offsets`` per owner, the
    head, and what the planner was given (``placed``)."""

    segments: list[Segment]
    requests: list[BufferRequest]
    offsets: list[int]
    head: int
    placed: list[BufferRequest] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)     # per owner: its merge group (overlaps only within one)

    def view_rows(self) -> dict[int, int]:
        """Tensor -> rows its view has (line buffers)."""
        return {ti: cap for s in self.segments for ti, cap in zip(s.intermediates(), s.capacity)}

    def extra_calls(self) -> int:
        return sum(s.calls - len(s.ops) for s in self.segments)

    def moved_bytes(self) -> int:
        return sum(s.moved for s in self.segments)

    def extra_cycles(self, mcu: Any, tensors: Sequence[Any], kernels: str = "optimized") -> float:
        """MCU cycles phasing adds per invoke: every kernel call beyond an op's first pays the op's fixed cycles
        again (:meth:`~microinterp.mcu.McuProfile.op_fixed_cycles`), and every line-buffer byte moved costs a
        memmove (:meth:`~microinterp.mcu.McuProfile.move_cycles`). The work itself is the unphased op's."""
        ks = kernel_set(kernels)
        total = 0.0
        for s in self.segments:
            for p, n in zip(s.chain.plans, s.op_calls):
                if n > 1:
                    total += (n - 1) * mcu.op_fixed_cycles(p.op, tensors, ks)
            total += mcu.move_cycles(s.moved)
        return total


class SegmentBuilder:
    """Geometry and working sets of candidate segments of one model (tensors, graph outputs, last uses)."""

    def __init__(self, tensors: Sequence[Any], infos: list[AllocationInfo], op_scopes: dict[int, tuple[int, int]],
                 graph_outputs: set[int]):
        self.tensors = tensors
        self.infos = infos
        self.op_scopes = op_scopes
        self.graph_outputs = graph_outputs

    def _line(self, ti: int) -> int:
        t = self.tensors[ti]
        return line_bytes(t.shape, t.dtype.itemsize, 1)

    def _planned(self, ti: int) -> bool:
        info = self.infos[ti]
        return info.kind == "tensor" and info.needs_allocating

    def build(self, chain: Chain) -> Segment:
        tiles, rows, capacity = band_layout(chain, self.tensors, 1)
        inner = set(chain.intermediates())
        line_sizes = [align_up(c * self._line(ti)) for c, ti in zip(capacity, chain.intermediates())]
        whole: dict[int, int] = {}
        for p in chain.plans:
            for ti in (*p.op.inputs, *p.op.outputs):
                if ti >= 0 and ti not in inner and self._planned(ti):
                    whole[ti] = align_up(self.infos[ti].nbytes)
        calls = moved = 0
        op_calls = [0] * len(chain.plans)
        # line buffers' bookkeeping only (no array): the rows each holds, and the overlap rows moved to its front
        lines = [LineBuffer(None) for _ in chain.intermediates()]
        row_bytes = [self._line(ti) for ti in chain.intermediates()]
        reads: dict[int, list[int]] = {}         # whole input -> lowest row read per band (axis-1 readers)
        for b, band in enumerate(rows):
            if b == 0:
                for line, (lo, _) in zip(lines, band):
                    line.restart(lo)
            for i, (lo, hi) in enumerate(new_rows(band, [line.done for line in lines])):
                if i < len(lines):
                    shifted = lines[i].keep(band[i][0], move=False)
                    if shifted is not None:
                        moved += (shifted[1] - shifted[0]) * row_bytes[i]
                if hi <= lo:
                    continue
                calls += 1
                op_calls[i] += 1
                p = chain.plans[i]
                for k, axis in p.tiler.row_inputs.items():
                    ti = p.op.inputs[k]
                    if ti in whole and axis == 1:
                        qlo, qhi = p.tiler.input_rows(p.data, k, lo, hi)
                        if qhi > qlo:
                            low = reads.setdefault(ti, [1 << 60] * len(rows))
                            low[b] = min(low[b], max(qlo, 0))
                if i < len(lines):
                    lines[i].produced(hi)
        seg = Segment(chain, tiles, rows, capacity, line_sizes, whole, calls=calls, moved=moved, op_calls=op_calls)
        self._merge(seg, reads)
        return seg

    def _merge(self, seg: Segment, reads: dict[int, list[int]]) -> None:
        """The input the output can overwrite (the smallest merged buffer), if any (see the module docstring)."""
        out = seg.output
        if out not in seg.whole:
            return
        s1 = self.op_scopes[seg.chain.last.index][1]
        out_t = self.tensors[out]
        if len(out_t.shape) != 4 or out_t.shape[0] != 1:
            return
        readers_whole = {ti for p in seg.chain.plans for k, ti in enumerate(p.op.inputs)
                         if ti >= 0 and k not in p.tiler.row_inputs}
        axis_other = {p.op.inputs[k] for p in seg.chain.plans for k, a in p.tiler.row_inputs.items() if a != 1}
        best = None
        for ti, low in reads.items():
            t = self.tensors[ti]
            if ti == out or ti in readers_whole or ti in axis_other or ti in self.graph_outputs \
                    or self.infos[ti].last_used > s1 or len(t.shape) != 4 or t.shape[0] != 1:
                continue
            need = list(low)
            for b in range(len(need) - 2, -1, -1):
                need[b] = min(need[b], need[b + 1])
            line_in, line_out = self._line(ti), self._line(out)
            bound = min((need[b] * line_in if need[b] < 1 << 60 else 1 << 60) - tile.y1 * line_out
                        for b, tile in enumerate(seg.tiles))
            shift = -align_up(-min(0, bound))
            size = max(seg.whole[out], seg.whole[ti] - shift)
            if best is None or size < best[1]:
                best = ((ti, shift), size)
        if best is not None and best[1] < seg.whole[out] + seg.whole[best[0][0]]:
            seg.merge, seg.merged_size = best


class _Trees:
    """Cutting the in-trees of fed ops (:func:`~microinterp.bands.chains.feeds`) into segments."""

    def __init__(self, plans: list[Any], nxt: dict[int, tuple[Any, int]], builder: SegmentBuilder,
                 unphased: dict[int, int]):
        self.by_index = {p.index: p for p in plans}
        self.nxt = nxt
        self.builder = builder
        self.unphased = unphased
        self.feeders: dict[int, list[int]] = {}
        for p, (q, _) in nxt.items():
            self.feeders.setdefault(q.index, []).append(p)
        self.size: dict[int, int] = {}
        for p in plans:         # op order: feeders first
            self.size[p.index] = 1 + sum(self.size[f] for f in self.feeders.get(p.index, []))

    def upstream(self, op: int) -> list[int]:
        out, todo = [], [op]
        while todo:
            o = todo.pop()
            out.append(o)
            todo += self.feeders.get(o, [])
        return out

    def segment(self, nodes: list[int]) -> Segment:
        return self.builder.build(tree_chain(nodes, self.nxt, self.by_index))

    def cut(self, root: int) -> tuple[int, int, list[Segment]]:
        """(largest working set, extra kernel calls, segments) of the tree rooted at ``root``: a dynamic program
        along its spine (the feeder with the most ops above it, from the root up); a segment of spine ops takes
        the side branches feeding it whole, or none (they are cut on their own); one spine op may run whole."""
        spine = [root]
        while self.feeders.get(spine[-1]):
            spine.append(max(self.feeders[spine[-1]], key=lambda f: (self.size[f], -f)))
        spine.reverse()
        sides = {s: [f for f in self.feeders.get(s, []) if f not in spine] for s in spine}
        side_cut = {f: self.cut(f) for fs in sides.values() for f in fs}
        n = len(spine)
        best: list[tuple[int, int, list[Segment]] | None] = [None] * (n + 1)
        best[0] = (0, 0, [])
        for j in range(1, n + 1):
            for i in range(j - 1, -1, -1):
                prev = best[i]
                nodes = spine[i:j]
                hanging = [f for s in nodes for f in sides[s]]
                cut_ws = max((side_cut[f][0] for f in hanging), default=0)
                cut_calls = sum(side_cut[f][1] for f in hanging)
                cut_segs = [seg for f in hanging for seg in side_cut[f][2]]
                options = []
                alone = self.segment(nodes)
                if len(nodes) > 1 or alone.merge is not None:
                    options.append((max(alone.working_set, cut_ws), alone.calls - len(nodes) + cut_calls,
                                    [alone, *cut_segs]))
                if hanging:
                    whole = self.segment(nodes + [o for f in hanging for o in self.upstream(f)])
                    options.append((whole.working_set, whole.calls - len(whole.ops), [whole]))
                if len(nodes) == 1:
                    options.append((max(self.unphased[nodes[0]], cut_ws), cut_calls, cut_segs))
                for ws, calls, segs in options:
                    cand = (max(prev[0], ws), prev[1] + calls, prev[2] + segs)
                    if best[j] is None or cand[:2] < best[j][:2]:
                        best[j] = cand
        return best[n]


def plan_phased(tensors: Sequence[Any], plans: list[Any], infos: list[AllocationInfo],
                op_scopes: dict[int, tuple[int, int]], graph_outputs: set[int], budget_s: float = 0.5) -> PhasedPlan:
    """The phased plan of a model's main subgraph: ``plans`` are its ops with band tilers (``OpPlan``; ops that must
    run whole have a whole tiler), ``infos`` TFLM's allocation infos, ``op_scopes`` each op's scopes.

    Segments that do not lower the head (TFLM's greedy placement of the phased lifetimes) are dropped, the ones
    with the most kernel calls first, so phases are paid for only where they save memory; with none left (or none
    better than whole tensors) the plan is the whole-tensor one."""
    builder = SegmentBuilder(tensors, infos, op_scopes, graph_outputs)
    nxt = feeds(plans, graph_outputs)
    unphased = {p.index: sum(align_up(infos[ti].nbytes) for ti in {*p.op.inputs, *p.op.outputs}
                             if ti >= 0 and builder._planned(ti)) for p in plans}
    trees = _Trees(plans, nxt, builder, unphased)
    roots = [p.index for p in plans if p.mode == "rows" and p.index not in nxt]
    segments = [seg for r in roots for seg in trees.cut(r)[2]]
    head = _place(segments, infos, op_scopes, None).head
    for seg in sorted(segments, key=lambda s: -s.calls):
        rest = [s for s in segments if s is not seg]
        trial = _place(rest, infos, op_scopes, None).head
        if trial <= head:
            segments, head = rest, trial
    phased = _place(segments, infos, op_scopes, budget_s)
    if segments:            # greedy placement is not monotone: never worse than the whole-tensor lifetimes
        plain = _place([], infos, op_scopes, budget_s)
        if plain.head <= phased.head:
            return plain
    return phased


def _place(segments: list[Segment], infos: list[AllocationInfo], op_scopes: dict[int, tuple[int, int]],
           budget_s: float | None) -> PhasedPlan:
    """Lifetimes and sizes as phased, merged pairs as one buffer, placed by TFLM's greedy planner (and the optimal
    search within ``budget_s`` seconds when greedy leaves a gap to the lower bound; None: greedy only)."""
    owners = [i for i, info in enumerate(infos) if info.needs_allocating]
    size = {i: align_up(infos[i].nbytes) for i in owners}
    span = {i: [infos[i].first_created, infos[i].last_used] for i in owners}
    merged: dict[int, tuple[int, int]] = {}      # input tensor -> (output tensor, shift)
    for s in segments:
        s0, s1 = op_scopes[s.ops[0]][0], op_scopes[s.ops[-1]][1]
        for ti, nbytes in zip(s.intermediates(), s.line_sizes):
            if ti in size:
                size[ti] = nbytes
                span[ti] = [s0, s1]
        for ti in s.whole:
            span[ti] = [min(span[ti][0], s0) if span[ti][0] >= 0 else s0, max(span[ti][1], s1)]
        if s.merge is not None:
            merged[s.merge[0]] = (s.output, s.merge[1])
    per_owner = [BufferRequest(size[i], *span[i]) for i in owners]
    # one buffer per group of merged tensors: I sits -shift bytes above its O, and O may itself be the I of a later
    # segment (a chain of merges); members of a group other than a pair are never alive together
    root_of, delta = {}, {}
    for i in owners:
        root, d = i, 0
        while root in merged:
            root, shift = merged[root]
            d -= shift
        root_of[i], delta[i] = root, d
    extent = {}
    for i in owners:
        root = root_of[i]
        extent[root] = max(extent.get(root, 0), delta[i] + size[i])
        if root != i:
            span[root] = [min(span[root][0], span[i][0]), max(span[root][1], span[i][1])]
    roots = [i for i in owners if root_of[i] == i]
    placed = [BufferRequest(extent[i], *span[i]) for i in roots]
    greedy = plan_greedy(placed)
    best = greedy
    if budget_s is not None and plan_size(placed, greedy) > lower_bound(placed):
        optimal = plan_optimal(placed, budget_s=budget_s)
        if plan_size(placed, optimal) < plan_size(placed, greedy):
            best = optimal
    at = dict(zip(roots, best))
    offsets = [at[root_of[i]] + delta[i] for i in owners]
    return PhasedPlan(segments, per_owner, offsets, plan_size(placed, best), placed,
                      [root_of[i] for i in owners])
