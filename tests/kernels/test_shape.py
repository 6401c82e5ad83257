"""SHAPE against the TFLM wheel: any input type and rank (0-D to 6-D); the output must be INT32 with one element
per input dim."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, model, quant, seeds, shapes, zero_points


@st.composite
def shape_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]))
    shape = draw(shapes(0, 6, 7))
    q = quant(type_name, 0.05, draw(zero_points))
    return model("SHAPE", [T(shape, type_name, **q)], T((len(shape),), "INT32"), out_type="INT32"), draw(seeds)


@given(shape_cases())
def test_shape_matches_tflm(case):
    data, seed = case
    out = check(data, np.random.default_rng(seed))[0]
    assert out.dtype == np.int32


def test_refusals():
    q = quant("INT8")
    assert_refused(model("SHAPE", [T((2, 3), "INT8", **q)], T((2,), "INT64"), out_type="INT64"), tflm="invoke",
                   match="INT32")
    assert_refused(model("SHAPE", [T((2, 3), "INT8", **q)], T((3,), "INT32")), tflm=None, match="elements")
