"""Regrouping after the patch search: one more convolution chain near the planned peak split into groups of
channels, kept when the written plan's arena drops.

The patch search (:mod:`microinterp.patching.search`) ranks its candidates by an estimate without reordering, and
splits every chain near the peak into the same number of groups. Once the graph is planned (op order and offline
offsets, :func:`.optimize.optimize`), its peak is often a single patch's widest map, which an extra split of just
that chain lowers -- and a split can also let the reordering find a better order. This local search tries, round by
round, each chain (:func:`microinterp.patching.channels.find_chains`) among the ops within ``near`` bytes of the
planned peak, split in ``groups``; plans each candidate as ``microinterp optimize`` writes it; keeps the best that
lowers the planned arena; and stops when a round finds none or the time is spent. Every split computes every output
value with the same arithmetic (see :mod:`microinterp.patching.channels`), so outputs stay bit-identical; the caller
checks them anyway.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import MicroInterpError
from ..model import load_model
from ..patching.channels import find_chains, split_chains
from ..patching.search import ChannelCut


def peak_ops(data: bytes, near: int) -> tuple[int, int] | None:
    """The first and last op of subgraph 0 where the written plan's top reaches within ``near`` bytes of its
    peak (the offline offsets the plan holds), or None without planned tensors."""
    from ..interpreter import Interpreter

    table = [r for r in Interpreter(data).plan_table() if r["kind"] == "tensor" and r["subgraph"] == 0]
    if not table:
        return None
    top: dict[int, int] = {}
    for r in table:
        for k in range(r["first"], r["last"] + 1):
            top[k] = max(top.get(k, 0), r["offset"] + r["size"])
    peak = max(top.values())
    hot = [k for k, t in top.items() if t >= peak - near]
    return min(hot), max(hot)


def regroup(plan: Any, planned_arena: Callable[[bytes], int], replan: Callable[[bytes], Any], seconds: float, *,
            groups: tuple[int, ...] = (2,), near: int = 2048, reach: int = 4) -> tuple[Any, tuple[ChannelCut, ...]]:
    """``plan`` (an :class:`.optimize.Optimized` of a rewritten model) with further channel splits while they lower
    ``planned_arena`` of the replanned model; ``replan(data)`` writes a candidate's plan. Returns the best plan and
    the splits applied. Gives up after ``seconds`` (checked between candidates)."""
    deadline = time.monotonic() + seconds
    best, best_arena, cuts = plan, planned_arena(plan.data), []
    while time.monotonic() < deadline:
        window = peak_ops(best.data, near)
        if window is None:
            break
        model = load_model(best.data)
        chains = [c for c in find_chains(model) if c.stop >= window[0] - reach and c.start <= window[1] + reach]
        found = None
        for chain in chains:
            for g in groups:
                if g > chain.channels or time.monotonic() >= deadline:
                    continue
                try:
                    candidate = replan(split_chains(model, {chain.start: (chain, g)}))
                    arena = planned_arena(candidate.data)
                except (MicroInterpError, ValueError):
                    continue
                if arena < best_arena and (found is None or arena < found[1]):
                    found = (candidate, arena, ChannelCut((chain.start,), g, arena))
        if found is None:
            break
        best, best_arena = found[0], found[1]
        cuts.append(found[2])
    return best, tuple(cuts)
