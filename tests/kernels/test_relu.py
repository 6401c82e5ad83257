"""RELU against the TFLM wheel: float32, int8 and int16 with requantization to the output scale."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    scales,
    shapes,
    single_op,
    with_specials,
    zero_points,
)


@given(dtype=st.sampled_from(["FLOAT32", "INT8", "INT16"]), shape=shapes(), s_in=scales(-3, 1),
       ratio=st.floats(-2.5, 2.5), data=st.data(), seed=st.integers(0, 2**32 - 1))
@example(dtype="INT8", shape=(5,), s_in=0.1, ratio=0.0, data=None, seed=0)
def test_relu_matches_tflm(dtype, shape, s_in, ratio, data, seed):
    rng = np.random.default_rng(seed)
    if dtype == "FLOAT32":
        model = single_op("RELU", [T(shape, dtype)], T(shape, dtype))
    else:
        s_out = float(np.float32(s_in * 10.0 ** ratio))
        zp_in = zp_out = 0
        if dtype == "INT8" and data is not None:
            zp_in, zp_out = data.draw(zero_points(dtype)), data.draw(zero_points(dtype))
        model = single_op("RELU", [T(shape, dtype, s_in, zp_in)], T(shape, dtype, s_out, zp_out))
    if dtype == "FLOAT32":
        assert_bitwise_matches_tflm(model, [with_specials(random_tensor(rng, shape, dtype))])
    else:
        assert_matches_tflm(model, [random_tensor(rng, shape, dtype)])


def test_int16_requires_zero_points_0():
    model = single_op("RELU", [T((4,), "INT16", 0.1, 3)], T((4,), "INT16", 0.1, 0))
    assert_refused(model, [], tflm="prepare")


@pytest.mark.parametrize("dtype", ["UINT8", "INT32"])
def test_unsupported_types_refused(dtype):
    model = single_op("RELU", [T((4,), dtype, 0.1, 0)], T((4,), dtype, 0.1, 0))
    assert_refused(model, [np.zeros(4, {"UINT8": np.uint8, "INT32": np.int32}[dtype])], tflm="invoke")


def test_mixed_types_refused():
    model = single_op("RELU", [T((4,), "INT8", 0.1, 0)], T((4,), "INT16", 0.1, 0))
    assert_refused(model, [], tflm=None)


def test_unquantized_int8_refused():
    # TFLM would compute QuantizeMultiplier(0/0) and run on garbage; microinterp refuses the model.
    model = single_op("RELU", [T((4,), "INT8")], T((4,), "INT8"))
    assert_refused(model, [], tflm=None, match="positive quantization scale")
