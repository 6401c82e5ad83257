"""Several interpreters in one arena, as several ``MicroInterpreter``s built on one ``MicroAllocator`` in TFLM
("multi-tenant" allocation, ``micro_allocator.cc``).

TFLM's rules, which :class:`SharedArena` follows:

* **Tails stack.** Each model's persistent data (kernel persistent buffers, variable tensors, resource variables)
  is allocated from the arena's tail when its interpreter is built, below the previous tenants'; it stays there.
* **Heads overlap.** Every model's planned tensors and scratch buffers start at the arena's (aligned) start:
  ``CommitStaticMemoryPlan`` reserves ``max_head_buffer_usage_`` -- the largest plan committed so far -- so the
  head is as large as the largest tenant's plan.
* ``used_bytes = start padding + max(head_i) + end padding + sum(tail_i)``, where ``tail_i`` is the sum of a
  tenant's 16-byte-aligned persistent allocations (:func:`footprint`) and the end padding aligns the first one to
  the arena's end address; a tenant that does not fit fails its build with the arena-too-small error naming the
  smallest shared size that holds all tenants (:meth:`SharedArena.needed_for`), and leaves the arena as it was.
* **One tenant at a time.** Invoking one tenant overwrites the head, so the inputs and outputs of the others (which
  live there) are clobbered: set a tenant's inputs right before its invoke and read its outputs right after, as
  on the device. Persistent state (variables, resource variables, kernel state) lives in each tenant's own tail
  and survives the others' invokes.

Use::

    shared = SharedArena(200_000)
    kws = Interpreter("kws.tflite", arena=shared)
    vww = Interpreter("vww.tflite", arena=shared)
    shared.used_bytes      # max(head) + both tails
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .arena import ALIGNMENT, Arena, SizingArena, align_up
from .errors import ArenaOverflowError


@dataclass(frozen=True)
class Tenant:
    """One interpreter's figures in a shared arena: its plan (head) and its persistent bytes (tail)."""

    name: str
    head_bytes: int
    tail_bytes: int


class SharedArena:
    """One arena of exactly ``size`` bytes for several interpreters (see the module docstring)."""

    def __init__(self, size: int):
        self.arena = Arena(int(size))
        self.tenants: list[Tenant] = []

    #: figures read from the one arena: ``size``, ``start`` (alignment padding), ``head_bytes`` (the largest tenant
    #: plan), ``tail_bytes`` (every tenant's persistent bytes) and ``used_bytes`` (what TFLM's
    #: ``arena_used_bytes()`` reports for any tenant: padding + max head + all tails)
    FIGURES = frozenset({"size", "start", "head_bytes", "tail_bytes", "used_bytes"})

    def __getattr__(self, name: str) -> Any:
        if name in SharedArena.FIGURES:
            return getattr(self.arena, name)
        raise AttributeError(name)

    def tenant_arena(self, name: str) -> TenantArena:
        """The arena view an interpreter builds on (``Interpreter(model, arena=shared)`` calls this)."""
        return TenantArena(self, name)

    @property
    def end_padding(self) -> int:
        """Bytes between the arena's end and the first 16-byte-aligned address below it (the tail starts there)."""
        return (self.arena.buffer.ctypes.data + self.size) % ALIGNMENT if self.tenants else 0

    def needed_for(self, head: int, tail: int) -> int:
        """The smallest shared size (for this buffer's address) that holds the current tenants and one more with
        ``head`` / ``tail`` (:func:`footprint`) bytes: the aligned tail end must sit ``max head + all tails``
        above the aligned start."""
        addr = self.arena.buffer.ctypes.data
        tails = self.tail_bytes - self.end_padding + tail
        top = align_up(addr) + max(self.head_bytes, head) + tails
        return align_up(top) - addr

    def __repr__(self) -> str:
        return (f"SharedArena(size={self.size}, used={self.used_bytes}, head={self.head_bytes}, "
                f"tenants={[(t.name, t.head_bytes, t.tail_bytes) for t in self.tenants]})")


class TenantArena:
    """What one tenant's build sees: the shared arena's tail allocation, a head reservation that only grows, and
    the figures of its own plan and tail. A failed build rolls the shared arena back."""

    def __init__(self, shared: SharedArena, name: str):
        self.shared = shared
        self.name = name
        arena = shared.arena
        self._tail0, self._head0 = arena.tail, arena.head
        self.head = 0                   # this tenant's plan

    # -- the Arena interface the interpreter uses ------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name in ("start", "size", "buffer"):
            return getattr(self.shared.arena, name)
        raise AttributeError(name)

    def allocate_persistent(self, nbytes: int, alignment: int = 16) -> np.ndarray:
        return self.shared.arena.allocate_persistent(nbytes, alignment)

    def set_head(self, nbytes: int) -> None:
        """``ReserveNonPersistentOverlayMemory(max_head_buffer_usage_)``: the head becomes the largest plan."""
        self.head = int(nbytes)
        arena = self.shared.arena
        arena.set_head(max(arena.head, self.head))

    def head_view(self, offset: int, nbytes: int) -> np.ndarray:
        return self.shared.arena.head_view(offset, nbytes)

    @property
    def head_bytes(self) -> int:
        return self.head

    @property
    def tail_bytes(self) -> int:
        return self._tail0 - self.shared.arena.tail

    @property
    def used_bytes(self) -> int:
        return self.shared.used_bytes

    # -- life cycle ------------------------------------------------------------------------------------------------
    def commit(self) -> None:
        self.shared.tenants.append(Tenant(self.name, self.head, self.tail_bytes))

    def rollback(self) -> None:
        arena = self.shared.arena
        arena.tail, arena.head = self._tail0, self._head0

    def overflow(self, e: ArenaOverflowError, prep: Any) -> ArenaOverflowError:
        """The error for a tenant that does not fit: TFLM's figures, and the shared size that would hold it
        (``prep``: the tenant's :class:`~microinterp.runtime.memory.Preparation`)."""
        self.rollback()
        need = self.shared.needed_for(*footprint(prep))
        return ArenaOverflowError(e.what, e.requested, e.available, needed_arena=need,
                                  hint=f"the shared arena holds {len(self.shared.tenants)} other tenant(s) "
                                       f"(head {self.shared.head_bytes}, tails {self.shared.tail_bytes} bytes)")


def footprint(interp: Any) -> tuple[int, int]:
    """``(head, tail)`` of an interpreter's model on its own (``interp``: an Interpreter or its ``preparation``):
    its plan size and the sum of its aligned persistent allocations (no end padding), measured on a sizing arena."""
    sizing = SizingArena()
    getattr(interp, "preparation", interp).allocate(sizing)
    return sizing.head_bytes, sizing.tail_bytes
