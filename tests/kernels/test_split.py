"""SPLIT against the TFLM wheel: float32 / int8 / int16 / int32, 1-D to 5-D, 1 to 4 equal parts along any axis
(negative too, scalar or 1-element axis tensor), extreme zero points; refusals."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, const, model, quant, seeds, shapes, zero_points


@st.composite
def split_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]))
    shape = list(draw(shapes(1, 5, 4)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    parts = draw(st.integers(1, 4))
    pos = axis % len(shape)
    shape[pos] *= parts
    part_shape = tuple(d // parts if i == pos else d for i, d in enumerate(shape))
    q = quant(type_name, 0.05, draw(zero_points))
    axis_t = const(axis if draw(st.booleans()) else [axis])
    data = model("SPLIT", [axis_t, T(tuple(shape), type_name, **q)], [T(part_shape, type_name, **q)] * parts,
                 num_splits=parts)
    return data, draw(seeds)


@given(split_cases())
def test_split_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_refusals():
    q = quant("INT8")
    x = T((2, 6), "INT8", **q)
    assert_refused(model("SPLIT", [T((), "INT32"), x], [T((2, 3), "INT8", **q)] * 2, num_splits=2),
                   match="Non-constant")
    assert_refused(model("SPLIT", [const(2), x], [T((2, 3), "INT8", **q)] * 2, num_splits=2), tflm="invoke",
                   match="out of range")
    assert_refused(model("SPLIT", [const(1), x], [T((2, 2), "INT8", **q)] * 2, num_splits=2), tflm=None,
                   match="cover")
    assert_refused(model("SPLIT", [const(1), T((2, 6), "UINT8", scale=0.1, zp=0)],
                         [T((2, 3), "UINT8", scale=0.1, zp=0)] * 2, num_splits=2), tflm="invoke", match="UINT8")
