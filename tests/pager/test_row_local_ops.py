"""Issue 27: float32 (and bool) elementwise ops, comparisons, logic, SOFTMAX and LOG_SOFTMAX run out of core in row
bands, not whole; the output equals the in-memory run's (which equals the wheel's), NaN and infinities included."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.errors import ArenaOverflowError, InputError
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.kernels.bands import ROW_LOCAL
from microinterp.kernels.contract import Kernel
from microinterp.resolver import OpResolver
from microinterp.testing.builder import ModelBuilder

from .conftest import smallest_out_of_core_arena

SHAPE = (1, 48, 48, 16)           # 147 KB of float32: two of them make the in-memory plan larger than a band
UNARY = ["ABS", "RELU", "RELU6", "LOGISTIC", "TANH", "SQRT", "EXP", "LOG", "NEG", "SQUARE", "SIN", "COS", "FLOOR",
         "CEIL", "ROUND", "RSQRT", "ELU", "HARD_SWISH", "SOFTMAX", "LOG_SOFTMAX"]
BINARY = ["ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV", "FLOOR_MOD", "PRELU"]
COMPARE = ["EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"]
OPTIONS = {"SOFTMAX": {"beta": 1.0}, "ADD": {"fused_activation_function": "NONE"},
           "SUB": {"fused_activation_function": "NONE"}, "MUL": {"fused_activation_function": "NONE"},
           "DIV": {"fused_activation_function": "NONE"}}


def _model(op: str) -> bytes:
    """x (float32) -> ABS -> op -> (a second op for bool outputs) -> output: the op's input and output are both
    intermediates, so out of core the op reads and writes the card."""
    b = ModelBuilder()
    x = b.add_tensor("x", SHAPE, "FLOAT32")
    a = b.add_tensor("a", SHAPE, "FLOAT32")
    b.add_op("ABS" if op != "ABS" else "NEG", [x], [a])
    if op in COMPARE:
        c = b.add_tensor("c", SHAPE, "BOOL")
        b.add_op(op, [a, x], [c])
        y = b.add_tensor("y", SHAPE, "BOOL")
        b.add_op("LOGICAL_NOT", [c], [y])
    elif op in BINARY:
        other = b.add_tensor("other", (1, 1, 1, SHAPE[3]) if op in ("MUL", "PRELU") else (1, 1, 1, 1), "FLOAT32",
                             data=np.linspace(0.5, 2.0, SHAPE[3] if op in ("MUL", "PRELU") else 1,
                                              dtype=np.float32).reshape((1, 1, 1, -1)))
        y = b.add_tensor("y", SHAPE, "FLOAT32")
        b.add_op(op, [a, other] if op != "SQUARED_DIFFERENCE" else [a, x], [y], **OPTIONS.get(op, {}))
    else:
        y = b.add_tensor("y", SHAPE, "FLOAT32")
        b.add_op(op, [a], [y], **OPTIONS.get(op, {}))
    b.inputs, b.outputs = [x], [y]
    return b.build()


def _runs_in_bands(tmp_path, model: bytes, inp: np.ndarray, op: str, below: float = 0.5) -> None:
    """Out of core at the smallest arena that pages (less than ``below`` x the in-memory plan): ``op`` runs in row
    bands and the output equals the in-memory run's."""
    record = _paged_record(tmp_path, model, inp, op, below)
    assert record.mode in ("rows", "chain"), record.mode


def _paged_record(tmp_path, model: bytes, inp: np.ndarray, op: str, below: float = 0.6):
    """Out of core at the smallest arena that pages (below ``below`` x the in-memory plan): every output equals the
    in-memory run's bit for bit; returns ``op``'s record."""
    ref = mi.Interpreter(model)
    ref.set_input(inp)
    ref.invoke()
    arena = smallest_out_of_core_arena(model, tmp_path / "p.img", flash=0)
    assert arena < ref.arena_used_bytes * below
    with mi.Interpreter(model, arena=arena, backing=tmp_path / "p.img", flash=0) as it:
        it.set_input(inp)
        it.invoke()
        for k in range(it.num_outputs):
            np.testing.assert_array_equal(it.get_output(k).view(np.uint8), ref.get_output(k).view(np.uint8))
        return {r.op: r for r in it.profile}[op]


def _input(seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0, 3, SHAPE).astype(np.float32)
    x.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, -0.0, 1e38, -1e-40]
    return x


