"""TRANSPOSE against the TFLM wheel: float32 / int8 / int16, 1-D to 5-D, random permutations, extreme zero points;
refusals (6-D, non-constant perm, out-of-range perm, unsupported type)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, const, model, quant, seeds, shapes, zero_points


@st.composite
def transpose_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "FLOAT32"]))
    shape = draw(shapes(1, 5, 5))
    perm = draw(st.permutations(range(len(shape))))
    q = quant(type_name, 0.05, draw(zero_points))
    data = model("TRANSPOSE", [T(shape, type_name, **q), const(perm)], T(tuple(shape[p] for p in perm), type_name, **q))
    return data, draw(seeds)


@given(transpose_cases())
def test_transpose_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_nchw_to_nhwc():
    """mobilenet_v2's first op."""
    q = quant("INT8", 0.02, -1)
    check(model("TRANSPOSE", [T((1, 3, 16, 16), "INT8", **q), const([0, 2, 3, 1])], T((1, 16, 16, 3), "INT8", **q)),
          np.random.default_rng(10))


def test_refusals():
    q = quant("INT8")
    assert_refused(model("TRANSPOSE", [T((1, 2, 1, 2, 1, 2), "INT8", **q), const([5, 4, 3, 2, 1, 0])],
                         T((2, 1, 2, 1, 2, 1), "INT8", **q)), match="1D-5D")
    assert_refused(model("TRANSPOSE", [T((2, 3), "INT8", **q), T((2,), "INT32")], T((3, 2), "INT8", **q)),
                   match="Non-constant")
    assert_refused(model("TRANSPOSE", [T((2, 3), "INT8", **q), const([1, 2])], T((3, 2), "INT8", **q)),
                   match="out of bounds")
    assert_refused(model("TRANSPOSE", [T((2, 3), "INT32"), const([1, 0])], T((3, 2), "INT32")), tflm="invoke",
                   match="INT32")
    assert_refused(model("TRANSPOSE", [T((2, 3), "INT8", **q), const([0, 1, 0])], T((2, 3), "INT8", **q)),
                   match="perm")
