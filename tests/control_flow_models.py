"""WHILE models built in-process for the hostile-input tests (shared by tests/test_hostile.py and the fuzz tests)."""

from __future__ import annotations

import numpy as np

from microinterp.testing.builder import ModelBuilder


def while_model(compare: str, bound: int, step: int, constant_body_input: bool = False) -> bytes:
    """``while compare(i, bound): i = i + step`` on an INT32 ``(1,)`` tensor. ``constant_body_input`` makes the
    body's input (a copy target of the WHILE) a constant tensor."""
    b = ModelBuilder()
    x = b.add_tensor("x", (1,), "INT32")
    y = b.add_tensor("y", (1,), "INT32")
    b.add_op("WHILE", [x], [y], cond_subgraph_index=1, body_subgraph_index=2)
    b.inputs, b.outputs = [x], [y]
    cond = b.add_subgraph("cond")
    i = cond.add_tensor("i", (1,), "INT32")
    limit = cond.add_tensor("limit", (1,), "INT32", data=np.array([bound], np.int32))
    c = cond.add_tensor("c", (1,), "BOOL")
    cond.add_op(compare, [i, limit], [c])
    cond.inputs, cond.outputs = [i], [c]
    body = b.add_subgraph("body")
    j = body.add_tensor("j", (1,), "INT32", data=np.array([0], np.int32) if constant_body_input else None)
    inc = body.add_tensor("inc", (1,), "INT32", data=np.array([step], np.int32))
    k = body.add_tensor("k", (1,), "INT32")
    body.add_op("ADD", [j, inc], [k])
    body.inputs, body.outputs = [j], [k]
    return b.build()
