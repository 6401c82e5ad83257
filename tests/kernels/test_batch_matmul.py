"""BATCH_MATMUL against the TFLM wheel (reference and optimized kernels): float32 bit for bit, int8 with random
zero points and scales, int16; adj_x/adj_y; ranks 2..5 with broadcast batch dims; constant or input rhs; the arena
head; refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import compare_optimized, tflm_arena_head

from .single_op_models import T, assert_bitwise_matches_tflm, assert_refused, scales, single_op, zero_points


@st.composite
def matmul_cases(draw):
    type_name = draw(st.sampled_from(["FLOAT32", "INT8", "INT16"]))
    rank = draw(st.integers(2, 5))
    batch = [draw(st.integers(1, 3)) for _ in range(rank - 2)]
    m, k, n = draw(st.integers(1, 5)), draw(st.integers(1, 9)), draw(st.integers(1, 5))
    lb = [1 if draw(st.booleans()) else d for d in batch]
    rb = [1 if draw(st.booleans()) else d for d in batch]
    lb, rb = lb[draw(st.integers(0, len(lb))):], rb[draw(st.integers(0, len(rb))):]
    adj_x, adj_y = draw(st.booleans()), draw(st.booleans())
    lhs = (*lb, *((k, m) if adj_x else (m, k)))
    rhs = (*rb, *((n, k) if adj_y else (k, n)))
    out_rank = max(len(lhs), len(rhs))
    full_batch = np.broadcast_shapes(tuple(lb), tuple(rb))
    out = (*((1,) * (out_rank - 2 - len(full_batch))), *full_batch, m, n)
    q = [(None, None)] * 3
    if type_name == "INT8":
        q = [(draw(scales(-3, 0)), draw(zero_points("INT8"))) for _ in range(3)]
    elif type_name == "INT16":
        q = [(draw(scales(-4, -1)), 0) for _ in range(3)]
    return type_name, lhs, rhs, out, adj_x, adj_y, q, draw(st.booleans()), draw(st.integers(0, 2**32 - 1))


@given(case=matmul_cases())
def test_batch_matmul_matches_tflm(case):
    type_name, lhs_shape, rhs_shape, out_shape, adj_x, adj_y, q, const_rhs, seed = case
    rng = np.random.default_rng(seed)
    lhs = random_tensor(rng, lhs_shape, type_name)
    rhs = random_tensor(rng, rhs_shape, type_name)
    specs = [T(lhs_shape, type_name, *q[0]), T(rhs_shape, type_name, *q[1], data=rhs if const_rhs else None)]
    model = single_op("BATCH_MATMUL", specs, T(out_shape, type_name, *q[2]), adj_x=adj_x, adj_y=adj_y)
    inputs = [lhs] if const_rhs else [lhs, rhs]
    if type_name == "FLOAT32":
        assert_bitwise_matches_tflm(model, inputs)
        assert compare_optimized(model, inputs).ok
    else:
        assert_matches_tflm(model, inputs)      # also checks optimized == reference, op by op
    assert Interpreter(model).head_bytes == tflm_arena_head(model)


@pytest.mark.parametrize("zp", [(-128, 127), (127, -128), (0, 0)])
def test_attention_sized_int8_extremes(zp):
    rng = np.random.default_rng(5)
    q = rng.integers(-128, 128, size=(1, 4, 16, 32)).astype(np.int8)
    kt = rng.integers(-128, 128, size=(1, 4, 16, 32)).astype(np.int8)
    model = single_op("BATCH_MATMUL", [T(q.shape, "INT8", 0.02, zp[0]), T(kt.shape, "INT8", 0.03, zp[1])],
                      T((1, 4, 16, 16), "INT8", 0.5, 3), adj_x=False, adj_y=True)
    assert_matches_tflm(model, [q, kt])


def test_refusals():
    assert_refused(single_op("BATCH_MATMUL", [T((2, 3), "FLOAT32"), T((4, 2), "FLOAT32")], T((2, 2), "FLOAT32"),
                             adj_x=False, adj_y=False), [])
    assert_refused(single_op("BATCH_MATMUL", [T((2, 3), "INT32"), T((3, 2), "INT32")], T((2, 2), "INT32"),
                             adj_x=False, adj_y=False), [])
    assert_refused(single_op("BATCH_MATMUL", [T((2, 2, 3), "FLOAT32"), T((3, 3, 2), "FLOAT32")],
                             T((3, 2, 2), "FLOAT32"), adj_x=False, adj_y=False), [])
