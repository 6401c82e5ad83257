"""CONCATENATION against the TFLM wheel: float32 / int8 / int16 / int32 (and int64 / bool), 1 to 10 inputs, 1-D to
6-D, any axis (negative too), extreme zero points shared by all int8 tensors; refusals: int8 inputs whose scale or
zero point differ from the output's (TFLM never rescales), int16 zero points, fused activations, 11 inputs, 7-D."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, model, quant, seeds, shapes, zero_points


@st.composite
def concatenation_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]))
    shape = list(draw(shapes(1, 6, 4)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    pos = axis % len(shape)
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=10))
    q = quant(type_name, draw(st.sampled_from([0.05, 0.3])), draw(zero_points))
    ins = [T(tuple(s if i == pos else d for i, d in enumerate(shape)), type_name, **q) for s in sizes]
    shape[pos] = sum(sizes)
    data = model("CONCATENATION", ins, T(tuple(shape), type_name, **q), axis=axis)
    return data, draw(seeds)


@given(concatenation_cases())
def test_concatenation_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


@pytest.mark.parametrize("type_name", ["INT64", "BOOL"])
def test_wide_and_bool_types(type_name):
    data = model("CONCATENATION", [T((2, 3), type_name), T((2, 1), type_name)], T((2, 4), type_name), axis=1)
    check(data, np.random.default_rng(11))


def test_refusals():
    q = quant("INT8", 0.1, 5)
    y = T((2, 4), "INT8", **q)
    assert_refused(model("CONCATENATION", [T((2, 3), "INT8", scale=0.2, zp=5), T((2, 1), "INT8", **q)], y, axis=1),
                   match="quantization")
    assert_refused(model("CONCATENATION", [T((2, 3), "INT8", **q), T((2, 1), "INT8", scale=0.1, zp=4)], y, axis=1),
                   match="quantization")
    assert_refused(model("CONCATENATION", [T((2, 3), "INT16", scale=0.1, zp=3), T((2, 1), "INT16", scale=0.1, zp=0)],
                         T((2, 4), "INT16", scale=0.1, zp=0), axis=1), match="zero point")
    assert_refused(model("CONCATENATION", [T((2, 3), "INT8", **q), T((2, 1), "INT8", **q)], y, axis=1,
                         fused_activation_function="RELU"), match="activation")
    assert_refused(model("CONCATENATION", [T((2, 1), "INT8", **q)] * 11, T((2, 11), "INT8", **q), axis=1),
                   match="10")
    assert_refused(model("CONCATENATION", [T((1,) * 6 + (2,), "INT8", **q)] * 2, T((1,) * 6 + (4,), "INT8", **q),
                         axis=-1), match="6")
    assert_refused(model("CONCATENATION", [T((2, 3), "UINT8", scale=0.1, zp=0)] * 2, T((2, 6), "UINT8", scale=0.1,
                                                                                      zp=0), axis=1), match="UINT8")
