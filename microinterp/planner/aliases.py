"""Tensors that may share bytes in an offline plan, because of the order in which TFLM's kernels read and write.

TFLM places offline-planned tensors exactly where ``OfflineMemoryAllocation`` says and never checks that two of them
are apart. Four kinds of placement are safe for every build (the reference kernels the wheel runs, and the
CMSIS-NN ones a Cortex-M firmware runs), and each lets two tensors an op reads and writes share bytes:

- **slice in place** (``STRIDED_SLICE`` with unit strides whose result is one contiguous run of its input, e.g. a
  band of whole rows of an NHWC map): the output sits on the very bytes it copies, so the kernel's
  element-by-element copy rewrites each byte with its own value;
- **join in place** (``CONCATENATION`` whose axis has no non-unit dimension before it, so each input is one
  contiguous run of the output): each input is produced where the output will hold it and the kernel's
  ``memcpy`` of that run is a copy onto itself; the inputs are disjoint runs, so no copy touches another's bytes;
- **pad in place** (``PAD`` / ``PADV2`` that is its input's last reader): the output is placed ``delta`` bytes
  before its input. ``reference_ops::PadImpl`` walks the output front to back, writing the pad value or
  ``*out_ptr++ = *in_ptr++``; CMSIS-NN's ``arm_pad_s8`` writes the same sequence with forward ``memset`` /
  ``memcpy``. After ``p`` output bytes of which ``q`` were input, the next unread input byte is at
  ``in + q`` and the next write at ``out + p = in + q - (delta - (p - q))``: never past an unread input byte as
  long as ``delta`` is at least the padding written before the input's last element (``lead`` below);
- **a window in place** (CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D, MAX_POOL_2D on a batch-1 map, the op being its
  input's last reader): the input placed ``delta`` bytes after the output's start. Every one of these kernels --
  the reference ``conv.h`` / ``depthwise_conv.h`` / ``pooling.h`` loops (batch, output row, output column, channel)
  and CMSIS-NN's, which compute output pixels in row-major order, one, two or four at a time, each from an im2col
  copy or a direct read of its window taken before the pixel is stored -- reads the input rows of an output row's
  window before writing that row and never reads rows above ``row * stride - pad`` again. So output row ``r`` may
  overwrite input rows below ``max(0, r * stride - pad)``: ``delta = max_r (r + 1) * out_row - max(0, r * stride -
  pad) * in_row``. A 1x1 expansion then needs its output plus one input row instead of both tensors; a stride-1
  3x3 depthwise convolution its output plus two rows;
- **a transpose in place** (TRANSPOSE, the op being its input's last reader): the input placed ``delta`` bytes after
  the output's start. ``reference_ops::Transpose`` (TRANSPOSE has no CMSIS-NN kernel in the firmware build) writes
  the output front to back, element ``i`` copied from input element ``src(i)`` just before it is stored; so output
  element ``i`` may land on input element ``i - delta`` once that one has been read: ``delta = max_j (read(j) -
  j)`` elements, ``read(j)`` the step that reads input element ``j``. An NCHW -> NHWC transpose of three channels
  needs its output plus a third of its input instead of both.

A fourth overlap is safe because of what is no longer read rather than how a kernel copies: a write may land on
bytes of a live tensor that were written before and that no op reads from that step on (**consumed bytes**; a
``STRIDED_SLICE`` cutting a box reads its first to its last element, any other op its whole input, :func:`reads`).
A stage computed in row bands reads its input through such cuts, top band first, so the rows above the band being
computed are consumed; the planner frees them band by band (``microinterp.apps.optimize``).

Every other overlap is refused. :func:`share` merges candidate placements into groups and keeps a merge only if,
whenever an op writes a member, every other member alive then whose bytes it touches is one of the pairs above (or
another slice of the same tensor, which holds the same values), or the bytes it touches are consumed. The planner
places each group as one rigid item whose members keep their own bytes and lifetimes (:mod:`.rigid`).
``tests/planner/test_aliases.py`` runs the placements in the wheel and in microinterp and compares outputs bit for
bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..resolver import declaration_of
from .rigid import union_bytes

#: Members start at multiples of this many bytes inside their group: TFLM's buffer alignment (kBufferAlignment).
ALIGN = 16


@dataclass(frozen=True)
class Alias:
    """``member`` placed ``delta`` bytes after the start of ``base`` (``kind``: slice, concat or pad; ``op``: the
    position, in the model's op list, of the op that makes the pair safe)."""

    base: int
    member: int
    delta: int
    kind: str
    op: int


def candidates(model: Any) -> list[Alias]:
    """Every placement of subgraph 0 that one of the three rules allows (whether it is kept depends on lifetimes)."""
    sg = model.main
    tensors = sg.tensors
    graph_inputs = set(sg.inputs)
    found: list[Alias] = []
    for k, op in enumerate(sg.operators):
        if len(op.outputs) != 1 or op.outputs[0] < 0:
            continue
        y = tensors[op.outputs[0]]
        if y.data is not None or y.is_variable:
            continue
        kind = declaration_of(op.key).geometry
        if kind == "concat":
            found += _concat(op, k, tensors, graph_inputs)
        elif kind == "slice":
            found += _slice(op, k, tensors)
        elif kind == "pad":
            found += _pad(op, k, tensors)
        elif kind in ("filter", "pool"):
            found += _window(op, k, tensors)
        elif kind == "transpose":
            found += _transpose(op, k, tensors)
    return found


def reads(model: Any) -> dict[int, list[tuple[int, int, int]]]:
    """For each non-constant tensor of subgraph 0, the bytes each op reads: ``(op position, start, stop)`` -- a
    ``STRIDED_SLICE`` cutting a box reads its first to its last element, every other op the whole tensor; a graph
    output is read whole after the last op (position ``len(ops)``)."""
    sg = model.main
    tensors = sg.tensors
    out: dict[int, list[tuple[int, int, int]]] = {}
    for k, op in enumerate(sg.operators):
        for pos, ti in enumerate(op.inputs):
            if ti < 0 or tensors[ti].data is not None:
                continue
            span = _slice_span(op, tensors) if pos == 0 and declaration_of(op.key).geometry == "slice" else None
            out.setdefault(ti, []).append((k, *(span or (0, tensors[ti].nbytes))))
        for ti in op.intermediates:
            if ti >= 0:
                out.setdefault(ti, []).append((k, 0, tensors[ti].nbytes))
    for ti in sg.outputs:
        out.setdefault(ti, []).append((len(sg.operators), 0, tensors[ti].nbytes))
    return out


def _slice_box(op: Any, tensors: Any) -> tuple[list[int], list[int]] | None:
    """A STRIDED_SLICE's ``begin`` and ``end`` when it cuts a plain box (unit strides, no masks, in range)."""
    x = tensors[op.inputs[0]]
    if not _plain_slice(op):
        return None
    begin, end, strides = (tensors[op.inputs[i]].data for i in (1, 2, 3))
    if begin is None or end is None or strides is None or np.any(strides != 1) or len(begin) != len(x.shape) \
            or len(end) != len(x.shape):
        return None
    begin, end = [int(v) for v in begin], [int(v) for v in end]
    if any(not 0 <= b < e <= n for b, e, n in zip(begin, end, x.shape)):
        return None
    return begin, end


def _plain_slice(op: Any) -> bool:
    """A STRIDED_SLICE with begin, end and strides and none of the masks or the ``offset`` option."""
    o = op.options
    return len(op.inputs) >= 4 and not o.get("offset", False) and not any(
        o.get(m, 0) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"))


def _slice_span(op: Any, tensors: Any) -> tuple[int, int] | None:
    box = _slice_box(op, tensors)
    if box is None:
        return None
    x = tensors[op.inputs[0]]
    first = int(np.ravel_multi_index(box[0], x.shape))
    last = int(np.ravel_multi_index([e - 1 for e in box[1]], x.shape))
    return first * x.dtype.itemsize, (last + 1) * x.dtype.itemsize


def _concat(op: Any, k: int, tensors: Any, graph_inputs: set[int]) -> list[Alias]:
    y = tensors[op.outputs[0]]
    axis = op.options.get("axis", 0) % max(len(y.shape), 1)
    if int(np.prod(y.shape[:axis], dtype=np.int64)) != 1 or op.options.get("fused_activation_function",
                                                                           "NONE") != "NONE":
        return []
    parts, delta = [], 0
    for ti in op.inputs:
        t = tensors[ti]
        ok = (t.data is None and not t.is_variable and ti not in graph_inputs and t.type_name == y.type_name
              and _same_quantization(t, y) and ti not in [p.member for p in parts])
        if ok and delta % ALIGN == 0:
            parts.append(Alias(op.outputs[0], ti, delta, "concat", k))
        delta += t.nbytes
    return parts


def _same_quantization(a: Any, b: Any) -> bool:
    qa, qb = a.quantization, b.quantization
    if (qa is None or qa.scales.size == 0) and (qb is None or qb.scales.size == 0):
        return True
    return (qa is not None and qb is not None and np.array_equal(qa.scales, qb.scales)
            and np.array_equal(qa.zero_points, qb.zero_points))


def _slice(op: Any, k: int, tensors: Any) -> list[Alias]:
    x, s = tensors[op.inputs[0]], tensors[op.outputs[0]]
    if not _plain_slice(op) or x.data is not None:
        return []
    begin, strides = tensors[op.inputs[1]].data, tensors[op.inputs[3]].data
    if begin is None or strides is None or np.any(strides != 1) or len(s.shape) != len(x.shape):
        return []
    begin = [int(v) for v in begin]
    if any(b < 0 for b in begin):
        return []
    # contiguous: after the first axis the slice cuts, every axis is whole; before it, every extent is 1
    cut = next((a for a in range(len(x.shape)) if s.shape[a] != x.shape[a]), len(x.shape))
    if any(s.shape[a] != x.shape[a] or begin[a] for a in range(cut + 1, len(x.shape))) \
            or any(s.shape[a] != 1 for a in range(cut)):
        return []
    flat = int(np.ravel_multi_index(begin, x.shape)) if x.shape and s.nbytes else 0
    delta = flat * x.dtype.itemsize
    return [Alias(op.inputs[0], op.outputs[0], delta, "slice", k)] if delta % ALIGN == 0 else []


def _pad(op: Any, k: int, tensors: Any) -> list[Alias]:
    x, y = tensors[op.inputs[0]], tensors[op.outputs[0]]
    pads = tensors[op.inputs[1]].data
    if x.data is not None or pads is None or pads.shape != (len(y.shape), 2) or np.any(pads < 0) \
            or x.type_name != y.type_name:
        return []
    # the pad values written after the input's last element: the trailing padding of each axis, innermost first
    trailing, inner = 0, 1
    for d in reversed(range(len(y.shape))):
        trailing += int(pads[d][1]) * inner
        inner *= y.shape[d]
    lead = (y.nbytes - x.nbytes) - trailing * y.dtype.itemsize
    delta = -(-lead // ALIGN) * ALIGN
    return [Alias(op.outputs[0], op.inputs[0], delta, "pad", k)]


def _window(op: Any, k: int, tensors: Any) -> list[Alias]:
    """The input placed ``delta`` bytes after the output's start, so that output row ``r`` (written once the rows of
    its window are read) lands only on input rows that neither it nor a later row reads: rows below
    ``max(0, r * stride - pad)``. ``delta = max_r (r + 1) * out_row - max(0, r * stride - pad) * in_row``."""
    from ..kernels.padding import compute_padding_height_width

    if len(op.inputs) < 1 or op.inputs[0] < 0:
        return []
    x, y = tensors[op.inputs[0]], tensors[op.outputs[0]]
    if x.data is not None or len(x.shape) != 4 or len(y.shape) != 4 or x.shape[0] != 1 or y.shape[0] != 1 \
            or x.nbytes == 0 or y.nbytes == 0:
        return []
    o = op.options
    if declaration_of(op.key).geometry == "filter":
        if len(op.inputs) < 2 or op.inputs[1] < 0 or len(tensors[op.inputs[1]].shape) != 4:
            return []
        kh, kw = tensors[op.inputs[1]].shape[1:3]
        dh, dw = o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)
    else:
        kh, kw, dh, dw = o.get("filter_height", 1), o.get("filter_width", 1), 1, 1
    sh, sw = o.get("stride_h", 1), o.get("stride_w", 1)
    if min(sh, sw, dh, dw, kh, kw) < 1:
        return []
    pad = compute_padding_height_width(sh, sw, dh, dw, x.shape[1], x.shape[2], kh, kw, o.get("padding", "SAME"))
    out_row, in_row = y.nbytes // y.shape[1], x.nbytes // x.shape[1]
    lead = max((r + 1) * out_row - max(0, r * sh - pad.height) * in_row for r in range(y.shape[1]))
    delta = -(-lead // ALIGN) * ALIGN
    return [Alias(op.outputs[0], op.inputs[0], delta, "window", k)] if delta < y.nbytes else []


def _transpose(op: Any, k: int, tensors: Any) -> list[Alias]:
    """The input placed ``delta`` bytes after the output's start, so that output element ``i`` (written in order,
    right after its input element ``src(i)`` is read) lands only on input elements already read."""
    if len(op.inputs) < 2 or min(op.inputs[:2]) < 0:
        return []
    x, y, perm = tensors[op.inputs[0]], tensors[op.outputs[0]], tensors[op.inputs[1]].data
    if x.data is not None or x.is_variable or perm is None or x.dtype != y.dtype or x.nbytes != y.nbytes \
            or x.nbytes == 0 or len(x.shape) != perm.size or sorted(int(p) for p in perm.ravel()) != \
            list(range(len(x.shape))):
        return []
    src = np.arange(x.num_elements, dtype=np.int64).reshape(x.shape).transpose([int(p) for p in perm.ravel()])
    read = np.empty(x.num_elements, dtype=np.int64)
    read[src.ravel()] = np.arange(x.num_elements, dtype=np.int64)        # the step that reads input element j
    lead = int((read - np.arange(x.num_elements, dtype=np.int64)).max()) * x.dtype.itemsize
    delta = -(-max(lead, 0) // ALIGN) * ALIGN
    return [Alias(op.outputs[0], op.inputs[0], delta, "transpose", k)] if delta < y.nbytes else []


@dataclass
class Group:
    """Tensors placed at fixed byte positions relative to each other (``at``), planned as one buffer."""

    at: dict[int, int]

    def extent(self, nbytes: Mapping[int, int]) -> tuple[int, int]:
        lo = min(self.at.values())
        return lo, max(self.at[t] + nbytes[t] for t in self.at)


def share(aliases: Sequence[Alias], lifetimes: Mapping[int, tuple[int, int]], writes: Sequence[Sequence[int]],
          nbytes: Mapping[int, int], read: Mapping[int, Sequence[tuple[int, int, int]]] | None = None,
          window_slack: float = 0.0) -> list[Group]:
    """Groups of tensors sharing bytes: each candidate in turn merges the groups of its two tensors when the
    merged group stays safe (see the module docstring). ``lifetimes[t] = (first, last)`` op positions in the order
    the model runs (only planned tensors take part), ``writes[k]`` the tensors op ``k`` writes, ``read[t]`` the bytes
    of ``t`` each op reads, ``(position, start, stop)`` in the same positions (:func:`reads`; None: no write may
    land on consumed bytes). A merge through an output placed over its own input is kept only while the group spans
    at most ``1 + window_slack`` times the most bytes its members hold at once: each such placement puts the output
    before its input, so a chain of them walks down the arena."""
    group_of: dict[int, Group] = {}
    for a in aliases:
        if a.base not in lifetimes or a.member not in lifetimes:
            continue
        if a.kind in ("pad", "window", "transpose") and lifetimes[a.member][1] != a.op:
            continue          # the op must be its input's last reader
        gb = group_of.get(a.base) or Group({a.base: 0})
        gm = group_of.get(a.member) or Group({a.member: 0})
        if gb is gm:
            continue
        shift = gb.at[a.base] + a.delta - gm.at[a.member]
        merged = Group({**gb.at, **{t: p + shift for t, p in gm.at.items()}})
        if not _safe(merged, aliases, lifetimes, writes, nbytes, read):
            continue
        if a.kind == "window" and _span(merged, nbytes) > _footprint(merged, lifetimes, nbytes) * (1 + window_slack):
            continue          # a chain of such placements walks down the arena
        for t in merged.at:
            group_of[t] = merged
    unique = {id(g): g for g in group_of.values()}
    return [g for g in unique.values() if len(g.at) > 1]


def _safe(group: Group, aliases: Sequence[Alias], lifetimes: Mapping[int, tuple[int, int]],
          writes: Sequence[Sequence[int]], nbytes: Mapping[int, int],
          read: Mapping[int, Sequence[tuple[int, int, int]]] | None) -> bool:
    at = group.at
    pairs = {(a.base, a.member, a.kind): a for a in aliases if a.base in at and a.member in at
             and at[a.member] - at[a.base] == a.delta}
    slice_of = {a.member: a.base for a in pairs.values() if a.kind == "slice"}
    for t in at:
        k = lifetimes[t][0]
        if k >= len(writes) or t not in writes[k]:
            continue              # not written by an op (a graph input): checked when the others are written
        for u in at:
            if u == t or not (lifetimes[u][0] <= k <= lifetimes[u][1]):
                continue
            if at[t] >= at[u] + nbytes[u] or at[u] >= at[t] + nbytes[t]:
                continue
            if (u, t, "slice") in pairs and pairs[(u, t, "slice")].op == k:
                continue          # t copies u's bytes onto themselves
            if (t, u, "concat") in pairs and pairs[(t, u, "concat")].op == k:
                continue          # t gathers u onto itself
            if (t, u, "pad") in pairs and pairs[(t, u, "pad")].op == k:
                continue          # the pad writes over its input front to back
            if (t, u, "window") in pairs and pairs[(t, u, "window")].op == k:
                continue          # each output row lands on input rows no longer read
            if (t, u, "transpose") in pairs and pairs[(t, u, "transpose")].op == k:
                continue          # each output element lands on input elements already read
            if slice_of.get(t) is not None and slice_of.get(t) == slice_of.get(u):
                continue          # two cuts of one tensor: the same values where they overlap
            lo, hi = max(at[t], at[u]) - at[u], min(at[t] + nbytes[t], at[u] + nbytes[u]) - at[u]
            if read is not None and lifetimes[u][0] < k and _unread(read.get(u, ()), k, lo, hi):
                continue          # t lands on bytes of u written before and read no more
            return False
    return True


def _unread(read: Sequence[tuple[int, int, int]], k: int, lo: int, hi: int) -> bool:
    """No read of bytes ``[lo, hi)`` at position ``k`` or later."""
    return all(step < k or stop <= lo or start >= hi for step, start, stop in read)


def _span(group: Group, nbytes: Mapping[int, int]) -> int:
    lo, hi = group.extent(nbytes)
    return hi - lo


def _footprint(group: Group, lifetimes: Mapping[int, tuple[int, int]], nbytes: Mapping[int, int]) -> int:
    """The most bytes the group's members hold at one step (overlapping members counted once)."""
    return max(union_bytes((group.at[t], group.at[t] + nbytes[t]) for t in group.at
                           if lifetimes[t][0] <= step <= lifetimes[t][1])
               for step in {lifetimes[t][0] for t in group.at} | {lifetimes[t][1] for t in group.at})
