"""BROADCAST_TO, BROADCAST_ARGS, FILL, GATHER_ND, EMBEDDING_LOOKUP and DYNAMIC_UPDATE_SLICE against the TFLM
wheel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, InvokeError
from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import T, assert_bitwise_matches_tflm, assert_refused, shapes, single_op

TYPES = ["FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL"]


def _values(rng, shape, type_name):
    if type_name == "BOOL":
        return np.asarray(rng.integers(0, 2, size=shape), bool)
    if type_name == "INT64":
        return np.asarray(rng.integers(-(1 << 60), 1 << 60, size=shape), np.int64)
    return random_tensor(rng, shape, type_name)


@given(type_name=st.sampled_from(TYPES), out_shape=shapes(1, 5, 3), data=st.data(),
       shape_type=st.sampled_from(["INT32", "INT64"]), seed=st.integers(0, 2**32 - 1))
def test_broadcast_to_matches_tflm(type_name, out_shape, data, shape_type, seed):
    cut = data.draw(st.integers(0, len(out_shape) - 1))
    in_shape = tuple(1 if data.draw(st.booleans()) else d for d in out_shape[cut:])
    shape = np.array(out_shape, np.int32 if shape_type == "INT32" else np.int64)
    x = _values(np.random.default_rng(seed), in_shape, type_name)
    model = single_op("BROADCAST_TO", [T(in_shape, type_name), T(shape.shape, shape_type, data=shape)],
                      T(out_shape, type_name))
    assert_matches_tflm(model, [x])


@given(a=st.lists(st.integers(1, 4), min_size=0, max_size=4), data=st.data(),
       type_name=st.sampled_from(["INT32", "INT64"]))
def test_broadcast_args_matches_tflm(a, data, type_name):
    b = [1 if data.draw(st.booleans()) else d for d in a[data.draw(st.integers(0, len(a))):]]
    if data.draw(st.booleans()):
        a, b = b, a
    n = max(len(a), len(b))
    dtype = np.int32 if type_name == "INT32" else np.int64
    if not a or not b:
        return      # TFLM's vectors need at least one element
    x, y = np.array(a, dtype), np.array(b, dtype)
    model = single_op("BROADCAST_ARGS", [T(x.shape, type_name), T(y.shape, type_name)], T((n,), type_name))
    assert_matches_tflm(model, [x, y])


@given(type_name=st.sampled_from(["FLOAT32", "INT32", "INT8"]), shape=shapes(1, 4, 4),
       dims_type=st.sampled_from(["INT32", "INT64"]), seed=st.integers(0, 2**32 - 1))
def test_fill_matches_tflm(type_name, shape, dims_type, seed):
    dims = np.array(shape, np.int32 if dims_type == "INT32" else np.int64)
    value = np.asarray(random_tensor(np.random.default_rng(seed), (), type_name))
    q = (0.1, 2) if type_name == "INT8" else (None, None)
    model = single_op("FILL", [T(dims.shape, dims_type, data=dims), T((), type_name, *q)], T(shape, type_name, *q))
    assert_matches_tflm(model, [value])


@given(type_name=st.sampled_from(["FLOAT32", "INT8"]), params_shape=shapes(1, 4, 4), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_gather_nd_matches_tflm(type_name, params_shape, data, seed):
    nd = data.draw(st.integers(1, len(params_shape)))
    batch = data.draw(shapes(0, 2, 3))
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.integers(0, d, size=batch) for d in params_shape[:nd]], axis=-1).astype(np.int32)
    params = random_tensor(rng, params_shape, type_name)
    out_shape = tuple(batch) + tuple(params_shape[nd:])
    q = (0.1, 2) if type_name == "INT8" else (None, None)
    model = single_op("GATHER_ND", [T(params_shape, type_name, *q), T(idx.shape, "INT32")],
                      T(out_shape, type_name, *q))
    assert_matches_tflm(model, [params, idx])


def test_gather_nd_out_of_bounds_fails_at_invoke_like_the_wheel():
    model = single_op("GATHER_ND", [T((3, 2), "FLOAT32"), T((1, 1), "INT32")], T((1, 2), "FLOAT32"))
    it = Interpreter(model)
    it.set_input(np.zeros((3, 2), np.float32), 0)
    it.set_input(np.array([[3]], np.int32), 1)
    with pytest.raises(InvokeError, match="out of bounds"):
        it.invoke()
    from microinterp.testing.tflm import TflmRunner

    with pytest.raises(RuntimeError):
        TflmRunner(model).run([np.zeros((3, 2), np.float32), np.array([[3]], np.int32)])


@given(table_type=st.sampled_from(["FLOAT32", "INT8", "HYBRID"]), rows=st.integers(1, 6),
       cols=st.lists(st.integers(1, 4), min_size=1, max_size=3), n=st.integers(1, 5),
       seed=st.integers(0, 2**32 - 1))
def test_embedding_lookup_matches_tflm(table_type, rows, cols, n, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, rows, size=n).astype(np.int32)
    t = "FLOAT32" if table_type == "FLOAT32" else "INT8"
    table = random_tensor(rng, (rows, *cols), t)
    out_type = "INT8" if table_type == "INT8" else "FLOAT32"
    q_table = (0.037, 0) if t == "INT8" else (None, None)
    q_out = (0.037, 0) if out_type == "INT8" else (None, None)
    model = single_op("EMBEDDING_LOOKUP", [T((n,), "INT32"), T(table.shape, t, *q_table, data=table)],
                      T((n, *cols), out_type, *q_out))
    assert_bitwise_matches_tflm(model, [ids])


def test_embedding_lookup_bad_id_fails_at_invoke():
    table = np.zeros((3, 2), np.float32)
    it = Interpreter(single_op("EMBEDDING_LOOKUP", [T((1,), "INT32"), T((3, 2), "FLOAT32", data=table)],
                               T((1, 2), "FLOAT32")))
    it.set_input(np.array([3], np.int32))
    with pytest.raises(InvokeError, match="out of bounds"):
        it.invoke()


@given(type_name=st.sampled_from(["FLOAT32", "INT8", "INT16", "INT32"]), shape=shapes(1, 4, 5), data=st.data(),
       index_type=st.sampled_from(["INT32", "INT64"]), const=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_dynamic_update_slice_matches_tflm(type_name, shape, data, index_type, const, seed):
    upd_shape = tuple(data.draw(st.integers(0 if k else 1, d)) for k, d in enumerate(shape))
    start = np.array([data.draw(st.integers(-2, d + 1)) for d in shape],
                     np.int32 if index_type == "INT32" else np.int64)
    rng = np.random.default_rng(seed)
    operand, update = random_tensor(rng, shape, type_name), random_tensor(rng, upd_shape, type_name)
    q = (0.1, 1) if type_name in ("INT8", "INT16") else (None, None)
    model = single_op("DYNAMIC_UPDATE_SLICE", [T(shape, type_name, *q), T(upd_shape, type_name, *q),
                                               T(start.shape, index_type, data=start if const else None)],
                      T(shape, type_name, *q))
    assert_matches_tflm(model, [operand, update] if const else [operand, update, start])


def test_refusals():
    assert_refused(single_op("BROADCAST_TO", [T((2,), "FLOAT32"), T((2,), "INT32")], T((2, 2), "FLOAT32")), [],
                   match="Non-constant")
    assert_refused(single_op("FILL", [T((1,), "INT32", data=np.array([3], np.int32)), T((), "INT16")],
                             T((3,), "INT16")), [np.zeros((), np.int16)], tflm="invoke")
    assert_refused(single_op("GATHER_ND", [T((3, 2), "INT32"), T((1, 1), "INT32")], T((1, 2), "INT32")), [])
    assert_refused(single_op("DYNAMIC_UPDATE_SLICE", [T((3,), "INT64"), T((1,), "INT64"), T((1,), "INT32")],
                             T((3,), "INT64")), [np.zeros(3, np.int64), np.zeros(1, np.int64),
                                                  np.zeros(1, np.int32)], tflm="invoke")
