"""MINIMUM against the TFLM wheel: float32/int8/int16/int32/int64, equal shapes and 5-D broadcasting."""

from __future__ import annotations

from hypothesis import given

from .max_min_cases import check_max_min, check_refusals, max_min_cases


@given(case=max_min_cases())
def test_minimum_matches_tflm(case):
    check_max_min("MINIMUM", *case)


def test_invalid_models_refused():
    check_refusals("MINIMUM")
