"""STRIDED_SLICE against the TFLM wheel: float32 / int8 / int16 / int32, 1-D to 4-D, begin/end anywhere (negative,
past either end), strides of both signs, random begin/end masks, shrink axes, the ignored ``offset`` flag, extreme
zero points; the Keras Flatten chain SHAPE -> STRIDED_SLICE(shrink) -> PACK -> RESHAPE; refusals."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import tflm_arena_head

from .shape_op_models import T, assert_refused, check, const, model, quant, seeds, shapes, zero_points


def python_slice_shape(shape, begin, end, strides, begin_mask, end_mask, shrink_mask):
    """The expected output shape from Python's slice semantics (same negative-index and clamping rules)."""
    out = []
    for i, d in enumerate(shape):
        if shrink_mask >> i & 1:
            continue
        sl = slice(None if begin_mask >> i & 1 else begin[i], None if end_mask >> i & 1 else end[i], strides[i])
        out.append(len(range(d)[sl]))
    return tuple(out)


@st.composite
def strided_slice_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]))
    shape = draw(shapes(1, 4, 6))
    rank = len(shape)
    strides = [draw(st.sampled_from([1, 1, 2, 3, -1, -2])) for _ in shape]
    begin = [draw(st.integers(-d - 2, d + 2)) for d in shape]
    end = [draw(st.integers(-d - 2, d + 2)) for d in shape]
    begin_mask = draw(st.integers(0, (1 << rank) - 1))
    end_mask = draw(st.integers(0, (1 << rank) - 1))
    shrink_mask = 0
    for i, d in enumerate(shape):
        # A shrunk axis needs a positive stride and an index inside the dim (else TFLM writes nothing).
        if draw(st.integers(0, 3)) == 0:
            shrink_mask |= 1 << i
            strides[i] = 1
            begin[i] = draw(st.integers(-d, d - 1))
            begin_mask &= ~(1 << i)
    out_shape = python_slice_shape(shape, begin, end, strides, begin_mask, end_mask, shrink_mask)
    assume(all(d > 0 for d in out_shape))
    q = quant(type_name, 0.05, draw(zero_points))
    data = model("STRIDED_SLICE", [T(shape, type_name, **q), const(begin), const(end), const(strides)],
                 T(out_shape, type_name, **q), begin_mask=begin_mask, end_mask=end_mask,
                 shrink_axis_mask=shrink_mask, offset=draw(st.booleans()))
    return data, draw(seeds)


@given(strided_slice_cases())
def test_strided_slice_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_values_are_python_slicing():
    q = quant("INT8", 0.1, 0)
    data = model("STRIDED_SLICE", [T((4, 6), "INT8", **q), const([3, -1]), const([0, 0]), const([-1, -2])],
                 T((3, 3), "INT8", **q))
    x = np.arange(24, dtype=np.int8).reshape(4, 6)
    out = check(data, np.random.default_rng(0), overrides={0: x})[0]
    assert np.array_equal(out, x[3:0:-1, -1:0:-2])


def keras_flatten_chain(type_name: str = "INT8", shape=(2, 3, 4, 5)) -> bytes:
    """What the converter emits for Keras Flatten with an unknown batch: SHAPE -> STRIDED_SLICE(shrink axis 0) ->
    PACK([batch, -1]) -> RESHAPE(x, packed shape as a dynamic second input). Every shape is fully known."""
    q = quant(type_name, 0.04, -3)
    flat = int(np.prod(shape[1:]))
    b = ModelBuilder()
    x = b.add_tensor("x", shape, type_name, scale=q.get("scale"), zero_point=q.get("zp"))
    shp = b.add_tensor("shape", (len(shape),), "INT32")
    consts = [b.add_tensor(n, (1,), "INT32", data=np.array([v], np.int32)) for n, v in
              (("begin", 0), ("end", 1), ("stride", 1))]
    batch = b.add_tensor("batch", (), "INT32")
    minus_one = b.add_tensor("minus_one", (), "INT32", data=np.array(-1, np.int32))
    packed = b.add_tensor("packed", (2,), "INT32")
    y = b.add_tensor("y", (shape[0], flat), type_name, scale=q.get("scale"), zero_point=q.get("zp"))
    b.add_op("SHAPE", [x], [shp], out_type="INT32")
    b.add_op("STRIDED_SLICE", [shp, *consts], [batch], shrink_axis_mask=1)
    b.add_op("PACK", [batch, minus_one], [packed], values_count=2, axis=0)
    b.add_op("RESHAPE", [x, packed], [y])
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_keras_flatten_chain_matches_tflm():
    for type_name in ("INT8", "FLOAT32"):
        data = keras_flatten_chain(type_name)
        rng = np.random.default_rng(12)
        assert_matches_tflm(data, [random_tensor(rng, (2, 3, 4, 5), type_name)])
        interp = Interpreter(data, preserve_all_tensors=True)
        interp.set_input(random_tensor(rng, (2, 3, 4, 5), type_name))
        interp.invoke()
        assert interp.get_tensor(1).tolist() == [2, 3, 4, 5] and int(interp.get_tensor(5)) == 2
        assert interp.get_tensor(7).tolist() == [2, -1]
        assert Interpreter(data).head_bytes == tflm_arena_head(data)


def test_refusals():
    q = quant("INT8")
    x = T((4, 6), "INT8", **q)
    assert_refused(model("STRIDED_SLICE", [T((1, 1, 1, 2, 2), "INT8", **q), const([0] * 5), const([1] * 5),
                                           const([1] * 5)], T((1, 1, 1, 1, 1), "INT8", **q)), match="exceed 4")
    assert_refused(model("STRIDED_SLICE", [x, T((2,), "INT32"), const([2, 2]), const([1, 1])],
                         T((2, 2), "INT8", **q)), match="Non-constant")
    assert_refused(model("STRIDED_SLICE", [x, const([0, 0]), const([2, 2]), const([1, 0])], T((2, 2), "INT8", **q)),
                   match="non-zero")
    assert_refused(model("STRIDED_SLICE", [x, const([0, 0]), const([2, 2]), const([1, 1])], T((2, 3), "INT8", **q)),
                   match="output shape")
    # offset is ignored by TFLM Micro: with offset=True the shape is still end - begin.
    assert_refused(model("STRIDED_SLICE", [T((6,), "INT8", **q), const([1]), const([2]), const([1])],
                         T((2,), "INT8", **q), offset=True), match="output shape")
    assert_refused(model("STRIDED_SLICE", [T((4,), "UINT8", scale=0.1, zp=0), const([0]), const([2]), const([1])],
                         T((2,), "UINT8", scale=0.1, zp=0)), tflm="invoke", match="UINT8")
