"""SPLIT_V against the TFLM wheel: float32 / int8 / int16 / int32, 1-D to 5-D, 1 to 4 parts of different sizes
along any axis (the sizes come from the output shapes; size_splits may hold a -1), extreme zero points; refusals."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, const, model, quant, seeds, shapes, zero_points


@st.composite
def split_v_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]))
    shape = list(draw(shapes(1, 5, 4)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    pos = axis % len(shape)
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    shape[pos] = sum(sizes)
    q = quant(type_name, 0.05, draw(zero_points))
    outs = [T(tuple(s if i == pos else d for i, d in enumerate(shape)), type_name, **q) for s in sizes]
    splits = list(sizes)
    if len(splits) > 1 and draw(st.booleans()):
        splits[draw(st.integers(0, len(splits) - 1))] = -1
    data = model("SPLIT_V", [T(tuple(shape), type_name, **q), const(splits), const([axis])], outs,
                 num_splits=len(sizes))
    return data, draw(seeds)


@given(split_v_cases())
def test_split_v_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_refusals():
    q = quant("INT8")
    x = T((2, 6), "INT8", **q)
    outs = [T((2, 1), "INT8", **q), T((2, 5), "INT8", **q)]
    assert_refused(model("SPLIT_V", [x, const([1, 5]), T((1,), "INT32")], outs, num_splits=2), match="Non-constant")
    assert_refused(model("SPLIT_V", [x, const([1, 5])], outs, num_splits=2), tflm="prepare", match="3 inputs")
    assert_refused(model("SPLIT_V", [x, const([1, 4]), const([1])], [outs[0], T((2, 4), "INT8", **q)],
                         num_splits=2), tflm=None, match="cover")
