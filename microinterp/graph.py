"""What TFLM's ``MicroInterpreterGraph`` and ``MicroResourceVariables`` do for kernels that reach beyond their op.

* :class:`MicroGraph` -- every subgraph's ops, prepared and bound, and ``invoke_subgraph(i)``: IF, WHILE and
  CALL_ONCE run other subgraphs through it and copy tensors between their op and the subgraph's inputs and outputs
  (``subgraph_inputs(i)`` / ``subgraph_outputs(i)`` are the arena views). TFLM initialises and prepares the ops of
  *every* subgraph, subgraph 0 first and then in index order, and runs a subgraph's ops in order, stopping at the
  first failure; so does this.
* :class:`ResourceVariables` -- the table behind VAR_HANDLE / ASSIGN_VARIABLE / READ_VARIABLE
  (``micro_resource_variable.cc``): a variable is identified by ``(container, shared_name)``; its id is its
  creation order. Its buffer is allocated in the arena's **tail** when an ASSIGN_VARIABLE that can see the handle
  is prepared, and filled with its default value: the assigned tensor's first zero point, cast to int8, when that
  tensor is quantized, else 0 (a memset, so only that byte counts). ``reset()`` memsets every buffer back to its
  default (TFLM's ``ResetAll`` from ``MicroInterpreter::Reset``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class ResourceVariables:
    """TFLM's MicroResourceVariables: ids by ``(container, shared_name)``, buffers in the arena tail."""

    def __init__(self) -> None:
        self.names: list[tuple[str | None, str | None]] = []
        self.buffers: list[np.ndarray | None] = []
        self.defaults: list[int] = []
        #: (subgraph, tensor) -> id of the VAR_HANDLE output that tensor is (what TFLM's data.i32 points at)
        self.handles: dict[tuple[int, int], int] = {}

    def create_id(self, container: str | None, shared_name: str | None) -> int:
        """``CreateIdIfNoneFound``: the id of an existing variable with that name (any container when
        ``container`` is None), else a new one."""
        for i, (c, n) in enumerate(self.names):
            if (container is None or container == c) and shared_name == n:
                return i
        self.names.append((container, shared_name))
        self.buffers.append(None)
        self.defaults.append(0)
        return len(self.names) - 1

    def allocate(self, rid: int, arena: Any, tensor: Any) -> None:
        """``Allocate``: the first allocation of variable ``rid`` takes ``tensor.nbytes`` from the tail."""
        if self.buffers[rid] is not None:
            return
        buf = arena.allocate_persistent(tensor.nbytes)
        q = tensor.quantization
        default = int(q.zero_points[0]) if q is not None and q.zero_points.size else 0
        self.defaults[rid] = default & 0xFF      # int8_t zero point, memset: its low byte
        buf[...] = self.defaults[rid]
        self.buffers[rid] = buf

    def assign(self, rid: int, value: np.ndarray, fail: Callable[[str], Exception]) -> None:
        buf = self._buffer(rid, fail)
        raw = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        if raw.size != buf.size:
            raise fail(f"resource variable {rid} holds {buf.size} bytes, the assigned tensor has {raw.size}")
        buf[...] = raw

    def read(self, rid: int, out: np.ndarray, fail: Callable[[str], Exception]) -> None:
        buf = self._buffer(rid, fail)
        flat = out.reshape(-1).view(np.uint8)
        if flat.size != buf.size:
            raise fail(f"resource variable {rid} holds {buf.size} bytes, the output tensor has {flat.size}")
        flat[...] = buf

    def bind_read(self, handle: np.ndarray, out: np.ndarray, fail: Callable[[str], Exception]) -> Callable[[], None]:
        """:meth:`read` of the id ``handle`` holds at each call into the fixed view ``out``, as a call without
        arguments (:meth:`_bound_copy`)."""
        return self._bound_copy(handle, out.reshape(-1).view(np.uint8), False, lambda rid: self.read(rid, out, fail))

    def bind_assign(self, handle: np.ndarray, value: np.ndarray,
                    fail: Callable[[str], Exception]) -> Callable[[], None]:
        """:meth:`assign` of the fixed view ``value`` to the id ``handle`` holds at each call (:meth:`_bound_copy`)."""
        return self._bound_copy(handle, value.reshape(-1).view(np.uint8), True,
                                lambda rid: self.assign(rid, value, fail))

    def _bound_copy(self, handle: np.ndarray, flat: np.ndarray, into_buffer: bool,
                    checked: Callable[[int], None]) -> Callable[[], None]:
        """The copy between the tensor's flat bytes ``flat`` and the buffer of the id ``handle`` holds, direct when
        the id names a buffer of that size, else ``checked(rid)`` (:meth:`read` / :meth:`assign`, which raise what
        they raise)."""
        ids, buffers = handle.reshape(-1), self.buffers

        def call() -> None:
            rid = int(ids[0])
            buf = buffers[rid] if 0 <= rid < len(buffers) else None
            if buf is None or buf.size != flat.size:
                checked(rid)
            elif into_buffer:
                buf[...] = flat
            else:
                flat[...] = buf
        return call

    def _buffer(self, rid: int, fail: Callable[[str], Exception]) -> np.ndarray:
        if not 0 <= rid < len(self.names):
            raise fail(f"resource variable {rid} does not exist")
        buf = self.buffers[rid]
        if buf is None:
            raise fail(f"resource variable {rid} ({self.names[rid][1]!r}) has no buffer: no ASSIGN_VARIABLE of it "
                       "could be prepared (TFLM allocates it when an ASSIGN_VARIABLE sees its VAR_HANDLE)")
        return buf

    def reset(self) -> None:
        for buf, default in zip(self.buffers, self.defaults):
            if buf is not None:
                buf[...] = default


