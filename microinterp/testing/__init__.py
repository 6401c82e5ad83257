"""Helpers for tests and users' own checks: an in-process model builder and the TFLM comparison harness."""

from .builder import ModelBuilder, SubgraphBuilder

__all__ = ["ModelBuilder", "SubgraphBuilder"]
