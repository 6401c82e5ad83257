"""PACK against the TFLM wheel: float32 / int8 / int16 / int32, 1 to 5 inputs, every axis (negative too), 0-D to
4-D inputs, extreme zero points; refusals (values_count mismatch, shapes that do not stack, unsupported type)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, model, quant, seeds, shapes, zero_points


@st.composite
def pack_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]))
    shape = draw(shapes(0, 4, 4))
    count = draw(st.integers(1, 5))
    rank_out = len(shape) + 1
    axis = draw(st.integers(-rank_out, rank_out - 1))
    pos = axis + rank_out if axis < 0 else axis
    q = quant(type_name, 0.05, draw(zero_points))
    out = shape[:pos] + (count,) + shape[pos:]
    data = model("PACK", [T(shape, type_name, **q) for _ in range(count)], T(out, type_name, **q),
                 values_count=count, axis=axis)
    return data, draw(seeds)


@given(pack_cases())
def test_pack_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_refusals():
    q = quant("INT8")
    x = T((2, 3), "INT8", **q)
    assert_refused(model("PACK", [x, x], T((3, 2, 3), "INT8", **q), values_count=3, axis=0), tflm=None,
                   match="values_count")
    assert_refused(model("PACK", [x, T((3, 2), "INT8", **q)], T((2, 2, 3), "INT8", **q), values_count=2, axis=0),
                   tflm=None, match="input 1")
    assert_refused(model("PACK", [x, x], T((2, 3, 2), "INT8", **q), values_count=2, axis=0), tflm=None,
                   match="output shape")
    assert_refused(model("PACK", [T((2,), "UINT8", scale=0.1, zp=0)] * 2, T((2, 2), "UINT8", scale=0.1, zp=0),
                         values_count=2, axis=0), tflm="invoke", match="UINT8")
