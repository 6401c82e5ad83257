"""The engine's two executions: a dry run (simulate) takes no effect at all and counts what an invoke does."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.pager.execution import LiveExecution
from microinterp.testing.builder import ModelBuilder

from .conftest import small_net, smallest_out_of_core_arena


def _reduce_model() -> bytes:
    """ABS -> MEAN over the rows (a ``reduce`` plan) -> ADD, float32."""
    b = ModelBuilder()
    shape = (1, 40, 40, 16)
    x = b.add_tensor("x", shape, "FLOAT32")
    a = b.add_tensor("a", shape, "FLOAT32")
    b.add_op("ABS", [x], [a])
    ax = b.add_tensor("axes", (2,), "INT32", data=np.array([1, 2], np.int32))
    m = b.add_tensor("m", (1, 1, 1, 16), "FLOAT32")
    b.add_op("MEAN", [a, ax], [m], keep_dims=True)
    y = b.add_tensor("y", (1, 1, 1, 16), "FLOAT32")
    b.add_op("ADD", [m, m], [y], fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    return b.build()


def _shape(records):
    return [(r.op, r.mode, [(t.rows, t.io, t.compute_cycles, t.io_cycles, t.hash_cycles) for t in r.tiles])
            for r in records]


@pytest.mark.parametrize("model", [small_net(6, 64), small_net(11, 48), _reduce_model()],
                         ids=["net6", "net11", "reduce"])
@pytest.mark.parametrize("fuse", [True, False])
def test_a_dry_run_has_no_effect_and_counts_what_an_invoke_does(tmp_path, monkeypatch, model, fuse):
    """With every live effect (storage IO, kernels, reductions, line-buffer moves) made to fail, simulate() still
    runs; its records are those of the invoke that follows, and it read and wrote nothing on the image."""
    need = smallest_out_of_core_arena(model, tmp_path / "sd.img", fuse=fuse)
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img", fuse=fuse) as it:
        t = it._io_tensor("input", 0)
        it.set_input(np.ones(t.shape, t.dtype))
        sd = it.sd_image
        before = sd.stats()
        with monkeypatch.context() as m:
            for name in ("read", "write", "compute", "keep", "start_reduction", "finish_reduction"):
                m.setattr(LiveExecution, name, _forbidden(name))
            dry = it.simulate()
        assert sd.stats() == before
        it.invoke()
        assert _shape(dry) == _shape(it.profile)
        assert any(r.mode != "whole" for r in dry)


def _forbidden(name):
    def call(*args, **kwargs):
        raise AssertionError(f"a dry run took a live effect: {name}")
    return call


def test_the_invoke_after_a_dry_run_is_live_and_exact(tmp_path):
    model = _reduce_model()
    x = np.random.default_rng(3).normal(0, 2, (1, 40, 40, 16)).astype(np.float32)
    ref = mi.Interpreter(model)
    ref.set_input(x)
    ref.invoke()
    need = smallest_out_of_core_arena(model, tmp_path / "sd.img")
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img") as it:
        it.set_input(x)
        it.simulate()
        it.invoke()
        assert any(r.mode == "reduce" for r in it.profile)
        np.testing.assert_array_equal(it.get_output().view(np.uint32), ref.get_output().view(np.uint32))
