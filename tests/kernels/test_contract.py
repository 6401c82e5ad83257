"""The kernel contract: a toy op declared in one module (``toy_op``) is found by the registry, the tiler, streams,
batch, the cost model, the firmware arena and reordering; an override keeps what it does not redeclare."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.bands.tiling import tiler_for
from microinterp.cost.analysis import analyze
from microinterp.cost.mcu import op_class
from microinterp.cost.work import op_work
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.kernels.bands import RowLocal
from microinterp.kernels.contract import PURE, UNDECLARED, Kernel, declaration
from microinterp.memory32 import estimate_arena
from microinterp.model import load_model
from microinterp.planner.reorder import reorderable
from microinterp.streams import Streams

from .toy_op import StatefulToyScale, ToyScale, toy_model


@pytest.fixture
def scope():
    with mi.OpResolver() as r:
        r.register("ToyScale", ToyScale())
        yield r


def _inputs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, size=(n, 32, 32, 8)).astype(np.int8)


def _expected(x: np.ndarray) -> np.ndarray:
    y = np.clip(x.astype(np.int16) * 2, -128, 127)
    return np.clip(y + x.astype(np.int16), -128, 127).astype(np.int8)       # ADD with equal scales, zero points 0


def test_the_registry_is_derived_from_the_kernel_modules():
    assert all(isinstance(k, Kernel) and op in k.ops for op, k in REFERENCE_KERNELS.items())
    assert REFERENCE_KERNELS["EQUAL"].ops == ("EQUAL",) and REFERENCE_KERNELS["SignalDelay"].traits.stateful


def test_the_toy_op_is_found_in_the_registry(scope):
    decl = scope.declaration("ToyScale")
    assert decl.kernel is scope.find("ToyScale") and decl.traits.pointwise and not decl.traits.graph
    assert mi.resolver.declaration_of("ToyScale").kernel is decl.kernel      # what name-only consumers ask


def test_the_tiler_bands_it_and_out_of_core_equals_in_memory(scope, tmp_path):
    model = toy_model()
    m = load_model(model)
    op = m.main.operators[0]
    assert isinstance(declaration(ToyScale()).bands, RowLocal)
    assert tiler_for(op, None, m.main.tensors, scope.find("ToyScale")).mode == "rows"
    x = _inputs(1)
    mem = mi.Interpreter(model)
    mem.set_input(x)
    mem.invoke()
    ooc = mi.Interpreter(model, arena=12_000, backing=tmp_path / "sd.img")
    assert ooc.out_of_core
    ooc.set_input(x)
    ooc.invoke()
    assert np.array_equal(ooc.get_output(), mem.get_output()) and np.array_equal(mem.get_output(), _expected(x))


def test_streams_and_batch_run_it(scope):
    xs = _inputs(6, seed=1)
    streams = Streams(toy_model(), 6)
    assert np.array_equal(streams.run(xs[:, None])[0][:, 0], _expected(xs))
    it = mi.Interpreter(toy_model())
    assert np.array_equal(it.invoke_batch(xs, 3), _expected(xs))
    assert it._batch_runner.cache                   # rebatched, not sample by sample


def test_the_cost_model_and_the_firmware_arena_know_it(scope):
    m = load_model(toy_model())
    op = m.main.operators[0]
    assert op_class("ToyScale") == "elementwise"
    assert op_work(op, m.main.tensors) == (32 * 32 * 8, 32 * 32 * 8)
    assert analyze(m).layers[0].op_class == "elementwise"
    assert estimate_arena(m).categories["op_data"] >= 8


def test_reordering_asks_its_traits(scope):
    assert reorderable(load_model(toy_model()))
    scope.register("ToyScale", StatefulToyScale(), replace=True)
    assert not reorderable(load_model(toy_model()))


def _bare(x: np.ndarray) -> np.ndarray:
    return np.clip(x.astype(np.int16) * 2, -128, 127).astype(np.int8)


def test_an_undeclared_op_gets_the_conservative_answers(tmp_path):
    class Bare(Kernel):
        def prepare(self, ctx, op):
            return None

        def invoke(self, ctx, op, data):
            ctx.output(op, 0)[...] = ctx.input(op, 0)

    with mi.OpResolver() as r:
        r.register("ToyScale", Bare())
        decl = r.declaration("ToyScale")
        assert decl.traits == UNDECLARED and decl.bands is None and decl.reset is None
        assert not reorderable(load_model(toy_model()))
        it = mi.Interpreter(toy_model())
        assert np.array_equal(it.invoke_batch(_inputs(4), 2), _bare(_inputs(4)))
        assert not it._batch_runner.cache               # sample by sample: it may mix the samples
        with pytest.raises(mi.ConfigError, match="cannot run as streams"):
            Streams(toy_model(), 2)
        with pytest.raises(mi.ConfigError, match="declare its traits"):       # out of core: says what to do
            mi.Interpreter(toy_model(), arena=12_000, backing=tmp_path / "sd.img")


def test_an_override_inherits_what_it_does_not_redeclare():
    class Override(type(REFERENCE_KERNELS["TANH"]).__mro__[0]):
        pass

    class Plain(Kernel):
        def prepare(self, ctx, op):
            return REFERENCE_KERNELS["FULLY_CONNECTED"].prepare(ctx, op)

        def invoke(self, ctx, op, data):
            REFERENCE_KERNELS["FULLY_CONNECTED"].invoke(ctx, op, data)

    r = mi.OpResolver()
    r.register("FULLY_CONNECTED", Plain(), replace=True)
    decl, shipped = r.declaration("FULLY_CONNECTED"), declaration(REFERENCE_KERNELS["FULLY_CONNECTED"])
    assert decl.bands is shipped.bands is not None and decl.traits == PURE and decl.op_class == "fc"
    assert decl.opdata == shipped.opdata and decl.bind(None, None, None) is None
    r.register("TANH", Override(), replace=True)
    assert r.declaration("TANH").bands is REFERENCE_KERNELS["TANH"].bands
