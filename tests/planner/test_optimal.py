"""The optimal planner: valid plans (no two live buffers overlap, offline offsets kept), never above TFLM's greedy
head, never below the lower bound, and at the bound on the zoo models where TFLM is above it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from microinterp import Interpreter
from microinterp.planner import BufferRequest, plan_greedy
from microinterp.planner.greedy import plan_size
from microinterp.planner.optimal import lower_bound, plan_optimal

from .test_greedy import overlap_in_time, peak_live_bytes, request_lists

ZOO = Path(__file__).resolve().parents[3] / "shared" / "models"


@given(request_lists(offline=True, max_size=30))
def test_optimal_plans_are_valid_and_between_the_bound_and_tflm(reqs):
    offsets = plan_optimal(reqs, budget_s=0.05)
    assert len(offsets) == len(reqs) and all(o >= 0 for o in offsets)
    for i, a in enumerate(reqs):
        if a.offline_offset != -1:
            assert offsets[i] == a.offline_offset
        for j in range(i + 1, len(reqs)):
            b = reqs[j]
            if a.offline_offset != -1 and b.offline_offset != -1:
                continue
            if a.size and b.size and overlap_in_time(a, b):
                assert offsets[i] + a.size <= offsets[j] or offsets[j] + b.size <= offsets[i]
    head = plan_size(reqs, offsets)
    assert lower_bound(reqs) <= head <= plan_size(reqs, plan_greedy(reqs))


@given(request_lists(max_size=30))
def test_the_lower_bound_is_the_peak_of_live_bytes(reqs):
    assert lower_bound(reqs) == peak_live_bytes(reqs)


def test_a_fragmenting_case_beats_tflm():
    """Greedy (largest first, first fit) leaves a hole the later buffers cannot use: 304 bytes; the bound, 240, is
    reachable and the search finds it."""
    reqs = [BufferRequest(64, 0, 4), BufferRequest(64, 0, 1), BufferRequest(32, 4, 6), BufferRequest(48, 1, 5),
            BufferRequest(64, 3, 5), BufferRequest(96, 5, 5)]
    assert plan_size(reqs, plan_greedy(reqs)) == 304
    assert plan_size(reqs, plan_optimal(reqs)) == lower_bound(reqs) == 240


@pytest.mark.skipif(not (ZOO / "vww_96_int8.tflite").exists(), reason="../shared/models not present")
def test_zoo_models_reach_the_bound():
    for path in sorted(ZOO.glob("*.tflite")):
        if "mobilenet" in path.name:
            continue
        it = Interpreter(path)
        req = it.runtime.plan["requests"]
        head = plan_size(req, plan_optimal(req))
        assert head == lower_bound(req) <= it.head_bytes, path.name
        assert Interpreter(path, planner="optimal").head_bytes == head
    vww = ZOO / "vww_96_int8.tflite"
    assert Interpreter(vww, planner="optimal").head_bytes == 55_296 < Interpreter(vww).head_bytes == 73_728
