"""A smaller plan than TFLM's greedy one for the same lifetimes: offsets with the smallest head this search finds,
and the lower bound it is measured against.

**Lower bound** (:func:`lower_bound`): the largest sum of (16-byte-aligned) sizes of buffers alive at one
allocation scope -- no placement of those lifetimes can use less (offline-placed buffers count at their fixed
extent). It is reachable for interval graphs whenever the buffers can be stacked without fragmentation, which is
the common case for CNN chains; fragmentation can make it unreachable.

**Search** (:func:`plan_optimal`). Every buffer is placed, in some order, at the lowest offset where it overlaps no
already-placed buffer whose lifetime intersects its own (first fit over the conflicting intervals; lifetimes are
inclusive, as TFLM's). Several orders are tried -- TFLM's (size, largest first), size x lifetime, lifetime length,
start time, end time -- then, while the best head is above the lower bound and the time budget lasts, a local search
swaps neighbours in the best order and keeps what lowers the head, and simulated annealing swaps or moves any buffer
in the order (seeded; :func:`microinterp.planner.rigid.plan_rigid`). Offline-placed buffers
keep their offsets. The result is never worse than TFLM's greedy plan (which is one of the candidates) and stops as
soon as it reaches the bound.
"""

from __future__ import annotations

from collections.abc import Sequence

from .greedy import plan_greedy, plan_size
from .lifetimes import BufferRequest
from .rigid import Rigid, plan_rigid


def lower_bound(requests: Sequence[BufferRequest]) -> int:
    """Peak of the bytes alive at one scope (offline buffers: their fixed end), the least any plan can use."""
    if not requests:
        return 0
    fixed = max((r.offline_offset + r.size for r in requests if r.offline_offset != -1), default=0)
    events: dict[int, int] = {}
    for r in requests:
        if r.offline_offset != -1:
            continue
        events[r.first] = events.get(r.first, 0) + r.size
        events[r.last + 1] = events.get(r.last + 1, 0) - r.size
    live = peak = 0
    for t in sorted(events):
        live += events[t]
        peak = max(peak, live)
    return max(peak, fixed)


def plan_optimal(requests: list[BufferRequest], budget_s: float = 0.5, seed: int = 0,
                 iterations: int = 2000) -> list[int]:
    """Offsets with the smallest head found in ``iterations`` local-search steps (deterministic), cut short after
    ``budget_s`` seconds on large graphs (see the module docstring): :func:`~microinterp.planner.rigid.plan_rigid`
    with one part per buffer and TFLM's greedy plan as the plan to beat."""
    if not requests:
        return []
    greedy = plan_greedy(requests)
    if plan_size(requests, greedy) <= lower_bound(requests):
        return greedy
    items = [Rigid(((0, r.size, r.first, r.last),), r.offline_offset) for r in requests]
    return plan_rigid(items, budget_s=budget_s, seed=seed, iterations=iterations, incumbent=greedy)
