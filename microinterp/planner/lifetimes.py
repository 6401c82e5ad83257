"""Buffer lifetimes, following TFLM's ``micro_allocation_info.cc`` as the pinned wheel implements it.

One :class:`AllocationInfo` per tensor of every subgraph (subgraph 0's tensors first, then 1's, ...), then one per
scratch-buffer request in request order. A global counter ``scope`` walks the ops:

* subgraph inputs: ``first_created = scope`` (if unset), ``last_used = scope``;
* per op: ``scope += 1``; outputs get ``first_created`` (if unset); ``start = scope``; for IF/WHILE/CALL_ONCE each
  referenced subgraph in TFLM's order (then, else / cond, body / init) gets ``scope += 1`` and is marked
  recursively; then inputs (skipping -1) and outputs get ``last_used = scope``; the op's scratch requests get
  ``[start, scope]``, so a control-flow op's scratch spans its subgraphs;
* subgraph outputs: ``first_created = scope`` (if unset), ``last_used = scope`` — a graph output that no op produces
  is therefore born at the end; a tensor nothing touches keeps ``[-1, -1]`` and is still planned.

Only subgraph 0 is marked directly. A tensor needs allocating iff it has no constant data, is not a variable (unless
an offline offset places it: then the planner, not the tail, holds it), has a non-zero size and no kernel pointed it
elsewhere at prepare (VAR_HANDLE outputs). Offline offsets are
indexed by the tensor's position among all subgraphs' tensors. Sizes handed to the planner are rounded up to 16 bytes.

Some published TFLM sources overwrite ``first_created`` on every creation and mark subgraph outputs at the start of
a subgraph; the wheel does neither (random graphs in ``tests/planner`` agree with its arena head), and the wheel wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError
from ..kernels.base import ScratchRequest
from ..model import Model

ALIGNMENT = 16


@dataclass
class AllocationInfo:
    """One tensor or scratch buffer, with TFLM's lifetime fields (-1 = never set)."""

    kind: str                 # "tensor" or "scratch"
    subgraph: int             # for tensors: their subgraph; for scratch: the requesting op's subgraph
    index: int                # tensor index in its subgraph, or scratch request number
    nbytes: int
    first_created: int = -1
    last_used: int = -1
    offline_offset: int = -1
    needs_allocating: bool = False


@dataclass(frozen=True)
class BufferRequest:
    """What the planner sees: an aligned size, an inclusive lifetime and an optional fixed (offline) offset."""

    size: int
    first: int
    last: int
    offline_offset: int = -1


def align_up(n: int, alignment: int = ALIGNMENT) -> int:
    return (n + alignment - 1) // alignment * alignment


def allocation_infos(model: Model, scratch: list[ScratchRequest],
                     unplanned: frozenset[tuple[int, int]] | set[tuple[int, int]] = frozenset(),
                     op_scopes: dict[int, tuple[int, int]] | None = None) -> list[AllocationInfo]:
    """Build TFLM's AllocationInfo array (tensors of all subgraphs, then scratch requests) with lifetimes.

    ``unplanned`` holds ``(subgraph, tensor)`` pairs whose data a kernel's Prepare pointed elsewhere (VAR_HANDLE
    points its output at the resource id in its OpData): TFLM builds this array after Prepare and plans only
    tensors whose data pointer is still null. ``op_scopes`` (optional) receives, per op of subgraph 0, the scopes
    ``(start, end)`` its inputs and outputs are used in (they differ only for control-flow ops)."""
    infos: list[AllocationInfo] = []
    base: list[int] = []
    offline = model.offline_offsets
    for sg in model.subgraphs:
        base.append(len(infos))
        for t in sg.tensors:
            off = offline[len(infos)] if offline is not None else -1
            needs = t.data is None and (not t.is_variable or off != -1) and t.nbytes != 0 \
                and (sg.index, t.index) not in unplanned
            infos.append(AllocationInfo("tensor", sg.index, t.index, t.nbytes, offline_offset=off,
                                        needs_allocating=needs))
    scratch_infos = [AllocationInfo("scratch", r.subgraph, i, r.nbytes, needs_allocating=True)
                     for i, r in enumerate(scratch)]
    scope = [0]
    visiting: set[int] = set()

    def created(info: AllocationInfo) -> None:
        if info.first_created == -1:
            info.first_created = scope[0]

    def mark(si: int) -> None:
        if si in visiting:
            raise ModelError(f"subgraph {si} is referenced recursively by a control-flow op")
        visiting.add(si)
        sg = model.subgraphs[si]
        for t in sg.inputs:
            info = infos[base[si] + t]
            created(info)
            info.last_used = scope[0]
        for op in sg.operators:
            scope[0] += 1
            for t in op.outputs:
                if t >= 0:
                    created(infos[base[si] + t])
            start = scope[0]
            for ref in op.subgraph_refs:
                scope[0] += 1
                mark(ref)
            for t in op.inputs:
                if t >= 0:
                    infos[base[si] + t].last_used = scope[0]
            for t in op.outputs:
                if t >= 0:
                    infos[base[si] + t].last_used = scope[0]
            if si == 0 and op_scopes is not None:
                op_scopes[op.index] = (start, scope[0])
            for req, info in zip(scratch, scratch_infos):
                if req.subgraph == si and req.node == op.index:
                    if info.first_created == -1:
                        info.first_created = start
                    info.last_used = scope[0]
        for t in sg.outputs:
            info = infos[base[si] + t]
            created(info)
            info.last_used = scope[0]
        visiting.discard(si)

    mark(0)
    return infos + scratch_infos


def buffer_requests(infos: list[AllocationInfo]) -> tuple[list[BufferRequest], list[int]]:
    """The planner's input (aligned sizes, lifetimes, offline offsets) and, per request, its index in ``infos``."""
    requests, owners = [], []
    for i, info in enumerate(infos):
        if info.needs_allocating:
            requests.append(BufferRequest(align_up(info.nbytes), info.first_created, info.last_used,
                                          info.offline_offset))
            owners.append(i)
    return requests, owners
