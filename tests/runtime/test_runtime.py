"""The runtime seam: both runtimes implement one protocol, the interpreter builds one and only talks through it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import microinterp as mi
from microinterp.cost.mcu import get_profile
from microinterp.kernels.contract import Kernel
from microinterp.pager import Pager
from microinterp.resolver import default_resolver
from microinterp.runtime import InMemoryRuntime, OutOfCore, Preparation, Runtime
from microinterp.storage.null import NullStorage
from microinterp.testing.models import demo_cnn

PROTOCOL = ("invoke", "reset", "write_input", "read_tensor", "records", "close")


def _runtimes(tmp_path):
    model = mi.load_model(demo_cnn())
    memory = mi.Interpreter(model)
    paged = mi.Interpreter(model, arena=memory.arena_size // 2, backing=tmp_path / "sd.img")
    return model, memory, paged


def test_both_runtimes_implement_the_protocol(tmp_path):
    _, memory, paged = _runtimes(tmp_path)
    assert isinstance(memory.runtime, InMemoryRuntime) and not memory.out_of_core
    assert isinstance(paged.runtime, Pager) and paged.out_of_core
    for it in (memory, paged):
        assert isinstance(it.runtime, Runtime)
        assert all(callable(getattr(it.runtime, name)) for name in PROTOCOL)
        assert it.arena is it.runtime.arena
    paged.close()


def test_the_same_calls_through_either_runtime_give_the_same_bytes(tmp_path):
    model, memory, paged = _runtimes(tmp_path)
    sg = model.main
    x = np.random.default_rng(3).integers(-128, 128, sg.tensors[sg.inputs[0]].shape).astype(np.int8)
    outs = []
    for it in (memory, paged):
        rt = it.runtime
        rt.write_input(sg.inputs[0], x)
        rt.invoke()
        outs.append(rt.read_tensor(sg.outputs[0]))
        assert [r.op for r in rt.records()] == [op.key for op in sg.operators]
        if it is paged:     # the input's records on the card are as written (in memory the plan may reuse them)
            assert np.array_equal(rt.read_tensor(sg.inputs[0]), x)
    assert np.array_equal(outs[0], outs[1])
    paged.close()


def test_a_runtime_built_without_an_interpreter_runs_the_model():
    """The protocol is usable on its own: a Preparation and an arena make an in-memory runtime; OutOfCore and a
    storage object make a paged one. Both give the interpreter's output."""
    model = mi.load_model(demo_cnn())
    resolver = default_resolver()
    kernels = [[resolver.find(op.key, True) for op in sg.operators] for sg in model.subgraphs]
    prep = Preparation(model, resolver, kernels)
    need = prep.measure()
    memory = InMemoryRuntime(prep, mi.arena.Arena(need), mcu=get_profile("stm32f746"), cost_kernels="cmsis-nn")
    paged = Pager(model, resolver, need // 2, OutOfCore(NullStorage()))
    sg = model.main
    x = np.full(sg.tensors[sg.inputs[0]].shape, 7, np.int8)
    ref = mi.Interpreter(model)
    ref.set_input(x)
    ref.invoke()
    memory.write_input(sg.inputs[0], x)
    memory.invoke()
    assert np.array_equal(memory.read_tensor(sg.outputs[0]), ref.get_output())
    # NullStorage stores nothing, so the paged runtime is a dry run: its records equal those of a counted invoke
    assert [r.op for r in paged.simulate()] == [op.key for op in sg.operators]
    paged.close()


def test_out_of_core_settings_are_one_value():
    cfg = OutOfCore("sd.img", pools=(2, 1, 1), tile=4096)
    with pytest.raises(AttributeError):
        cfg.tile = 1            # frozen: a configuration is a value
    assert cfg.checksum == "crc32" and cfg.fuse and not cfg.recover


def test_quiet_enter_and_leave_are_quiet_floats_for_the_invoke_loop():
    """The invoke loop's form of :func:`quiet_floats` (no context manager): everything ignored between the two, the
    caller's settings back after; an interpreter's invoke leaves them as it found them."""
    from microinterp.runtime.memory import quiet_enter, quiet_leave

    before = np.geterr()
    token = quiet_enter()
    try:
        assert set(np.geterr().values()) == {"ignore"}
    finally:
        quiet_leave(token)
    assert np.geterr() == before
    from microinterp.testing.builder import ModelBuilder

    b = ModelBuilder()
    x1, x2, y = (b.add_tensor(name, (4,), "FLOAT32") for name in ("x1", "x2", "y"))
    b.add_op("ADD", [x1, x2], [y], fused_activation_function="NONE")
    b.inputs, b.outputs = [x1, x2], [y]
    it = mi.Interpreter(b.build())
    it.set_input(np.array([3e38, 3e38, 3e38, np.inf], np.float32), 0)
    it.set_input(np.array([3e38, -3e38, np.inf, -np.inf], np.float32), 1)
    it.invoke()                                     # overflow and inf - inf: silent inside
    assert np.geterr() == before
    assert np.isnan(it.get_output()[3])


def test_quiet_floats_silences_inside_and_restores_after_even_on_an_exception():
    """The runtime's once-per-invoke float state: IEEE results without warnings inside, the caller's settings
    back after (also when a kernel raises), nestable."""
    import warnings

    from microinterp.runtime.memory import quiet_floats

    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with quiet_floats():
            assert np.isinf(np.array([3e38], np.float32) * np.float32(10)).all()
            with quiet_floats():
                assert np.isnan(np.array([0.0]) / np.array([0.0])).all()
            assert np.isnan(np.array([np.inf]) - np.array([np.inf])).all()
        with pytest.raises(ValueError), quiet_floats():
            raise ValueError("a kernel failed")
        assert np.geterr() == before
        with pytest.raises(RuntimeWarning):
            np.array([3e38], np.float32) * np.float32(10)


def _chain(n: int, dtype: str = "FLOAT32", fail_at: int | None = None):
    """n CUSTOM ops in a chain, each adding its index to its input and logging it; op ``fail_at`` raises the host's
    MemoryError instead."""
    from microinterp.testing.builder import ModelBuilder

    b = ModelBuilder()
    ts = [b.add_tensor(f"t{k}", (4,), dtype) for k in range(n + 1)]
    for k in range(n):
        b.add_op("CUSTOM", [ts[k]], [ts[k + 1]], custom_code="Step")
    b.inputs, b.outputs = [ts[0]], [ts[-1]]
    log: list[tuple[int, dict]] = []

    class Step(Kernel):
        def prepare(self, ctx, op):
            return op.inputs[0]     # the op's index (op k reads tensor t k)

        def invoke(self, ctx, op, data):
            log.append((data, np.geterr()))
            if data == fail_at:
                raise MemoryError("Unable to allocate 3 GiB")
            ctx.output(op, 0)[...] = ctx.input(op, 0) + data

    resolver = mi.OpResolver()
    resolver.register("Step", Step())
    return b.build(), resolver, log


@pytest.mark.parametrize("dtype", ["FLOAT32", "INT32"])
@pytest.mark.parametrize("unrolled", [256, 2])
def test_the_written_out_invoke_runs_every_op_once_in_order(monkeypatch, dtype, unrolled):
    """InMemoryRuntime's invoke is written out for its model (one line per op up to UNROLLED_OPS, a loop beyond):
    every op once, in op order, each with its clock reading; float32 models under the quiet errstate and the
    caller's settings back after, integer models under the caller's own."""
    from microinterp.runtime import memory

    monkeypatch.setattr(memory, "UNROLLED_OPS", unrolled)
    model, resolver, log = _chain(5, dtype)
    it = mi.Interpreter(model, resolver=resolver)
    before = np.geterr()
    it.set_input(np.arange(4).astype(dtype.lower()), 0)
    it.invoke()
    assert [k for k, _ in log] == [0, 1, 2, 3, 4]
    assert all(set(state.values()) == {"ignore"} for _, state in log) == (dtype == "FLOAT32")
    assert np.geterr() == before
    assert it.get_output(0).tolist() == [v + 10 for v in range(4)]
    stamps = it.runtime.stamps
    assert all(b >= a > 0 for a, b in itertools.pairwise(stamps)) and len(stamps) == 6


def test_a_kernel_out_of_host_memory_at_invoke_is_a_typed_error_and_leaves_the_errstate():
    model, resolver, log = _chain(3, fail_at=1)
    it = mi.Interpreter(model, resolver=resolver)
    before = np.geterr()
    with pytest.raises(mi.HostMemoryError, match="3 GiB.*backing="):
        it.invoke()
    assert [k for k, _ in log] == [0, 1] and np.geterr() == before

