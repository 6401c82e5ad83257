"""The runtime seam: what :class:`~microinterp.interpreter.Interpreter` needs from whatever runs the model.

Two implementations:

* :class:`~microinterp.runtime.memory.InMemoryRuntime` -- TFLM's own execution: every tensor at its planned offset in
  one arena, one bound call per op (``micro_interpreter_graph.cc``'s ``InvokeSubgraph``);
* :class:`~microinterp.pager.Pager` -- out of core: tensors and weights on a storage backend (an SD image, or
  :class:`~microinterp.storage.null.NullStorage`), op tiles through the arena's pools.

The interpreter is the user-facing shell: it loads and resolves the model, checks the user's arguments and builds one
runtime; every call after that goes through this protocol. Out-of-core settings travel as one :class:`OutOfCore`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Runtime(Protocol):
    """One way of running a prepared model (see the module docstring). Tensor indices are the main subgraph's."""

    #: the arena it runs in (``size``, ``head_bytes``, ``tail_bytes``, ``used_bytes``)
    arena: Any
    #: the storage backend holding tensors and weights (out of core: an SD image or null storage), or None
    storage: Any
    #: the planner's facts of the arena's head (``infos``, ``owners``, ``requests``, ``offsets``, ``scratch``,
    #: ``unplanned``: :meth:`~microinterp.runtime.memory.Allocation.plan`); None where tensors are not planned
    plan: Any

    def tensor_views(self) -> list[np.ndarray | None] | None:
        """Views of the main subgraph's tensors that stay valid between invokes, or None (out of core, where
        tensors move between the card and the pools)."""

    def invoke(self, progress: Any = None) -> None:
        """Run every op of the main subgraph once."""

    def reset(self) -> None:
        """Variable tensors and kernel state back to their initial values (TFLM's ``MicroInterpreter::Reset``)."""

    def write_input(self, ti: int, value: np.ndarray) -> None:
        """Copy ``value`` (already checked: the tensor's dtype and shape) into tensor ``ti``."""

    def read_tensor(self, ti: int) -> np.ndarray:
        """A copy of tensor ``ti`` (an :class:`~microinterp.errors.InputError` when it holds no readable data)."""

    def records(self) -> list[Any]:
        """Per-op records of the last invoke (:class:`~microinterp.runtime.profile.OpRecord`)."""

    def simulate(self) -> list[Any]:
        """The records an invoke would produce, without computing it (in memory: the last invoke's)."""

    def recoveries(self) -> list[dict[str, Any]]:
        """Corrupted records recovered so far (out of core with ``recover=True``)."""

    def plan_table(self) -> list[dict[str, Any]]:
        """Every buffer of the arena's head: kind, tensor or scratch, offset, size, lifetime."""

    def layout(self) -> dict[str, Any]:
        """How the arena is used beyond the plan (out of core: the pools, the scratch region, the card)."""

    def failed_op(self) -> int | None:
        """The main subgraph's op an invoke that raised was running (None when not known)."""

    def close(self) -> None:
        """Release what the runtime holds open (the SD image); it cannot invoke afterwards."""


@dataclass(frozen=True)
class OutOfCore:
    """Every out-of-core setting (docs/out-of-core.md): where tensors and weights live (``backing``: a path to an SD
    image or a storage object), how the arena is split into pools (``pools``: input, weights, output shares), how many
    constant bytes stay in flash (``flash``; None: the board's flash), a cap on tile buffers (``tile``), the record
    checksum, whether corrupted records are recovered, whether row-band ops are fused into chains, and the AES-GCM
    key of an encrypted image."""

    backing: str | os.PathLike | Any
    pools: Any = None
    flash: int | None = None
    tile: int | None = None
    checksum: str = "crc32"
    recover: bool = False
    fuse: bool = True
    key: Any = None


def reset_state(tensors: Any, views: Any, ctx: Any, steps: Any) -> None:
    """TFLM's ``MicroInterpreter::Reset`` over one subgraph: its variable tensors back to their initial value,
    then every kernel's ``reset`` (``steps``: ``(kernel, op, data)``). Both runtimes reset through it."""
    for t in tensors:
        reset_variable(t, views[t.index])
    for kernel, op, data in steps:
        kernel.reset(ctx, op, data)


def reset_variable(t: Any, view: np.ndarray | None) -> None:
    """TFLM's ResetTensorData: memset a variable tensor with its zero point (INT8 tensors; only the low byte
    counts) or 0."""
    if t.is_variable and view is not None:
        zp = t.quantization.zero_point if (t.quantization and t.type_name == "INT8") else 0
        view.view(np.uint8)[...] = zp & 0xFF


def check_failed(error: Exception, operators: Any, index: int | None) -> Exception:
    """The :class:`~microinterp.errors.InvokeError` for a kernel's :class:`~microinterp.errors.CheckFailed` (a
    ``TFLITE_CHECK`` of TFLM) while running op ``index`` of ``operators`` (None when the runtime cannot tell
    which: :meth:`Runtime.failed_op`)."""
    from ..errors import InvokeError

    op = None if index is None else operators[index]
    return InvokeError(-1 if op is None else op.index, "?" if op is None else op.key,
                       f"{error}; TFLM's firmware would abort here")
