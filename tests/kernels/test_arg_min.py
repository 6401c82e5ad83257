"""ARG_MIN against the TFLM wheel: float32/int8 input, int32 output, constant or run-time axis, ties and NaNs."""

from __future__ import annotations

from hypothesis import given

from .arg_min_max_cases import arg_cases, check_arg, check_refusals


@given(case=arg_cases())
def test_arg_min_matches_tflm(case):
    check_arg("ARG_MIN", *case)


def test_invalid_models_refused():
    check_refusals("ARG_MIN")
