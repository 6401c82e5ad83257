"""FLOOR_DIV, FLOOR_MOD (float32 only in TFLM), SQUARED_DIFFERENCE (float32, int32, int8, int16) and ADD_N (float32,
int8; its scratch list of input pointers in the plan) against the TFLM wheel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, InvokeError
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import tflm_arena_head

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    broadcast_pair,
    scales,
    shapes,
    single_op,
    with_specials,
    zero_points,
)


@given(op=st.sampled_from(["FLOOR_DIV", "FLOOR_MOD"]), same=st.booleans(), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_floor_div_mod_match_tflm_bitwise(op, same, data, seed):
    a_shape, b_shape, out_shape = (data.draw(shapes(0, 5, 4)),) * 3 if same else data.draw(broadcast_pair(4, 3))
    rng = np.random.default_rng(seed)
    a = with_specials(random_tensor(rng, a_shape, "FLOAT32", -50, 50))
    b = random_tensor(rng, b_shape, "FLOAT32", -7, 7)
    b[b == 0] = 1.5
    if op == "FLOOR_MOD" and b.size > 2:
        b.reshape(-1)[1] = -0.0 if data.draw(st.booleans()) else np.inf
    model = single_op(op, [T(a_shape, "FLOAT32"), T(b_shape, "FLOAT32")], T(out_shape, "FLOAT32"))
    assert_bitwise_matches_tflm(model, [a, b])


def test_floor_div_by_zero_fails_at_invoke():
    model = single_op("FLOOR_DIV", [T((3,), "FLOAT32"), T((3,), "FLOAT32")], T((3,), "FLOAT32"))
    it = Interpreter(model)
    it.set_input(np.ones(3, np.float32), 0)
    it.set_input(np.array([1, 0, 2], np.float32), 1)
    with pytest.raises(InvokeError, match="Division by 0"):
        it.invoke()


@pytest.mark.parametrize("op", ["FLOOR_DIV", "FLOOR_MOD"])
def test_floor_ops_refuse_integers_like_the_wheel(op):
    assert_refused(single_op(op, [T((4,), "INT32")] * 2, T((4,), "INT32")), [np.ones(4, np.int32)] * 2,
                   tflm="invoke")


@given(type_name=st.sampled_from(["FLOAT32", "INT32", "INT8", "INT16"]), same=st.booleans(), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_squared_difference_matches_tflm(type_name, same, data, seed):
    a_shape, b_shape, out_shape = (data.draw(shapes(0, 4, 4)),) * 3 if same else data.draw(broadcast_pair(4, 3))
    rng = np.random.default_rng(seed)
    q = [(None, None)] * 3
    if type_name in ("INT8", "INT16"):
        q = [(data.draw(scales(-4, 0)), 0 if type_name == "INT16" else data.draw(zero_points("INT8")))
             for _ in range(3)]
    if type_name == "INT32":
        vals = [np.asarray(rng.integers(-(1 << 20), 1 << 20, size=s), np.int32) for s in (a_shape, b_shape)]
    else:
        vals = [random_tensor(rng, s, type_name) for s in (a_shape, b_shape)]
    if type_name == "FLOAT32":
        vals[0] = with_specials(vals[0])
    model = single_op("SQUARED_DIFFERENCE", [T(a_shape, type_name, *q[0]), T(b_shape, type_name, *q[1])],
                      T(out_shape, type_name, *q[2]))
    if type_name == "FLOAT32":
        assert_bitwise_matches_tflm(model, vals)
    else:
        assert_matches_tflm(model, vals)


@given(type_name=st.sampled_from(["FLOAT32", "INT8"]), n=st.integers(2, 5), shape=shapes(0, 4, 4), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_add_n_matches_tflm(type_name, n, shape, data, seed):
    rng = np.random.default_rng(seed)
    q_in = (data.draw(scales(-3, 0)), data.draw(zero_points("INT8"))) if type_name == "INT8" else (None, None)
    q_out = (data.draw(scales(-3, 0)), data.draw(zero_points("INT8"))) if type_name == "INT8" else (None, None)
    vals = [random_tensor(rng, shape, type_name) for _ in range(n)]
    model = single_op("ADD_N", [T(shape, type_name, *q_in)] * n, T(shape, type_name, *q_out))
    assert_matches_tflm(model, vals)
    assert Interpreter(model).head_bytes == tflm_arena_head(model)


def test_add_n_refusals():
    assert_refused(single_op("ADD_N", [T((4,), "INT32")] * 2, T((4,), "INT32")), [])
    assert_refused(single_op("ADD_N", [T((4,), "INT8", 0.1, 0), T((4,), "INT8", 0.2, 0)], T((4,), "INT8", 0.1, 0)),
                   [])
    assert_refused(single_op("ADD_N", [T((4,), "FLOAT32"), T((2, 2), "FLOAT32")], T((4,), "FLOAT32")), [])
