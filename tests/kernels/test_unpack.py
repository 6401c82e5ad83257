"""UNPACK against the TFLM wheel: float32 / int8 / int16 / int32, 1-D to 5-D inputs, every axis (negative too),
extreme zero points; refusals (num mismatch, unsupported type)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, model, quant, seeds, shapes, zero_points


@st.composite
def unpack_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]))
    shape = draw(shapes(1, 5, 4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    pos = axis % len(shape)
    q = quant(type_name, 0.05, draw(zero_points))
    out = shape[:pos] + shape[pos + 1:]
    data = model("UNPACK", [T(shape, type_name, **q)], [T(out, type_name, **q)] * shape[pos], num=shape[pos],
                 axis=axis)
    return data, draw(seeds)


@given(unpack_cases())
def test_unpack_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_refusals():
    q = quant("INT8")
    assert_refused(model("UNPACK", [T((2, 3), "INT8", **q)], [T((3,), "INT8", **q)] * 2, num=3, axis=0),
                   tflm=None, match="num")
    assert_refused(model("UNPACK", [T((3, 3), "INT8", **q)], [T((3,), "INT8", **q)] * 2, num=2, axis=0),
                   tflm=None, match="num")
    assert_refused(model("UNPACK", [T((2, 3), "UINT8", scale=0.1, zp=0)], [T((3,), "UINT8", scale=0.1, zp=0)] * 2,
                         num=2, axis=0), tflm="invoke", match="UINT8")
