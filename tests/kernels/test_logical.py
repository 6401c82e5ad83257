"""LOGICAL_AND, LOGICAL_OR (and LOGICAL_NOT, TFLM's elementwise file) against the TFLM wheel: equal shapes of any
rank and 4-D broadcasting."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm

from .single_op_models import T, assert_refused, broadcast_pair, shapes, single_op


@given(op=st.sampled_from(["LOGICAL_AND", "LOGICAL_OR"]), same=st.booleans(), data=st.data(),
       const=st.sampled_from([None, 0, 1]), seed=st.integers(0, 2**32 - 1))
def test_logical_matches_tflm(op, same, data, const, seed):
    if same:
        a_shape = b_shape = out_shape = data.draw(shapes(0, 6, 4))
    else:
        a_shape, b_shape, out_shape = data.draw(broadcast_pair(4, 3))
    rng = np.random.default_rng(seed)
    values = [np.asarray(rng.integers(0, 2, size=s), bool) for s in (a_shape, b_shape)]
    specs = [T(a_shape, "BOOL"), T(b_shape, "BOOL")]
    inputs = []
    for k in range(2):
        if const == k:
            specs[k].data = values[k]
        else:
            inputs.append(values[k])
    assert_matches_tflm(single_op(op, specs, T(out_shape, "BOOL")), inputs)


def test_refusals():
    # TFLM has no Prepare for these ops and would read int8 bytes as bools
    assert_refused(single_op("LOGICAL_AND", [T((4,), "INT8", 0.1, 0), T((4,), "INT8", 0.1, 0)], T((4,), "BOOL")),
                   [], tflm=None, match="BOOL")
    assert_refused(single_op("LOGICAL_OR", [T((2, 1, 1, 1, 2), "BOOL"), T((1, 1, 1, 2, 1), "BOOL")],
                             T((2, 1, 1, 2, 2), "BOOL")), [], tflm=None, match="at most 4")