class MicroGraph:
    """Every subgraph's bound calls and views (filled in by the interpreter after the build)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.resources = ResourceVariables()
        self.calls: list[list[Callable[[], None]]] = [[] for _ in model.subgraphs]
        self.views: list[list[np.ndarray | None]] = [[] for _ in model.subgraphs]
        #: how often each subgraph other than 0 has been invoked (by IF, WHILE, CALL_ONCE) since the build
        self.invocations = [0] * len(model.subgraphs)

    def num_inputs(self, si: int) -> int:
        return len(self.model.subgraphs[si].inputs)

    def num_outputs(self, si: int) -> int:
        return len(self.model.subgraphs[si].outputs)

    def subgraph_inputs(self, si: int) -> list[np.ndarray]:
        views = self.views[si]
        return [views[t] for t in self.model.subgraphs[si].inputs]

    def subgraph_outputs(self, si: int) -> list[np.ndarray]:
        views = self.views[si]
        return [views[t] for t in self.model.subgraphs[si].outputs]

    def invoke_subgraph(self, si: int) -> None:
        self.invocations[si] += 1
        for call in self.calls[si]:
            call()


def copier(sources: list[np.ndarray], targets: list[np.ndarray]) -> Callable[[], None]:
    """:func:`copy_tensors` of fixed views as a call without arguments: the byte views taken once (for ops bound to
    the arena, such as a WHILE's loop variables). Pairs that are one array, or empty, copy nothing."""
    pairs = []
    for src, dst in zip(sources, targets):
        if src is dst or not dst.size:
            continue
        d = dst.reshape(-1).view(np.uint8)
        s = src.reshape(-1).view(np.uint8) if src.flags.c_contiguous else None
        if s is None or not np.shares_memory(d, dst):       # a view that would not write through: copy each time
            return lambda: copy_tensors(sources, targets)
        pairs.append((d, s))

    def copy() -> None:
        for d, s in pairs:
            d[...] = s
    return copy


def copy_tensors(sources: list[np.ndarray], targets: list[np.ndarray]) -> None:
    """TFLM's ``Copy*To*`` helpers: a memcpy per pair (sizes were checked at prepare)."""
    for src, dst in zip(sources, targets):
        if src is not dst:
            dst.reshape(-1).view(np.uint8)[...] = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
