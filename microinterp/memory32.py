"""What TFLM's arena needs on a real 32-bit MCU: the persistent (tail) part rebuilt from TFLM's own structs.

microinterp's :class:`~microinterp.interpreter.Interpreter` reproduces TFLM's *head* (the planned, non-persistent part)
byte for byte, but its tail only holds what kernels store with ``ctx.persistent`` (per-channel multipliers and shifts,
LUTs) and variable tensors. On a device TFLM's tail also holds the interpreter's own bookkeeping. This module replays
TFLM's tail allocations (``MicroAllocator`` + ``MicroInterpreter::AllocateTensors``, in their order and with their
alignments) with struct sizes for a given ABI:

1. allocator objects: ``SingleArenaBufferAllocator``, ``GreedyMemoryPlanner``, ``MicroAllocator``,
   ``MicroBuiltinDataAllocator``, one ``SubgraphAllocations`` per subgraph (``alignof`` each);
2. one ``TfLiteEvalTensor`` per tensor and one ``NodeAndRegistration`` per op, for every subgraph;
3. each op's parsed builtin options (``TfLiteConvParams`` ...; ``alignof`` = 4, or 1 for bool-only structs);
4. each op's ``OpData`` from the kernel's ``Init`` (``context->AllocatePersistentBuffer``: 16-aligned);
5. the arrays kernels allocate in ``Prepare`` (16-aligned): recorded by running microinterp's reference ``prepare``
   of every op against a recording arena, so they are exactly what microinterp's kernels keep (which follow TFLM);
6. one ``ScratchBufferHandle`` (a pointer) per scratch request, then variable tensors (16-aligned);
7. the input/output ``TfLiteTensor*`` arrays (16-aligned) and one persistent ``TfLiteTensor`` per model input and
   output, with a ``TfLiteAffineQuantization`` and a zero-point ``TfLiteIntArray`` when the tensor is quantized.

Struct sizes are :mod:`microinterp.structs32`'s, laid out with C rules: ``ILP32`` (Cortex-M, AAPCS: 4-byte pointers,
``double``/``int64_t`` 8-aligned) and ``LP64`` (the x86-64 host the ``tflite-micro`` wheel runs on).
The LP64 replay reproduces the wheel's ``RecordingMicroAllocator`` categories byte for byte on the model zoo
(``tests/test_memory32.py``), which checks the replay itself; the ILP32 replay is the device prediction.
``compression=True`` adds the two scratch indices TFLM's ``USE_TFLM_COMPRESSION`` build puts in ``OpDataConv`` and
``OpDataFullyConnected`` (the wheel is built that way; a default Cortex-M build is not).

Ops not in ``structs32.OPDATA`` get no OpData and are listed in :attr:`ArenaEstimate.unknown_ops`. Only subgraph 0's
kernel arrays are replayed (microinterp runs no control flow). The arena start is assumed 16-aligned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ConfigError
from .model import Model, load_model
from .planner.lifetimes import ScratchRequest
from .tflm.structs32 import (
    ABIS,
    AFFINE_QUANTIZATION,
    GREEDY_MEMORY_PLANNER,
    ILP32,
    MICRO_ALLOCATOR,
    MICRO_BUILTIN_DATA_ALLOCATOR,
    NODE_AND_REGISTRATION,
    SCRATCH_BUFFER_HANDLE,
    SINGLE_ARENA_BUFFER_ALLOCATOR,
    SUBGRAPH_ALLOCATIONS,
    TFLITE_EVAL_TENSOR,
    TFLITE_TENSOR,
    Abi,
    builtin_data,
    opdata_bytes,
)

if TYPE_CHECKING:
    from .targets import Target

#: TFLM's MicroArenaBufferAlignment(): kernels' persistent buffers and variables are 16-aligned.
BUFFER_ALIGNMENT = 16


CATEGORIES = ("allocator", "eval_tensors", "nodes", "builtin_data", "op_data", "kernel_arrays", "scratch_handles",
              "variables", "io_pointer_arrays", "io_tensors", "io_quantization")


@dataclass(frozen=True)
class ArenaEstimate:
    """Predicted arena of a model under one ABI: ``persistent_bytes`` (tail) + ``head_bytes`` = ``total_bytes``.

    ``categories`` / ``requested`` give the tail's bytes per :data:`CATEGORIES` entry with / without alignment
    padding; ``counts`` the number of allocations; ``per_op`` one dict per op of subgraph 0 (builtin, op_data, arrays
    bytes as requested). ``counts`` counts structs as TFLM's RecordingMicroAllocator does (one per tensor and per
    node for those two arrays)."""

    abi: str
    compression: bool
    head_bytes: int
    persistent_bytes: int
    categories: Mapping[str, int]
    requested: Mapping[str, int]
    counts: Mapping[str, int]
    per_op: tuple[Mapping[str, Any], ...] = field(repr=False)
    unknown_ops: tuple[str, ...] = ()
    target: str | None = None
    unmodelled_ops: tuple[str, ...] = ()
    buffers: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)   # the head's plan, one row a buffer
    scratch: tuple[ScratchRequest, ...] = field(default=(), repr=False)     # the kernels' scratch requests

    @property
    def total_bytes(self) -> int:
        return self.persistent_bytes + self.head_bytes

    def as_dict(self) -> dict[str, Any]:
        return {"abi": self.abi, "compression": self.compression, "head_bytes": self.head_bytes,
                "persistent_bytes": self.persistent_bytes, "total_bytes": self.total_bytes,
                "categories": dict(self.categories), "requested": dict(self.requested), "counts": dict(self.counts),
                "unknown_ops": list(self.unknown_ops), "target": self.target,
                "unmodelled_ops": list(self.unmodelled_ops)}


class _Tail:
    """TFLM's tail: allocations grow down from the (16-aligned) arena end, each aligned down to its alignment."""

    def __init__(self) -> None:
        self.tail = 0                      # offset below the end (positive = bytes used)
        self.used = dict.fromkeys(CATEGORIES, 0)
        self.requested = dict.fromkeys(CATEGORIES, 0)
        self.count = dict.fromkeys(CATEGORIES, 0)

    def alloc(self, category: str, nbytes: int, align: int, count: int = 1) -> None:
        new = (self.tail + nbytes + align - 1) // align * align
        self.used[category] += new - self.tail
        self.requested[category] += nbytes
        self.count[category] += count
        self.tail = new