@pytest.mark.filterwarnings("error::RuntimeWarning")     # out of core too, float results as in C: no warnings
@pytest.mark.parametrize("op", UNARY + BINARY + COMPARE)
def test_row_local_op_runs_in_bands_out_of_core(tmp_path, op):
    _runs_in_bands(tmp_path, _model(op), _input(3), op)


@pytest.mark.parametrize("op,type_name,options", [
    ("RESIZE_BILINEAR", "FLOAT32", {"align_corners": False, "half_pixel_centers": True}),
    ("RESIZE_BILINEAR", "FLOAT32", {"align_corners": True, "half_pixel_centers": False}),
    ("RESIZE_BILINEAR", "INT8", {"align_corners": False, "half_pixel_centers": False}),
    ("RESIZE_NEAREST_NEIGHBOR", "FLOAT32", {"align_corners": False, "half_pixel_centers": True}),
    ("RESIZE_NEAREST_NEIGHBOR", "INT8", {"align_corners": True, "half_pixel_centers": False}),
])
def test_resizes_run_in_bands_out_of_core(tmp_path, op, type_name, options):
    """Upsampling x2.5 (deeplab's last op is a RESIZE_BILINEAR to the full image): bands of output rows read the
    input rows their source positions fall between."""
    small, big = (1, 20, 20, 16), (1, 50, 50, 16)
    q = {"scale": 0.05, "zero_point": 3} if type_name == "INT8" else {}
    b = ModelBuilder()
    x = b.add_tensor("x", small, type_name, **q)
    a = b.add_tensor("a", small, type_name, **q)
    b.add_op("ABS" if type_name == "FLOAT32" else "RELU", [x], [a])
    size = b.add_tensor("size", (2,), "INT32", data=np.array(big[1:3], np.int32))
    y = b.add_tensor("y", big, type_name, **q)
    b.add_op(op, [a, size], [y], **options)
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    rng = np.random.default_rng(5)
    inp = (rng.normal(0, 3, small).astype(np.float32) if type_name == "FLOAT32"
           else rng.integers(-128, 128, small, dtype=np.int8))
    _runs_in_bands(tmp_path, model, inp, op)


@pytest.mark.parametrize("type_name", ["FLOAT32", "INT8"])
def test_concatenation_along_channels_runs_in_bands(tmp_path, type_name):
    q = {"scale": 0.05, "zero_point": 3} if type_name == "INT8" else {}
    b = ModelBuilder()
    x = b.add_tensor("x", SHAPE, type_name, **q)
    a = b.add_tensor("a", SHAPE, type_name, **q)
    b.add_op("ABS" if type_name == "FLOAT32" else "RELU", [x], [a])
    y = b.add_tensor("y", SHAPE[:3] + (2 * SHAPE[3],), type_name, **q)
    b.add_op("CONCATENATION", [a, x], [y], axis=-1)
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    inp = (_input(7) if type_name == "FLOAT32"
           else np.random.default_rng(7).integers(-128, 128, SHAPE, dtype=np.int8))
    _runs_in_bands(tmp_path, model, inp, "CONCATENATION")


@pytest.mark.parametrize("type_name,stride,kernel,padding", [
    ("FLOAT32", 2, 3, "SAME"), ("FLOAT32", 2, 4, "VALID"), ("FLOAT32", 3, 2, "SAME"),
    ("INT8", 2, 3, "SAME"), ("INT8", 1, 3, "VALID")])
