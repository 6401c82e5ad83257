"""Plans of buffers that move together: each :class:`Rigid` item is a set of parts at fixed byte positions relative
to each other, each alive for its own lifetime -- the tensors of a byte-sharing group (:mod:`.aliases`), which an
offline plan must place together but which do not all live equally long.

Planning an item as one buffer (its extent, alive from its first part's creation to its last part's use) would keep
bytes reserved after the parts that hold them have died; here every part occupies only its own bytes for its own
lifetime, so a tensor placed over the consumed rows of a larger one frees the rest of that tensor when it dies.

The search: first fit (the lowest base offset at which no part overlaps a placed part alive at the same time), for
several orders, then a seeded local search of neighbour swaps and a seeded simulated annealing over the whole order,
each within half the time budget. A plain buffer is an item with one part:
:func:`microinterp.planner.optimal.plan_optimal` is this search over such items, started from TFLM's greedy plan.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

#: one part: (start, stop) bytes relative to the item's base, and an inclusive lifetime (first, last)
Part = tuple[int, int, int, int]


@dataclass(frozen=True)
class Rigid:
    parts: tuple[Part, ...]
    offline_offset: int = -1

    @cached_property
    def size(self) -> int:
        return max((p[1] for p in self.parts), default=0)

    @cached_property
    def first(self) -> int:
        return min(p[2] for p in self.parts)

    @cached_property
    def last(self) -> int:
        return max(p[3] for p in self.parts)

    @cached_property
    def volume(self) -> int:
        return sum((p[1] - p[0]) * (p[3] - p[2] + 1) for p in self.parts)


def _overlap(a: Rigid, b: Rigid) -> bool:
    return not (a.first > b.last or b.first > a.last)


def head_of(items: Sequence[Rigid], offsets: Sequence[int]) -> int:
    return max((o + it.size for o, it in zip(offsets, items)), default=0)


def lower_bound(items: Sequence[Rigid]) -> int:
    """The most bytes held at one step: per item the union of its parts alive then (fixed items at their end)."""
    if not items:
        return 0
    fixed = max((it.offline_offset + it.size for it in items if it.offline_offset != -1), default=0)
    steps = sorted({p[2] for it in items for p in it.parts} | {p[3] for it in items for p in it.parts})
    peak = 0
    for s in steps:
        peak = max(peak, sum(union_bytes((p[0], p[1]) for p in it.parts if p[2] <= s <= p[3]) for it in items
                             if it.offline_offset == -1 and it.first <= s <= it.last))
    return max(peak, fixed)


def union_bytes(spans: Iterable[tuple[int, int]]) -> int:
    """Bytes covered by the ``[start, stop)`` spans, overlaps counted once."""
    total, end = 0, None
    for lo, hi in sorted(spans):
        if end is None or lo >= end:
            total, end = total + hi - lo, hi
        elif hi > end:
            total, end = total + hi - end, hi
    return total


def clashes(items: Sequence[Rigid]) -> list[list[tuple[int, list[tuple[int, int]]]]]:
    """For each item ``i``, the items ``j`` alive at some step with it and the base offsets of ``i`` relative to
    ``j``'s base, ``[a, b)``, at which some part of ``i`` overlaps a part of ``j`` alive at the same step."""
    n = len(items)
    out: list[list[tuple[int, list[tuple[int, int]]]]] = [[] for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if not _overlap(items[i], items[j]):
                continue
            spans = [(lo - phi, hi - plo) for lo, hi, f, last in items[j].parts for plo, phi, pf, pl in items[i].parts
                     if f <= pl and pf <= last and hi > lo and phi > plo]
            if spans:       # i's base forbidden in (a, b) from j's <=> j's in (-b, -a) from i's
                out[i].append((j, spans))
                out[j].append((i, [(-b, -a) for a, b in spans]))
    return out


def place(items: Sequence[Rigid], order: Sequence[int], clash: Sequence[Sequence[tuple[int, list]]],
          start: int = 0, offsets: Sequence[int] | None = None) -> tuple[list[int], int]:
    """Base offsets for ``order`` by first fit (each item at the lowest base where none of its parts overlaps a part
    of an item placed before it and alive at the same step; ``clash`` from :func:`clashes`); (offsets, head).
    ``offsets`` of an order with the same first ``start`` items keeps their places (only the rest is placed)."""
    if offsets is None or start == 0:
        placed = [-1] * len(items)
        head = 0
        start = 0
    else:
        placed = list(offsets)
        for i in order[start:]:
            placed[i] = -1
        head = max((placed[i] + items[i].size for i in order[:start]), default=0)
    for i in order[start:]:
        it = items[i]
        if it.offline_offset != -1:
            placed[i] = it.offline_offset
        else:
            forbidden = [(base + a, base + b) for j, spans in clash[i] if (base := placed[j]) >= 0 for a, b in spans]
            at = 0
            for a, b in sorted(forbidden):
                if a >= at:
                    break
                at = max(at, b)
            placed[i] = at
        head = max(head, placed[i] + it.size)
    return placed, head


def plan_rigid(items: list[Rigid], budget_s: float = 0.5, seed: int = 0, iterations: int = 2000,
               greedy: bool = False, incumbent: Sequence[int] | None = None,
               anneal_iterations: int | None = None) -> list[int]:
    """Base offsets with the smallest head found: first fit in several orders (largest first; ``greedy``: only
    that one), then a seeded local search of neighbour swaps in the best order and simulated annealing from where it
    stopped (:func:`_anneal`), for at most ``iterations`` and ``anneal_iterations`` (default five times as many)
    steps and half of ``budget_s`` seconds each, while above :func:`lower_bound`. ``incumbent`` (e.g. TFLM's own plan) is returned unless something is smaller."""
    n = len(items)
    if n == 0:
        return []
    clash = clashes(items)
    fixed = [i for i in range(n) if items[i].offline_offset != -1]
    free = [i for i in range(n) if items[i].offline_offset == -1]
    keys = [lambda i: (-items[i].size, i),
            lambda i: (-items[i].volume, i),
            lambda i: (-(items[i].last - items[i].first), -items[i].size, i),
            lambda i: (items[i].first, -items[i].size, i),
            lambda i: (-items[i].last, -items[i].size, i),
            lambda i: (-len(clash[i]), -items[i].size, i)]
    best = None if incumbent is None else list(incumbent)
    best_head = None if incumbent is None else head_of(items, best)
    best_order = None
    bound = 0 if greedy else lower_bound(items)
    if best_head is not None and best_head <= bound:
        return best
    for key in keys[:1] if greedy else keys:
        order = fixed + sorted(free, key=key)
        offsets, head = place(items, order, clash)
        if best_head is None or head < best_head:
            best, best_head, best_order = offsets, head, order
        if best_head <= bound:
            return best
    if greedy:
        return best
    if best_order is None:
        best_order = fixed + sorted(free, key=keys[0])
    rng = random.Random(seed)
    start = time.perf_counter()
    deadline = start + budget_s / 2
    order = list(best_order)
    current, current_head = place(items, order, clash)
    lo = len(fixed)
    for step in range(iterations):
        if best_head <= bound or len(order) - lo < 2 or (step % 16 == 0 and time.perf_counter() > deadline):
            break
        a = rng.randrange(lo, len(order) - 1)
        b = min(len(order) - 1, a + 1 + rng.randrange(3))
        trial = list(order)
        trial[a], trial[b] = trial[b], trial[a]
        offsets, head = place(items, trial, clash, a, current)
        if head <= current_head:
            order, current, current_head = trial, offsets, head
            if head < best_head:
                best, best_head = offsets, head
    found = _anneal(items, clash, order, current, current_head, best_head, lo, bound, rng,
                    anneal_iterations if anneal_iterations is not None else 5 * iterations, start + budget_s)
    return best if found is None else found


#: The annealing's starting temperature, as a fraction of the lower bound: a move that raises the head by this much
#: is taken with probability 1/e at first; the temperature falls linearly to (almost) zero over the iterations.
TEMPERATURE = 0.005


def _anneal(items: Sequence[Rigid], clash: Sequence[Sequence[tuple[int, list]]], order: list[int],
            offsets: list[int], head: int, best_head: int, lo: int, bound: int, rng: random.Random, iterations: int,
            deadline: float) -> list[int] | None:
    """Simulated annealing over the placement order from ``order`` (placed at ``offsets``, head ``head``): a move
    swaps two items or moves one elsewhere, anywhere in the order (the neighbour swaps before it stall where an item
    has to travel far), and only the items from the first one moved on are placed again; a move that raises the head
    is taken with probability ``exp(-rise / T)``. The offsets of the best order seen when it is below ``best_head``,
    else None."""
    n = len(order)
    if n - lo < 2 or best_head <= bound:
        return None
    best = None
    t0 = TEMPERATURE * bound
    for step in range(iterations):
        if best_head <= bound or (step % 16 == 0 and time.perf_counter() > deadline):
            break
        trial = list(order)
        a, b = rng.randrange(lo, n), rng.randrange(lo, n)
        if rng.random() < 0.5:
            trial[a], trial[b] = trial[b], trial[a]
        else:
            trial.insert(b, trial.pop(a))
        placed, trial_head = place(items, trial, clash, min(a, b), offsets)
        temperature = t0 * (1 - step / iterations) + 1
        if trial_head <= head or rng.random() < math.exp((head - trial_head) / temperature):
            order, offsets, head = trial, placed, trial_head
            if trial_head < best_head:
                best, best_head = placed, trial_head
    return best
