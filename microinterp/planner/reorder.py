"""Operator reordering: a valid execution order of subgraph 0 whose buffers need less memory.

Lifetimes follow from the op order (TFLM's rules, :mod:`.lifetimes`), so another topological order changes which
buffers are alive together. :func:`best_order` searches the orders:

* **Exact** when the graph is small enough: a memoised search over the sets of ops already run (the order's
  ideals), where running op ``o`` after set ``S`` needs the bytes of every tensor produced (or fed in) so far that
  some op outside ``S`` still reads or the graph outputs, plus ``o``'s outputs and scratch buffers; the order with
  the smallest maximum is kept. Chain-like CNNs have few such sets; branchy graphs of modest size too.
* **Greedy** beyond :data:`MAX_STATES` sets: among the ready ops, run the one after which the fewest bytes stay alive
  (ties: the original order).

Every candidate (the original order, the search's, the greedy one) is then measured exactly -- the lower bound of
:func:`~microinterp.planner.optimal.lower_bound` on the requests TFLM would derive for that order -- and the best is
returned. Ops that keep state or run other subgraphs (variables, control flow) are not reordered: such graphs keep
their order.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

from ..resolver import declaration_of
from .lifetimes import allocation_infos, buffer_requests
from .optimal import lower_bound

#: Above this many memoised states the exact search gives way to the greedy one.
MAX_STATES = 200_000


class _TooBig(Exception):
    pass


def requests_for_order(model: Any, order: list[int], scratch: list[Any], unplanned: Any = frozenset()) -> list[Any]:
    """The planner's requests when subgraph 0's ops run in ``order`` (positions in the model's op list)."""
    main = model.main
    ops = tuple(main.operators[i] for i in order)
    permuted = dataclasses.replace(model, subgraphs=(dataclasses.replace(main, operators=ops),
                                                     *model.subgraphs[1:]))
    return buffer_requests(allocation_infos(permuted, scratch, unplanned))[0]


def reorderable(model: Any) -> bool:
    """Whether another op order can compute the same: one subgraph, no state, and a file order that is already a
    topological order of a graph -- each tensor written by one op, read only after it is written. (A hostile file
    that reads a tensor before the op writing it, or writes it twice, has no other order TFLM's run equals.)"""
    return len(model.subgraphs) == 1 and not any(_stateful(op) for op in model.main.operators) and \
        not any(t.is_variable for t in model.main.tensors) and _topological(model.main.operators)


def _stateful(op: Any) -> bool:
    """An op whose result depends on when it runs (state, resources, other subgraphs), by its kernel's traits."""
    traits = declaration_of(op.key).traits
    return traits.graph or traits.stateful


def _topological(ops: Any) -> bool:
    written: set[int] = set()
    later = {t for op in ops for t in op.outputs if t >= 0}
    for op in ops:
        if any(t >= 0 and t in later and t not in written for t in op.inputs):
            return False
        outs = [t for t in op.outputs if t >= 0]
        if len(set(outs)) != len(outs) or written & set(outs):
            return False
        written.update(outs)
    return True


def best_order(model: Any, scratch: list[Any], unplanned: Any = frozenset(), max_states: int | None = None
               ) -> tuple[list[int], int]:
    """``(order, peak)``: the order of subgraph 0's ops with the smallest peak of live bytes found, and that peak
    (the original order when the graph cannot be reordered). The exact search gives up after ``max_states``
    states (default :data:`MAX_STATES`; 0 skips it), leaving the greedy order."""
    n = len(model.main.operators)
    original = list(range(n))
    peak = lower_bound(requests_for_order(model, original, scratch, unplanned))
    if not reorderable(model) or n < 2:
        return original, peak
    candidates = [_greedy(model, scratch)]
    try:
        if max_states != 0:
            candidates.append(_exact(model, scratch, MAX_STATES if max_states is None else max_states))
    except _TooBig:
        pass
    best, best_peak = original, peak
    for order in candidates:
        p = lower_bound(requests_for_order(model, order, scratch, unplanned))
        if p < best_peak:
            best, best_peak = order, p
    return best, best_peak


def _graph(model: Any, scratch: list[Any]) -> tuple[list[set[int]], list[int], list[int], list[int], Any]:
    """Per op: its predecessors; tensor sizes; per op its scratch bytes; helpers for live-byte accounting."""
    main = model.main
    ops = main.operators
    producer = {t: k for k, op in enumerate(ops) for t in op.outputs if t >= 0}
    preds = [{producer[t] for t in op.inputs if t >= 0 and t in producer} for op in ops]
    size = [((t.nbytes + 15) // 16 * 16) if t.data is None and not t.is_variable else 0 for t in main.tensors]
    index_of = {op.index: k for k, op in enumerate(ops)}
    scratch_of = [0] * len(ops)
    for r in scratch:
        if r.subgraph == 0 and r.node in index_of:
            scratch_of[index_of[r.node]] += (r.nbytes + 15) // 16 * 16
    consumers: dict[int, set[int]] = {}
    for k, op in enumerate(ops):
        for t in op.inputs:
            if t >= 0:
                consumers.setdefault(t, set()).add(k)
    return preds, size, scratch_of, list(main.inputs), consumers


def _live_after(model: Any, done: frozenset[int], size: list[int], consumers: dict[int, set[int]]) -> int:
    main = model.main
    outputs = set(main.outputs)
    alive = set(main.inputs) | {t for k in done for t in main.operators[k].outputs if t >= 0}
    return sum(size[t] for t in alive if t in outputs or consumers.get(t, set()) - done)


def _step(model: Any, done: frozenset[int], k: int, size: list[int], scratch_of: list[int],
          consumers: dict[int, set[int]]) -> int:
    op = model.main.operators[k]
    outs = {t for t in op.outputs if t >= 0}
    main = model.main
    alive = set(main.inputs) | {t for j in done for t in main.operators[j].outputs if t >= 0}
    live = {t for t in alive if t in set(main.outputs) or consumers.get(t, set()) - done}
    if len(done) == len(main.operators) - 1:    # the last op's scope is the end: outputs no op writes are born
        live |= set(main.outputs)
    return sum(size[t] for t in live | outs) + scratch_of[k]


def _exact(model: Any, scratch: list[Any], max_states: int) -> list[int]:
    preds, size, scratch_of, _, consumers = _graph(model, scratch)
    n = len(preds)
    states = [0]

    @cache
    def best(done: frozenset[int]) -> tuple[int, tuple[int, ...]]:
        states[0] += 1
        if states[0] > max_states:
            raise _TooBig
        if len(done) == n:
            return 0, ()
        result = None
        for k in range(n):
            if k in done or not preds[k] <= done:
                continue
            here = _step(model, done, k, size, scratch_of, consumers)
            rest, tail = best(done | {k})
            cost = max(here, rest)
            if result is None or cost < result[0]:
                result = (cost, (k, *tail))
        return result

    try:
        return list(best(frozenset())[1])
    finally:
        best.cache_clear()


def _greedy(model: Any, scratch: list[Any]) -> list[int]:
    preds, size, _, _, consumers = _graph(model, scratch)
    n = len(preds)
    done: frozenset[int] = frozenset()
    order = []
    while len(order) < n:
        ready = [k for k in range(n) if k not in done and preds[k] <= done]
        k = min(ready, key=lambda j: (_live_after(model, done | {j}, size, consumers), j))
        order.append(k)
        done = done | {k}
    return order