def test_transpose_conv_runs_in_bands(tmp_path, type_name, stride, kernel, padding):
    """Output rows read the input rows that scatter into them; a kernel shorter than the stride leaves rows no input
    reaches (only the bias)."""
    small, c_out = (1, 20, 20, 8), 8
    out_hw = 20 * stride if padding == "SAME" else (20 - 1) * stride + kernel
    big = (1, out_hw, out_hw, c_out)
    rng = np.random.default_rng(11)
    b = ModelBuilder()
    if type_name == "FLOAT32":
        q, wq, w = {}, {}, rng.normal(0, 0.5, (c_out, kernel, kernel, 8)).astype(np.float32)
        bias = b.add_tensor("bias", (c_out,), "FLOAT32", data=rng.normal(0, 1, c_out).astype(np.float32))
    else:
        q, wq = {"scale": 0.05, "zero_point": 3}, {"scale": 0.02, "zero_point": 0}
        w = rng.integers(-127, 128, (c_out, kernel, kernel, 8), dtype=np.int8)
        bias = b.add_tensor("bias", (c_out,), "INT32", data=rng.integers(-500, 500, c_out).astype(np.int32),
                            scale=0.05 * 0.02, zero_point=0)
    x = b.add_tensor("x", small, type_name, **q)
    a = b.add_tensor("a", small, type_name, **q)
    b.add_op("ABS" if type_name == "FLOAT32" else "RELU", [x], [a])
    shape = b.add_tensor("shape", (4,), "INT32", data=np.array(big, np.int32))
    wt = b.add_tensor("w", w.shape, type_name, data=w, **wq)
    y = b.add_tensor("y", big, type_name, **({"scale": 0.5, "zero_point": -2} if q else {}))
    b.add_op("TRANSPOSE_CONV", [shape, wt, a, bias], [y], padding=padding, stride_h=stride, stride_w=stride)
    b.inputs, b.outputs = [x], [y]
    inp = (rng.normal(0, 2, small).astype(np.float32) if type_name == "FLOAT32"
           else rng.integers(-128, 128, small, dtype=np.int8))
    # int8: TFLM's kernel asks an int32 scratch buffer of the whole output, which stays in the arena out of core
    _runs_in_bands(tmp_path, b.build(), inp, "TRANSPOSE_CONV", below=0.5 if type_name == "FLOAT32" else 1.0)


