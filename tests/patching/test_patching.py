"""Patch-based stages: every rewritten model computes the same outputs, bit for bit, in microinterp and in the
TFLM wheel; the geometry (halos, padding made explicit or left to the kernel) is checked through those outputs."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.errors import PrepareError
from microinterp.model_writer import ModelBuilder
from microinterp.patching.emit import patch_stage, split
from microinterp.patching.regions import Window, padding_outside
from microinterp.patching.search import ChannelCut, candidate_stages, search
from microinterp.patching.stage import find_stages
from microinterp.testing import models
from microinterp.testing.device import seeded_inputs


def run(model, xs) -> list[np.ndarray]:
    it = mi.Interpreter(model)
    for i, x in enumerate(xs):
        it.set_tensor(it.get_input_details(i)["index"], x)
    it.invoke()
    return [it.get_tensor(it.get_output_details(k)["index"]).copy() for k in range(it.num_outputs)]


def inputs(model, seed=0) -> list[np.ndarray]:
    return seeded_inputs(mi.Interpreter(model), seed)


def wheel_output(model, xs) -> np.ndarray:
    """Output 0 of the TFLM wheel on ``xs`` (the caller skips without the wheel)."""
    from microinterp.testing.tflm import TflmRunner

    runner = TflmRunner(model, preserve_all=False)
    runner.run(xs)
    return runner.output(0)


def residual_model() -> bytes:
    """NCHW input -> TRANSPOSE -> PAD -> conv s2 VALID -> expand -> PAD -> depthwise -> project -> ADD (residual)
    -> conv SAME s2 with an odd size: the shapes of a PyTorch-exported MobileNetV2 block."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    q = {"scale": 0.05, "zero_point": -3}
    x = b.add_tensor("x", (1, 3, 21, 19), **q)
    perm = b.add_tensor("perm", (4,), "INT32", data=np.array([0, 2, 3, 1], np.int32))
    t = b.add_tensor("t", (1, 21, 19, 3), **q)
    b.add_op("TRANSPOSE", [x, perm], [t])
    pads = b.add_tensor("pads", (4, 2), "INT32", data=np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    tp = b.add_tensor("tp", (1, 23, 21, 3), **q)
    b.add_op("PAD", [t, pads], [tp])

    def conv(src, shape_in, cout, k, stride, padding, name, depthwise=False, act="RELU6"):
        cin = shape_in[3]
        wshape = (1, k, k, cin) if depthwise else (cout, k, k, cin)
        scales = rng.uniform(0.005, 0.02, wshape[3] if depthwise else cout).astype(np.float32)
        w = b.add_tensor(f"{name}/w", wshape, data=rng.integers(-127, 128, wshape, dtype=np.int8), scale=scales,
                         zero_point=np.zeros(len(scales), np.int64), axis=3 if depthwise else 0)
        bias = b.add_tensor(f"{name}/b", (len(scales),), "INT32", data=rng.integers(-500, 500, len(scales)),
                            scale=scales * 0.05, zero_point=np.zeros(len(scales), np.int64))
        if padding == "SAME":
            oh, ow = -(-shape_in[1] // stride), -(-shape_in[2] // stride)
        else:
            oh, ow = (shape_in[1] - k) // stride + 1, (shape_in[2] - k) // stride + 1
        out = b.add_tensor(name, (1, oh, ow, cout), scale=0.04, zero_point=-5)
        opts = {"padding": padding, "stride_h": stride, "stride_w": stride, "fused_activation_function": act}
        if depthwise:
            b.add_op("DEPTHWISE_CONV_2D", [src, w, bias], [out], depth_multiplier=1, **opts)
        else:
            b.add_op("CONV_2D", [src, w, bias], [out], **opts)
        return out, (1, oh, ow, cout)

    c0, s0 = conv(tp, (1, 23, 21, 3), 8, 3, 2, "VALID", "c0")
    e, se = conv(c0, s0, 24, 1, 1, "VALID", "expand")
    pe = b.add_tensor("pe", (1, se[1] + 2, se[2] + 2, 24), scale=0.04, zero_point=-5)
    b.add_op("PAD", [e, pads], [pe])
    d, sd = conv(pe, (1, se[1] + 2, se[2] + 2, 24), 24, 3, 1, "VALID", "dw", depthwise=True)
    p, sp = conv(d, sd, 8, 1, 1, "VALID", "project", act="NONE")
    s = b.add_tensor("sum", sp, scale=0.06, zero_point=1)
    b.add_op("ADD", [p, c0], [s], fused_activation_function="NONE")
    y, _ = conv(s, sp, 12, 3, 2, "SAME", "head")
    b.inputs, b.outputs = [x], [y]
    return b.build()


CASES = {"demo_cnn": models.demo_cnn, "residual": residual_model,
         "mobilenet_v2_035": lambda: models.mobilenet_v2(alpha=0.35, input_size=48, classes=10)}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("grid", [(1, 2), (2, 1), (2, 2), (3, 3)])
def test_every_stage_as_patches_gives_identical_outputs(name, grid):
    model = CASES[name]()
    m = mi.load_model(model)
    xs = inputs(model)
    want = run(model, xs)
    stages = find_stages(m, min_ops=2)
    assert stages
    tried = 0
    for stage in stages[:: max(1, len(stages) // 12)]:
        y = m.main.tensors[stage.y]
        lay = stage.layouts[stage.y]
        if grid[0] > y.shape[lay.h] or grid[1] > y.shape[lay.w]:
            continue
        got = run(patch_stage(m, stage, *grid), xs)
        assert all(np.array_equal(a, b) for a, b in zip(want, got)), (stage.start, stage.stop, grid)
        tried += 1
    assert tried


def test_the_wheel_runs_patched_models_to_the_same_bits():
    pytest.importorskip("tflite_micro")
    for name in sorted(CASES):
        model = CASES[name]()
        m = mi.load_model(model)
        xs = inputs(model, seed=5)
        before = wheel_output(model, xs)
        for stage in candidate_stages(m, limit=3):
            for grid in ((2, 2), (1, 3)):
                after = wheel_output(patch_stage(m, stage, *grid), xs)
                assert np.array_equal(before, after), (name, stage.start, stage.stop, grid)


def test_a_residual_stage_crops_the_skip_and_pads_only_the_border():
    model = residual_model()
    m = mi.load_model(model)
    whole = [s for s in find_stages(m) if s.start == 0 and s.stop == len(m.main.operators)]
    assert whole, "TRANSPOSE .. head is one stage"
    patched = mi.load_model(patch_stage(m, whole[0], 2, 2))
    names = [op.name for op in patched.main.operators]
    assert names.count("CONCATENATION") == 3 and "TRANSPOSE" in names and "STRIDED_SLICE" in names
    assert np.array_equal(run(model, inputs(model))[0], run(patched, inputs(model))[0])


def test_geometry():
    assert split(10, 3) == [(0, 4), (4, 7), (7, 10)]
    w = Window(3, 3, 2, 2, 1, 1, 0, 0)
    assert w.input_region((0, 2, 3, 5)) == (0, 5, 6, 11)
    assert padding_outside((-1, 5, 6, 12), (0, 10, 0, 11)) == (1, 0, 0, 1)


def test_search_lowers_the_whole_arena_within_the_mac_bound():
    from microinterp.apps.optimize import wheel_arena
    from microinterp.patching.search import model_macs

    model = models.mobilenet_v2(alpha=0.35, input_size=96, classes=10)
    m = mi.load_model(model)
    r = search(m, wheel_arena, max_extra_macs=0.15, max_grid=3, rounds=2, limit=6)
    assert r.cuts and r.arena < wheel_arena(m)
    assert model_macs(mi.load_model(r.data)) <= model_macs(m) * 1.15
    assert np.array_equal(run(model, inputs(model))[0], run(r.data, inputs(model))[0])
    # no recompute allowed: only channel groups (which add no MACs) may be cut
    free = search(m, wheel_arena, max_extra_macs=0.0, max_grid=2, rounds=1, limit=4)
    assert all(isinstance(c, ChannelCut) for c in free.cuts)
    assert model_macs(mi.load_model(free.data)) == model_macs(m)
    none = search(m, lambda _: 10**9, max_grid=2, rounds=1, limit=4)     # nothing lowers the arena: unchanged
    assert not none.cuts and none.data == bytes(m._raw)

    def only_the_original(candidate):       # e.g. a cut of a uint8 input, which TFLM's STRIDED_SLICE refuses
        if candidate is not m:
            raise PrepareError(0, "STRIDED_SLICE", "type UINT8 -> UINT8 not supported")
        return 10**9

    refused = search(m, only_the_original, max_grid=2, rounds=1, limit=4)     # skipped, not fatal
    assert not refused.cuts and refused.data == bytes(m._raw)


def test_a_rewrite_for_a_core_runs_identically_in_that_firmware_and_needs_the_arena_it_reports():
    from microinterp.apps.optimize import rewrite

    model = models.mobilenet_v2(alpha=0.35, input_size=96, classes=10)
    w = rewrite(model, budget_s=0.3, target="cortex-m55", quick=True)
    assert w.cuts and w.target_arena_after < w.target_arena_before
    a, b = mi.Interpreter(model, target="cortex-m55"), mi.Interpreter(w.data, target="cortex-m55")
    assert b.arena_used_bytes == w.target_arena_after
    for seed in (0, 1):
        x = seeded_inputs(a, seed)[0]
        a.set_tensor(a.get_input_details(0)["index"], x)
        b.set_tensor(b.get_input_details(0)["index"], x)
        a.invoke()
        b.invoke()
        assert np.array_equal(a.get_tensor(a.get_output_details(0)["index"]),
                              b.get_tensor(b.get_output_details(0)["index"]))


def test_a_model_whose_arena_cannot_be_replayed_keeps_its_graph_and_says_why(tmp_path, capsys):
    from microinterp.apps.cli import main
    from microinterp.apps.optimize import rewrite

    from ..kernels.test_resource_variables import accumulator_model

    model = accumulator_model()           # CALL_ONCE and resource variables
    w = rewrite(model, budget_s=0.2)
    assert not w.cuts and w.arena_before is None and "cannot be replayed" in w.message
    assert len(mi.load_model(w.data).main.operators) == len(mi.load_model(model).main.operators)
    src, out = tmp_path / "acc.tflite", tmp_path / "o.tflite"
    src.write_bytes(model)
    assert main(["optimize", str(src), "-o", str(out)]) == 0
    assert "cannot be replayed" in capsys.readouterr().out and out.exists()
