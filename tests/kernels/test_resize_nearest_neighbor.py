"""RESIZE_NEAREST_NEIGHBOR against the TFLM wheel: float32/int8/int16, up- and down-scaling, both corner flags."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import T, assert_refused, single_op


@given(dtype=st.sampled_from(["FLOAT32", "INT8", "INT16"]), n=st.integers(1, 2), h=st.integers(1, 9),
       w=st.integers(1, 9), c=st.integers(1, 3), oh=st.integers(1, 20), ow=st.integers(1, 20),
       align=st.booleans(), half=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_resize_nearest_matches_tflm(dtype, n, h, w, c, oh, ow, align, half, seed):
    rng = np.random.default_rng(seed)
    q = (0.1, 3) if dtype != "FLOAT32" else (None, None)
    model = single_op("RESIZE_NEAREST_NEIGHBOR", [T((n, h, w, c), dtype, *q), T((2,), "INT32", data=[oh, ow])],
                      T((n, oh, ow, c), dtype, *q), align_corners=align, half_pixel_centers=half)
    assert_matches_tflm(model, [random_tensor(rng, (n, h, w, c), dtype)])


def test_invalid_models_refused():
    x = np.zeros((1, 2, 2, 1), np.int8)

    def model(in_shape=(1, 2, 2, 1), size=None, out_shape=(1, 3, 3, 1), out_type="INT8", in_type="INT8"):
        size = size or T((2,), "INT32", data=[3, 3])
        return single_op("RESIZE_NEAREST_NEIGHBOR", [T(in_shape, in_type), size], T(out_shape, out_type))

    assert_refused(model(in_shape=(2, 2, 1), out_shape=(3, 3, 1)), [x.reshape(2, 2, 1)], tflm="prepare")
    assert_refused(model(size=T((2,), "INT32")), [x, np.array([3, 3], np.int32)], tflm="prepare")
    assert_refused(model(size=T((3,), "INT32", data=[3, 3, 1])), [x], tflm="prepare")
    assert_refused(model(size=T((2,), "INT64", data=[3, 3])), [x], tflm="prepare")
    assert_refused(model(in_type="UINT8", out_type="UINT8"), [x.view(np.uint8)], tflm="invoke")
    assert_refused(model(out_shape=(1, 4, 3, 1)), [x], tflm=None)
