"""PADV2 against the TFLM wheel: the PAD kernel with an explicit fill value (constant or runtime tensor);
int8 requires the fill's scale and zero point to equal the output's; prepare refusals."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from .shape_op_models import T, assert_refused, check, const, model, quant
from .test_pad import pad_cases


@given(pad_cases("PADV2"))
def test_padv2_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_runtime_fill_value():
    """constant_values is read at Eval, so it may be a graph input."""
    for type_name in ("INT8", "INT16", "FLOAT32"):
        q = quant(type_name, 0.1, -7)
        data = model("PADV2", [T((2, 3), type_name, **q), const([[1, 2], [0, 1]]), T((1,), type_name, **q)],
                     T((5, 4), type_name, **q))
        check(data, np.random.default_rng(9))


def test_refusals():
    q = quant("INT8", 0.1, 3)
    fill = np.array([5], np.int8)
    assert_refused(model("PADV2", [T((2, 3), "INT8", **q), const([[1, 0], [0, 0]]),
                                   T((1,), "INT8", data=fill, scale=0.1, zp=4)], T((3, 3), "INT8", **q)),
                   match="zero point")
    assert_refused(model("PADV2", [T((2, 3), "INT8", **q), const([[1, 0], [0, 0]]),
                                   T((1,), "INT8", data=fill, scale=0.2, zp=3)], T((3, 3), "INT8", **q)),
                   match="scale")
    assert_refused(model("PADV2", [T((2, 3), "INT8", **q), const([[1, 0], [0, 0]]),
                                   T((2,), "INT8", data=np.array([1, 2], np.int8), **q)], T((3, 3), "INT8", **q)),
                   match="scalar")
    assert_refused(model("PADV2", [T((2, 3), "INT8", **q), const([[1, 0], [0, 0]]), const([5])],
                         T((3, 3), "INT8", **q)), match="type")
