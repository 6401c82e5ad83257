"""Random multi-op graphs for planner tests, built with ModelBuilder.

Every op used here needs no scratch buffer in TFLM (RESHAPE, ADD, CONCATENATION, SPLIT), so the wheel's
"Arena allocation head" is exactly the greedy plan of the tensors' lifetimes and can be compared with ours.
All activations are int8 tensors of shape ``(1, n)``; sizes vary through CONCATENATION (grows) and SPLIT (shrinks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from microinterp.testing.builder import ModelBuilder

#: Ops that microinterp has kernels for today: graphs made only of these can also run in the Interpreter.
INTERPRETER_OPS = ("RESHAPE",)
WHEEL_OPS = ("RESHAPE", "ADD", "CONCATENATION", "SPLIT")


@dataclass
class GraphSpec:
    """What was generated, for assertions and failure messages."""

    data: bytes
    n_tensors: int
    n_ops: int
    ops: list[str] = field(default_factory=list)


def _act(b, name: str, n: int, rng: np.random.Generator) -> int:
    # one quantization for all: CONCATENATION and SPLIT require equal input/output scales and zero points
    return b.add_tensor(name, (1, n), "INT8", scale=0.1, zero_point=-3)


def random_graph(rng: np.random.Generator, ops: tuple[str, ...] = WHEEL_OPS, max_ops: int = 10,
                 extras: bool = True, offline: bool = False) -> GraphSpec:
    """A random DAG of ``ops`` over int8 ``(1, n)`` tensors.

    ``extras`` adds the odd cases of TFLM's lifetime rules: graph outputs that no op produces, tensors nobody uses,
    graph inputs that are also graph outputs, tensors consumed by several ops. ``offline`` attaches an
    ``OfflineMemoryAllocation`` plan that fixes the offsets of a random subset of the tensors.
    """
    b = ModelBuilder()
    sizes: dict[int, int] = {}
    avail: list[int] = []
    for k in range(int(rng.integers(1, 4))):
        n = int(rng.integers(1, 9)) * 8
        t = _act(b, f"in{k}", n, rng)
        sizes[t] = n
        avail.append(t)
    b.inputs = list(avail)
    used_ops = []
    for k in range(int(rng.integers(1, max_ops + 1))):
        kind = str(rng.choice(ops))
        if kind == "SPLIT" and not any(sizes[t] % 2 == 0 and sizes[t] >= 2 for t in avail):
            kind = "RESHAPE"
        if kind == "RESHAPE":
            x = int(rng.choice(avail))
            y = _act(b, f"r{k}", sizes[x], rng)
            b.add_op("RESHAPE", [x], [y], new_shape=[1, sizes[x]])
            outs = [y]
        elif kind == "ADD":
            x = int(rng.choice(avail))
            same = [t for t in avail if sizes[t] == sizes[x]]
            other = int(rng.choice(same))
            y = _act(b, f"a{k}", sizes[x], rng)
            b.add_op("ADD", [x, other], [y], fused_activation_function=str(rng.choice(["NONE", "RELU"])))
            outs = [y]
        elif kind == "CONCATENATION":
            xs = [int(v) for v in rng.choice(avail, size=int(rng.integers(1, 4)))]
            total = sum(sizes[t] for t in xs)
            y = _act(b, f"c{k}", total, rng)
            b.add_op("CONCATENATION", xs, [y], axis=1)
            outs = [y]
        else:  # SPLIT into 2 or 4 along axis 1 (axis is a constant input)
            cands = [t for t in avail if sizes[t] % 2 == 0]
            x = int(rng.choice(cands))
            parts = 4 if sizes[x] % 4 == 0 and rng.random() < 0.5 else 2
            axis = b.add_tensor(f"axis{k}", (), "INT32", data=np.array(1, np.int32))
            outs = [_act(b, f"s{k}_{j}", sizes[x] // parts, rng) for j in range(parts)]
            b.add_op("SPLIT", [axis, x], outs, num_splits=parts)
        for o in outs:
            sizes[o] = b.tensors[o].shape[1]
        avail.extend(outs)
        used_ops.append(kind)
    produced = [t for t in avail if t not in b.inputs]
    # the last produced tensor is always an output, plus a few random others
    outputs = [produced[-1]]
    for t in avail:
        if t not in outputs and rng.random() < 0.2:
            outputs.append(t)
    if extras:
        if rng.random() < 0.3:  # a graph output no op produces
            t = _act(b, "orphan_out", int(rng.integers(1, 9)) * 8, rng)
            outputs.append(t)
        if rng.random() < 0.3:  # a tensor nobody uses at all
            _act(b, "unused", int(rng.integers(1, 9)) * 8, rng)
    b.outputs = outputs
    if offline:
        n_t = len(b.tensors)
        offs = [-1] * n_t
        for t in range(n_t):
            if b.tensors[t].data is None and rng.random() < 0.4:
                offs[t] = int(rng.integers(0, 16)) * 16
        b.add_offline_plan(offs)
    return GraphSpec(b.build(), len(b.tensors), len(used_ops), used_ops)


def _random_chain(sg, rng: np.random.Generator, x: int, n: int, length: int, tag: str) -> int:
    """A random shape-preserving chain on the (1, n) int8 tensor ``x`` of subgraph builder ``sg``; returns its end."""
    cur = x
    for k in range(length):
        kind = str(rng.choice(["RESHAPE", "ADD", "CONCAT_SPLIT"]))
        if kind == "RESHAPE":
            y = _act(sg, f"{tag}r{k}", n, rng)
            sg.add_op("RESHAPE", [cur], [y], new_shape=[1, n])
        elif kind == "ADD":
            y = _act(sg, f"{tag}a{k}", n, rng)
            sg.add_op("ADD", [cur, x if rng.random() < 0.5 else cur], [y])
        else:
            c = _act(sg, f"{tag}c{k}", 2 * n, rng)
            sg.add_op("CONCATENATION", [cur, cur], [c], axis=1)
            axis = sg.add_tensor(f"{tag}axis{k}", (), "INT32", data=np.array(1, np.int32))
            y, z = _act(sg, f"{tag}s{k}a", n, rng), _act(sg, f"{tag}s{k}b", n, rng)
            sg.add_op("SPLIT", [axis, c], [y, z], num_splits=2)
        if rng.random() < 0.2:
            _act(sg, f"{tag}unused{k}", int(rng.integers(1, 5)) * 16, rng)
        cur = y
    return cur


def random_control_flow_graph(rng: np.random.Generator, offline: bool = False) -> GraphSpec:
    """Main graph: a chain, one IF or WHILE over random branch/body subgraphs (which may nest an IF), a chain.

    IF: ``then``/``else`` map (1, n) -> (1, n). WHILE: loop variables (counter float32 (1,), x int8 (1, n)); the
    condition is ``counter < 3`` (LESS), the body adds 1 to the counter and runs a random chain on x.
    """
    b = ModelBuilder()
    n = int(rng.integers(1, 9)) * 8
    x = _act(b, "x", n, rng)
    cur = _random_chain(b, rng, x, n, int(rng.integers(0, 3)), "pre")
    ops = []

    def add_if(sg, inp: int, cond: int, depth: int) -> int:
        out = _act(sg, f"if_out{len(b.subgraphs)}", n, rng)
        then_i, else_i = len(b.subgraphs), len(b.subgraphs) + 1
        sg.add_op("IF", [cond, inp], [out], then_subgraph_index=then_i, else_subgraph_index=else_i)
        branches = [b.add_subgraph(f"then{then_i}"), b.add_subgraph(f"else{else_i}")]
        for br in branches:
            i = _act(br, "i", n, rng)
            end = _random_chain(br, rng, i, n, int(rng.integers(0 if depth else 1, 4)), "b")
            if depth == 0 and rng.random() < 0.3:  # nest an IF in this branch
                c2 = br.add_tensor("c2", (1,), "BOOL", data=np.array([True]))
                end = add_if(br, end, c2, depth + 1)
            br.inputs, br.outputs = [i], [end]
        ops.append("IF")
        return out

    if rng.random() < 0.5:
        c = b.add_tensor("c", (1,), "BOOL")
        b.inputs = [c, x]
        cur = add_if(b, cur, c, 0)
    else:
        counter = b.add_tensor("counter", (1,), "FLOAT32")
        b.inputs = [counter, x]
        counter_out = b.add_tensor("counter_out", (1,), "FLOAT32")
        loop_out = _act(b, "loop_out", n, rng)
        cond_i, body_i = len(b.subgraphs), len(b.subgraphs) + 1
        b.add_op("WHILE", [counter, cur], [counter_out, loop_out], cond_subgraph_index=cond_i,
                 body_subgraph_index=body_i)
        cond = b.add_subgraph("cond")
        cn, cx = cond.add_tensor("n", (1,), "FLOAT32"), _act(cond, "x", n, rng)
        limit = cond.add_tensor("limit", (1,), "FLOAT32", data=np.array([3], np.float32))
        r = cond.add_tensor("r", (1,), "BOOL")
        cond.add_op("LESS", [cn, limit], [r])
        cond.inputs, cond.outputs = [cn, cx], [r]
        body = b.add_subgraph("body")
        bn, bx = body.add_tensor("n", (1,), "FLOAT32"), _act(body, "x", n, rng)
        one = body.add_tensor("one", (1,), "FLOAT32", data=np.array([1], np.float32))
        bn2 = body.add_tensor("n2", (1,), "FLOAT32")
        body.add_op("ADD", [bn, one], [bn2])
        end = _random_chain(body, rng, bx, n, int(rng.integers(1, 4)), "w")
        body.inputs, body.outputs = [bn, bx], [bn2, end]
        cur = loop_out
        ops.append("WHILE")
    cur = _random_chain(b, rng, cur, n, int(rng.integers(0, 3)), "post")
    b.outputs = [cur]
    n_tensors = sum(len(sg.tensors) for sg in b.subgraphs)
    if offline:
        offs = [-1] * n_tensors
        k = 0
        for sg in b.subgraphs:
            for t in sg.tensors:
                if t.data is None and rng.random() < 0.3:
                    offs[k] = int(rng.integers(0, 16)) * 16
                k += 1
        b.add_offline_plan(offs)
    return GraphSpec(b.build(), n_tensors, sum(len(sg.ops) for sg in b.subgraphs), ops)
