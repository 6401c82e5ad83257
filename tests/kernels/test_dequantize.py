"""DEQUANTIZE against the TFLM wheel: int8 / int16 / uint8 -> float32 (per-channel inputs use the first scale)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import T, assert_refused, scales, shapes, single_op, zero_points


@given(in_type=st.sampled_from(["INT8", "INT16", "UINT8"]), shape=shapes(), scale=scales(-6, 3), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_dequantize_matches_tflm(in_type, shape, scale, data, seed):
    rng = np.random.default_rng(seed)
    zp = data.draw(zero_points(in_type))
    model = single_op("DEQUANTIZE", [T(shape, in_type, scale, zp)], T(shape, "FLOAT32"))
    assert_matches_tflm(model, [random_tensor(rng, shape, in_type)])


def test_per_channel_input_uses_first_scale():
    rng = np.random.default_rng(3)
    model = single_op("DEQUANTIZE", [T((2, 3), "INT8", [0.5, 0.25, 0.1], [1, 2, 3], axis=1)], T((2, 3), "FLOAT32"))
    assert_matches_tflm(model, [random_tensor(rng, (2, 3), "INT8")])


@pytest.mark.parametrize("in_type,out_type", [("FLOAT32", "FLOAT32"), ("INT32", "FLOAT32"), ("INT8", "INT32"),
                                              ("INT16", "INT8")])
def test_unsupported_types_refused(in_type, out_type):
    q = (0.5, 0) if in_type != "FLOAT32" else (None, None)
    qo = (0.5, 0) if out_type != "FLOAT32" else (None, None)
    model = single_op("DEQUANTIZE", [T((4,), in_type, *q)], T((4,), out_type, *qo))
    assert_refused(model, [], tflm="prepare")