class _RecordingArena:
    """Arena stand-in for PrepareContext: records every persistent allocation's size."""

    def __init__(self) -> None:
        self.allocations: list[int] = []
        self.start = 0
        self.head = 0

    def allocate_persistent(self, nbytes: int, alignment: int = BUFFER_ALIGNMENT) -> np.ndarray:
        self.allocations.append(int(nbytes))
        return np.zeros(int(nbytes), dtype=np.uint8)

    def set_head(self, nbytes: int) -> None:
        self.head = int(nbytes)


def _replay_prepare(model: Model, resolver: Any) -> list[tuple[list[int], list[ScratchRequest]]]:
    """One pass of microinterp's reference ``prepare`` over subgraph 0 (the layer that mirrors TFLM's Prepare):
    per op, the sizes of its persistent arrays and its scratch requests."""
    from .kernels.base import PrepareContext, prepare_ops

    sg = model.main
    arena = _RecordingArena()
    ctx = PrepareContext(model, sg, arena)
    records = []
    for op in sg.operators:
        n_arrays, n_scratch = len(arena.allocations), len(ctx.scratch_requests)
        kernel = resolver.find(op.key, False)
        if kernel is not None and not kernel.allocates_nothing(op, sg.tensors):
            prepare_ops(ctx, [kernel], [op])
        records.append((arena.allocations[n_arrays:], ctx.scratch_requests[n_scratch:]))
    return records


