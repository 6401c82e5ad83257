"""CUMSUM against the TFLM wheel: float32 (bit for bit) and int8 with random quantization, every axis (negative
too, constant or as an input), exclusive and reverse."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, InvokeError
from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    scales,
    shapes,
    single_op,
    zero_points,
)


@given(type_name=st.sampled_from(["FLOAT32", "INT8"]), shape=shapes(1, 4, 5), data=st.data(),
       exclusive=st.booleans(), reverse=st.booleans(), const=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_cumsum_matches_tflm(type_name, shape, data, exclusive, reverse, const, seed):
    rank = len(shape)
    axis = np.array([data.draw(st.integers(-rank, rank - 1))], np.int32)
    rng = np.random.default_rng(seed)
    x = random_tensor(rng, shape, type_name)
    q_in = q_out = (None, None)
    if type_name == "INT8":
        q_in = (data.draw(scales(-3, 0)), data.draw(zero_points("INT8")))
        q_out = (data.draw(scales(-2, 1)), data.draw(zero_points("INT8")))
    model = single_op("CUMSUM", [T(shape, type_name, *q_in), T((1,), "INT32", data=axis if const else None)],
                      T(shape, type_name, *q_out), exclusive=exclusive, reverse=reverse)
    inputs = [x] if const else [x, axis]
    if type_name == "FLOAT32":
        assert_bitwise_matches_tflm(model, inputs)
    else:
        assert_matches_tflm(model, inputs)


def test_invalid_axis():
    assert_refused(single_op("CUMSUM", [T((2, 3), "FLOAT32"), T((1,), "INT32", data=np.array([2], np.int32))],
                             T((2, 3), "FLOAT32")), [np.zeros((2, 3), np.float32)], tflm="invoke", match="axis")
    it = Interpreter(single_op("CUMSUM", [T((2, 3), "FLOAT32"), T((1,), "INT32")], T((2, 3), "FLOAT32")))
    it.set_input(np.zeros((2, 3), np.float32), 0)
    it.set_input(np.array([-3], np.int32), 1)
    with pytest.raises(InvokeError, match="axis"):
        it.invoke()


def test_types_refused_like_the_wheel():
    assert_refused(single_op("CUMSUM", [T((4,), "INT32"), T((1,), "INT32", data=np.array([0], np.int32))],
                             T((4,), "INT32")), [])
