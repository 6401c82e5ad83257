"""Edge cases of the optimized int8 ADD/SUB/MUL (one gather from the exact 256 x 256 table), shared by
test_add.py, test_sub.py and test_mul.py: every case runs against the TFLM wheel *and* optimized vs reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.kernels.optimized import OPTIMIZED_KERNELS
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import TflmRunner, compare_optimized

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
ZPS = [-128, 127, 0, -1, 1]


def build(op: str, s1: tuple, s2: tuple, out: tuple, q: tuple, *, act: str = "NONE",
          const: dict[int, np.ndarray] | None = None) -> bytes:
    """``op(a, b) -> y`` in int8; ``const`` maps input position (0/1) to constant data."""
    const = const or {}
    b = ModelBuilder()
    ts = [b.add_tensor(name, shape, "INT8", data=const.get(i), scale=scale, zero_point=zp)
          for i, (name, shape, (scale, zp)) in enumerate(zip("aby", (s1, s2, out), q))]
    b.add_op(op, ts[:2], ts[2:], fused_activation_function=act)
    b.inputs = [t for i, t in enumerate(ts[:2]) if i not in const]
    b.outputs = [ts[2]]
    return b.build()


def scales(op: str, s1: float, ratio: float, out_ratio: float) -> tuple[float, float, float]:
    s2 = s1 * ratio
    return s1, s2, (max(s1, s2) if op != "MUL" else s1 * s2) * out_ratio


@st.composite
def int8_cases(draw) -> dict[str, Any]:
    """Broadcast shapes (rank 0..6, one side often a single element, constant on either side), extreme zero
    points, tiny output scales (everything saturates) and all fused activations; scales relative to the op's
    natural output scale (see :func:`scales`)."""
    rank = draw(st.integers(0, 6))
    out = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    while int(np.prod(out)) > 2000:
        out = out[1:]

    def operand():
        if draw(st.integers(0, 4)) == 0:
            return (1,) * draw(st.integers(0, len(out)))        # one element, any rank up to the output's
        r = draw(st.integers(0, len(out)))
        return tuple(1 if draw(st.integers(0, 2)) == 0 else d for d in out[len(out) - r:])

    s1, s2 = operand(), operand()
    if draw(st.booleans()):
        s1 = out
    if draw(st.booleans()):
        s1, s2 = s2, s1
    full = tuple(np.broadcast_shapes(s1, s2))
    out = (1,) * max(0, len(out) - len(full)) + full
    zp = st.sampled_from(ZPS) | st.integers(-128, 127)
    rel = (10 ** draw(st.floats(-4, 0)), 10 ** draw(st.floats(-2, 2)),
           10 ** draw(st.sampled_from([-3.0, -2.0, 0.0, 2.0]) | st.floats(-2, 2)))
    return case(s1, s2, out, rel, (draw(zp), draw(zp), draw(zp)), act=draw(st.sampled_from(ACTS)),
                const=draw(st.sampled_from([(), (), (0,), (1,)])), seed=draw(st.integers(0, 2**32 - 1)))


def case(s1: tuple, s2: tuple, out: tuple, rel: tuple, zps: tuple, *, act: str = "NONE", const: tuple = (),
         seed: int = 0) -> dict[str, Any]:
    """One case: shapes, scales relative to the op (``scales(op, *rel)``), zero points, activation, which inputs
    are constants."""
    return {"s1": s1, "s2": s2, "out": out, "rel": rel, "zps": zps, "act": act, "const": const, "seed": seed}


def check(op: str, c: dict[str, Any]) -> None:
    rng = np.random.default_rng(c["seed"])
    x = [random_tensor(rng, s, "INT8") for s in (c["s1"], c["s2"])]
    const = {i: x[i] for i in c["const"]}
    q = tuple(zip(scales(op, *c["rel"]), c["zps"]))
    model = build(op, c["s1"], c["s2"], c["out"], q, act=c["act"], const=const)
    try:
        Interpreter(model)
    except PrepareError as e:
        # refused by both: a multiplier >= 1 (ADD/SUB output scale too small), or an activation bound that
        # overflows int32 at a tiny output scale (TFLM's Quantize in CalculateActivationRangeQuantized)
        assert "not in (0, 1)" in str(e) or "overflows int32" in str(e), e
        with pytest.raises(RuntimeError, match="failed to allocate"):
            TflmRunner(model)
        return
    assert_matches_tflm(model, [v for i, v in enumerate(x) if i not in const])


def check_all_pairs(op: str, q: tuple, act: str) -> None:
    """All 65536 input pairs in one broadcast (256, 1) x (1, 256) op."""
    codes = np.arange(-128, 128, dtype=np.int8)
    model = build(op, (256, 1), (1, 256), (256, 256), q, act=act)
    assert_matches_tflm(model, [codes[:, None].copy(), codes[None, :].copy()])


def check_large(op: str, shape: tuple, s2: tuple, seed: int) -> None:
    """A mobilenet-sized op, optimized vs reference only (the wheel adds nothing at this size)."""
    rng = np.random.default_rng(seed)
    q = tuple((s, int(z)) for s, z in zip(scales(op, 0.05, 1.7, 0.8), rng.integers(-128, 128, 3)))
    model = build(op, shape, s2, shape, q)
    result = compare_optimized(model, [random_tensor(rng, shape, "INT8"), random_tensor(rng, s2, "INT8")])
    assert result.ok, result


def fast_path(op: str, model: bytes) -> str:
    """Which path the optimized kernel prepared: "index", "lut" or "reference"."""
    it = Interpreter(model)
    assert it.preparation.kernels[0][0] is OPTIMIZED_KERNELS[op]
    data = it.runtime.op_data[0]
    return "index" if data.index is not None else "lut" if data.lut is not None else "reference"


def check_strided_output(op: str) -> None:
    """A non-contiguous output view (as a pager could hand over) takes the reference invoke, same result."""
    rng = np.random.default_rng(5)
    model = build(op, (3, 4), (4,), (3, 4), ((0.1, 3), (0.2, -7), (0.3, 1)))
    x = [random_tensor(rng, (3, 4), "INT8"), random_tensor(rng, (4,), "INT8")]
    it, ref = Interpreter(model), Interpreter(model, optimized=False)
    for interp in (it, ref):
        interp.set_input(x[0], 0)
        interp.set_input(x[1], 1)
    ref.invoke()
    y = it._subgraph.operators[0].outputs[0]
    strided = np.zeros((3, 8), np.int8)[:, ::2]
    it.runtime.views[y] = strided
    it.invoke()
    assert np.array_equal(strided, ref.get_output())


def edge_tests(op: str) -> tuple:
    """The edge tests of one op, as fresh functions for test_<op>.py to bind at module level."""

    @given(int8_cases())
    @example(case((), (), (), (0.1, 1.0, 1.0), (-128, 127, -128)))                             # rank 0
    @example(case((1, 1, 1), (2, 3), (1, 2, 3), (0.02, 25.0, 0.5), (127, -128, 0), const=(0,)))
    @example(case((2, 1, 3), (4, 1), (2, 4, 3), (0.02, 2.5, 1e-3), (5, -9, 127), act="RELU6"))  # saturates
    @example(case((), (), (), (0.001, 1.0, 0.001), (-128, -128, -128), act="RELU6"))  # 6 / scale > int32: refused
    def test_int8_edges(c):
        check(op, c)

    @pytest.mark.parametrize("act", ["NONE", "RELU", "RELU_N1_TO_1"])
    @pytest.mark.parametrize("zps", [(-128, 127, -128), (127, -128, 127), (0, 0, 0)])
    def test_all_pairs(act, zps):
        q = tuple(zip(scales(op, 0.03, 0.6, 0.01 if act == "NONE" else 1.3), zps))
        check_all_pairs(op, q, act)

    @pytest.mark.parametrize("shape,s2", [((1, 56, 56, 24), (1, 56, 56, 24)), ((1, 14, 14, 64), (64,)),
                                          ((1, 7, 7, 160), (1, 7, 1, 1)), ((2, 9, 5, 3), (2, 1, 5, 1))])
    def test_large(shape, s2):
        check_large(op, shape, s2, seed=len(shape) + sum(s2))

    def test_paths():
        q = ((0.1, 1), (0.1, 2), (0.2, 3))
        c = np.array([7], np.int8)
        assert fast_path(op, build(op, (2, 3), (3,), (2, 3), q)) == "index"
        assert fast_path(op, build(op, (2, 3), (1,), (2, 3), q, const={1: c})) == "lut"
        assert fast_path(op, build(op, (1, 1), (2, 3), (2, 3), q, const={0: c.reshape(1, 1)})) == "lut"

    def test_strided_output_falls_back():
        check_strided_output(op)

    return test_int8_edges, test_all_pairs, test_large, test_paths, test_strided_output_falls_back
