"""PRELU against the TFLM wheel: float32, int8 and int16 (int8 alpha), alpha constant or an input, broadcasting."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    broadcast_pair,
    scales,
    single_op,
    with_specials,
    zero_points,
)


@given(dtype=st.sampled_from(["FLOAT32", "INT8", "INT16"]), shapes3=broadcast_pair(4), const_alpha=st.booleans(),
       s_in=scales(-3, 1), s_a=scales(-3, 0), ratio=st.floats(-1.5, 1.5), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
@example(dtype="FLOAT32", shapes3=((1, 1, 1), (1, 1, 2), (1, 1, 2)), const_alpha=False, s_in=1.0, s_a=1.0,
         ratio=0.0, data=None, seed=0)  # the input is the broadcast side
def test_prelu_matches_tflm(dtype, shapes3, const_alpha, s_in, s_a, ratio, data, seed):
    rng = np.random.default_rng(seed)
    x_shape, a_shape, out_shape = shapes3
    a_type = "FLOAT32" if dtype == "FLOAT32" else "INT8"
    alpha = random_tensor(rng, a_shape, a_type, -2, 2) if a_type == "FLOAT32" else random_tensor(rng, a_shape, a_type)
    if dtype == "FLOAT32":
        xin, ain, out = T(x_shape, dtype), T(a_shape, a_type), T(out_shape, dtype)
    else:
        s_out = float(np.float32(s_in * 10.0 ** ratio))
        xin = T(x_shape, dtype, s_in, data.draw(zero_points(dtype)))
        ain = T(a_shape, a_type, s_a, data.draw(zero_points(a_type)))
        out = T(out_shape, dtype, s_out, data.draw(zero_points(dtype)))
    inputs = [random_tensor(rng, x_shape, dtype)]
    if const_alpha:
        ain.data = alpha
    else:
        inputs.append(alpha)
    model = single_op("PRELU", [xin, ain], out)
    if dtype == "FLOAT32":
        inputs[0] = with_specials(inputs[0])
        assert_bitwise_matches_tflm(model, inputs)
    else:
        assert_matches_tflm(model, inputs)


def test_int16_requires_int8_alpha():
    model = single_op("PRELU", [T((1, 4), "INT16", 0.5, 0), T((4,), "INT16", 0.5, 0, data=np.arange(4))],
                      T((1, 4), "INT16", 0.5, 0))
    assert_refused(model, [], tflm="prepare")


def test_shapes_must_broadcast_to_output():
    model = single_op("PRELU", [T((2, 3), "INT8", 0.5, 0), T((2,), "INT8", 0.5, 0, data=np.arange(2))],
                      T((2, 3), "INT8", 0.5, 0))
    assert_refused(model, [], tflm=None)


def test_more_than_4_dims_refused():
    model = single_op("PRELU", [T((1, 1, 2, 2, 3), "INT8", 0.5, 0), T((3,), "INT8", 0.5, 0, data=np.arange(3))],
                      T((1, 1, 2, 2, 3), "INT8", 0.5, 0))
    assert_refused(model, [], tflm=None)