def test_l2_pool_runs_in_bands(tmp_path):
    """L2_POOL_2D declares the pools' row bands in its own file (one line): out of core it runs in bands."""
    out = (1, SHAPE[1] // 2, SHAPE[2] // 2, SHAPE[3])
    b = ModelBuilder()
    x = b.add_tensor("x", SHAPE, "FLOAT32")
    a = b.add_tensor("a", SHAPE, "FLOAT32")
    b.add_op("ABS", [x], [a])
    y = b.add_tensor("y", out, "FLOAT32")
    b.add_op("L2_POOL_2D", [a], [y], padding="SAME", stride_w=2, stride_h=2, filter_width=3, filter_height=3,
             fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    _runs_in_bands(tmp_path, b.build(), _input(11), "L2_POOL_2D", below=0.6)


class _Doubler(Kernel):
    """A plugin TANH that doubles its input: elementwise, and it says so."""

    bands = ROW_LOCAL

    def prepare(self, ctx, op):
        return None

    def invoke(self, ctx, op, data):
        ctx.output(op, 0)[...] = ctx.input(op, 0) * np.float32(2)


class _Inherits(type(REFERENCE_KERNELS["TANH"])):
    """A plugin TANH that inherits the built-in kernel's declaration: it keeps its row bands."""


class _OptsOut(type(REFERENCE_KERNELS["TANH"])):
    """A plugin TANH that says its invoke is its own: it runs whole."""

    bands = None


def test_a_plugin_runs_in_bands_unless_it_opts_out(tmp_path):
    """A plugin that declares ``bands``, or inherits a built-in kernel's declaration, runs in row bands at half the
    in-memory arena; one that says ``bands = None`` runs whole, so that arena is too small for it (its TANH needs
    whole tensors)."""
    model, x = _model("TANH"), _input(13)
    for kernel in (_Doubler(), _Inherits(), _OptsOut()):
        resolver = OpResolver()
        resolver.register("TANH", kernel)
        ref = mi.Interpreter(model, resolver=resolver)
        ref.set_input(x)
        ref.invoke()
        arena = ref.arena_used_bytes // 2
        path = tmp_path / f"{type(kernel).__name__}.img"
        if isinstance(kernel, _OptsOut):
            with pytest.raises(ArenaOverflowError, match=r"op 1 \(TANH\)"):
                mi.Interpreter(model, arena=arena, backing=path, flash=0, resolver=resolver)
            continue
        with mi.Interpreter(model, arena=arena, backing=path, flash=0, resolver=resolver) as it:
            it.set_input(x)
            it.invoke()
            np.testing.assert_array_equal(it.get_output(), ref.get_output())
            assert {r.op: r.mode for r in it.profile}["TANH"] in ("rows", "chain")


def _reduction(op: str, type_name: str, axes: tuple[int, ...], keep: bool, seed: int):
    """x -> ABS / RELU -> ``op`` over constant ``axes`` (int8 / int16 requantized by MEAN and SUM; REDUCE_MAX/MIN
    keep the input's quantization); returns the model, an input (float32 with NaN/inf/-0) and the output shape."""
    q = {"scale": 0.05, "zero_point": 3 if type_name == "INT8" else 0} if type_name != "FLOAT32" else {}
    qo = q if op.startswith("REDUCE_") or not q else {"scale": 0.07, "zero_point": -2 if type_name == "INT8" else 0}
    resolved = {a % 4 for a in axes}
    out_shape = tuple(1 if d in resolved else n for d, n in enumerate(SHAPE)) if keep else \
        tuple(n for d, n in enumerate(SHAPE) if d not in resolved)
    b = ModelBuilder()
    x = b.add_tensor("x", SHAPE, type_name, **q)
    a = b.add_tensor("a", SHAPE, type_name, **q)
    b.add_op("ABS" if type_name == "FLOAT32" else "RELU", [x], [a])
    ax = b.add_tensor("axes", (len(axes),), "INT32", data=np.array(axes, np.int32))
    y = b.add_tensor("y", out_shape, type_name, **qo)
    b.add_op(op, [a, ax], [y], keep_dims=keep)
    b.inputs, b.outputs = [x], [y]
    if type_name == "FLOAT32":
        inp = _input(seed)
    else:
        info = np.iinfo(np.int8 if type_name == "INT8" else np.int16)
        inp = np.random.default_rng(seed).integers(info.min, info.max + 1, SHAPE).astype(info.dtype)
    return b.build(), inp, out_shape


@pytest.mark.parametrize("op,type_name,axes,keep", [
    ("MEAN", "FLOAT32", (1, 2), True), ("MEAN", "INT8", (1, 2), True), ("SUM", "FLOAT32", (1, 2), False),
    ("SUM", "INT8", (1,), True), ("MEAN", "INT16", (1, 2, 3), False), ("MEAN", "FLOAT32", (2, 1), True),
    ("REDUCE_MAX", "FLOAT32", (1, 2), True), ("REDUCE_MAX", "INT8", (1,), False), ("REDUCE_MIN", "FLOAT32", (1, 2), False),
    ("REDUCE_MIN", "INT8", (1, 2, 3), True)])
def test_reductions_over_rows_run_in_bands_of_input_rows(tmp_path, op, type_name, axes, keep):
    """A MEAN, SUM, REDUCE_MAX or REDUCE_MIN over the rows reads its input in bands and keeps running totals (float32
    folded in TFLM's order, integers exact, the max/min fold continued): out of core at the smallest arena that
    pages, below the in-memory plan, the in-memory output."""
    model, inp, _ = _reduction(op, type_name, axes, keep, 17)
    record = _paged_record(tmp_path, model, inp, op)
    assert record.mode == "reduce" and len(record.tiles) > 1
    assert sum(t.sd_write_commands for t in record.tiles[:-1]) == 0     # the output is written once, at the end


@pytest.mark.parametrize("axis,positions", [(1, list(range(47, -1, -1))), (1, [0, 5, 5, 9, 30, 47, 2] * 5),
                                            (3, [15, 0, 3, 3, 8]), (2, list(range(0, 48, 2)))])
def test_gather_with_constant_positions_runs_in_bands(tmp_path, axis, positions):
    """GATHER of batch-1 4-D params with constant positions: a band of output rows reads the input rows it gathers
    (axis 1: reversed, repeated, scattered), or the same rows (columns, channels)."""
    _runs_in_bands(tmp_path, _gather_model(axis, positions, constant=True), _input(19), "GATHER", below=0.9)


def _gather_model(axis: int, positions: list[int], constant: bool) -> bytes:
    """x -> ABS -> GATHER along ``axis`` at ``positions`` (a constant, or a second model input)."""
    out_shape = list(SHAPE)
    out_shape[axis] = len(positions)
    b = ModelBuilder()
    x = b.add_tensor("x", SHAPE, "FLOAT32")
    a = b.add_tensor("a", SHAPE, "FLOAT32")
    b.add_op("ABS", [x], [a])
    pos = b.add_tensor("pos", (len(positions),), "INT32", data=np.array(positions, np.int32) if constant else None)
    y = b.add_tensor("y", tuple(out_shape), "FLOAT32")
    b.add_op("GATHER", [a, pos], [y], axis=axis, batch_dims=0)
    b.inputs, b.outputs = [x] if constant else [x, pos], [y]
    return b.build()


@pytest.mark.parametrize("op,axis,sizes", [("SPLIT", 3, (8, 8)), ("SPLIT_V", 3, (3, 9, 4)), ("SPLIT_V", 2, (40, 8))])
def test_split_across_rows_runs_in_bands(tmp_path, op, axis, sizes):
    """SPLIT / SPLIT_V along channels or columns: a band of input rows gives the same rows of every output, each
    written to its own records (whole rows of every output, so no record straddles two bands)."""
    b = ModelBuilder()
    x = b.add_tensor("x", SHAPE, "FLOAT32")
    a = b.add_tensor("a", SHAPE, "FLOAT32")
    b.add_op("ABS", [x], [a])
    outs = []
    for k, n in enumerate(sizes):
        shape = list(SHAPE)
        shape[axis] = n
        outs.append(b.add_tensor(f"y{k}", tuple(shape), "FLOAT32"))
    ax = b.add_tensor("axis", (1,), "INT32", data=np.array([axis], np.int32))
    if op == "SPLIT":
        b.add_op("SPLIT", [ax, a], outs, num_splits=len(sizes))
    else:
        sz = b.add_tensor("sizes", (len(sizes),), "INT32", data=np.array(sizes, np.int32))
        b.add_op("SPLIT_V", [a, sz, ax], outs, num_splits=len(sizes))
    b.inputs, b.outputs = [x], outs
    model = b.build()
    inp = _input(23)
    record = _paged_record(tmp_path, model, inp, op)
    assert record.mode == "rows" and len(record.tiles) > 1


def _quant(type_name: str, scale: float, zp: int) -> dict:
    if type_name == "FLOAT32":
        return {}
    return {"scale": scale, "zero_point": zp if type_name == "INT8" else 0}


def _operand(b, rng, name, shape, type_name, q, constant):
    """A constant, or an activation (a model input: on the card, read from there)."""
    dtype = {"FLOAT32": np.float32, "INT8": np.int8, "INT16": np.int16}[type_name]
    if constant:
        info = np.iinfo(dtype) if type_name != "FLOAT32" else None
        data = (rng.normal(0, 1, shape).astype(np.float32) if info is None
                else rng.integers(info.min, info.max + 1, shape).astype(dtype))
        return None, b.add_tensor(name, shape, type_name, data=data, **q)
    x = b.add_tensor(name, shape, type_name, **q)
    return x, x


@pytest.mark.parametrize("type_name", ["FLOAT32", "INT8", "INT16"])
@pytest.mark.parametrize("lhs,rhs,out,adj,const", [
    ((1, 384, 64), (64, 48), (1, 384, 48), (False, False), (False, True)),        # bands of M, constant rhs
    ((1, 384, 64), (1, 48, 64), (1, 384, 48), (False, True), (False, False)),      # bands of M, rhs resident
    ((1, 12, 32, 64), (1, 12, 64, 32), (1, 12, 32, 32), (False, False), (False, False)),   # bands of B, both
    ((1, 12, 32, 64), (12, 8, 64), (1, 12, 32, 8), (False, True), (False, True)),    # constant sliced per band
    ((1, 12, 64, 32), (1, 12, 64, 32), (1, 12, 32, 32), (True, False), (False, False)),  # TFLM's tail copies
    ((1, 1, 32, 64), (1, 12, 32, 64), (1, 12, 32, 32), (False, True), (False, False)),    # lhs broadcast along B
])
def test_batch_matmul_runs_in_bands(tmp_path, type_name, lhs, rhs, out, adj, const):
    """BATCH_MATMUL with a batch-1 output: bands of M rows (rank 3) or of B batches (rank 4), each operand read in
    bands where it has that axis and whole where it is broadcast (a constant with it sliced per band); out of core
    below the in-memory plan, the in-memory output bit for bit, the optimized kernel's as the reference's."""
    rng = np.random.default_rng(29)
    q = _quant(type_name, 0.05, 3)
    b = ModelBuilder()
    x0, a0 = _operand(b, rng, "lhs", lhs, type_name, q, const[0])
    x1, a1 = _operand(b, rng, "rhs", rhs, type_name, _quant(type_name, 0.04, -2), const[1])
    y = b.add_tensor("y", out, type_name, **_quant(type_name, 0.9 if type_name == "INT8" else 0.3, 1))
    b.add_op("BATCH_MATMUL", [a0, a1], [y], adj_x=adj[0], adj_y=adj[1])
    b.inputs, b.outputs = [x for x in (x0, x1) if x is not None], [y]
    model = b.build()
    inputs = []
    for shape in [s for s, c in zip((lhs, rhs), const) if not c]:
        if type_name == "FLOAT32":
            inputs.append(rng.normal(0, 2, shape).astype(np.float32))
        else:
            info = np.iinfo(np.int8 if type_name == "INT8" else np.int16)
            inputs.append(rng.integers(info.min, info.max + 1, shape).astype(info.dtype))
    if type_name == "FLOAT32":
        inputs[0].reshape(-1)[:4] = [np.nan, np.inf, -0.0, 1e38]
    ref = mi.Interpreter(model, optimized=False)
    for k, v in enumerate(inputs):
        ref.set_input(v, k)
    ref.invoke()
    arena = smallest_out_of_core_arena(model, tmp_path / "m.img", flash=0)
    assert arena < ref.arena_used_bytes * (0.7 if not adj[0] else 0.9)   # adj_x: a whole lhs copy in the tail
    for optimized in (True, False):
        with mi.Interpreter(model, arena=arena, backing=tmp_path / "m.img", flash=0, optimized=optimized) as it:
            for k, v in enumerate(inputs):
                it.set_input(v, k)
            it.invoke()
            np.testing.assert_array_equal(it.get_output().view(np.uint8), ref.get_output().view(np.uint8))
            record = {r.op: r for r in it.profile}["BATCH_MATMUL"]
            assert record.mode in ("rows", "chain") and len(record.tiles) > 1


@pytest.mark.parametrize("op,type_name,axes,keep", [
    ("MEAN", "FLOAT32", (3,), True), ("MEAN", "INT8", (2, 3), False), ("SUM", "FLOAT32", (2,), False),
    ("SUM", "INT16", (3, 2), True), ("REDUCE_MAX", "FLOAT32", (3,), False), ("REDUCE_MIN", "INT8", (2,), True),
    ("MEAN", "INT16", (-1,), False)])
def test_reductions_keeping_the_rows_run_in_row_bands(tmp_path, op, type_name, axes, keep):
    """A reduction over columns and/or channels: each output row is the same input row reduced, so the kernel runs on
    band views (in bands of output rows, or into a resident output when that is no larger than an input row); out
    of core below the in-memory plan, the in-memory output bit for bit."""
    model, inp, out_shape = _reduction(op, type_name, axes, keep, 31)
    record = _paged_record(tmp_path, model, inp, op)
    small = np.prod(out_shape) <= np.prod(SHAPE[2:])        # no larger than one input row: the output stays resident
    assert record.mode in (("reduce",) if small else ("rows", "chain")) and len(record.tiles) > 1


@pytest.mark.parametrize("axis,positions", [(3, [15, 0, 3, 3, 8]), (2, list(range(47, -1, -3)))])
def test_gather_with_positions_given_at_invoke_runs_in_bands(tmp_path, axis, positions):
    """GATHER along columns or channels with positions given at invoke: a band of output rows is the same input
    rows whatever the positions, which are read whole with every band; out of core below the in-memory plan, the
    in-memory output bit for bit, and a position out of range fails the invoke as in memory."""
    model = _gather_model(axis, positions, constant=False)
    inp, where = _input(29), np.array(positions, np.int32)
    ref = mi.Interpreter(model)
    ref.set_input(inp, 0)
    ref.set_input(where, 1)
    ref.invoke()
    arena = smallest_out_of_core_arena(model, tmp_path / "g.img", flash=0)
    assert arena < ref.arena_used_bytes * 0.9
    with mi.Interpreter(model, arena=arena, backing=tmp_path / "g.img", flash=0) as it:
        it.set_input(inp, 0)
        it.set_input(where, 1)
        it.invoke()
        np.testing.assert_array_equal(it.get_output().view(np.uint32), ref.get_output().view(np.uint32))
        assert {r.op: r for r in it.profile}["GATHER"].mode in ("rows", "chain")
        it.set_input(np.array([SHAPE[axis]] + positions[1:], np.int32), 1)
        with pytest.raises(InputError, match="outside"):
            it.invoke()
