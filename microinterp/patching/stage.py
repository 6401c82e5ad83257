"""Stages of a model that patch-based inference can cut: runs of consecutive ops with one feature map in and one out.

A :class:`Stage` is a run of ops ``[start, stop)`` of subgraph 0 (in execution order) such that

- every op is windowed or pointwise (:mod:`.regions`) on batch-1 feature maps, with one output;
- exactly one non-constant tensor enters the run (``x``: a graph input or produced before it) and exactly one tensor
  produced in the run is used after it or is a graph output (``y``); every other tensor the run makes dies in it;
- constant inputs do not vary over rows and columns (weights, biases, per-channel scales, paddings, permutations).

Such a run can be computed patch by patch: each patch of ``y`` needs a region of ``x`` (its receptive field), and
the per-patch copies of the run's ops compute it from that region alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .regions import NHWC, Layout, geometry, pointwise, window_of, windowed


@dataclass(frozen=True)
class Stage:
    start: int
    stop: int
    x: int
    y: int
    layouts: Mapping[int, Layout]      # every feature map of the stage, x and y included

    @property
    def ops(self) -> range:
        return range(self.start, self.stop)


def feature_inputs(op: Any, tensors: Any) -> list[int] | None:
    """Positions of ``op``'s inputs that are feature maps (None: the op cannot be patched)."""
    if windowed(op):
        if window_of(op, tensors) is None:
            return None
        return [0]
    if not pointwise(op):
        return None
    out = tensors[op.outputs[0]]
    kind = geometry(op)
    if kind == "transpose":
        return [0] if _transpose_layout(op, tensors) is not None else None
    if kind == "concat" and op.options.get("axis", 0) not in (3, -1):
        return None
    found = []
    for pos, ti in enumerate(op.inputs):
        if ti < 0:
            continue
        t = tensors[ti]
        if t.data is None:
            if tuple(t.shape[:3]) != tuple(out.shape[:3]) or (kind != "concat" and t.shape != out.shape):
                return None
            found.append(pos)
        elif len(t.shape) >= 3 and (t.shape[-2] != 1 or t.shape[-3] != 1):
            return None      # a constant that varies over rows or columns
    return found or None


def _transpose_layout(op: Any, tensors: Any) -> Layout | None:
    perm = tensors[op.inputs[1]].data if len(op.inputs) > 1 else None
    x = tensors[op.inputs[0]]
    if perm is None or perm.shape != (4,) or int(perm[0]) != 0 or len(x.shape) != 4 or x.shape[0] != 1:
        return None
    return Layout(int(perm[1]), int(perm[2]))


def _op_ok(op: Any, tensors: Any) -> bool:
    if len(op.outputs) != 1 or op.outputs[0] < 0 or op.intermediates:
        return False
    out = tensors[op.outputs[0]]
    if len(out.shape) != 4 or out.shape[0] != 1 or out.data is not None:
        return False
    return feature_inputs(op, tensors) is not None


def find_stages(model: Any, min_ops: int = 1) -> list[Stage]:
    """Every stage of subgraph 0 with at least ``min_ops`` ops (a run may start and stop at any op)."""
    sg = model.main
    ops, tensors = sg.operators, sg.tensors
    ok = [_op_ok(op, tensors) for op in ops]
    last_use = {}
    for i, op in enumerate(ops):
        for ti in op.inputs:
            if ti >= 0:
                last_use[ti] = i
    graph_outputs = set(sg.outputs)
    stages = []
    for start in range(len(ops)):
        if not ok[start]:
            continue
        for stop in range(start + 1, len(ops) + 1):
            if not ok[stop - 1]:
                break
            if stop - start < min_ops:
                continue
            stage = _stage(sg, start, stop, last_use, graph_outputs)
            if stage is not None:
                stages.append(stage)
    return stages


def _stage(sg: Any, start: int, stop: int, last_use: dict[int, int], graph_outputs: set[int]) -> Stage | None:
    ops, tensors = sg.operators, sg.tensors
    made = {ops[i].outputs[0] for i in range(start, stop)}
    entering, layouts = set(), {}
    for i in range(start, stop):
        op = ops[i]
        layouts[op.outputs[0]] = NHWC
        for pos in feature_inputs(op, tensors) or ():
            ti = op.inputs[pos]
            lay = _transpose_layout(op, tensors) if geometry(op) == "transpose" else NHWC
            if layouts.get(ti, lay) != lay:
                return None
            layouts[ti] = lay
            if ti not in made:
                entering.add(ti)
        for ti in op.inputs:
            if ti >= 0 and tensors[ti].data is None and ti not in made and ti not in entering:
                return None      # a non-feature-map activation input (e.g. a dynamic shape)
    leaving = [t for t in made if last_use.get(t, -1) >= stop or t in graph_outputs]
    if len(entering) != 1 or len(leaving) != 1:
        return None
    x, y = next(iter(entering)), leaving[0]
    if tensors[x].shape[0] != 1 or any(np.prod(tensors[t].shape) == 0 for t in layouts):
        return None
    return Stage(start, stop, x, y, layouts)
