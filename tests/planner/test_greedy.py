"""The greedy planner: properties, TFLM's exact rules, the zoo's heads, and random graphs against the wheel.

``tflm_literal`` below is a line-by-line transcription of ``GreedyMemoryPlanner::CalculateOffsetsIfNeeded``
(arrays, bubble sort, linked list of entries) kept deliberately naive, so that ``plan_greedy`` — written for
readability — can be checked against it on random inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter, load_model
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.planner import BufferRequest, allocation_infos, buffer_requests, plan_greedy
from microinterp.planner.greedy import _insert, plan_size

from .graphgen import INTERPRETER_OPS, WHEEL_OPS, random_graph

# -- a literal transcription of TFLM's C++ ---------------------------------------------------------------------------


def tflm_literal(reqs: list[BufferRequest]) -> list[int]:
    n = len(reqs)
    if n == 0:
        return []
    sizes_sorted, ids_sorted, offsets = [0] * n, [0] * n, [0] * n
    idx_from_tail, idx_from_head = n, 0
    for i, r in enumerate(reqs):
        if r.offline_offset == -1:
            idx_from_tail -= 1
            sizes_sorted[idx_from_tail], ids_sorted[idx_from_tail], offsets[i] = r.size, i, -1
        else:
            sizes_sorted[idx_from_head], ids_sorted[idx_from_head], offsets[i] = r.size, i, r.offline_offset
            idx_from_head += 1
    # ReverseSortInPlace on the online part
    vals, ids = sizes_sorted[idx_from_head:], ids_sorted[idx_from_head:]
    swapped = True
    while swapped:
        swapped = False
        for i in range(1, len(vals)):
            if vals[i - 1] < vals[i]:
                vals[i - 1], vals[i] = vals[i], vals[i - 1]
                ids[i - 1], ids[i] = ids[i], ids[i - 1]
                swapped = True
    ids_sorted[idx_from_head:] = ids
    # entries: [offset, requirements_index, next_entry_index]
    entries = [[0, 0, -1] for _ in range(n)]
    first_entry_index = 0
    entries[0][2] = -1
    bid = ids_sorted[0]
    entries[0][1] = bid
    if reqs[bid].offline_offset == -1:
        offsets[bid] = 0
    entries[0][0] = offsets[bid]
    next_free = 1

    def overlaps(entry, first, last):
        r = reqs[entry[1]]
        return not (r.first > last or first > r.last)

    def next_active(start, first, last):
        if start is None:
            cand = first_entry_index
        else:
            if entries[start][2] == -1:
                return None
            cand = entries[start][2]
        while True:
            if overlaps(entries[cand], first, last):
                return cand
            if entries[cand][2] == -1:
                return None
            cand = entries[cand][2]

    for i in range(1, n):
        bid = ids_sorted[i]
        want = reqs[bid]
        candidate = 0
        if want.offline_offset == -1:
            prior = None
            while True:
                nxt = next_active(prior, want.first, want.last)
                if prior is not None:
                    end = entries[prior][0] + reqs[entries[prior][1]].size
                    candidate = max(candidate, end)
                if nxt is None:
                    break
                if entries[nxt][0] - candidate >= want.size:
                    break
                prior = nxt
        else:
            candidate = want.offline_offset
        offsets[bid] = candidate
        new = next_free
        entries[new][0], entries[new][1] = candidate, bid
        next_free += 1
        if entries[first_entry_index][0] > candidate:
            entries[new][2] = first_entry_index
            first_entry_index = new
        else:
            cur = first_entry_index
            while True:
                nxt = entries[cur][2]
                if nxt == -1:
                    entries[cur][2] = new
                    entries[new][2] = -1
                    break
                if entries[nxt][0] > candidate:
                    entries[new][2] = entries[cur][2]
                    entries[cur][2] = new
                    break
                cur = nxt
    return offsets


# -- strategies ------------------------------------------------------------------------------------------------------


@st.composite
def request_lists(draw, offline: bool = False, max_size: int = 24):
    n = draw(st.integers(0, max_size))
    out = []
    for _ in range(n):
        size = draw(st.sampled_from([0, 16, 32, 48, 64, 96, 128, 256, 1024]))
        if draw(st.integers(0, 19)) == 0:
            first = last = -1  # a tensor nothing uses: TFLM still plans it
        else:
            first = draw(st.integers(0, 12))
            last = draw(st.integers(first, 14))
        off = -1
        if offline and draw(st.booleans()):
            off = draw(st.integers(0, 64)) * 16
        out.append(BufferRequest(size, first, last, off))
    return out


def overlap_in_time(a: BufferRequest, b: BufferRequest) -> bool:
    return not (a.first > b.last or b.first > a.last)


def peak_live_bytes(reqs: list[BufferRequest]) -> int:
    times = {t for r in reqs for t in (r.first, r.last)}
    return max((sum(r.size for r in reqs if r.first <= t <= r.last) for t in times), default=0)


# -- properties ------------------------------------------------------------------------------------------------------


@given(request_lists(offline=True))
@example([BufferRequest(16, 0, 1), BufferRequest(16, 0, 1), BufferRequest(16, 0, 1)])
@example([BufferRequest(0, 0, 3), BufferRequest(32, 1, 2, 0), BufferRequest(16, 2, 2)])
def test_matches_literal_transcription_of_tflm(reqs):
    assert plan_greedy(reqs) == tflm_literal(reqs)


@given(request_lists(offline=True))
def test_no_two_live_buffers_overlap(reqs):
    offsets = plan_greedy(reqs)
    assert len(offsets) == len(reqs) and all(o >= 0 for o in offsets)
    for i, a in enumerate(reqs):
        for j in range(i + 1, len(reqs)):
            b = reqs[j]
            if a.offline_offset != -1 and b.offline_offset != -1:
                continue  # an offline plan is taken as given, overlaps and all
            if a.size and b.size and overlap_in_time(a, b):
                disjoint = offsets[i] + a.size <= offsets[j] or offsets[j] + b.size <= offsets[i]
                assert disjoint, f"buffers {i} and {j} are alive together and overlap in memory"


@given(request_lists())
def test_plan_size_at_least_peak_live_bytes(reqs):
    offsets = plan_greedy(reqs)
    size = plan_size(reqs, offsets)
    assert size >= peak_live_bytes(reqs)
    assert size <= sum(r.size for r in reqs)  # never worse than putting everything side by side
    assert size == max((o + r.size for o, r in zip(offsets, reqs)), default=0)


@given(request_lists(offline=True))
def test_offline_offsets_are_kept(reqs):
    offsets = plan_greedy(reqs)
    for r, o in zip(reqs, offsets):
        if r.offline_offset != -1:
            assert o == r.offline_offset
    assert plan_size(reqs, offsets) >= max((r.offline_offset + r.size for r in reqs), default=0)


@given(request_lists(offline=True))
def test_deterministic(reqs):
    first = plan_greedy(reqs)
    assert plan_greedy(list(reqs)) == first
    assert plan_greedy([BufferRequest(r.size, r.first, r.last, r.offline_offset) for r in reqs]) == first


# -- exact rules -----------------------------------------------------------------------------------------------------


def test_empty_plan():
    assert plan_greedy([]) == [] and plan_size([], []) == 0


def test_equal_sizes_higher_id_first():
    reqs = [BufferRequest(16, 0, 1)] * 3
    assert plan_greedy(reqs) == [32, 16, 0]


def test_largest_first():
    reqs = [BufferRequest(16, 0, 1), BufferRequest(64, 0, 1), BufferRequest(32, 0, 1)]
    assert plan_greedy(reqs) == [96, 0, 64]


def test_size_order_is_stable_among_equals_and_respects_size():
    reqs = [BufferRequest(32, 0, 0), BufferRequest(64, 0, 0), BufferRequest(32, 0, 0), BufferRequest(64, 0, 0)]
    # order: 64 (id 3), 64 (id 1), 32 (id 2), 32 (id 0)
    assert plan_greedy(reqs) == [160, 64, 128, 0]


def test_first_fit_takes_the_lowest_gap_that_fits():
    reqs = [BufferRequest(32, 0, 5, 0), BufferRequest(32, 0, 5, 64), BufferRequest(16, 0, 5, 128),
            BufferRequest(32, 2, 3), BufferRequest(48, 2, 3)]
    # gaps among the offline buffers: [32, 64) and [96, 128), 32 bytes each. The 48-byte buffer is placed first
    # (larger), fits no gap and goes after the last (144); the 32-byte one takes the first gap, not the later one.
    assert plan_greedy(reqs) == [0, 64, 128, 32, 144]


def test_first_fit_not_best_fit():
    reqs = [BufferRequest(64, 0, 9, 0), BufferRequest(16, 0, 9, 96), BufferRequest(16, 0, 9, 128),
            BufferRequest(16, 1, 1)]
    # gaps: [64, 96) of 32 bytes and [112, 128) of exactly 16: first fit takes the first one
    assert plan_greedy(reqs) == [0, 96, 128, 64]


def test_buffers_with_disjoint_lifetimes_share_memory():
    reqs = [BufferRequest(64, 0, 1), BufferRequest(64, 2, 3), BufferRequest(64, 4, 5)]
    assert plan_greedy(reqs) == [0, 0, 0] and plan_size(reqs, [0, 0, 0]) == 64


def test_lifetimes_are_inclusive():
    reqs = [BufferRequest(64, 0, 1), BufferRequest(64, 1, 2)]
    assert sorted(plan_greedy(reqs)) == [0, 64]


def test_first_buffer_goes_to_zero_and_offline_ones_come_first():
    reqs = [BufferRequest(16, 0, 0), BufferRequest(1024, 0, 0, 512)]
    # the offline buffer is placed first even though it is listed second; the online one goes below it
    assert plan_greedy(reqs) == [0, 512]
    reqs = [BufferRequest(16, 0, 0, 32), BufferRequest(16, 0, 0, 0)]
    assert plan_greedy(reqs) == [32, 0]


def test_zero_size_buffers_do_not_push_others():
    reqs = [BufferRequest(0, 0, 3), BufferRequest(32, 0, 3), BufferRequest(0, 0, 3)]
    assert plan_greedy(reqs) == [0, 0, 0]


def test_unused_buffers_only_overlap_each_other():
    reqs = [BufferRequest(64, 0, 3), BufferRequest(32, -1, -1), BufferRequest(32, -1, -1)]
    assert plan_greedy(reqs) == [0, 32, 0]


def test_insertion_order_rule():
    offsets = {0: 16, 1: 16, 2: 0, 3: 48, 4: 16}
    placed: list[int] = []
    for i in (0, 1):
        _insert(placed, i, offsets[i], offsets)
    assert placed == [0, 1]  # equal offset: after the existing entry
    _insert(placed, 2, 0, offsets)
    assert placed == [2, 0, 1]  # strictly smaller than the first: new head
    _insert(placed, 3, 48, offsets)
    _insert(placed, 4, 16, offsets)
    assert placed == [2, 0, 1, 4, 3]  # after every entry whose offset is <= its own


# -- the zoo: the wheel's figures ------------------------------------------------------------------------------------

ZOO_HEADS = {"person_detect.tflite": 55296, "vww_96_int8.tflite": 73728, "kws_ref_model.tflite": 16000,
             "pretrainedResnet_quant.tflite": 49152, "ad01_int8.tflite": 768,
             "micro_speech_quantized.tflite": 5968, "hello_world_int8.tflite": 32}


@pytest.mark.parametrize("name,head", sorted(ZOO_HEADS.items()))
def test_zoo_head_matches_the_wheel(zoo, name, head):
    """These models need no scratch buffer, so tensors alone give the wheel's "Arena allocation head"."""
    requests, _ = buffer_requests(allocation_infos(load_model(zoo(name)), []))
    assert plan_size(requests, plan_greedy(requests)) == head


