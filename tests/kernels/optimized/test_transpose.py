"""Optimized TRANSPOSE (short last output axis copied one index at a time) against the wheel and the reference
kernel: every rank, permutations that do and do not take the per-index copy, the path choice itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import compare_optimized

from ..shape_op_models import T, check, const, model, quant, zero_points


def _model(shape, perm, type_name="INT8", zp=0) -> bytes:
    q = quant(type_name, 0.05, zp)
    return model("TRANSPOSE", [T(shape, type_name, **q), const(perm)], T(tuple(shape[p] for p in perm), type_name, **q))


@given(st.lists(st.sampled_from([1, 2, 3, 5, 16, 17, 32, 40]), min_size=1, max_size=5), st.data(),
       st.sampled_from(["INT8", "INT16", "FLOAT32"]), zero_points, st.integers(0, 2**32 - 1))
def test_matches_tflm(shape, data, type_name, zp, seed):
    assume(int(np.prod(shape)) <= 60000)
    perm = data.draw(st.permutations(range(len(shape))))
    check(_model(tuple(shape), perm, type_name, zp), np.random.default_rng(seed))


@pytest.mark.parametrize("shape,perm,slices", [
    ((1, 3, 224, 224), (0, 2, 3, 1), 3),        # mobilenet_v2's NCHW -> NHWC
    ((2, 5, 100, 100), (2, 1, 3, 0), 2),
    ((40, 2), (1, 0), 0),                       # second-last axis short: plain copy
    ((4, 64, 64, 3), (2, 1, 3, 0), 0),
    ((2, 64, 17), (0, 2, 1), 0),                # last axis too long
    ((3, 64), (0, 1), 0),                       # identity
    ((3, 40), (1, 0), 3),                       # rank 2 .. 5 with the per-index copy
    ((2, 3, 40), (0, 2, 1), 3),
    ((5, 2, 33, 3), (3, 0, 2, 1), 2),
    ((2, 1, 3, 40, 2), (4, 1, 0, 3, 2), 3),
])
def test_path_and_large(shape, perm, slices):
    m = _model(shape, perm)
    assert Interpreter(m).runtime.op_data[0].slices == slices
    x = random_tensor(np.random.default_rng(1), shape, "INT8")
    if x.size > 60000:
        assert compare_optimized(m, [x]).ok
    else:
        check(m, np.random.default_rng(2))
