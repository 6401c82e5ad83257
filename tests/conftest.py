"""Shared test configuration.

Hypothesis profiles: ``default`` (a modest number of examples, for the default suite) and ``slow`` (>= 300 examples
per property; run with ``pytest -m "slow or not slow" --hypothesis-profile=slow``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=20, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("slow", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("default")

MODELS_DIR = Path(__file__).resolve().parents[2] / "shared" / "models"
DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"


def zoo_model(name: str) -> Path:
    """Path of a model in ../shared/models; skips the test cleanly when the zoo is absent."""
    path = MODELS_DIR / name
    if not path.exists():
        pytest.skip(f"model zoo not available ({path})")
    return path


@pytest.fixture
def zoo():
    return zoo_model
