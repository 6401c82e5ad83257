"""TFLM's GreedyMemoryPlanner (``memory_planner/greedy_memory_planner.cc``), as a pure function.

The algorithm, in TFLM's own terms:

* Offline-planned buffers keep their given offsets and come first, in ascending id order (not sorted).
* Online buffers are listed in *descending* id order, then stable-sorted by size, largest first (a bubble sort that
  swaps only on strictly smaller), so among equal sizes the higher id is placed first.
* The first buffer in that order goes to its offline offset or 0. Every next online buffer walks the already placed
  buffers in offset order, looking only at those whose lifetime overlaps its own (inclusive intervals), and takes the
  first gap large enough, starting at 0: first fit, lowest offset.
* The result is not optimal (it is a greedy heuristic: big buffers first, no backtracking), but it is TFLM's, and
  reproducing it is what makes microinterp's arena arithmetic identical to a device's::

      offset ▲        ┌──────┐
             │ ┌─────┐│  B2  │┌────┐          first fit among buffers alive at the same time;
             │ │ B0  │└──────┘│ B3 │          buffers with disjoint lifetimes share addresses
             │ └─────┘ ┌──────────┐
             │         │    B1    │
             └─────────┴──────────┴──────▶ op order (time)

The head size is ``max(offset + size)``.
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
