"""Hypothesis cases shared by test_maximum.py and test_minimum.py (same kernel, different comparison)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    broadcast_pair,
    scales,
    shapes,
    single_op,
    zero_points,
)

TYPES = ["FLOAT32", "INT8", "INT16", "INT32", "INT64"]


@st.composite
def max_min_cases(draw):
    dtype = draw(st.sampled_from(TYPES))
    if draw(st.booleans()):
        shape = draw(shapes(0, 6, 4))  # equal shapes: flat element-wise, any rank
        a_shape = b_shape = out_shape = shape
    else:
        a_shape, b_shape, out_shape = draw(broadcast_pair(5, 3))
    quant = dtype in ("INT8", "INT16")
    q = [(draw(scales()), draw(zero_points(dtype))) if quant else (None, None) for _ in range(3)]
    const = draw(st.sampled_from([None, 0, 1]))  # which input (if any) is a constant
    return dtype, (a_shape, b_shape, out_shape), q, const, draw(st.integers(0, 2**32 - 1))


def check_max_min(op: str, dtype, shapes3, q, const, seed) -> None:
    rng = np.random.default_rng(seed)
    values = []
    for shape in shapes3[:2]:
        if dtype == "INT64":
            values.append(rng.integers(-(1 << 62), 1 << 62, size=shape, dtype=np.int64))
        else:
            values.append(random_tensor(rng, shape, dtype, *((-3, 3) if dtype == "FLOAT32" else ())))
    if dtype != "INT64" and values[0].size and values[1].size == values[0].size:
        values[1].reshape(-1)[::3] = values[0].reshape(-1)[::3]  # ties
    if dtype == "FLOAT32":  # NaNs on either side: "a > b ? a : b" keeps b, a NaN in b wins
        values[0].reshape(-1)[1::5] = np.nan
        values[1].reshape(-1)[2::7] = np.nan
    specs = [T(s, dtype, *qq) for s, qq in zip(shapes3[:2], q[:2])]
    inputs = []
    for k in range(2):
        if const == k:
            specs[k].data = values[k]
        else:
            inputs.append(values[k])
    model = single_op(op, specs, T(shapes3[2], dtype, *q[2]))
    if dtype == "FLOAT32":
        assert_bitwise_matches_tflm(model, inputs)
    else:
        assert_matches_tflm(model, inputs)


def check_refusals(op: str) -> None:
    mixed = single_op(op, [T((4,), "INT8", 0.1, 0), T((4,), "INT16", 0.1, 0)], T((4,), "INT8", 0.1, 0))
    assert_refused(mixed, [], tflm=None)
    bad_out = single_op(op, [T((2, 3), "INT8", 0.1, 0), T((3,), "INT8", 0.1, 0)], T((3, 3), "INT8", 0.1, 0))
    assert_refused(bad_out, [], tflm=None)
    u8 = single_op(op, [T((4,), "UINT8", 0.1, 0), T((4,), "UINT8", 0.1, 0)], T((4,), "UINT8", 0.1, 0))
    assert_refused(u8, [np.zeros(4, np.uint8), np.zeros(4, np.uint8)], tflm="invoke")
