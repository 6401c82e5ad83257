"""Channel groups: a convolution chain split by output channel computes the same outputs, bit for bit, in
microinterp and in the TFLM wheel, and lowers the whole arena where the chain ends smaller than its widest map."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.apps.optimize import wheel_arena
from microinterp.model_writer import ModelBuilder
from microinterp.patching.channels import channel_groups, find_chains, split_chain, split_chains
from microinterp.testing import models

from .test_patching import inputs, residual_model, run, wheel_output


def float_chain_model() -> bytes:
    """Float: conv 3x3 -> RELU -> PAD -> depthwise 3x3 stride 2 VALID -> conv 1x1, and a second chain whose output
    is read twice (it may be split; the convolution after it may not join it)."""
    rng = np.random.default_rng(11)
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 13, 11, 5), "FLOAT32")

    def const(name, shape):
        return b.add_tensor(name, shape, "FLOAT32", data=rng.normal(0, 0.5, shape).astype(np.float32))

    e = b.add_tensor("e", (1, 13, 11, 12), "FLOAT32")
    b.add_op("CONV_2D", [x, const("w0", (12, 3, 3, 5)), const("b0", (12,))], [e], padding="SAME", stride_h=1,
             stride_w=1, fused_activation_function="NONE")
    r = b.add_tensor("r", (1, 13, 11, 12), "FLOAT32")
    b.add_op("RELU", [e], [r])
    pads = b.add_tensor("pads", (4, 2), "INT32", data=np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    p = b.add_tensor("p", (1, 15, 13, 12), "FLOAT32")
    b.add_op("PAD", [r, pads], [p])
    d = b.add_tensor("d", (1, 7, 6, 12), "FLOAT32")
    b.add_op("DEPTHWISE_CONV_2D", [p, const("wd", (1, 3, 3, 12)), const("bd", (12,))], [d], padding="VALID",
             stride_h=2, stride_w=2, depth_multiplier=1, fused_activation_function="RELU6")
    e2 = b.add_tensor("e2", (1, 7, 6, 8), "FLOAT32")
    b.add_op("CONV_2D", [d, const("w1", (8, 1, 1, 12)), const("b1", (8,))], [e2], padding="VALID", stride_h=1,
             stride_w=1, fused_activation_function="NONE")
    t = b.add_tensor("t", (1, 7, 6, 8), "FLOAT32")
    b.add_op("TANH", [e2], [t])
    y = b.add_tensor("y", (1, 7, 6, 8), "FLOAT32")
    b.add_op("ADD", [t, t], [y], fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    return b.build()


CASES = {"residual": residual_model, "float": float_chain_model,
         "mobilenet_v2_035": lambda: models.mobilenet_v2(alpha=0.35, input_size=48, classes=10)}


def test_channel_groups_are_near_equal_multiples_of_four():
    assert channel_groups(96, 3) == [(0, 32), (32, 64), (64, 96)]
    assert channel_groups(24, 4) == [(0, 8), (8, 16), (16, 20), (20, 24)]
    assert channel_groups(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert channel_groups(8, 3) == [(0, 3), (3, 6), (6, 8)]


def test_chains_are_a_convolution_and_the_channelwise_ops_after_it():
    m = mi.load_model(float_chain_model())
    names = [[m.main.operators[i].name for i in range(c.start, c.stop)] for c in find_chains(m)]
    assert names == [["CONV_2D", "RELU", "PAD", "DEPTHWISE_CONV_2D"], ["CONV_2D", "TANH"]]
    # residual: the expand convolution's chain stops before the projection; the first conv feeds two ops
    m = mi.load_model(residual_model())
    names = [[m.main.operators[i].name for i in range(c.start, c.stop)] for c in find_chains(m)]
    assert names == [["CONV_2D", "PAD", "DEPTHWISE_CONV_2D"]]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("groups", [2, 3, 5])
def test_every_chain_split_gives_identical_outputs(name, groups):
    model = CASES[name]()
    m = mi.load_model(model)
    xs = inputs(model)
    want = run(model, xs)
    chains = find_chains(m)
    assert chains
    for chain in chains:
        got = run(split_chain(m, chain, min(groups, chain.channels)), xs)
        assert all(np.array_equal(a, b) for a, b in zip(want, got)), (chain, groups)
    got = run(split_chains(m, {c.start: (c, min(groups, c.channels)) for c in chains}), xs)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))


def test_the_wheel_runs_split_models_to_the_same_bits():
    pytest.importorskip("tflite_micro")
    for name in sorted(CASES):
        model = CASES[name]()
        m = mi.load_model(model)
        xs = inputs(model, seed=4)
        before = wheel_output(model, xs)
        for groups in (2, 3):
            split = split_chains(m, {c.start: (c, min(groups, c.channels)) for c in find_chains(m)})
            assert np.array_equal(before, wheel_output(split, xs)), (name, groups)


def test_splitting_an_expand_block_with_a_strided_depthwise_lowers_the_whole_arena():
    """MobileNetV2's second block: the 96-channel expanded map at full resolution is the peak; in 3 groups only a
    third of it is alive at a time."""
    model = models.mobilenet_v2(alpha=1.0, input_size=64, classes=10)
    m = mi.load_model(model)
    chain = next(c for c in find_chains(m) if c.channels == 96)
    before = wheel_arena(m, share_bytes=True)
    after = wheel_arena(mi.load_model(split_chain(m, chain, 3)), share_bytes=True)
    assert after < before - 96 * 32 * 32 // 3


def test_too_many_groups_are_refused():
    m = mi.load_model(float_chain_model())
    chain = find_chains(m)[0]
    with pytest.raises(ValueError):
        split_chain(m, chain, 11)
    with pytest.raises(ValueError):
        split_chain(m, chain, 1)
