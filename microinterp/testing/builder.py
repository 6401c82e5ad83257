"""The model writer under the name the tests use: :mod:`microinterp.model_writer` (production code) builds every
``.tflite`` the tests run, in process."""

from ..model_writer import ModelBuilder, SubgraphBuilder

__all__ = ["ModelBuilder", "SubgraphBuilder"]
