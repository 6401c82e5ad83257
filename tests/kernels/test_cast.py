"""CAST against the TFLM wheel: every (input, output) type pair TFLM's Eval takes, with values at and beyond every
type's range, NaN and infinities (the wheel saturates float -> integer casts)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from microinterp.testing.single_op import assert_matches_tflm

from .single_op_models import T, assert_bitwise_matches_tflm, assert_refused, single_op

INPUTS = ["INT8", "INT16", "INT32", "UINT32", "FLOAT32", "BOOL"]
OUTPUTS = ["INT8", "INT16", "INT32", "UINT32", "FLOAT32", "BOOL"]
NP = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "UINT32": np.uint32, "FLOAT32": np.float32,
      "BOOL": bool}


def values(type_name: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if type_name == "BOOL":
        return np.array([True, False] * 8)
    if type_name == "FLOAT32":
        special = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 127.9, 128.0, -129.0, 255.5, 32768.0, -32769.0, 2.0**31,
                   -2.0**31, 2.0**32, 3e9, -3e9, 1e20, -1e20, np.inf, -np.inf, np.nan, 4294967295.0, 2.0**63]
        return np.concatenate([np.array(special, np.float32), rng.uniform(-1e10, 1e10, 40).astype(np.float32)])
    info = np.iinfo(NP[type_name])
    edge = [info.min, info.min + 1, -1 if info.min < 0 else 0, 0, 1, 127, 128, 255, 256, info.max - 1, info.max]
    edge = [v for v in edge if info.min <= v <= info.max]
    rand = rng.integers(info.min, info.max, size=40, endpoint=True)
    return np.concatenate([np.array(edge), rand]).astype(NP[type_name])


@pytest.mark.parametrize("source,target", list(itertools.product(INPUTS, OUTPUTS)))
def test_cast_matches_tflm(source, target):
    x = values(source)
    model = single_op("CAST", [T(x.shape, source)], T(x.shape, target))
    if target == "FLOAT32":
        assert_bitwise_matches_tflm(model, [x])
    else:
        assert_matches_tflm(model, [x])


def test_quantized_codes_cast_as_plain_integers():
    x = np.arange(-128, 128, dtype=np.int8)
    assert_matches_tflm(single_op("CAST", [T(x.shape, "INT8", 0.5, 10)], T(x.shape, "INT32")), [x])


@pytest.mark.parametrize("source,target", [("INT64", "INT32"), ("INT32", "INT64"), ("INT16", "INT64")])
def test_unsupported_types_are_refused_like_the_wheel(source, target):
    x = np.zeros(4, NP.get(source, np.int64))
    assert_refused(single_op("CAST", [T((4,), source)], T((4,), target)), [x], tflm="invoke")
