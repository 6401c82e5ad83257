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


def expand_then_depthwise() -> bytes:
    """x (12 x 12 x 8) -> 1x1 conv to 16 channels -> 3x3 depthwise SAME: each output row can be written over input
    rows no later row reads."""
    rng = np.random.default_rng(5)
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 12, 12, 8), scale=0.1, zero_point=-1)

    def weights(name, shape, axis):
        scales = rng.uniform(0.005, 0.02, 16).astype(np.float32)
        w = b.add_tensor(f"{name}/w", shape, data=rng.integers(-127, 128, shape, dtype=np.int8), scale=scales,
                         zero_point=np.zeros(16, np.int64), axis=axis)
        bias = b.add_tensor(f"{name}/b", (16,), "INT32", data=rng.integers(-300, 300, 16), scale=scales * 0.1,
                            zero_point=np.zeros(16, np.int64))
        return w, bias

    e = b.add_tensor("e", (1, 12, 12, 16), scale=0.2, zero_point=3)
    b.add_op("CONV_2D", [x, *weights("expand", (16, 1, 1, 8), 0)], [e], padding="VALID", stride_h=1, stride_w=1,
             fused_activation_function="RELU")
    y = b.add_tensor("y", (1, 12, 12, 16), scale=0.3, zero_point=0)
    b.add_op("DEPTHWISE_CONV_2D", [e, *weights("dw", (1, 3, 3, 16), 3)], [y], padding="SAME", stride_h=1,
             stride_w=1, depth_multiplier=1, fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_an_output_over_its_own_input_row_by_row():
    m = mi.load_model(expand_then_depthwise())
    window = {a.op: a for a in candidates(m) if a.kind == "window"}
    # the 1x1 expansion: output row r (192 bytes) must end where input row r (96 bytes) starts: 13 input rows
    assert window[0].delta == 13 * 96
    # the depthwise convolution, pad 1: output row r must end where input row r - 1 starts: 2 rows of 192 bytes
    assert window[1].delta == 2 * 192
    model = expand_then_depthwise()
    plain = optimize(model, budget_s=0.2)
    shared = optimize(model, budget_s=0.2, share_bytes=True)
    # y at 0, e 2 rows of 192 bytes after it, x 1248 bytes after e: 384 + 1248 + 1152 = 2784 bytes, not 4608
    assert plain.predicted_head == 4608 and shared.predicted_head == 2784
    runs_as_planned(model, shared, seed=3)


def runs_as_planned(model: bytes, shared, seed: int) -> None:
    """``shared`` (an :func:`optimize` result of ``model``) computes ``model``'s outputs in microinterp and in the
    wheel, with the head it predicted."""
    xs = seeded_inputs(mi.Interpreter(model), seed)
    want = run(model, xs)[0]
    assert np.array_equal(want, run(shared.data, xs)[0])
    assert mi.Interpreter(shared.data).head_bytes == shared.predicted_head
    tflm = pytest.importorskip("microinterp.testing.tflm")
    pytest.importorskip("tflite_micro")
    assert tflm.tflm_arena_head(shared.data) == shared.predicted_head
    wheel = tflm.TflmRunner(shared.data, preserve_all=False)
    wheel.run(xs)
    assert np.array_equal(wheel.output(0), want)


def test_a_chain_of_in_place_windows_does_not_walk_down_the_arena():
    """Each placement puts the output before its input; chained, the group would span more than its tensors ever
    hold at once: such a merge is refused."""
    aliases = [Alias(1, 0, 64, "window", 1), Alias(2, 1, 64, "window", 2), Alias(3, 2, 64, "window", 3)]
    nbytes = {0: 96, 1: 96, 2: 96, 3: 96}
    alive = {0: (0, 1), 1: (1, 2), 2: (2, 3), 3: (3, 4)}
    writes = [[], [1], [2], [3], []]
    groups = share(aliases, alive, writes, nbytes)
    assert all(max(g.at[t] + nbytes[t] for t in g.at) - min(g.at.values()) <= 160 for g in groups)


def nchw_input_cnn() -> bytes:
    """An NCHW input transposed to NHWC, then a 3x3 convolution (a PyTorch export's first layers)."""
    b = ModelBuilder()
    q = {"scale": 0.05, "zero_point": -3}
    x = b.add_tensor("x", (1, 3, 24, 24), **q)
    perm = b.add_tensor("perm", (4,), "INT32", data=np.array([0, 2, 3, 1], np.int32))
    t = b.add_tensor("t", (1, 24, 24, 3), **q)
    b.add_op("TRANSPOSE", [x, perm], [t])
    w = b.add_tensor("w", (4, 3, 3, 3), data=np.random.default_rng(0).integers(-90, 90, (4, 3, 3, 3)),
                     scale=[0.02] * 4, zero_point=0, axis=0)
    bias = b.add_tensor("bias", (4,), "INT32", data=np.arange(4, dtype=np.int32) * 10)
    y = b.add_tensor("y", (1, 24, 24, 4), scale=0.08, zero_point=1)
    b.add_op("CONV_2D", [t, w, bias], [y], padding="SAME", stride_w=1, stride_h=1)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_a_transpose_over_its_own_input():
    model = nchw_input_cnn()
    (alias,) = [a for a in candidates(mi.load_model(model)) if a.kind == "transpose"]
    # output element i reads input element c * 576 + p (i = 3 p + c); the last plane's first rows are read latest
    # relative to their place: delta = 2 * 576 elements, the input 1152 bytes after the output's start
    assert alias.delta == 2 * 576
    plain = optimize(model, budget_s=0.2)
    shared = optimize(model, budget_s=0.2, share_bytes=True)
    # x and t share all but 1152 of their 1728 bytes each: the head falls from 4032 to 3600 bytes
    assert (plain.predicted_head, shared.predicted_head) == (4032, 3600)
    runs_as_planned(model, shared, seed=4)


def test_variants_keep_a_long_lived_input_out_of_chains_and_run_as_planned():
    """A chain split into channel groups: every group's convolution reads the same input, so that input lives
    through all of them. Besides the variants with every output placed over its input, the planner tries each
    slack without the placements over an input that other ops read too; the smallest plan runs as predicted."""
    from microinterp.apps.optimize import WINDOW_SLACKS, _shared
    from microinterp.patching.channels import find_chains, split_chains

    base = mi.load_model(models.mobilenet_v2(alpha=0.35, input_size=48, classes=10))
    model = split_chains(base, {c.start: (c, 2) for c in find_chains(base)})
    m = mi.load_model(model)
    plan = mi.Interpreter(m).runtime.plan
    variants = _shared(m, None, plan["requests"], plan["owners"], plan["infos"])
    assert len(variants) == len(WINDOW_SLACKS) + sum(s >= 0 for s in WINDOW_SLACKS)
    readers = {}
    for op in m.main.operators:
        for t in op.inputs:
            readers[t] = readers.get(t, 0) + 1
    assert any(readers.get(a.member, 0) > 1 for a in candidates(m) if a.kind == "window")
    runs_as_planned(model, optimize(model, budget_s=0.5, share_bytes=True), seed=0)
