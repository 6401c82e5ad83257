"""Hypothesis cases shared by test_arg_max.py and test_arg_min.py (same kernel, different comparison)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import T, assert_refused, scales, shapes, single_op, zero_points


@st.composite
def arg_cases(draw):
    dtype = draw(st.sampled_from(["FLOAT32", "INT8"]))
    shape = draw(shapes(1, 5, 5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    q = (draw(scales()), draw(zero_points("INT8"))) if dtype == "INT8" else (None, None)
    return dtype, shape, axis, q, draw(st.booleans()), draw(st.sampled_from(["none", "ties", "nan"])), \
        draw(st.integers(0, 2**32 - 1))


def check_arg(op: str, dtype, shape, axis, q, const_axis, values, seed) -> None:
    rng = np.random.default_rng(seed)
    x = random_tensor(rng, shape, dtype, *((-5, 5) if dtype == "INT8" else ()))  # narrow int range: many ties
    if values == "ties":
        x = np.round(x) if dtype == "FLOAT32" else x // 4
    if values == "nan" and dtype == "FLOAT32":
        x.reshape(-1)[rng.integers(0, x.size, size=max(1, x.size // 4))] = np.nan
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
    axis_spec = T((1,), "INT32", data=np.array([axis]) if const_axis else None)
    model = single_op(op, [T(shape, dtype, *q), axis_spec], T(out_shape, "INT32"),
                      output_type="INT32")
    inputs = [x] if const_axis else [x, np.array([axis], np.int32)]
    assert_matches_tflm(model, inputs)


def check_refusals(op: str) -> None:
    x = np.zeros((2, 3), np.float32)

    def model(out_type="INT32", axis_type="INT32", axis=1, in_type="FLOAT32", out_shape=(2,)):
        return single_op(op, [T((2, 3), in_type), T((1,), axis_type, data=np.array([axis]))],
                         T(out_shape, out_type), output_type=out_type)

    assert_refused(model(out_type="INT64"), [x], tflm="invoke")
    assert_refused(model(axis_type="INT64"), [x], tflm="invoke")
    assert_refused(model(in_type="INT16"), [x.astype(np.int16)], tflm="invoke")
    assert_refused(model(axis=2), [x], tflm=None)
    assert_refused(model(out_shape=(3,)), [x], tflm=None)
