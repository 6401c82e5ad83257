"""Byte sharing in offline plans: slices, joins and pads placed over the tensors they cut, fill or pad. The wheel
runs the written plans with exactly the predicted head and the same outputs, bit for bit, and so does microinterp."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.apps.optimize import optimize
from microinterp.model_writer import ModelBuilder
from microinterp.patching.emit import patch_stage
from microinterp.patching.search import candidate_stages
from microinterp.planner.aliases import Alias, Group, candidates, share
from microinterp.testing import models
from microinterp.testing.device import seeded_inputs

from ..patching.test_patching import residual_model, run


def patched_models():
    for model in (models.demo_cnn(), residual_model(), models.mobilenet_v2(alpha=0.35, input_size=48, classes=10)):
        m = mi.load_model(model)
        for stage in candidate_stages(m, limit=2):
            for grid in ((3, 1), (2, 2))[:1 if len(m.main.operators) > 20 else 2]:
                yield model, patch_stage(m, stage, *grid)


def test_shared_plans_run_identically_in_microinterp_and_the_wheel():
    tflm = pytest.importorskip("microinterp.testing.tflm")
    pytest.importorskip("tflite_micro")
    shared_any = 0
    for original, patched in patched_models():
        plain = optimize(patched, budget_s=0.1)
        shared = optimize(patched, budget_s=0.1, share_bytes=True)
        assert shared.predicted_head <= plain.predicted_head
        shared_any += shared.predicted_head < plain.predicted_head
        assert tflm.tflm_arena_head(shared.data) == shared.predicted_head == mi.Interpreter(shared.data).head_bytes
        xs = seeded_inputs(mi.Interpreter(original), 3)
        want = run(original, xs)
        assert all(np.array_equal(a, b) for a, b in zip(want, run(shared.data, xs)))
        wheel = tflm.TflmRunner(shared.data, preserve_all=False)
        wheel.run(xs)
        assert np.array_equal(wheel.output(0), want[0])
    assert shared_any >= 3


def test_an_in_place_pad_of_a_model_with_explicit_pads():
    """A chain of PAD + VALID convolutions (a PyTorch export's shape): both PADs may go over their inputs; here the
    depthwise convolution after the second PAD is the peak either way, so the head stays, the outputs too."""
    model = residual_model()
    m = mi.load_model(model)
    pads = [a for a in candidates(m) if a.kind == "pad"]
    assert len(pads) == 2
    shared = optimize(model, budget_s=0.2, share_bytes=True)
    plain = optimize(model, budget_s=0.2)
    assert shared.predicted_head <= plain.predicted_head
    xs = seeded_inputs(mi.Interpreter(model), 0)
    assert np.array_equal(run(model, xs)[0], run(shared.data, xs)[0])


def slice_then_pad() -> bytes:
    """x -> two overlapping row cuts; the first is padded and convolved while x is still needed by the second."""
    b = ModelBuilder()
    q = {"scale": 0.1, "zero_point": 2}
    x = b.add_tensor("x", (1, 8, 4, 4), **q)
    outs = []
    for k, (lo, hi) in enumerate(((0, 5), (3, 8))):
        s = b.add_tensor(f"s{k}", (1, hi - lo, 4, 4), **q)
        consts = [b.add_tensor(f"{n}{k}", (4,), "INT32", data=np.array(v, np.int32))
                  for n, v in (("b", [0, lo, 0, 0]), ("e", [1, hi, 4, 4]), ("st", [1, 1, 1, 1]))]
        b.add_op("STRIDED_SLICE", [x, *consts], [s], begin_mask=0, end_mask=0, ellipsis_mask=0,
                 new_axis_mask=0, shrink_axis_mask=0, offset=False)
        p = b.add_tensor(f"p{k}", (1, hi - lo + 2, 4, 4), **q)
        pads = b.add_tensor(f"pads{k}", (4, 2), "INT32", data=np.array([[0, 0], [1, 1], [0, 0], [0, 0]], np.int32))
        b.add_op("PAD", [s, pads], [p])
        outs.append(p)
    y = b.add_tensor("y", (1, 14, 4, 4), **q)
    b.add_op("CONCATENATION", outs, [y], axis=1, fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_a_pad_over_a_cut_is_refused_while_the_cut_tensor_is_still_read():
    model = slice_then_pad()
    m = mi.load_model(model)
    found = candidates(m)
    assert {a.kind for a in found} == {"slice", "pad", "concat"}
    shared = optimize(model, budget_s=0.2, share_bytes=True)
    xs = seeded_inputs(mi.Interpreter(model), 1)
    want = run(model, xs)[0]
    assert np.array_equal(want, run(shared.data, xs)[0])
    tflm = pytest.importorskip("microinterp.testing.tflm")
    pytest.importorskip("tflite_micro")
    wheel = tflm.TflmRunner(shared.data, preserve_all=False)
    wheel.run(xs)
    assert np.array_equal(wheel.output(0), want)


def test_share_keeps_only_safe_merges():
    # t1 = slice of t0 at 0; t2 = pad of t1 placed 8 bytes before it: t2 overwrites t0's other bytes
    aliases = [Alias(0, 1, 0, "slice", 1), Alias(2, 1, 8, "pad", 2)]
    nbytes = {0: 64, 1: 32, 2: 48}
    writes = [[], [1], [2], []]
    alive = {0: (0, 3), 1: (1, 2), 2: (2, 3)}          # t0 still read at step 3
    groups = share(aliases, alive, writes, nbytes)
    assert all(not ({0, 2} <= set(g.at)) for g in groups)
    alive = {0: (0, 1), 1: (1, 2), 2: (2, 3)}          # t0 dead once cut: the pad may reuse its bytes
    groups = share(aliases, alive, writes, nbytes)
    assert any({0, 1, 2} <= set(g.at) for g in groups)
    assert Group({0: 0, 1: 8}).extent({0: 16, 1: 16}) == (0, 24)
