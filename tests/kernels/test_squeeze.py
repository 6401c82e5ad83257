"""SQUEEZE against the TFLM wheel: any element type (int8 / int16 / int32 / float32 / uint8), all size-1 dims or
listed ones (negative too), extreme zero points; refusals."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, model, quant, seeds, zero_points


@st.composite
def squeeze_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32", "UINT8"]))
    shape = tuple(draw(st.lists(st.sampled_from([1, 1, 2, 3, 4]), min_size=1, max_size=6)))
    ones = [i for i, d in enumerate(shape) if d == 1]
    dims = draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    dims = [d - len(shape) if draw(st.booleans()) else d for d in dims]
    gone = {d % len(shape) for d in dims} if dims else set(ones)
    q = quant(type_name, 0.05, draw(zero_points)) if type_name != "UINT8" else {"scale": 0.05, "zp": 128}
    out = tuple(d for i, d in enumerate(shape) if i not in gone)
    return model("SQUEEZE", [T(shape, type_name, **q)], T(out, type_name, **q), squeeze_dims=dims), draw(seeds)


@given(squeeze_cases())
def test_squeeze_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_refusals():
    q = quant("INT8")
    assert_refused(model("SQUEEZE", [T((1, 3), "INT8", **q)], T((3,), "INT8", **q), squeeze_dims=[1]),
                   match="size 1")
    assert_refused(model("SQUEEZE", [T((1, 3), "INT8", **q)], T((3,), "INT8", **q), squeeze_dims=[2]),
                   match="out of range")
    assert_refused(model("SQUEEZE", [T((1,) * 9, "INT8", **q)], T((1,), "INT8", **q), squeeze_dims=[0]),
                   match="8")
