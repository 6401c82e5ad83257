"""Choose the stages and patch grids that lower the whole arena the most, within a bound on recomputed MACs.

The whole arena is what a user sizes ``arena_size`` by: the head (TFLM's greedy plan over the rewritten graph) plus
the persistent tail, which every added op grows (its node, registration, builtin options, OpData and, for each
convolution copy, its per-channel multipliers and shifts) -- :func:`microinterp.memory32.estimate_arena` replays both
for the wheel's 64-bit build, or for a Cortex-M firmware build with ``target``. So a cut pays off only where the
memory it frees exceeds the tail it adds; small models gain from few, large patches.

The search runs in rounds: each round tries, on each of the best rewrites so far, every stage that contains an op
near the head's peak and whose ends are small feature maps (:func:`candidate_stages`), cut into every grid of up to
``max_grid`` x ``max_grid`` (at most ``max_patches``) patches, and keeps the few rewrites with the smallest whole arena
whose MACs stay within ``max_extra_macs`` of the original's; it stops when no rewrite lowers the arena.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import MicroInterpError
from ..model import Model, load_model
from .channels import find_chains, split_chains
from .emit import patch_stage
from .stage import Stage, find_stages


@dataclass(frozen=True)
class Cut:
    """One applied rewrite: the stage's op positions (in the model it was applied to), its ends and its grid."""

    start: int
    stop: int
    x: tuple[int, ...]  # the shapes of the stage's input and output feature maps
    y: tuple[int, ...]
    rows: int
    cols: int
    arena: int          # the whole arena after this cut

    def describe(self) -> str:
        return (f"ops {self.start}-{self.stop - 1} ({'x'.join(map(str, self.x))} -> {'x'.join(map(str, self.y))}) "
                f"as {self.rows}x{self.cols} patches")


@dataclass(frozen=True)
class Patched:
    data: bytes
    cuts: tuple[Cut, ...]
    arena: int           # the whole arena of ``data`` as :func:`search` measured it
    macs: int
    pressure: int = 0    # :func:`pressure` of ``data``


def pressure(model: Model, near_peak: float = 0.8) -> int:
    """How much of the model's memory profile is near its peak: the bytes alive above ``near_peak`` of the most,
    summed over the ops (:func:`live_bytes`). A cut that flattens one of several equal peaks leaves the arena as it
    was but lowers this, and the next cut can then lower the arena."""
    live = live_bytes(model)
    top = max(live, default=0)
    return int(sum(max(0.0, b - near_peak * top) for b in live))


def _progress(arena: int, model: Model, parent: Patched, slack: float = 0.01) -> int | None:
    """The new rewrite's pressure when it is progress over ``parent``: a smaller arena, or one at most ``slack``
    larger (the tail its ops add) with a pressure at least 15 % lower; else None."""
    if arena < parent.arena:
        return pressure(model)
    if arena <= parent.arena * (1 + slack):
        p = pressure(model)
        if p <= 0.85 * parent.pressure:
            return p
    return None


def model_macs(model: Model) -> int:
    from ..cost.work import op_work

    sg = model.main
    return sum(op_work(op, sg.tensors)[0] for op in sg.operators)


def live_bytes(model: Model) -> list[int]:
    """Bytes of subgraph 0's planned tensors alive while each of its ops runs: TFLM's lifetimes
    (:func:`~microinterp.planner.lifetimes.allocation_infos`, 16-byte aligned sizes), whole tensors, no scratch."""
    from ..planner.lifetimes import allocation_infos, buffer_requests

    scopes: dict[int, tuple[int, int]] = {}
    infos = allocation_infos(model, [], op_scopes=scopes)
    requests, owners = buffer_requests(infos)
    main = [r for r, o in zip(requests, owners) if infos[o].subgraph == 0]
    return [sum(r.size for r in main if r.first <= end and r.last >= start)
            for start, end in (scopes[op.index] for op in model.main.operators)]


def candidate_stages(model: Model, limit: int = 24, per_start: int = 6, near_peak: float = 0.8) -> list[Stage]:
    """Stages containing an op during which at least ``near_peak`` of the most bytes are alive -- the ``per_start``
    shortest from each first op -- smallest ends (``x`` + ``y`` bytes) first, at most ``limit``."""
    live = live_bytes(model)
    if not live:
        return []
    high = [i for i, b in enumerate(live) if b >= near_peak * max(live)]
    tensors = model.main.tensors
    by_start: dict[int, list[Stage]] = {}
    for s in find_stages(model):
        if any(s.start <= i < s.stop for i in high) and s.stop - s.start >= 2:
            by_start.setdefault(s.start, []).append(s)
    found = [s for stages in by_start.values() for s in sorted(stages, key=lambda s: s.stop)[:per_start]]
    found.sort(key=lambda s: (tensors[s.x].nbytes + tensors[s.y].nbytes, s.stop - s.start))
    return found[:limit]


