"""Interpreter lifecycle and API: arena sizing, errors, inputs/outputs, independence, reset."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.kernels.contract import Kernel
from microinterp.testing import ModelBuilder


def reshape_model(shape=(1, 2, 3), new_shape=(3, 2), dtype="INT8", variable=False) -> bytes:
    b = ModelBuilder()
    x = b.add_tensor("x", shape, dtype, scale=0.1, zero_point=1)
    s = b.add_tensor("s", (len(new_shape),), "INT32", data=list(new_shape))
    y = b.add_tensor("y", new_shape, dtype, scale=0.1, zero_point=1)
    b.add_op("RESHAPE", [x, s], [y], new_shape=list(new_shape))
    if variable:
        b.add_tensor("state", (4,), "INT8", scale=0.5, zero_point=-7, is_variable=True)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_runs_and_sizes_arena_exactly():
    it = mi.Interpreter(reshape_model())
    x = np.arange(6, dtype=np.int8).reshape(1, 2, 3)
    it.set_input(x, 0)
    it.invoke()
    np.testing.assert_array_equal(it.get_output(0), x.reshape(3, 2))
    # two 6-byte tensors alive at the same time, each rounded up to 16
    assert it.head_bytes == 32
    assert it.arena_used_bytes == it.head_bytes + it.tail_bytes
    assert it.arena_size == it.arena_used_bytes


def test_tensors_are_views_of_the_arena():
    it = mi.Interpreter(reshape_model())
    x = np.arange(6, dtype=np.int8).reshape(1, 2, 3)
    it.set_input(x, 0)
    it.invoke()
    for row in it.plan_table():
        view = it.runtime.views[row["index"]]
        assert np.shares_memory(view, it.arena.buffer)


def test_arena_too_small_names_needed_size():
    needed = mi.Interpreter(reshape_model()).arena_used_bytes
    with pytest.raises(mi.ArenaOverflowError) as e:
        mi.Interpreter(reshape_model(), arena=needed - 1)
    assert e.value.needed_arena == needed
    assert f"{needed} bytes" in str(e.value)
    assert e.value.missing > 0
    assert isinstance(e.value, mi.MicroInterpError)
    mi.Interpreter(reshape_model(), arena=needed)  # exactly enough works


def test_the_fast_input_and_output_paths_take_only_int_indices():
    """set_input/get_output find in-memory slots in a dict: numpy integers still work (through the checked path),
    True and 1.0 -- equal to 1 as dict keys -- are refused as the checked path refuses them."""
    it = mi.Interpreter(reshape_model())
    x = np.arange(6, dtype=np.int8).reshape(1, 2, 3)
    it.set_input(x, np.int64(0))
    it.invoke()
    assert np.array_equal(it.get_output(np.int64(0)).ravel(), x.ravel())
    for index in (True, False, 1.0, 0.0, [0]):
        with pytest.raises(mi.InputError, match="out of range"):
            it.set_input(x, index)
        with pytest.raises(mi.InputError, match="out of range"):
            it.get_output(index)


def test_larger_arena_keeps_counters():
    it = mi.Interpreter(reshape_model(), arena=10_000)
    assert it.arena_size == 10_000
    assert it.head_bytes == 32


def test_set_input_checks_shape_dtype_index():
    it = mi.Interpreter(reshape_model())
    with pytest.raises(mi.InputError, match=r"expected shape \(1, 2, 3\), got \(2, 3\)"):
        it.set_input(np.zeros((2, 3), np.int8), 0)
    with pytest.raises(mi.InputError, match="expected dtype int8, got float32"):
        it.set_input(np.zeros((1, 2, 3), np.float32), 0)
    with pytest.raises(mi.InputError, match="index 1 out of range"):
        it.set_input(np.zeros((1, 2, 3), np.int8), 1)
    with pytest.raises(mi.InputError, match="index True out of range"):
        it.set_input(np.zeros((1, 2, 3), np.int8), True)
    with pytest.raises(ValueError):
        it.set_input([1, 2, 3], 0)
    with pytest.raises(mi.InputError):
        it.get_output(5)
    with pytest.raises(mi.InputError):
        it.get_input_details(-1)


def test_details_match_tflm_keys():
    it = mi.Interpreter(reshape_model())
    d = it.get_input_details(0)
    assert set(d) >= {"name", "index", "shape", "dtype", "quantization_parameters"}
    assert d["dtype"] is np.int8
    assert d["shape"].tolist() == [1, 2, 3]
    q = d["quantization_parameters"]
    assert set(q) == {"scales", "zero_points", "quantized_dimension", "block_size"}     # LiteRT's keys
    assert q["zero_points"].tolist() == [1]
    np.testing.assert_allclose(q["scales"], [0.1])
    rt = pytest.importorskip("tflite_micro").runtime
    ref = rt.Interpreter.from_bytes(reshape_model(), arena_size=4096)
    rd = ref.get_input_details(0)
    assert set(rd) <= set(d) and set(rd["quantization_parameters"]) <= set(q)
    assert rd["dtype"] == d["dtype"]
    assert rd["shape"].tolist() == d["shape"].tolist()


def test_get_output_is_a_copy_and_interpreters_are_independent():
    a = mi.Interpreter(reshape_model())
    b = mi.Interpreter(reshape_model())
    a.set_input(np.ones((1, 2, 3), np.int8), 0)
    b.set_input(np.full((1, 2, 3), 7, np.int8), 0)
    a.invoke()
    b.invoke()
    out = a.get_output(0)
    out[...] = 99
    assert (a.get_output(0) == 1).all()
    assert (b.get_output(0) == 7).all()
    assert not np.shares_memory(a.arena.buffer, b.arena.buffer)


def test_variable_tensors_live_in_tail_and_reset_to_zero_point():
    it = mi.Interpreter(reshape_model(variable=True))
    assert it.tail_bytes >= 4
    state = it.runtime.views[3]
    assert np.shares_memory(state, it.arena.buffer)
    assert (state == -7).all()
    state[...] = 5
    it.reset()
    assert (it.get_tensor(3) == -7).all()


def test_unsupported_ops_are_all_listed():
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "FLOAT32")
    y = b.add_tensor("y", (4,), "FLOAT32")
    z = b.add_tensor("z", (4,), "FLOAT32")
    b.add_op("LSH_PROJECTION", [x], [y])
    b.add_op("CUSTOM", [y], [z], custom_code="MyOp")
    b.inputs, b.outputs = [x], [z]
    with pytest.raises(mi.UnsupportedOpError) as e:
        mi.Interpreter(b.build())
    assert e.value.missing == [(0, "LSH_PROJECTION"), (1, "MyOp")]
    assert "LSH_PROJECTION" in str(e.value) and "MyOp" in str(e.value)


def test_custom_op_registered_explicitly_runs():
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "FLOAT32")
    y = b.add_tensor("y", (4,), "FLOAT32")
    b.add_op("CUSTOM", [x], [y], custom_code="Double")
    b.inputs, b.outputs = [x], [y]

    class Double(Kernel):
        def prepare(self, ctx, op):
            return None

        def invoke(self, ctx, op, data):
            ctx.output(op, 0)[...] = 2 * ctx.input(op, 0)

    resolver = mi.OpResolver()
    resolver.register("Double", Double())
    it = mi.Interpreter(b.build(), resolver=resolver)
    it.set_input(np.arange(4, dtype=np.float32), 0)
    it.invoke()
    assert it.get_output(0).tolist() == [0, 2, 4, 6]
    assert it.describe()["Double"].startswith("explicit:")


def test_kernels_may_bind_their_call_and_the_profile_times_every_op():
    """A kernel's ``bind(ctx, op, data)`` gives the invoke loop its call (views fixed after the build); None falls
    back to ``invoke``. Every op gets a host time in the profile."""
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "FLOAT32")
    y = b.add_tensor("y", (4,), "FLOAT32")
    z = b.add_tensor("z", (4,), "FLOAT32")
    b.add_op("CUSTOM", [x], [y], custom_code="Bound")
    b.add_op("CUSTOM", [y], [z], custom_code="Declines")
    b.inputs, b.outputs = [x], [z]
    calls = []

    class Bound(Kernel):
        def prepare(self, ctx, op):
            return 3.0

        def invoke(self, ctx, op, data):
            raise AssertionError("the bound call runs instead")

        def bind(self, ctx, op, data):
            src, dst = ctx.input(op, 0), ctx.output(op, 0)

            def run():
                calls.append("bound")
                np.multiply(src, data, out=dst)
            return run

    class Declines(Bound):
        def invoke(self, ctx, op, data):
            calls.append("invoke")
            ctx.output(op, 0)[...] = ctx.input(op, 0) + data

        def bind(self, ctx, op, data):
            return None

    resolver = mi.OpResolver()
    resolver.register("Bound", Bound())
    resolver.register("Declines", Declines())
    it = mi.Interpreter(b.build(), resolver=resolver)
    for k in range(2):
        it.set_input(np.arange(4, dtype=np.float32) + k, 0)
        it.invoke()
        assert it.get_output(0).tolist() == [3 * (v + k) + 3 for v in range(4)]
    assert calls == ["bound", "invoke"] * 2
    assert [r.host_seconds > 0 for r in it.profile] == [True, True]


def test_a_plan_that_fits_runs_in_memory_even_with_backing(tmp_path):
    interp = mi.Interpreter(reshape_model(), arena=512_000, backing=tmp_path / "sd.img")
    assert not interp.out_of_core and not (tmp_path / "sd.img").exists()


def test_from_file_and_from_bytes(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(reshape_model())
    a = mi.Interpreter.from_file(path, arena_size=4096)
    b = mi.Interpreter.from_bytes(reshape_model(), arena_size=4096)
    assert a.arena_size == b.arena_size == 4096
    assert a.head_bytes == b.head_bytes


def test_malformed_model_is_model_error():
    with pytest.raises(mi.ModelError):
        mi.Interpreter(b"not a model at all")


def test_a_plan_above_max_arena_is_refused_with_a_typed_error(tmp_path):
    """A (mutated or absurd) model whose plan needs gigabytes is refused before any host buffer is made, and says
    how to run it: out of core, or a larger max_arena."""
    from microinterp.testing.models import demo_cnn

    need = mi.Interpreter(demo_cnn()).arena_used_bytes
    with pytest.raises(mi.HostMemoryError, match="max_arena") as e:
        mi.Interpreter(demo_cnn(), max_arena=need - 1)
    assert isinstance(e.value, MemoryError) and "backing=" in str(e.value)
    assert mi.Interpreter(demo_cnn(), max_arena=need).arena_used_bytes == need
    it = mi.Interpreter(demo_cnn(), arena=need // 2, backing=tmp_path / "sd.img", max_arena=need - 1)
    assert it.out_of_core                       # out of core has no host-arena limit
    it.close()


def test_a_kernel_buffer_the_host_cannot_allocate_is_a_typed_error(monkeypatch):
    from microinterp.kernels.optimized import conv
    from microinterp.testing.models import demo_cnn

    def refuse(*args, **kwargs):
        raise MemoryError("Unable to allocate 13.1 GiB")

    monkeypatch.setattr(conv, "ConvPlan", refuse)
    with pytest.raises(mi.HostMemoryError, match="13.1 GiB"):
        mi.Interpreter(demo_cnn())


def _equal_logits_softmax(n: int = 1000, rows: int = 8) -> bytes:
    """RELU then an int8 SOFTMAX over rows of ``n`` equal logits: the sum of exponentials needs a reciprocal shift above
    31, which TFLM checks (its firmware aborts)."""
    b = ModelBuilder()
    x = b.add_tensor("x", (1, rows, 1, n), scale=0.01, zero_point=0)
    r = b.add_tensor("r", (1, rows, 1, n), scale=0.01, zero_point=0)
    y = b.add_tensor("y", (1, rows, 1, n), scale=1 / 256, zero_point=-128)
    b.add_op("RELU", [x], [r])
    b.add_op("SOFTMAX", [r], [y], beta=1.0)
    b.inputs, b.outputs = [x], [y]
    return b.build()


@pytest.mark.parametrize("reference", [False, True])
def test_a_tflite_check_is_an_invoke_error_naming_the_op(tmp_path, reference):
    """Not a bare RuntimeError: an InvokeError (a MicroInterpError) naming the op and node, in memory and out of
    core, with optimized and reference kernels; the next invoke on good data runs."""
    model = _equal_logits_softmax()
    for kwargs in ({}, {"arena": 8000, "backing": tmp_path / "sd.img"}):
        it = mi.Interpreter(model, optimized=not reference, **kwargs)
        assert it.out_of_core == bool(kwargs)
        with pytest.raises(mi.InvokeError, match=r"op 1 \(SOFTMAX\) failed at invoke: softmax: reciprocal exponent"):
            it.invoke()
        it.set_input(np.arange(8000).reshape(1, 8, 1, 1000).astype(np.int8))
        it.invoke()
        assert it.get_output(0).dtype == np.int8
        it.close()
