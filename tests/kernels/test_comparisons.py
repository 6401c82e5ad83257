"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL against the TFLM wheel: every input type each op
takes, equal shapes (any rank) and 4-D broadcasting, int8 rescaling with different scales and zero points on the
two sides (ties after rescaling included), NaN/inf/-0.0 for float."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import T, assert_refused, broadcast_pair, shapes, single_op, with_specials, zero_points

OPS = {"EQUAL": ["BOOL", "FLOAT32", "INT32", "INT64", "INT8"], "NOT_EQUAL": ["BOOL", "FLOAT32", "INT32", "INT64", "INT8"],
       "GREATER": ["FLOAT32", "INT32", "INT64", "INT8"], "GREATER_EQUAL": ["FLOAT32", "INT32", "INT64", "INT8"],
       "LESS": ["FLOAT32", "INT32", "INT64", "INT8"], "LESS_EQUAL": ["FLOAT32", "INT32", "INT64", "INT8"]}


def _values(rng, shape, dtype):
    if dtype == "BOOL":
        return np.asarray(rng.integers(0, 2, size=shape), bool)
    if dtype == "INT64":
        return np.asarray(rng.integers(-3, 4, size=shape) * (1 << 40), np.int64)
    if dtype == "INT32":
        return np.asarray(rng.integers(-3, 4, size=shape), np.int32)
    if dtype == "FLOAT32":
        return with_specials(rng.integers(-2, 3, size=shape).astype(np.float32))
    return random_tensor(rng, shape, dtype)


@st.composite
def cases(draw):
    op = draw(st.sampled_from(sorted(OPS)))
    dtype = draw(st.sampled_from(OPS[op]))
    if draw(st.booleans()):
        a_shape = b_shape = out_shape = draw(shapes(0, 5, 4))
    else:
        a_shape, b_shape, out_shape = draw(broadcast_pair(4, 3))
    q = [(None, None)] * 2
    if dtype == "INT8":
        q = [(float(np.float32(draw(st.floats(1e-4, 0.99)))), draw(zero_points("INT8"))) for _ in range(2)]
        if draw(st.booleans()):
            q[1] = q[0]                 # same quantization: ties compare equal
    const = draw(st.sampled_from([None, 0, 1]))
    return op, dtype, (a_shape, b_shape, out_shape), q, const, draw(st.integers(0, 2**32 - 1))


@given(case=cases())
def test_comparisons_match_tflm(case):
    op, dtype, shp, q, const, seed = case
    rng = np.random.default_rng(seed)
    values = [_values(rng, s, dtype) for s in shp[:2]]
    specs = [T(s, dtype, *qq) for s, qq in zip(shp[:2], q)]
    inputs = []
    for k in range(2):
        if const == k:
            specs[k].data = values[k]
        else:
            inputs.append(values[k])
    assert_matches_tflm(single_op(op, specs, T(shp[2], "BOOL")), inputs)


@pytest.mark.parametrize("op", sorted(OPS))
def test_int8_rescaling_over_all_codes(op):
    # every pair of codes, different scales and zero points: the rescaled values decide, not the raw codes
    a = np.repeat(np.arange(-128, 128, dtype=np.int8), 256).reshape(256, 256)
    b = np.tile(np.arange(-128, 128, dtype=np.int8), 256).reshape(256, 256)
    model = single_op(op, [T((256, 256), "INT8", 0.0123, -7), T((256, 256), "INT8", 0.0246, 100)],
                      T((256, 256), "BOOL"))
    assert_matches_tflm(model, [a, b])


def test_refusals():
    assert_refused(single_op("LESS", [T((4,), "INT8", 0.1, 0), T((4,), "INT16", 0.1, 0)], T((4,), "BOOL")), [],
                   tflm=None)
    assert_refused(single_op("LESS", [T((4,), "BOOL"), T((4,), "BOOL")], T((4,), "BOOL")),
                   [np.zeros(4, bool), np.zeros(4, bool)], tflm="invoke")
    assert_refused(single_op("GREATER", [T((4,), "INT16", 0.1, 0), T((4,), "INT16", 0.1, 0)], T((4,), "BOOL")),
                   [], tflm=None, match="uninitialised")
    assert_refused(single_op("EQUAL", [T((1, 1, 1, 1, 2), "FLOAT32"), T((2, 1, 1, 1, 1), "FLOAT32")],
                             T((2, 1, 1, 1, 2), "BOOL")), [], tflm=None, match="at most 4")
    assert_refused(single_op("EQUAL", [T((4,), "INT8", 1.5, 0), T((4,), "INT8", 0.1, 0)], T((4,), "BOOL")), [],
                   tflm=None, match=r"scales in \(0, 1\)")
    assert_refused(single_op("EQUAL", [T((4,), "FLOAT32"), T((4,), "FLOAT32")], T((4,), "INT8", 0.1, 0)), [],
                   tflm=None, match="BOOL")
