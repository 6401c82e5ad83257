"""Chains and trees of row-band ops, their bands and their line buffers: what the out-of-core pager's fused chains
(:mod:`microinterp.pager.fusion`) and the phased planner (:mod:`microinterp.planner.phased`) share.

A **chain** (:func:`find_chains`): op ``q`` continues the chain of op ``p`` when both run in row bands, ``p`` has one
output, that output is not a graph output and its only reader is ``q``, which reads it once, along rows. Its
**bands** (:func:`band_rows`) are row bands ``[y0, y1)`` of the last op's output; going backwards, op ``i`` must have
produced rows ``rows[i] = input_rows(op i+1, rows[i+1])`` of its output. Each intermediate tensor has a **line
buffer** (:class:`LineBuffer`) holding its rows ``[lo, done)``: for the next band its overlap rows move to the front
and only the new rows ``[done, hi)`` are computed (:func:`new_rows`), so every output row of every op is computed
exactly once, as in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .op_plan import OpPlan
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
