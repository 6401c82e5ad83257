"""IF, WHILE and CALL_ONCE against the TFLM wheel: outputs, every subgraph's intermediate tensors, and the arena
head of the interpreter (which now prepares and plans every subgraph as TFLM does).

The random graphs are the planner tests' (:func:`tests.planner.graphgen.random_control_flow_graph`): a chain, one
IF (possibly nesting another IF) or one WHILE whose body runs a random chain, a chain.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter, PrepareError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.tflm import TflmRunner, compare_with_tflm, tflm_arena_head

from ..planner.graphgen import random_control_flow_graph
from ..planner.test_lifetimes import if_model, while_model

pytest.importorskip("tflite_micro")


def _inputs(model: bytes, seed: int, cond: bool) -> list[np.ndarray]:
    it = Interpreter(model)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(it.num_inputs):
        d = it.get_input_details(i)
        if d["dtype"] == np.bool_:
            out.append(np.full(d["shape"], cond))
        elif d["dtype"] == np.float32:
            out.append(rng.integers(-2, 3, size=d["shape"]).astype(np.float32))
        else:
            out.append(rng.integers(-128, 128, size=d["shape"]).astype(d["dtype"]))
    return out


def _subgraph_tensors_match(model: bytes, inputs: list[np.ndarray]) -> None:
    """Every tensor of every subgraph that ran equals the wheel's after one invoke (both preserve all tensors; a
    branch not taken, or a tensor nothing writes, holds whatever its arena memory held)."""
    mine = Interpreter(model, preserve_all_tensors=True)
    wheel = TflmRunner(model)
    for i, x in enumerate(inputs):
        mine.set_input(x, i)
    mine.invoke()
    wheel.run(inputs)
    for sg in mine.model.subgraphs:
        if sg.index and not mine.runtime.graph.invocations[sg.index]:
            continue
        views = mine.runtime.graph.views[sg.index]
        written = set(sg.inputs) | {ti for op in sg.operators for ti in op.outputs}
        for t in sg.tensors:
            if t.index not in written or t.data is not None or t.type_name == "RESOURCE" or t.nbytes == 0:
                continue
            got = wheel.interpreter.GetTensor(t.index, sg.index)
            theirs = np.asarray(got["tensor_data"] if isinstance(got, dict) else got)
            assert np.array_equal(views[t.index].reshape(-1).view(np.uint8),
                                  np.ascontiguousarray(theirs).reshape(-1).view(np.uint8)), \
                f"subgraph {sg.index} tensor {t.index} ({t.name!r}) differs"


@pytest.mark.parametrize("cond", [True, False])
def test_if_takes_the_branch_the_condition_names(cond):
    model = if_model()
    x = np.arange(-8, 8, dtype=np.int8).reshape(1, 16)
    result = compare_with_tflm(model, [np.array([cond]), x])
    assert result.ok, result
    _subgraph_tensors_match(model, [np.array([cond]), x])


def test_while_loops_until_the_condition_fails():
    model = while_model()
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    for start in (0.0, 7.0, 10.0, 12.0):        # 10, 3, 0 and 0 body runs
        result = compare_with_tflm(model, [np.array([start], np.float32), x])
        assert result.ok, result
    it = Interpreter(model)
    it.set_input(np.array([7.0], np.float32), 0)
    it.set_input(x, 1)
    it.invoke()
    np.testing.assert_array_equal(it.get_output(0), x * 2 ** 3 * 2)


@given(seed=st.integers(0, 2**32 - 1), cond=st.booleans())
@example(seed=1, cond=True)
@example(seed=3, cond=False)
def test_random_control_flow_graphs_match_the_wheel(seed, cond):
    g = random_control_flow_graph(np.random.default_rng(seed))
    inputs = _inputs(g.data, seed, cond)
    result = compare_with_tflm(g.data, inputs)
    assert result.ok, (g.ops, result)
    _subgraph_tensors_match(g.data, inputs)
    assert Interpreter(g.data).head_bytes == tflm_arena_head(g.data), g.ops


def _call_once_model() -> bytes:
    """CALL_ONCE runs subgraph 1, which copies nothing anywhere but counts how often it ran in a variable."""
    from .test_resource_variables import accumulator_model

    return accumulator_model(init=True)


def test_call_once_runs_its_subgraph_on_the_first_invoke_only():
    model = _call_once_model()
    it, wheel = Interpreter(model), TflmRunner(model, preserve_all=False)
    x = np.array([[1, 2, 3, 4]], np.int8)
    for _ in range(3):
        it.set_input(x)
        it.invoke()
        wheel.run([x])
        assert np.array_equal(it.get_output(), wheel.output(0))


def bad_if_model(cond_shape=(1,), extra_input: bool = False, branch_size: int = 4) -> bytes:
    """An IF over one RELU subgraph, with one thing wrong: the condition's shape, an extra input, the branch size."""
    b = ModelBuilder()
    c, x, y = (b.add_tensor("c", cond_shape, "BOOL"), b.add_tensor("x", (4,), "FLOAT32"),
               b.add_tensor("y", (4,), "FLOAT32"))
    b.add_op("IF", [c, x, x] if extra_input else [c, x], [y], then_subgraph_index=1, else_subgraph_index=1)
    b.inputs, b.outputs = [c, x], [y]
    sg = b.add_subgraph("then")
    i, o = sg.add_tensor("i", (branch_size,), "FLOAT32"), sg.add_tensor("o", (branch_size,), "FLOAT32")
    sg.add_op("RELU", [i], [o])
    sg.inputs, sg.outputs = [i], [o]
    return b.build()


@pytest.mark.parametrize("kwargs,match", [({"extra_input": True}, "inputs after the condition"),
                                          ({"cond_shape": (2,)}, "one BOOL")])
def test_bad_if_is_refused_like_the_wheel(kwargs, match):
    model = bad_if_model(**kwargs)
    with pytest.raises(PrepareError, match=match):
        Interpreter(model)
    with pytest.raises(RuntimeError):
        TflmRunner(model)


def test_if_branch_sizes_that_cannot_be_copied_are_refused():
    with pytest.raises(PrepareError, match="bytes"):
        Interpreter(bad_if_model(branch_size=8))
