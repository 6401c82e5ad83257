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
swaps neighbours in the best order and keeps what lowers the head (deterministic: seeded). Offline-placed buffers
keep their offsets. The result is never worse than TFLM's greedy plan (which is one of the candidates) and stops as
soon as it reaches the bound.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from .greedy import plan_greedy, plan_size
from .lifetimes import BufferRequest


def _overlap(a: BufferRequest, b: BufferRequest) -> bool:
    return not (a.first > b.last or b.first > a.last)


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


def place(requests: Sequence[BufferRequest], order: Sequence[int], conflicts: list[list[int]]) -> tuple[list[int], int]:
    """Offsets for ``order`` by first fit over the conflicting placed buffers; returns (offsets, head)."""
    offsets = [-1] * len(requests)
    head = 0
    for i in order:
        r = requests[i]
        if r.offline_offset != -1:
            offsets[i] = r.offline_offset
        else:
            spans = sorted((offsets[j], offsets[j] + requests[j].size) for j in conflicts[i] if offsets[j] >= 0)
            at = 0
            for lo, hi in spans:
                if lo - at >= r.size:
                    break
                at = max(at, hi)
            offsets[i] = at
        head = max(head, offsets[i] + r.size)
    return offsets, head


def plan_optimal(requests: list[BufferRequest], budget_s: float = 0.5, seed: int = 0,
                 iterations: int = 2000) -> list[int]:
    """Offsets with the smallest head found in ``iterations`` local-search steps (deterministic), cut short after
    ``budget_s`` seconds on large graphs (see the module docstring)."""
    n = len(requests)
    if n == 0:
        return []
    conflicts = [[j for j in range(n) if j != i and _overlap(requests[i], requests[j])] for i in range(n)]
    bound = lower_bound(requests)
    greedy = plan_greedy(requests)
    best, best_head, best_order = greedy, plan_size(requests, greedy), None
    if best_head <= bound:
        return best
    fixed = [i for i in range(n) if requests[i].offline_offset != -1]
    free = [i for i in range(n) if requests[i].offline_offset == -1]
    keys = [lambda i: (-requests[i].size, i),
            lambda i: (-requests[i].size * (requests[i].last - requests[i].first + 1), i),
            lambda i: (-(requests[i].last - requests[i].first), -requests[i].size, i),
            lambda i: (requests[i].first, -requests[i].size, i),
            lambda i: (-requests[i].last, -requests[i].size, i),
            lambda i: (-len(conflicts[i]), -requests[i].size, i)]
    for key in keys:
        order = fixed + sorted(free, key=key)
        offsets, head = place(requests, order, conflicts)
        if head < best_head:
            best, best_head, best_order = offsets, head, order
        if best_head <= bound:
            return best
    if best_order is None:
        best_order = fixed + sorted(free, key=keys[0])
    rng = random.Random(seed)
    deadline = time.perf_counter() + budget_s
    order = list(best_order)
    lo = len(fixed)
    for step in range(iterations):
        if best_head <= bound or len(order) - lo < 2 or (step % 64 == 0 and time.perf_counter() > deadline):
            break
        a = rng.randrange(lo, len(order) - 1)
        b = min(len(order) - 1, a + 1 + rng.randrange(3))
        trial = list(order)
        trial[a], trial[b] = trial[b], trial[a]
        offsets, head = place(requests, trial, conflicts)
        if head <= best_head:
            if head < best_head:
                best, best_head = offsets, head
            order = trial
    return best
