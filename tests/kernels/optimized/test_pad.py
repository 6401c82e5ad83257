"""Optimized PAD / PADV2 (border-only fill + one copy) against the wheel and the reference kernel: the slab
partition itself, empty boxes, negative paddings, every dim padded, extreme fill values, runtime fill values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.kernels.optimized.pad import border_slabs
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import compare_optimized

from ..shape_op_models import T, check, const, model, quant


@given(st.lists(st.tuples(st.integers(1, 5), st.integers(0, 5), st.integers(0, 5)), min_size=0, max_size=5))
def test_slabs_partition_the_border(dims):
    """Every output position outside the box lies in exactly one slab, and no position inside does."""
    shape = tuple(d for d, _, _ in dims)
    box = tuple(slice(min(a, d), max(min(a, d), min(b, d))) for d, a, b in dims)
    hits = np.zeros(shape, np.int64)
    for slab in border_slabs(shape, box):
        hits[slab] += 1
    inside = np.zeros(shape, bool)
    inside[box] = True
    assert np.array_equal(hits, (~inside).astype(np.int64))


@pytest.mark.parametrize("type_name,zp", [("INT8", -128), ("INT8", 127), ("INT16", 0), ("INT32", 0),
                                          ("FLOAT32", 0)])
@pytest.mark.parametrize("pads", [
    [[0, 0], [1, 1], [1, 1], [0, 0]],           # mobilenet_v2 (image style)
    [[0, 0], [0, 1], [0, 1], [0, 0]],           # TF "SAME" for stride 2: bottom/right only
    [[1, 2], [3, 0], [0, 2], [2, 1]],           # every dim padded
    [[0, 0], [0, 0], [0, 0], [0, 0]],           # no border at all
    [[0, 0], [-1, 2], [2, -3], [0, 1]],         # negative: the box takes the first input elements in flat order
    [[0, 0], [-3, 1], [0, 0], [0, 0]],          # empty box (output is all fill)
])
def test_pad_edges(type_name, zp, pads):
    shape = (1, 3, 4, 2)
    out = tuple(d + a + b for d, (a, b) in zip(shape, pads))
    q = quant(type_name, 0.05, zp)
    check(model("PAD", [T(shape, type_name, **q), const(pads)], T(out, type_name, **q)),
          np.random.default_rng(len(out) + abs(zp)))


@pytest.mark.parametrize("rank", [1, 2, 3, 5])
def test_every_rank(rank):
    shape = (3, 1, 2, 2, 3)[:rank]
    pads = [[1, 2], [0, 1], [2, 0], [1, 1], [0, 2]][:rank]
    out = tuple(d + a + b for d, (a, b) in zip(shape, pads))
    q = quant("INT8", 0.1, -3)
    check(model("PAD", [T(shape, "INT8", **q), const(pads)], T(out, "INT8", **q)), np.random.default_rng(rank))


@pytest.mark.parametrize("fill", [-128, 127, 0])
def test_padv2_runtime_fill(fill):
    """constant_values as a graph input, read at every invoke, with negative and positive paddings."""
    q = quant("INT8", 0.1, -7)
    data = model("PADV2", [T((3, 4), "INT8", **q), const([[2, -1], [-1, 3]]), T((1,), "INT8", **q)],
                 T((4, 6), "INT8", **q))
    check(data, np.random.default_rng(abs(fill)), overrides={1: np.array([fill], np.int8)})


def test_padv2_constant_fill():
    q = quant("INT8", 0.1, 3)
    data = model("PADV2", [T((1, 5, 5, 3), "INT8", **q), const([[0, 0], [2, 2], [1, 2], [0, 0]]),
                           T((1,), "INT8", data=np.array([-128], np.int8), **q)], T((1, 9, 8, 3), "INT8", **q))
    check(data, np.random.default_rng(1))


def test_large_and_repeated_invokes():
    """mobilenet_v2's biggest PAD, invoked twice with different inputs (the border must stay intact)."""
    shape, pads = (1, 112, 112, 96), [[0, 0], [1, 1], [1, 1], [0, 0]]
    q = quant("INT8", 0.02, -128)
    data = model("PAD", [T(shape, "INT8", **q), const(pads)], T((1, 114, 114, 96), "INT8", **q))
    rng = np.random.default_rng(3)
    for _ in range(2):
        assert compare_optimized(data, [random_tensor(rng, shape, "INT8")]).ok
    it = Interpreter(data)
    assert type(it.runtime.op_data[0]).__name__ == "FastPadData" and len(it.runtime.op_data[0].slabs) == 4
