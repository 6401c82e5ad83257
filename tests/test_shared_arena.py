"""SharedArena: several interpreters in one arena with TFLM's multi-tenant rules (heads overlap at the start, tails
stack, used = padding + max head + all tails), each tenant bit-exact with the wheel when invokes interleave, state
in the tails surviving the other tenants' invokes, and a tenant that does not fit refused with the exact size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import microinterp as mi
from microinterp.errors import ArenaOverflowError, ConfigError
from microinterp.shared_arena import footprint
from microinterp.testing.models import demo_cnn
from microinterp.testing.tflm import TflmRunner

from .kernels.test_resource_variables import accumulator_model
from .pager.conftest import small_net

pytest.importorskip("tflite_micro")

ZOO = Path(__file__).resolve().parents[2] / "shared" / "models"


def rule(shared: mi.SharedArena, models) -> int:
    """TFLM's figure: start padding + the largest plan + end padding + every tenant's aligned tail."""
    feet = [footprint(mi.Interpreter(m)) for m in models]
    return shared.start + max(h for h, _ in feet) + shared.end_padding + sum(t for _, t in feet)


@given(seeds=st.lists(st.integers(0, 2**16), min_size=1, max_size=4), order=st.randoms())
def test_tenants_follow_tflms_rules_and_match_the_wheel(seeds, order):
    models = [small_net(s, 32 + 8 * (s % 4), 2 + s % 4) for s in seeds] + [demo_cnn(), accumulator_model()]
    shared = mi.SharedArena(1 << 20)
    tenants = [mi.Interpreter(m, arena=shared) for m in models]
    alone = [mi.Interpreter(m) for m in models]
    assert shared.head_bytes == max(a.head_bytes for a in alone)
    tails = [footprint(a)[1] for a in alone]
    assert [t.tail_bytes for t in shared.tenants] == [tails[0] + shared.end_padding, *tails[1:]]
    assert shared.used_bytes == rule(shared, models) == tenants[0].arena_used_bytes
    assert all(t.head_bytes == a.head_bytes for t, a in zip(tenants, alone))
    wheels = [TflmRunner(m, preserve_all=False) for m in models]
    rng = np.random.default_rng(seeds[0])
    steps = list(range(len(models))) * 2
    order.shuffle(steps)
    for k in steps:                     # interleaved: inputs set right before, outputs read right after
        d = tenants[k].get_input_details(0)
        x = rng.integers(-8, 8, size=tuple(d["shape"])).astype(d["dtype"])
        tenants[k].set_input(x)
        tenants[k].invoke()
        wheels[k].run([x])
        assert np.array_equal(tenants[k].get_output(), wheels[k].output(0))


def assert_same_step(it, wheel, x) -> None:
    it.set_input(x)
    it.invoke()
    wheel.run([x])
    assert np.array_equal(it.get_output(), wheel.output(0))


def test_state_in_the_tails_survives_the_other_tenants():
    shared = mi.SharedArena(200_000)
    acc = mi.Interpreter(accumulator_model(), arena=shared)
    cnn = mi.Interpreter(demo_cnn(), arena=shared)
    other = mi.Interpreter(accumulator_model(name="other"), arena=shared)
    wheel = TflmRunner(accumulator_model(), preserve_all=False)
    x = np.array([[1, 2, 3, 4]], np.int8)
    for _ in range(3):
        assert_same_step(acc, wheel, x)
        cnn.set_input(np.zeros(cnn.get_input_details(0)["shape"], np.int8))
        cnn.invoke()                    # overwrites the shared head, not acc's variable in its tail
        other.set_input(-x)
        other.invoke()
    acc.reset()
    wheel.interpreter.reset()
    assert_same_step(acc, wheel, x)
    # the heads overlap: every tenant's planned tensors start at the arena's start
    assert np.shares_memory(acc.get_output(), cnn.runtime.views[cnn._subgraph.inputs[0]]) or \
        acc.head_bytes <= cnn.head_bytes


@given(extra=st.integers(0, 40))
def test_a_tenant_that_does_not_fit_names_the_shared_size_and_changes_nothing(extra):
    a, b = demo_cnn(), small_net(3, 64, 4)
    ha, ta = footprint(mi.Interpreter(a))
    shared = mi.SharedArena(ha + ta + 64 + extra)         # holds a, not b
    mi.Interpreter(a, arena=shared)
    before = (shared.head_bytes, shared.tail_bytes, len(shared.tenants))
    with pytest.raises(ArenaOverflowError) as e:
        mi.Interpreter(b, arena=shared)
    assert (shared.head_bytes, shared.tail_bytes, len(shared.tenants)) == before
    need = e.value.needed_arena
    # the named size is the smallest that works (for an arena at this address alignment)
    ok = mi.SharedArena(need)
    if ok.arena.buffer.ctypes.data % 16 == shared.arena.buffer.ctypes.data % 16:
        for m in (a, b):
            mi.Interpreter(m, arena=ok)
        assert ok.used_bytes <= need
        small = mi.SharedArena(need - 1)
        mi.Interpreter(a, arena=small)
        with pytest.raises(ArenaOverflowError):
            mi.Interpreter(b, arena=small)


def test_a_shared_arena_runs_in_memory():
    with pytest.raises(ConfigError, match="SharedArena"):
        mi.Interpreter(demo_cnn(), arena=mi.SharedArena(100_000), backing="unused.img")


@pytest.mark.skipif(not (ZOO / "person_detect.tflite").exists(), reason="../shared/models not present")
def test_zoo_models_share_one_arena():
    names = ["hello_world_int8.tflite", "micro_speech_quantized.tflite", "person_detect.tflite",
             "kws_ref_model.tflite"]
    paths = [str(ZOO / n) for n in names]
    shared = mi.SharedArena(128_000)
    tenants = [mi.Interpreter(p, arena=shared) for p in paths]
    alone = [mi.Interpreter(p) for p in paths]
    assert shared.used_bytes == rule(shared, paths) < sum(a.arena_used_bytes for a in alone)
    rng = np.random.default_rng(1)
    for it, p in [*zip(tenants, paths), *zip(tenants, paths)]:
        d = it.get_input_details(0)
        x = rng.integers(-128, 128, size=tuple(d["shape"])).astype(d["dtype"])
        it.set_input(x)
        it.invoke()
        w = TflmRunner(p, preserve_all=False)
        w.run([x])
        assert np.array_equal(it.get_output(), w.output(0))
