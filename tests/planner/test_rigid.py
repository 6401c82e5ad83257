"""Rigid items: parts that move together but live their own lifetimes; with one part each, the same search as the
optimal planner's."""

from __future__ import annotations

import random

import numpy as np

from microinterp.apps.optimize import _consumed_parts, optimize
from microinterp.model_writer import ModelBuilder
from microinterp.planner.lifetimes import BufferRequest
from microinterp.planner.rigid import Rigid, clashes, head_of, lower_bound, place, plan_rigid

from .test_aliases import runs_as_planned


def test_a_part_that_died_frees_its_bytes_for_a_later_buffer():
    # item 0: bytes [0, 16) alive 0-5, bytes [16, 48) alive 0-1; item 1: 32 bytes alive 3-4
    items = [Rigid(((0, 16, 0, 5), (16, 48, 0, 1))), Rigid(((0, 32, 3, 4),))]
    offsets = plan_rigid(items, greedy=True)
    assert offsets == [0, 16] and head_of(items, offsets) == 48
    # as one buffer (extent, whole lifetime) item 1 would have to go above it
    whole = [Rigid(((0, 48, 0, 5),)), items[1]]
    assert head_of(whole, plan_rigid(whole, greedy=True)) == 80


def test_first_fit_never_overlaps_parts_alive_together():
    rng = random.Random(4)
    items = []
    for _ in range(30):
        parts, at = [], 0
        for _ in range(rng.randint(1, 3)):
            size = 16 * rng.randint(1, 6)
            first = rng.randint(0, 20)
            parts.append((at, at + size, first, first + rng.randint(0, 6)))
            at += size - 16 * rng.randint(0, 1)
        items.append(Rigid(tuple(parts)))
    clash = clashes(items)
    order = list(range(len(items)))
    offsets, head = place(items, order, clash)
    spans = [(o + a, o + b, f, last) for o, it in zip(offsets, items) for a, b, f, last in it.parts]
    owner = [i for i, it in enumerate(items) for _ in it.parts]
    for x in range(len(spans)):
        for y in range(x + 1, len(spans)):
            if owner[x] == owner[y]:
                continue
            a, b = spans[x], spans[y]
            assert not (a[0] < b[1] and b[0] < a[1] and a[2] <= b[3] and b[2] <= a[3])
    assert head == head_of(items, offsets) >= lower_bound(items)
    # placing again from position k (the first k items kept where they are) is the same first fit
    for k in (0, 1, 7, 29):
        again = order[:k] + list(reversed(order[k:]))
        assert place(items, again, clash, k, offsets) == place(items, again, clash)


def test_lower_bound_counts_overlapping_parts_once():
    # steps 2-3: [0, 32) and [16, 64) overlap, 64 bytes held (not 80); step 4: 48 + 16
    items = [Rigid(((0, 32, 0, 3), (16, 64, 2, 5))), Rigid(((0, 16, 4, 4),))]
    assert lower_bound(items) == 64
    assert lower_bound([*items, Rigid(((0, 32, 3, 3),))]) == 96


def test_a_tensor_read_in_pieces_dies_piece_by_piece():
    r = BufferRequest(320, 1, 9)
    # three cuts: bytes [0, 100) at step 3, [90, 200) at step 6, [180, 320) at step 9
    parts = _consumed_parts(r, [(3, 0, 100), (6, 90, 200), (9, 180, 320)])
    assert parts == [(0, 80, 1, 3), (80, 176, 1, 6), (176, 320, 1, 9)]     # edges aligned outwards
    assert _consumed_parts(r, [(3, 0, 100), (5, 0, 320)]) == [(0, 320, 1, 9)]


def bands_model() -> bytes:
    """x (8 x 16 x 4) cut into two row bands; each band convolved 1x1 to 8 channels and joined: the first band's
    output may take x's top rows once nothing reads them."""
    rng = np.random.default_rng(2)
    b = ModelBuilder()
    q = {"scale": 0.1, "zero_point": 1}
    x0 = b.add_tensor("x0", (1, 8, 16, 4), **q)
    x = b.add_tensor("x", (1, 8, 16, 4), **q)
    b.add_op("RELU", [x0], [x])
    w = b.add_tensor("w", (8, 1, 1, 4), data=rng.integers(-100, 100, (8, 1, 1, 4), dtype=np.int8), scale=0.02,
                     zero_point=0)
    outs = []
    for k, (lo, hi) in enumerate(((0, 4), (4, 8))):
        s = b.add_tensor(f"s{k}", (1, hi - lo, 16, 4), **q)
        consts = [b.add_tensor(f"{n}{k}", (4,), "INT32", data=np.array(v, np.int32))
                  for n, v in (("b", [0, lo, 0, 0]), ("e", [1, hi, 16, 4]), ("st", [1, 1, 1, 1]))]
        b.add_op("STRIDED_SLICE", [x, *consts], [s], begin_mask=0, end_mask=0, ellipsis_mask=0,
                 new_axis_mask=0, shrink_axis_mask=0, offset=False)
        c = b.add_tensor(f"c{k}", (1, hi - lo, 16, 8), scale=0.2, zero_point=-2)
        b.add_op("CONV_2D", [s, w, -1], [c], padding="VALID", stride_h=1, stride_w=1,
                 fused_activation_function="NONE")
        outs.append(c)
    y = b.add_tensor("y", (1, 8, 16, 8), scale=0.2, zero_point=-2)
    b.add_op("CONCATENATION", outs, [y], axis=1, fused_activation_function="NONE")
    b.inputs, b.outputs = [x0], [y]
    return b.build()


def test_consumed_rows_are_reused_in_microinterp_and_the_wheel():
    model = bands_model()
    plain = optimize(model, budget_s=0.5)
    shared = optimize(model, budget_s=0.5, share_bytes=True)
    assert shared.predicted_head < plain.predicted_head
    runs_as_planned(model, shared, seed=2)
