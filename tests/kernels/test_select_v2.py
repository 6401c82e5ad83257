"""SELECT_V2 against the TFLM wheel: float32 (NaN, -0.0 bit for bit), int8, int16; equal shapes, single elements
of different ranks, and 5-D broadcasting of condition, x and y."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import random_tensor

from .single_op_models import T, assert_bitwise_matches_tflm, assert_refused, shapes, single_op, with_specials


@st.composite
def select_shapes(draw):
    kind = draw(st.sampled_from(["same", "scalars", "broadcast"]))
    if kind == "same":
        s = draw(shapes(0, 5, 4))
        return s, s, s, s
    if kind == "scalars":
        ranks = [draw(st.integers(0, 3)) for _ in range(4)]
        return tuple((1,) * r for r in ranks)
    full = draw(shapes(1, 5, 3))
    out = []
    for _ in range(3):
        dims = tuple(1 if draw(st.booleans()) else d for d in full)
        out.append(dims[draw(st.integers(0, len(dims) - 1)):])
    rank = max(len(s) for s in out)
    bshape = np.broadcast_shapes(*out)
    return (*out, (1,) * (rank - len(bshape)) + tuple(bshape))


@given(shp=select_shapes(), dtype=st.sampled_from(["FLOAT32", "INT8", "INT16"]), const=st.sampled_from([None, 1, 2]),
       seed=st.integers(0, 2**32 - 1))
def test_select_v2_matches_tflm(shp, dtype, const, seed):
    rng = np.random.default_rng(seed)
    c_shape, x_shape, y_shape, out_shape = shp
    q = (0.1, 3) if dtype != "FLOAT32" else (None, None)
    values = [np.asarray(rng.integers(0, 2, size=c_shape), bool)]
    for s in (x_shape, y_shape):
        v = random_tensor(rng, s, dtype)
        values.append(with_specials(v) if dtype == "FLOAT32" else v)
    specs = [T(c_shape, "BOOL"), T(x_shape, dtype, *q), T(y_shape, dtype, *q)]
    inputs = []
    for k in range(3):
        if const == k:
            specs[k].data = values[k]
        else:
            inputs.append(values[k])
    assert_bitwise_matches_tflm(single_op("SELECT_V2", specs, T(out_shape, dtype, *q)), inputs)


def test_refusals():
    f = "FLOAT32"
    assert_refused(single_op("SELECT_V2", [T((4,), "INT8", 0.1, 0), T((4,), f), T((4,), f)], T((4,), f)), [],
                   match="condition")
    assert_refused(single_op("SELECT_V2", [T((4,), "BOOL"), T((4,), f), T((4,), "INT8", 0.1, 0)], T((4,), f)), [],
                   match="types differ")
    assert_refused(single_op("SELECT_V2", [T((4,), "BOOL"), T((4,), "INT32"), T((4,), "INT32")], T((4,), "INT32")),
                   [np.zeros(4, bool), np.zeros(4, np.int32), np.zeros(4, np.int32)], tflm="invoke",
                   match="int8|int16|float32")
    assert_refused(single_op("SELECT_V2", [T((2, 1), "BOOL"), T((3,), f), T((1, 3), f)], T((3, 3), f)), [],
                   match="broadcast")
