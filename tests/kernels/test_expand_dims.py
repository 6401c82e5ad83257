"""EXPAND_DIMS against the TFLM wheel: float32 / int8 / int16, axes from -(rank+1) to rank, extreme zero points;
refusals (non-constant axis, wrong output shape, unsupported type)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, const, model, quant, seeds, shapes, zero_points


@st.composite
def expand_dims_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "FLOAT32"]))
    shape = draw(shapes(0, 4, 5))
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    pos = axis + len(shape) + 1 if axis < 0 else axis
    axis_t = const(axis if draw(st.booleans()) else [axis])
    q = quant(type_name, 0.05, draw(zero_points))
    out = shape[:pos] + (1,) + shape[pos:]
    return model("EXPAND_DIMS", [T(shape, type_name, **q), axis_t], T(out, type_name, **q)), draw(seeds)


@given(expand_dims_cases())
def test_expand_dims_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_refusals():
    q = quant("INT8")
    assert_refused(model("EXPAND_DIMS", [T((2, 3), "INT8", **q), T((1,), "INT32")], T((1, 2, 3), "INT8", **q)),
                   match="Non-constant")
    assert_refused(model("EXPAND_DIMS", [T((2, 3), "INT8", **q), const([0])], T((2, 1, 3), "INT8", **q)),
                   match="output shape")
    assert_refused(model("EXPAND_DIMS", [T((2, 3), "INT8", **q), const([3])], T((2, 3, 1), "INT8", **q)),
                   match="out of range")
    assert_refused(model("EXPAND_DIMS", [T((2, 3), "INT32"), const([0])], T((1, 2, 3), "INT32")), tflm="invoke",
                   match="INT32")
