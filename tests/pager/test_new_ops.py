"""The out-of-core pager runs the ops added for TFLM parity (issue 11): each one after a convolution and a pooling
whose large tensors make the in-memory plan bigger than the smallest out-of-core arena, so the new op really runs
from the pools; the output must equal the in-memory run's. Elementwise ones run in row bands, the others whole."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.kernels.bands import RowLocal
from microinterp.testing.models import QuantNet

#: the shipped ops whose kernels declare row-local bands, and of those the elementwise ones
ROW_LOCAL_OPS = frozenset(k for k, kern in REFERENCE_KERNELS.items() if isinstance(kern.bands, RowLocal))
ELEMENTWISE_OPS = frozenset(k for k in ROW_LOCAL_OPS if REFERENCE_KERNELS[k].bands.elementwise)

from .conftest import random_input, smallest_out_of_core_arena

SHAPE = (1, 24, 24, 8)      # the new op's input: the pooled tensor


def _const(net: QuantNet, name: str, values, type_name: str = "INT32", **q) -> int:
    arr = np.asarray(values)
    return net.b.add_tensor(name, arr.shape, type_name, data=arr, **q)


def _int8_const(net: QuantNet, name: str, shape, low: int = -128) -> int:
    values = np.random.default_rng(1).integers(low, 128, size=shape).astype(np.int8)
    return net.b.add_tensor(name, shape, "INT8", data=values, scale=net.scale, zero_point=net.zp)


def _attach(net: QuantNet, op: str) -> None:
    """Append ``op`` to the pooled tensor (shape SHAPE) with inputs and options that make sense for it."""
    n, h, w, c = SHAPE
    if op in ("ABS", "ELU", "RSQRT"):
        net.op(op, quant=(0.05, -3))
    elif op == "L2_NORMALIZATION":
        net.op(op, quant=(1 / 128, 0), fused_activation_function="NONE")
    elif op == "LOG_SOFTMAX":
        net.op(op, quant=(16 / 256, 127))
    elif op == "DEPTH_TO_SPACE":
        net.op(op, shape=(n, h * 2, w * 2, c // 4), block_size=2)
    elif op == "SPACE_TO_DEPTH":
        net.op(op, shape=(n, h // 2, w // 2, c * 4), block_size=2)
    elif op == "MIRROR_PAD":
        pads = _const(net, "pads", [[0, 0], [1, 2], [2, 1], [0, 0]])
        net.op(op, [pads], shape=(n, h + 3, w + 3, c), mode=1)
    elif op == "REVERSE_V2":
        net.op(op, [_const(net, "axis", [1, 2])])
    elif op == "CUMSUM":
        net.op(op, [_const(net, "axis", [2])], quant=(net.scale * 4, 0), exclusive=False, reverse=True)
    elif op == "SPACE_TO_BATCH_ND":
        net.op(op, [_const(net, "block", [2, 2]), _const(net, "pads", [[0, 0], [0, 0]])],
               shape=(n * 4, h // 2, w // 2, c))
    elif op == "BATCH_TO_SPACE_ND":
        net.op("SPACE_TO_BATCH_ND", [_const(net, "block", [2, 2]), _const(net, "pads", [[0, 0], [0, 0]])],
               shape=(n * 4, h // 2, w // 2, c))
        net.op(op, [_const(net, "block2", [2, 2]), _const(net, "crops", [[0, 0], [0, 0]])], shape=SHAPE)
    elif op == "DIV":
        net.op(op, [_int8_const(net, "divisor", (1, 1, 1, c), low=20)], quant=(0.02, 1),
               fused_activation_function="NONE")
    elif op == "SQUARED_DIFFERENCE":
        net.op(op, [_int8_const(net, "other", SHAPE)], quant=(net.scale * net.scale * 64, -100))
    elif op == "ADD_N":
        net.op(op, [net.x, net.x], quant=(net.scale * 3, 0))
    elif op == "SELECT_V2":
        cond = _const(net, "cond", np.arange(c) % 2 == 0, "BOOL")
        other = _int8_const(net, "other", SHAPE)
        x = net.x
        net.n += 1
        y = net._tensor("select", SHAPE)
        net.b.add_op(op, [cond, x, other], [y])
        net.x = y
    elif op == "BATCH_MATMUL":
        rhs = net.b.add_tensor("rhs", (c, c), "INT8", data=np.eye(c, dtype=np.int8) * 50, scale=0.01,
                               zero_point=0)
        net.op(op, [rhs], quant=(0.05, 2), adj_x=False, adj_y=False)
    elif op == "MINIMUM_CHAIN":       # comparisons, logical ops and SELECT_V2 together
        other = _int8_const(net, "other", SHAPE)
        x = net.x
        gt = net.b.add_tensor("gt", SHAPE, "BOOL")
        net.b.add_op("GREATER", [x, other], [gt])
        lt = net.b.add_tensor("lt", SHAPE, "BOOL")
        net.b.add_op("LESS_EQUAL", [x, other], [lt])
        either = net.b.add_tensor("either", SHAPE, "BOOL")
        net.b.add_op("LOGICAL_OR", [gt, lt], [either])
        net.n += 1
        y = net._tensor("sel", SHAPE)
        net.b.add_op("SELECT_V2", [either, other, x], [y])
        net.x = y
    else:
        raise AssertionError(op)


OPS = ["ABS", "ELU", "RSQRT", "L2_NORMALIZATION", "LOG_SOFTMAX", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "MIRROR_PAD",
       "REVERSE_V2", "CUMSUM", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "DIV", "SQUARED_DIFFERENCE", "ADD_N",
       "SELECT_V2", "BATCH_MATMUL", "MINIMUM_CHAIN"]


def _model(op: str) -> bytes:
    net = QuantNet((1, 96, 96, 8), seed=4)
    net.conv(8, 3, act="RELU")
    net.pool("MAX", 4, 4)
    _attach(net, op)
    return net.build()


@pytest.mark.parametrize("op", OPS)
def test_new_op_out_of_core_equals_in_memory(tmp_path, op):
    model = _model(op)
    x = random_input(model, 2)
    ref = mi.Interpreter(model)
    ref.set_input(x)
    ref.invoke()
    arena = smallest_out_of_core_arena(model, tmp_path / "a.img", flash=0)
    assert arena < ref.arena_used_bytes, "the model would run in memory"
    with mi.Interpreter(model, arena=arena, backing=tmp_path / "a.img", flash=0) as it:
        assert it.out_of_core
        it.set_input(x)
        it.invoke()
        np.testing.assert_array_equal(it.get_output(), ref.get_output())
        last = it.profile[-1]
        ts = it.model.main.tensors
        varying_const = any(ts[i].data is not None and len(ts[i].shape) >= 3 and ts[i].shape[-3] > 1
                            for i in it.runtime.plans[-1].op.inputs if i >= 0)   # passed whole: the op runs whole
        banded = (last.op in ROW_LOCAL_OPS and not varying_const) or last.op == "BATCH_MATMUL"   # bands of axis 1
        assert last.mode in (("rows", "chain") if banded else ("whole",))


def test_elementwise_new_ops_are_banded():
    assert {"ABS", "RSQRT", "ELU", "DIV", "SQUARED_DIFFERENCE", "ADD_N", "SELECT_V2"} <= ELEMENTWISE_OPS


def test_control_flow_and_variables_out_of_core_are_refused_clearly(tmp_path):
    from ..kernels.test_resource_variables import accumulator_model

    model = accumulator_model(init=True, shape=(1, 4000))
    with pytest.raises(mi.errors.ConfigError, match="CALL_ONCE.*run it in memory"):
        mi.Interpreter(model, arena=2000, backing=tmp_path / "v.img")
    assert not (tmp_path / "v.img").exists()