def _device_prepare(model: Model, records: list, target: Any) -> tuple[list, dict[int, int], set[str]]:
    """Per op of subgraph 0, what ``target``'s kernel set takes instead of the reference kernel: (arrays, scratch
    requests) per op, OpData bytes of the ops whose kernel differs, and the ops whose device Prepare is not
    modelled."""
    from .kernels.cmsis_nn import UNMODELLED, device_prepare

    sg = model.main
    out, opdata, unmodelled = [], {}, set()
    for op, (arrays, scratch) in zip(sg.operators, records):
        dp = device_prepare(op, sg.tensors, target.features) if target.kernels == "cmsis-nn" else None
        if dp is None:
            if target.kernels == "cmsis-nn" and op.key in UNMODELLED:
                unmodelled.add(op.key)
            out.append((arrays, scratch))
            continue
        opdata[op.index] = dp.opdata
        out.append((list(arrays) + list(dp.persistent),
                    [ScratchRequest(sg.index, op.index, n) for n in dp.scratch]))
    return out, opdata, unmodelled


def estimate_arena(source: Any, abi: Abi | str = ILP32, *, compression: bool = False,
                   target: Target | str | None = None, resolver: Any = None) -> ArenaEstimate:
    """Predict TFLM's arena for a model on a target with ``abi`` (default: a 32-bit Cortex-M).

    ``source``: an :class:`~microinterp.interpreter.Interpreter`, a :class:`~microinterp.model.Model`, a path or
    ``.tflite`` bytes. One pass of the reference ``prepare`` gives the kernels' arrays and scratch requests, and
    TFLM's greedy plan of them the head (ABI-independent: the plan is the same on every target; it equals
    ``Interpreter.head_bytes``).

    ``target`` (a :class:`~microinterp.targets.Target` or a core name such as ``"cortex-m55"``) replays that
    firmware build instead: ILP32 structs, no compression, and for CMSIS-NN kernels their OpData, scratch requests
    (sized for the core's feature set) and persistent buffers (:mod:`microinterp.kernels.cmsis_nn`); the head is
    then the greedy plan over the device's scratch requests and can differ from ``Interpreter.head_bytes``.
    """
    if target is not None:
        from .targets import get_target

        target = get_target(target)
        abi, compression = ILP32, False
    if isinstance(abi, str):
        if abi.lower() not in ABIS:
            raise ConfigError(f"unknown ABI {abi!r}; known: {', '.join(ABIS)}")
        abi = ABIS[abi.lower()]
    from .resolver import default_resolver

    if isinstance(getattr(source, "model", None), Model) and hasattr(source, "resolver"):     # an Interpreter
        model, resolver = source.model, source.resolver
    else:
        model = load_model(os.fspath(source) if isinstance(source, os.PathLike) else source)
        resolver = resolver if resolver is not None else default_resolver()
    from .planner import allocation_infos, buffer_requests, plan_greedy
    from .planner.greedy import plan_size
    from .planner.table import plan_rows

    records = _replay_prepare(model, resolver)
    device_opdata: dict[int, int] = {}
    unmodelled: set[str] = set()
    if target is not None:
        records, device_opdata, unmodelled = _device_prepare(model, records, target)
    scratch_requests = [r for _, reqs in records for r in reqs]
    infos = allocation_infos(model, scratch_requests)
    requests, owners = buffer_requests(infos)
    offsets = plan_greedy(requests)
    head = plan_size(requests, offsets)
    t = _Tail()
    ptr = abi.pointer

    # 1. MicroAllocator::Create (+ its SingleArenaBufferAllocator and GreedyMemoryPlanner), StartModelAllocation.
    for spec in (SINGLE_ARENA_BUFFER_ALLOCATOR, GREEDY_MEMORY_PLANNER, MICRO_ALLOCATOR,
                 MICRO_BUILTIN_DATA_ALLOCATOR):
        t.alloc("allocator", abi.sizeof(spec), abi.alignof(spec))
    t.alloc("allocator", abi.sizeof(SUBGRAPH_ALLOCATIONS) * len(model.subgraphs), ptr)
    # 2. Eval tensors of every subgraph, then NodeAndRegistrations of every subgraph.
    for sg in model.subgraphs:
        t.alloc("eval_tensors", abi.sizeof(TFLITE_EVAL_TENSOR) * len(sg.tensors), ptr, len(sg.tensors))
    for sg in model.subgraphs:
        if sg.operators:
            t.alloc("nodes", abi.sizeof(NODE_AND_REGISTRATION) * len(sg.operators), ptr, len(sg.operators))
    # 3. Builtin options of every op (PrepareNodeAndRegistrationDataFromFlatbuffer).
    unknown = set()
    builtin_of: dict[int, int] = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            size, align = builtin_data(op.name, abi)
            if size:
                t.alloc("builtin_data", size, align)
            if sg.index == 0:
                builtin_of[op.index] = size
    # 4. Init: each op's OpData (InitSubgraphs walks every subgraph).
    from .kernels.signal.arena import init_allocations

    opdata_of: dict[int, int] = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            inits = init_allocations(op, sg.tensors, abi)
            if inits is not None:           # a signal-library kernel keeps everything from its Init
                for nbytes in inits:
                    t.alloc("op_data", nbytes, BUFFER_ALIGNMENT)
                if sg.index == 0:
                    opdata_of[op.index] = sum(inits)
                    records[op.index] = ([], records[op.index][1])
                continue
            n = device_opdata.get(op.index) if sg.index == 0 else None
            if n is None:
                decl = resolver.declaration(op.key, False)
                n = opdata_bytes(decl.opdata, abi, decl.opdata_compression if compression else "")
            if n is None:
                unknown.add(op.name)
                n = 0
            if n:
                t.alloc("op_data", n, BUFFER_ALIGNMENT)
            if sg.index == 0:
                opdata_of[op.index] = n
    # 5. Prepare: the arrays kernels keep (per-channel multipliers/shifts, LUTs ...).
    for arrays, _ in records:
        for n in arrays:
            t.alloc("kernel_arrays", n, BUFFER_ALIGNMENT)
    # 6. FinishModelAllocation: scratch buffer handles, then variable tensors.
    scratch = len(scratch_requests)
    if scratch:
        t.alloc("scratch_handles", abi.sizeof(SCRATCH_BUFFER_HANDLE) * scratch, ptr)
    for tensor in model.main.tensors:
        if tensor.is_variable and tensor.data is None and tensor.nbytes:
            t.alloc("variables", tensor.nbytes, BUFFER_ALIGNMENT)
    # 7. The interpreter's persistent TfLiteTensors for the model's inputs and outputs.
    for ids in (model.main.inputs, model.main.outputs):
        t.alloc("io_pointer_arrays", ptr * len(ids), BUFFER_ALIGNMENT)
        for ti in ids:
            t.alloc("io_tensors", abi.sizeof(TFLITE_TENSOR), abi.alignof(TFLITE_TENSOR))
            q = model.main.tensors[ti].quantization
            if q is not None and q.scales.size and q.zero_points.size:
                t.alloc("io_quantization", abi.sizeof(AFFINE_QUANTIZATION), abi.alignof(AFFINE_QUANTIZATION))
                t.alloc("io_quantization", 4 + 4 * int(q.scales.size), 4)

    per_op = tuple(
        MappingProxyType({"index": op.index, "op": op.name, "builtin_bytes": builtin_of[op.index],
                          "op_data_bytes": opdata_of[op.index], "array_bytes": sum(records[op.index][0]),
                          "scratch_requests": len(records[op.index][1]),
                          "scratch_bytes": [r.nbytes for r in records[op.index][1]]})
        for op in model.main.operators)
    return ArenaEstimate(abi=abi.name, compression=compression, head_bytes=int(head), persistent_bytes=t.tail,
                         categories=MappingProxyType(dict(t.used)), requested=MappingProxyType(dict(t.requested)),
                         counts=MappingProxyType(dict(t.count)), per_op=per_op, unknown_ops=tuple(sorted(unknown)),
                         target=None if target is None else target.name, unmodelled_ops=tuple(sorted(unmodelled)),
                         buffers=tuple(MappingProxyType(r) for r in plan_rows(model, infos, owners, requests,
                                                                                offsets)),
                         scratch=tuple(scratch_requests))
