"""Runtimes: the seam between the user-facing :class:`~microinterp.interpreter.Interpreter` and what runs the model
(:mod:`.base`): :class:`InMemoryRuntime` (:mod:`.memory`) and the out-of-core :class:`~microinterp.pager.Pager`; the
per-op records both produce (:mod:`.profile`)."""

from .base import OutOfCore, Runtime
from .memory import InMemoryRuntime, Preparation

__all__ = ["InMemoryRuntime", "OutOfCore", "Preparation", "Runtime"]
