"""TFLM's GreedyMemoryPlanner (``memory_planner/greedy_memory_planner.cc``), as a pure function.

Input: one :class:`BufferRequest` per buffer — a size (already rounded up to 16 bytes by
:func:`~microinterp.planner.lifetimes.buffer_requests`), an inclusive lifetime ``[first, last]`` in allocation
scopes, and an offline offset (-1 = plan it online). Output: one offset per request. The algorithm, in TFLM's terms:

1. **Order.** Offline-planned buffers come first, in ascending id order (never sorted). The online buffers are
   listed in *descending* id order and then sorted by size, largest first, with a stable sort (TFLM's bubble sort
   swaps only on strictly smaller), so among equal sizes the *higher id is placed first*.
2. **First buffer.** The first buffer of that order goes to its offline offset, or to 0.
3. **Every next buffer.** An offline buffer takes its offline offset, unchecked (an offline plan may overlap itself).
   An online buffer walks the already placed buffers in offset order, looking only at those whose lifetime overlaps
   its own (``not (a.first > b.last or b.first > a.last)``: inclusive, so ``[0, 1]`` and ``[1, 2]`` overlap), with
   a candidate offset starting at 0: if the gap from the candidate to the next such buffer's offset is at least its
   size it takes the candidate (*first fit*: the lowest gap that fits, not the tightest), otherwise the candidate
   moves to ``max(candidate, that buffer's end)``; after the last one it goes at the candidate.
4. **Bookkeeping.** Placed buffers are kept in a list sorted by offset: a new one becomes the head only if its
   offset is strictly smaller than the head's; otherwise it goes after every entry whose offset is <= its own.

Consequences worth knowing: buffers whose lifetimes are disjoint share addresses; a zero-size buffer lands at the
lowest candidate and pushes nothing; a tensor nothing uses has lifetime ``[-1, -1]`` and overlaps only other such
tensors. The plan is not optimal — a greedy heuristic, biggest first, no backtracking — but it is TFLM's, and
reproducing it is what makes microinterp's arena arithmetic identical to a device's::

      offset ▲        ┌──────┐
             │ ┌─────┐│  B2  │┌────┐          first fit among buffers alive at the same time;
             │ │ B0  │└──────┘│ B3 │          buffers with disjoint lifetimes share addresses
             │ └─────┘ ┌──────────┐
             │         │    B1    │
             └─────────┴──────────┴──────▶ op order (time)

The head size (TFLM's "Arena allocation head") is ``max(offset + size)``, see :func:`plan_size`.
"""

from __future__ import annotations

from .lifetimes import BufferRequest


def plan_greedy(requests: list[BufferRequest]) -> list[int]:
    """Offsets (relative to the 16-aligned head start) for each request, exactly as TFLM's greedy planner."""
    n = len(requests)
    if n == 0:
        return []
    offline = [i for i, r in enumerate(requests) if r.offline_offset != -1]
    online = [i for i in reversed(range(n)) if requests[i].offline_offset == -1]
    online = _stable_sort_desc(online, requests)
    order = offline + online
    offsets = [-1] * n
    placed: list[int] = []  # buffer ids, kept sorted by offset the way TFLM's linked list is
    for pos, i in enumerate(order):
        r = requests[i]
        if r.offline_offset != -1:
            offset = r.offline_offset
        elif pos == 0:
            offset = 0
        else:
            offset = _first_fit(r, placed, requests, offsets)
        offsets[i] = offset
        _insert(placed, i, offset, offsets)
    return offsets


def _stable_sort_desc(ids: list[int], requests: list[BufferRequest]) -> list[int]:
    # A stable sort by decreasing size is what TFLM's bubble sort (swap only if strictly smaller) produces.
    return sorted(ids, key=lambda i: -requests[i].size)


def _overlaps(a: BufferRequest, b: BufferRequest) -> bool:
    return not (a.first > b.last or b.first > a.last)


def _first_fit(r: BufferRequest, placed: list[int], requests: list[BufferRequest], offsets: list[int]) -> int:
    candidate = 0
    for j in placed:
        other = requests[j]
        if not _overlaps(r, other):
            continue
        if offsets[j] - candidate >= r.size:
            break
        candidate = max(candidate, offsets[j] + other.size)
    return candidate


def _insert(placed: list[int], i: int, offset: int, offsets: list[int]) -> None:
    # TFLM: a new entry goes to the front only if its offset is strictly smaller than the first's; otherwise it
    # is inserted after every entry whose offset is <= its own.
    if not placed or offset < offsets[placed[0]]:
        placed.insert(0, i)
        return
    pos = len(placed)
    for k, j in enumerate(placed):
        if offsets[j] > offset:
            pos = k
            break
    placed.insert(pos, i)


def plan_size(requests: list[BufferRequest], offsets: list[int]) -> int:
    """Head bytes of a plan: the highest end offset (0 for an empty plan)."""
    return max((o + r.size for o, r in zip(offsets, requests)), default=0)
