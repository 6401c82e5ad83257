"""RESIZE_BILINEAR against the TFLM wheel: float32 (float maths) and int8 (10-bit fixed point), all corner modes."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import T, assert_refused, single_op


@given(dtype=st.sampled_from(["FLOAT32", "INT8"]), n=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 9),
       c=st.integers(1, 3), oh=st.integers(1, 24), ow=st.integers(1, 24),
       mode=st.sampled_from(["none", "align", "half"]), seed=st.integers(0, 2**32 - 1))
def test_resize_bilinear_matches_tflm(dtype, n, h, w, c, oh, ow, mode, seed):
    rng = np.random.default_rng(seed)
    q = (0.1, -7) if dtype != "FLOAT32" else (None, None)
    model = single_op("RESIZE_BILINEAR", [T((n, h, w, c), dtype, *q), T((2,), "INT32", data=[oh, ow])],
                      T((n, oh, ow, c), dtype, *q), align_corners=mode == "align", half_pixel_centers=mode == "half")
    assert_matches_tflm(model, [random_tensor(rng, (n, h, w, c), dtype, *((-100, 100) if dtype == "FLOAT32"
                                                                           else ()))])


def test_invalid_models_refused():
    x = np.zeros((1, 2, 2, 1), np.int8)

    def model(size=None, dtype="INT8", **options):
        size = size or T((2,), "INT32", data=[3, 3])
        return single_op("RESIZE_BILINEAR", [T((1, 2, 2, 1), dtype), size], T((1, 3, 3, 1), dtype), **options)

    assert_refused(model(align_corners=True, half_pixel_centers=True), [x], tflm="prepare")
    assert_refused(model(size=T((2,), "INT32")), [x, np.array([3, 3], np.int32)], tflm="prepare")
    assert_refused(model(dtype="INT16"), [x.astype(np.int16)], tflm="invoke")