# -- random graphs against the wheel ----------------------------------------------------------------------------------


def _our_head(data: bytes) -> int:
    requests, _ = buffer_requests(allocation_infos(load_model(data), []))
    return plan_size(requests, plan_greedy(requests))


@given(seed=st.integers(0, 2**32 - 1), offline=st.booleans())
@example(seed=245, offline=False)
def test_random_graphs_head_matches_wheel(seed, offline):
    tflm = pytest.importorskip("microinterp.testing.tflm")
    pytest.importorskip("tflite_micro")
    g = random_graph(np.random.default_rng(seed), ops=WHEEL_OPS, offline=offline)
    assert _our_head(g.data) == tflm.tflm_arena_head(g.data), g.ops


def _interpreter_ops() -> tuple[str, ...]:
    # RESHAPE always; the other scratch-free ops of graphgen as soon as their kernels are registered
    return tuple(op for op in WHEEL_OPS if op in REFERENCE_KERNELS) or INTERPRETER_OPS


@given(seed=st.integers(0, 2**32 - 1), offline=st.booleans())
def test_interpreter_head_matches_wheel(seed, offline):
    tflm = pytest.importorskip("microinterp.testing.tflm")
    pytest.importorskip("tflite_micro")
    g = random_graph(np.random.default_rng(seed), ops=_interpreter_ops(), offline=offline)
    assert Interpreter(g.data).head_bytes == tflm.tflm_arena_head(g.data), g.ops
