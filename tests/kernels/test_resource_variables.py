"""VAR_HANDLE / ASSIGN_VARIABLE / READ_VARIABLE against the TFLM wheel: state that survives invokes, ``reset()``,
default values, an initialiser subgraph run by CALL_ONCE, and the arena (handles are not planned; variable
buffers take the tail)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, InvokeError, PrepareError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.tflm import TflmRunner, tflm_arena_head

pytest.importorskip("tflite_micro")

NP = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "FLOAT32": np.float32}


def accumulator_model(init: bool = True, dtype: str = "INT8", zp: int = 3, shape=(1, 4), name: str = "acc",
                      init_values=None) -> bytes:
    """y = read(acc) + x; assign(acc, y). With ``init``, CALL_ONCE assigns ``init_values`` (or 1, 2, 3, ...) first."""
    b = ModelBuilder()
    q = {"scale": 0.5, "zero_point": zp} if dtype in ("INT8", "INT16") else {}
    x = b.add_tensor("x", shape, dtype, **q)
    h = b.add_tensor("h", (), "RESOURCE")
    v = b.add_tensor("v", shape, dtype, **q)
    y = b.add_tensor("y", shape, dtype, **q)
    if init:
        b.add_op("CALL_ONCE", [], [], init_subgraph_index=1)
    b.add_op("VAR_HANDLE", [], [h], container="", shared_name=name)
    b.add_op("READ_VARIABLE", [h], [v])
    b.add_op("ADD", [v, x], [y])
    b.add_op("ASSIGN_VARIABLE", [h, y], [])
    b.inputs, b.outputs = [x], [y]
    if init:
        sg = b.add_subgraph("init")
        h2 = sg.add_tensor("h", (), "RESOURCE")
        values = np.arange(1, int(np.prod(shape)) + 1).reshape(shape) if init_values is None else init_values
        c = sg.add_tensor("c", shape, dtype, data=np.asarray(values).astype(NP[dtype]), **q)
        sg.add_op("VAR_HANDLE", [], [h2], container="", shared_name=name)
        sg.add_op("ASSIGN_VARIABLE", [h2, c], [])
        sg.inputs, sg.outputs = [], []
    return b.build()


@given(init=st.booleans(), dtype=st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]),
       zp=st.sampled_from([0, 3, -128, 127, -1]), invokes=st.lists(st.booleans(), min_size=1, max_size=6),
       seed=st.integers(0, 2**32 - 1))
def test_state_survives_invokes_and_reset_restores_defaults(init, dtype, zp, invokes, seed):
    if dtype == "INT16":
        zp = 0
    model = accumulator_model(init, dtype, zp)
    it, wheel = Interpreter(model), TflmRunner(model, preserve_all=False)
    rng = np.random.default_rng(seed)
    for reset in invokes:          # each step: maybe reset, then invoke
        if reset:
            it.reset()
            wheel.interpreter.reset()
        x = rng.integers(-5, 6, size=(1, 4)).astype(NP[dtype])
        it.set_input(x)
        it.invoke()
        wheel.run([x])
        assert np.array_equal(it.get_output().view(np.uint8), wheel.output(0).view(np.uint8))


@pytest.mark.parametrize("init", [True, False])
def test_handles_are_not_planned_and_buffers_take_the_tail(init):
    model = accumulator_model(init, "INT8", shape=(1, 40))
    it = Interpreter(model)
    assert it.head_bytes == tflm_arena_head(model)
    assert it.tail_bytes >= 48          # the 40-byte variable, 16-aligned, in the tail


def test_two_handles_with_one_name_share_the_variable():
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "FLOAT32")
    h1, h2 = b.add_tensor("h1", (), "RESOURCE"), b.add_tensor("h2", (), "RESOURCE")
    v = b.add_tensor("v", (4,), "FLOAT32")
    b.add_op("VAR_HANDLE", [], [h1], container="c", shared_name="s")
    b.add_op("ASSIGN_VARIABLE", [h1, x], [])
    b.add_op("VAR_HANDLE", [], [h2], container="c", shared_name="s")
    b.add_op("READ_VARIABLE", [h2], [v])
    b.inputs, b.outputs = [x], [v]
    model = b.build()
    x = np.array([1.5, -2, 0, 7], np.float32)
    it, wheel = Interpreter(model), TflmRunner(model, preserve_all=False)
    it.set_input(x)
    it.invoke()
    wheel.run([x])
    np.testing.assert_array_equal(it.get_output(), x)
    np.testing.assert_array_equal(wheel.output(0), x)


def test_reading_a_variable_nothing_assigns_fails_at_invoke_like_the_wheel():
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "FLOAT32")
    h, v, y = b.add_tensor("h", (), "RESOURCE"), b.add_tensor("v", (4,), "FLOAT32"), b.add_tensor("y", (4,), "FLOAT32")
    b.add_op("VAR_HANDLE", [], [h], container="", shared_name="never")
    b.add_op("READ_VARIABLE", [h], [v])
    b.add_op("ADD", [v, x], [y])
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    it = Interpreter(model)
    with pytest.raises(InvokeError, match="no buffer"):
        it.invoke()


def test_assign_needs_a_single_handle():
    b = ModelBuilder()
    x, h = b.add_tensor("x", (4,), "FLOAT32"), b.add_tensor("h", (2,), "INT32")
    b.add_op("ASSIGN_VARIABLE", [h, x], [])
    b.inputs, b.outputs = [x, h], [x]
    with pytest.raises(PrepareError, match="handle"):
        Interpreter(b.build())