def search(model: Any, arena_of: Callable[[Any], int], *, max_extra_macs: float = 0.15, max_grid: int = 4,
           max_patches: int = 16, rounds: int = 6, limit: int = 12, beam: int = 1) -> Patched:
    """The rewrite with the smallest ``arena_of(model)`` found (the model itself when nothing is smaller).

    A beam search: each round extends each of the ``beam`` best rewrites so far by one more cut, and keeps the
    ``beam`` best extensions that make progress over their parent (:func:`_progress`: a lower arena, or one
    hardly larger whose memory profile is flatter -- where several ops share the peak, no single cut lowers it);
    the best arena seen is returned."""
    start = load_model(model)
    base_macs = model_macs(start)
    best = Patched(bytes(start._raw), (), arena_of(start), base_macs, pressure(start))
    frontier = [(best, start)]
    for _ in range(rounds):
        grown: list[tuple[Patched, Model]] = []
        for parent, current in frontier:
            grown += _extensions(parent, current, arena_of, base_macs * (1 + max_extra_macs), max_grid, max_patches,
                                 limit)
        if not grown:
            break
        grown.sort(key=lambda pm: (pm[0].arena, pm[0].pressure))
        frontier, seen = [], set()
        for patched, m in grown:
            if (patched.arena, patched.pressure) not in seen:
                seen.add((patched.arena, patched.pressure))
                frontier.append((patched, m))
            if len(frontier) == beam:
                break
        best = min([best] + [p for p, _ in frontier], key=lambda p: p.arena)
    return best


def _extensions(parent: Patched, current: Model, arena_of: Callable[[Any], int], macs_bound: float, max_grid: int,
                max_patches: int, limit: int) -> list[tuple[Patched, Model]]:
    """Every one-cut extension of ``parent`` (whose model is ``current``) that makes progress, within the MACs."""
    out = []
    t = current.main.tensors
    for stage in candidate_stages(current, limit):
        for rows in range(1, max_grid + 1):
            for cols in range(1, max_grid + 1):
                if not 2 <= rows * cols <= max_patches:
                    continue
                trial = _try(current, stage, rows, cols)
                if trial is None:
                    continue
                new_data, new_model = trial
                new_macs = model_macs(new_model)
                if new_macs > macs_bound:
                    continue
                arena = _arena_or_none(arena_of, new_model)
                if arena is None:
                    continue
                flatter = _progress(arena, new_model, parent)
                if flatter is not None:
                    cut = Cut(stage.start, stage.stop, t[stage.x].shape, t[stage.y].shape, rows, cols, arena)
                    out.append((Patched(new_data, (*parent.cuts, cut), arena, new_macs, flatter), new_model))
    return out + _channel_extensions(parent, current, arena_of)


@dataclass(frozen=True)
class ChannelCut:
    """One applied channel split: the chains' first ops (in the model it was applied to) and the group count."""

    starts: tuple[int, ...]
    groups: int
    arena: int

    def describe(self) -> str:
        ops = ", ".join(map(str, self.starts))
        return f"the convolution chains at ops {ops} in {self.groups} groups of channels"


def _channel_extensions(parent: Patched, current: Model, arena_of: Callable[[Any], int],
                        fractions: tuple[float, ...] = (0.9, 0.6), groups: tuple[int, ...] = (2, 3, 4)
                        ) -> list[tuple[Patched, Model]]:
    """Every split of the chains through the ops near the head's peak (:mod:`.channels`; those where at least
    ``fraction`` of the most bytes are alive) into ``groups`` that lowers ``parent``'s arena; no MACs added."""
    live = live_bytes(current)
    if not live:
        return []
    chains = find_chains(current)
    out, tried = [], set()
    for fraction in fractions:
        near = [c for c in chains if any(live[i] >= fraction * max(live) for i in range(c.start, c.stop))]
        for g in groups:
            cuts = {c.start: (c, g) for c in near if g <= c.channels}
            key = tuple(sorted(cuts)), g
            if not cuts or key in tried:
                continue
            tried.add(key)
            try:
                data = split_chains(current, cuts)
                model = load_model(data)
            except (MicroInterpError, ValueError):
                continue
            arena = _arena_or_none(arena_of, model)
            if arena is None:
                continue
            flatter = _progress(arena, model, parent)
            if flatter is not None:
                cut = ChannelCut(tuple(sorted(cuts)), g, arena)
                out.append((Patched(data, (*parent.cuts, cut), arena, parent.macs, flatter), model))
    return out


def _arena_or_none(arena_of: Callable[[Any], int], model: Model) -> int | None:
    """``arena_of(model)``, or None when a rewrite cannot be prepared (e.g. a ``STRIDED_SLICE`` cutting a uint8
    input, which TFLM's kernel refuses): that candidate is skipped, the search goes on."""
    try:
        return arena_of(model)
    except MicroInterpError:
        return None


def _try(model: Model, stage: Stage, rows: int, cols: int) -> tuple[bytes, Model] | None:
    y = model.main.tensors[stage.y]
    lay = stage.layouts[stage.y]
    if rows > y.shape[lay.h] or cols > y.shape[lay.w]:
        return None
    try:
        data = patch_stage(model, stage, rows, cols)
        return data, load_model(data)
    except (MicroInterpError, ValueError):
        return None
