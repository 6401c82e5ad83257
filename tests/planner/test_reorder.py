"""Operator reordering: valid topological orders, never a larger peak than the model's order, and -- on small random
graphs -- exactly the smallest peak over all topological orders (brute force)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import microinterp as mi
from microinterp.planner.optimal import lower_bound
from microinterp.planner.reorder import _graph, best_order, reorderable, requests_for_order

from ..kernels.test_resource_variables import accumulator_model
from .graphgen import random_graph


def topological(order, preds) -> bool:
    pos = {o: i for i, o in enumerate(order)}
    return sorted(order) == list(range(len(preds))) and all(pos[p] < pos[o] for o in pos for p in preds[o])


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_search_finds_the_smallest_peak_of_all_orders(seed):
    it = mi.Interpreter(random_graph(np.random.default_rng(seed), max_ops=7).data)
    m, scratch = it.model, it.runtime.plan["scratch"]
    preds = _graph(m, scratch)[0]
    order, peak = best_order(m, scratch)
    assert topological(order, preds)
    assert peak == lower_bound(requests_for_order(m, order, scratch)) <= lower_bound(it.runtime.plan["requests"])
    n = len(preds)
    if n <= 7:
        best = min(lower_bound(requests_for_order(m, list(p), scratch))
                   for p in itertools.permutations(range(n)) if topological(list(p), preds))
        assert peak == best


def test_stateful_graphs_keep_their_order():
    it = mi.Interpreter(accumulator_model())
    assert not reorderable(it.model)
    order, _ = best_order(it.model, it.runtime.plan["scratch"])
    assert order == list(range(len(it.model.main.operators)))
