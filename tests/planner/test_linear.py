"""The linear planner (TFLM's LinearMemoryPlanner, used when all tensors are preserved): back to back, in order.

The wheel cannot report its linear plan (``print_allocations`` needs the recording allocator, which
``kPreserveAllTensors`` does not use), so these tests pin the rule itself and the interpreter's use of it.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.planner import BufferRequest, plan_linear
from microinterp.planner.greedy import plan_size

from .graphgen import INTERPRETER_OPS, random_graph
from .test_greedy import request_lists


def test_back_to_back_in_request_order():
    reqs = [BufferRequest(32, 0, 1), BufferRequest(16, 5, 5), BufferRequest(64, 0, 9)]
    assert plan_linear(reqs) == [0, 32, 48]
    assert plan_size(reqs, plan_linear(reqs)) == 112
    assert plan_linear([]) == []


def test_lifetimes_and_offline_offsets_are_ignored():
    reqs = [BufferRequest(32, 0, 0, 512), BufferRequest(16, 1, 1), BufferRequest(0, -1, -1), BufferRequest(16, 2, 2)]
    assert plan_linear(reqs) == [0, 32, 48, 48]


@given(request_lists(offline=True))
def test_nothing_overlaps_and_size_is_the_sum(reqs):
    offsets = plan_linear(reqs)
    assert plan_size(reqs, offsets) == sum(r.size for r in reqs)
    for k in range(1, len(reqs)):
        assert offsets[k] == offsets[k - 1] + reqs[k - 1].size


@given(seed=st.integers(0, 2**32 - 1))
def test_interpreter_preserving_all_tensors_uses_it(seed):
    g = random_graph(np.random.default_rng(seed), ops=INTERPRETER_OPS)
    preserved = Interpreter(g.data, preserve_all_tensors=True)
    rows = preserved.plan_table()
    assert [r["offset"] for r in rows] == list(np.cumsum([0] + [r["size"] for r in rows])[:-1])
    assert preserved.head_bytes == sum(r["size"] for r in rows) >= Interpreter(g.data).head_bytes
