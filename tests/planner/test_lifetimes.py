"""Lifetimes (TFLM's AllocationInfo marking): exact values on small graphs, control flow, scratch, variables,
offline plans — and random IF/WHILE graphs against the wheel's arena head.

Rules confirmed against the wheel (a newer TFLM than some published sources): ``first_created`` is set once (the
first creation wins); subgraph outputs are not marked at the start of a subgraph; offline offsets are indexed by the
tensor's global position (all subgraphs' tensors in order); a variable tensor with an offline offset is planned.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import ModelError, load_model
from microinterp.planner import ScratchRequest, allocation_infos, buffer_requests, plan_greedy
from microinterp.planner.greedy import plan_size
from microinterp.planner.lifetimes import align_up
from microinterp.testing.builder import ModelBuilder

from .graphgen import random_control_flow_graph


def q(sg, name, shape, **kw):
    return sg.add_tensor(name, shape, "INT8", scale=0.1, zero_point=0, **kw)


def lifetimes(data: bytes, scratch=()) -> list[tuple[int, int]]:
    return [(i.first_created, i.last_used) for i in allocation_infos(load_model(data), list(scratch))]


def head(data: bytes, scratch=()) -> int:
    requests, _ = buffer_requests(allocation_infos(load_model(data), list(scratch)))
    return plan_size(requests, plan_greedy(requests))


def wheel_head(data: bytes) -> int:
    pytest.importorskip("tflite_micro")
    from microinterp.testing.tflm import tflm_arena_head

    return tflm_arena_head(data)


def chain(n_ops: int = 3, extra_outputs=(), orphan: bool = False, unused: bool = False) -> ModelBuilder:
    b = ModelBuilder()
    ts = [q(b, "t0", (1, 64))]
    for k in range(n_ops):
        ts.append(q(b, f"t{k + 1}", (1, 64)))
        b.add_op("RESHAPE", [ts[k]], [ts[k + 1]], new_shape=[1, 64])
    b.inputs, b.outputs = [ts[0]], [ts[-1], *extra_outputs]
    if orphan:
        b.outputs.append(q(b, "orphan", (16,)))
    if unused:
        q(b, "unused", (48,))
    return b


def test_chain():
    assert lifetimes(chain().build()) == [(0, 1), (1, 2), (2, 3), (3, 3)]


def test_graph_outputs_live_to_the_end_and_inputs_from_the_start():
    # t1 (produced by op 0) is also a graph output; t0 (the input) too
    assert lifetimes(chain(extra_outputs=[1, 0]).build()) == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_graph_output_no_op_produces_is_created_at_the_end():
    data = chain(orphan=True).build()
    assert lifetimes(data)[-1] == (3, 3)
    assert head(data) == wheel_head(data)


def test_unused_tensor_is_planned_with_no_lifetime():
    data = chain(unused=True).build()
    infos = allocation_infos(load_model(data), [])
    assert (infos[-1].first_created, infos[-1].last_used, infos[-1].needs_allocating) == (-1, -1, True)
    assert head(data) == wheel_head(data)


def test_what_needs_allocating():
    b = ModelBuilder()
    x = q(b, "x", (1, 4))
    k = b.add_tensor("k", (1, 4), "INT8", data=np.ones((1, 4)), scale=0.1)
    v = q(b, "v", (1, 4), is_variable=True)
    e = q(b, "empty", (0, 4))
    s = b.add_tensor("s", (3,), "STRING")
    i4 = b.add_tensor("i4", (5,), "INT4")
    y = q(b, "y", (1, 4))
    b.add_op("ADD", [x, k], [y])
    b.inputs, b.outputs = [x], [y]
    infos = allocation_infos(load_model(b.build()), [])
    assert [i.needs_allocating for i in infos] == [True, False, False, False, False, True, True]
    assert [i.kind for i in infos] == ["tensor"] * 7 and [i.index for i in infos] == list(range(7))
    assert infos[i4].nbytes == 5  # one byte per int4 element, as TFLM's allocator
    del v, e, s


def test_variable_with_offline_offset_is_planned():
    b = ModelBuilder()
    x, v, y = q(b, "x", (1, 32)), q(b, "v", (1, 32), is_variable=True), q(b, "y", (1, 32))
    b.add_op("ADD", [x, v], [y])
    b.inputs, b.outputs = [x], [y]
    b.add_offline_plan([-1, 256, -1])
    data = b.build()
    infos = allocation_infos(load_model(data), [])
    assert infos[v].needs_allocating and infos[v].offline_offset == 256
    assert (infos[v].first_created, infos[v].last_used) == (-1, 1)  # nothing creates a variable
    assert head(data) == wheel_head(data) == 288


def test_optional_inputs_are_skipped():
    b = ModelBuilder()
    x = q(b, "x", (1, 4, 4, 2))
    w = b.add_tensor("w", (1, 1, 1, 2), "INT8", data=np.ones((1, 1, 1, 2)), scale=[0.1, 0.1], axis=3)
    y = q(b, "y", (1, 4, 4, 2))
    b.add_op("DEPTHWISE_CONV_2D", [x, w, -1], [y], padding="VALID")
    b.inputs, b.outputs = [x], [y]
    assert lifetimes(b.build()) == [(0, 1), (-1, 1), (1, 1)]


def test_scratch_requests_follow_tensors_and_live_during_their_op():
    data = chain().build()
    scratch = [ScratchRequest(0, 1, 100), ScratchRequest(0, 1, 0), ScratchRequest(0, 2, 40)]
    infos = allocation_infos(load_model(data), scratch)
    tail = infos[4:]
    assert [i.kind for i in tail] == ["scratch"] * 3 and [i.index for i in tail] == [0, 1, 2]
    assert [(i.first_created, i.last_used) for i in tail] == [(2, 2), (2, 2), (3, 3)]
    assert all(i.needs_allocating for i in tail)  # even a 0-byte request, as TFLM
    requests, owners = buffer_requests(infos)
    assert [r.size for r in requests] == [64, 64, 64, 64, 112, 0, 48] and owners == list(range(7))


def test_buffer_requests_align_sizes_and_name_owners():
    assert [align_up(n) for n in (0, 1, 15, 16, 17, 33)] == [0, 16, 16, 16, 32, 48]
    b = ModelBuilder()
    x = q(b, "x", (1, 3))
    k = b.add_tensor("k", (1, 3), "INT8", data=np.ones((1, 3)), scale=0.1)
    y = q(b, "y", (1, 17))
    b.add_op("CONCATENATION", [x, k], [y], axis=1)
    b.inputs, b.outputs = [x], [y]
    requests, owners = buffer_requests(allocation_infos(load_model(b.build()), []))
    assert [r.size for r in requests] == [16, 32] and owners == [0, 2]


# -- control flow ----------------------------------------------------------------------------------------------------


def if_model(offline=None) -> bytes:
    b = ModelBuilder()
    c = b.add_tensor("c", (1,), "BOOL")
    x, y, z = q(b, "x", (1, 16)), q(b, "y", (1, 16)), q(b, "z", (16,))
    b.add_op("IF", [c, x], [y], then_subgraph_index=1, else_subgraph_index=2)
    b.add_op("RESHAPE", [y], [z], new_shape=[16])
    b.inputs, b.outputs = [c, x], [z]
    for name in ("then", "else"):
        sg = b.add_subgraph(name)
        i, o = q(sg, "i", (1, 16)), q(sg, "o", (1, 16))
        sg.add_op("RESHAPE", [i], [o], new_shape=[1, 16])
        sg.inputs, sg.outputs = [i], [o]
    if offline:
        b.add_offline_plan(offline)
    return b.build()


def test_if_subgraphs_get_their_own_scopes():
    # main: scope 0 inputs; IF at 1; then-subgraph entered at 2 (its op at 3); else at 4 (op at 5); RESHAPE at 6
    assert lifetimes(if_model()) == [(0, 5), (0, 5), (1, 6), (6, 6),  # c, x, y, z
                                     (2, 3), (3, 3),                  # then: i, o
                                     (4, 5), (5, 5)]                  # else: i, o
    assert head(if_model()) == wheel_head(if_model()) == 80


def test_scratch_of_a_control_flow_op_spans_its_subgraphs():
    infos = allocation_infos(load_model(if_model()), [ScratchRequest(0, 0, 32), ScratchRequest(1, 0, 16)])
    assert [(i.first_created, i.last_used) for i in infos[-2:]] == [(1, 5), (3, 3)]


def test_offline_offsets_are_indexed_across_subgraphs():
    offline = [-1] * 4 + [1024, -1, -1, 2048]  # then-subgraph's i, else-subgraph's o
    infos = allocation_infos(load_model(if_model(offline)), [])
    assert [i.offline_offset for i in infos] == offline
    assert head(if_model(offline)) == wheel_head(if_model(offline)) == 2064


def while_model() -> bytes:
    b = ModelBuilder()
    n, x = b.add_tensor("n", (1,), "FLOAT32"), b.add_tensor("x", (1, 8), "FLOAT32")
    n2, y, z = b.add_tensor("n2", (1,), "FLOAT32"), b.add_tensor("y", (1, 8), "FLOAT32"), \
        b.add_tensor("z", (1, 8), "FLOAT32")
    b.add_op("WHILE", [n, x], [n2, y], cond_subgraph_index=1, body_subgraph_index=2)
    b.add_op("ADD", [y, y], [z])
    b.inputs, b.outputs = [n, x], [z]
    c = b.add_subgraph("cond")
    cn, ci = c.add_tensor("n", (1,), "FLOAT32"), c.add_tensor("i", (1, 8), "FLOAT32")
    k = c.add_tensor("k", (1,), "FLOAT32", data=np.full((1,), 10, np.float32))
    r = c.add_tensor("r", (1,), "BOOL")
    c.add_op("LESS", [cn, k], [r])
    c.inputs, c.outputs = [cn, ci], [r]
    bd = b.add_subgraph("body")
    bn, bi = bd.add_tensor("n", (1,), "FLOAT32"), bd.add_tensor("i", (1, 8), "FLOAT32")
    one = bd.add_tensor("one", (1,), "FLOAT32", data=np.ones((1,), np.float32))
    bn2, bo = bd.add_tensor("n2", (1,), "FLOAT32"), bd.add_tensor("o", (1, 8), "FLOAT32")
    bd.add_op("ADD", [bn, one], [bn2])
    bd.add_op("ADD", [bi, bi], [bo])
    bd.inputs, bd.outputs = [bn, bi], [bn2, bo]
    return b.build()


def test_while_cond_then_body():
    lt = lifetimes(while_model())
    assert lt[:5] == [(0, 6), (0, 6), (1, 6), (1, 7), (7, 7)]  # n, x, n2, y, z
    assert lt[5:9] == [(2, 3), (2, 2), (-1, 3), (3, 3)]  # cond: n, i (an input nothing reads), k, r
    assert head(while_model()) == wheel_head(while_model()) == 176


def test_recursive_subgraph_reference_is_a_model_error():
    b = ModelBuilder()
    c, x, y = b.add_tensor("c", (1,), "BOOL"), q(b, "x", (1, 4)), q(b, "y", (1, 4))
    b.add_op("IF", [c, x], [y], then_subgraph_index=1, else_subgraph_index=1)
    b.inputs, b.outputs = [c, x], [y]
    sg = b.add_subgraph("loop")
    sc, si, so = sg.add_tensor("c", (1,), "BOOL"), q(sg, "i", (1, 4)), q(sg, "o", (1, 4))
    sg.add_op("IF", [sc, si], [so], then_subgraph_index=1, else_subgraph_index=0)
    sg.inputs, sg.outputs = [sc, si], [so]
    with pytest.raises(ModelError, match="subgraph 1 is referenced recursively"):
        allocation_infos(load_model(b.build()), [])


@given(seed=st.integers(0, 2**32 - 1), offline=st.booleans())
@example(seed=0, offline=True)
def test_random_control_flow_graphs_match_wheel(seed, offline):
    g = random_control_flow_graph(np.random.default_rng(seed), offline=offline)
    assert head(g.data) == wheel_head(g.data), g.ops
