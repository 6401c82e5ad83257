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

Struct sizes follow the TFLM headers (``tensorflow/lite/core/c/common.h`` under ``TF_LITE_STATIC_MEMORY``,
``micro/kernels/*.h``, ``kernels/internal/types.h``), laid out with C rules: :data:`ILP32` (Cortex-M, AAPCS: 4-byte
pointers, ``double``/``int64_t`` 8-aligned) and :data:`LP64` (the x86-64 host the ``tflite-micro`` wheel runs on).
The LP64 replay reproduces the wheel's ``RecordingMicroAllocator`` categories byte for byte on the model zoo
(``tests/test_memory32.py``), which checks the replay itself; the ILP32 replay is the device prediction.
``compression=True`` adds the two scratch indices TFLM's ``USE_TFLM_COMPRESSION`` build puts in ``OpDataConv`` and
``OpDataFullyConnected`` (the wheel is built that way; a default Cortex-M build is not).

Ops not in :data:`OPDATA` get no OpData and are listed in :attr:`ArenaEstimate.unknown_ops`. Only subgraph 0's
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

if TYPE_CHECKING:
    from .targets import Target

#: TFLM's MicroArenaBufferAlignment(): kernels' persistent buffers and variables are 16-aligned.
BUFFER_ALIGNMENT = 16


@dataclass(frozen=True)
class Abi:
    """C data model: sizes and alignments of pointers, ``size_t``, ``double`` and ``int64_t``."""

    name: str
    pointer: int
    size_t: int
    double_align: int = 8
    int64_align: int = 8
    #: sizeof a C enum whose values fit in a byte: 1 where the ABI has "short enums" (arm-none-eabi-gcc's default
    #: for bare-metal Arm: TfLiteType, TfLiteFusedActivation, TfLitePadding ... take one byte), else 4.
    enum: int = 4

    def sizeof(self, fields: str) -> int:
        """``sizeof`` a struct given as a string of field codes (C layout: each field at its alignment, the total
        rounded up to the largest alignment). Codes: ``b`` bool/int8, ``h`` int16, ``i`` int32/int/float/enum,
        ``q`` int64, ``d`` double, ``p`` pointer, ``z`` size_t / intptr_t, ``e`` a small enum; spaces are ignored."""
        size, align = 0, 1
        for code in fields.replace(" ", ""):
            n, a = {"b": (1, 1), "h": (2, 2), "i": (4, 4), "q": (8, self.int64_align), "d": (8, self.double_align),
                    "p": (self.pointer, self.pointer), "z": (self.size_t, self.size_t),
                    "e": (self.enum, self.enum)}[code]
            size = (size + a - 1) // a * a + n
            align = max(align, a)
        return (size + align - 1) // align * align

    def alignof(self, fields: str) -> int:
        return max({"b": 1, "h": 2, "i": 4, "q": self.int64_align, "d": self.double_align, "p": self.pointer,
                    "z": self.size_t, "e": self.enum}[c] for c in fields.replace(" ", ""))


ILP32 = Abi("ilp32", pointer=4, size_t=4, enum=1)    # Cortex-M (arm-none-eabi-gcc, AAPCS, short enums)
LP64 = Abi("lp64", pointer=8, size_t=8)      # x86-64 Linux: the tflite-micro wheel
ABIS: Mapping[str, Abi] = MappingProxyType({"ilp32": ILP32, "lp64": LP64})

# -- TFLM structs (field codes for Abi.sizeof) -------------------------------------------------------------------------
#: common.h, TF_LITE_STATIC_MEMORY: quantization{type, params*}, params{scale, zero_point}, data*, dims*, bytes,
#: type, allocation_type, is_variable.
TFLITE_TENSOR = "ep ii p p z e e b"
TFLITE_EVAL_TENSOR = "p p e"                       # data*, dims*, type
TFLITE_NODE = "p p p p p p i"                      # inputs, outputs, intermediates, user_data, builtin_data,
#                                                    custom_initial_data, custom_initial_data_size
NODE_AND_REGISTRATION = TFLITE_NODE + " p"         # + const TFLMRegistration*
AFFINE_QUANTIZATION = "p p i"                      # scale*, zero_point*, quantized_dimension
SUBGRAPH_ALLOCATIONS = "p p"                       # node_and_registrations*, tensors*
SCRATCH_BUFFER_HANDLE = "p"                        # uint8_t* data
#: arena_allocator/single_arena_buffer_allocator.h: two vtables (persistent + non-persistent interfaces),
#: buffer_head_, buffer_tail_, head_, tail_, temp_, temp_buffer_ptr_check_sum_ (intptr_t), temp_buffer_count_.
SINGLE_ARENA_BUFFER_ALLOCATOR = "pp ppppp z i"
#: memory_planner/greedy_memory_planner.h: vtable, max_buffer_count_, buffer_count_, requirements_*,
#: buffer_sizes_sorted_*, buffer_ids_sorted_*, buffers_sorted_by_offset_*, next_free_entry_, first_entry_index_,
#: buffer_offsets_*, need_to_calculate_offsets_.
GREEDY_MEMORY_PLANNER = "p ii pppp ii p b"
#: micro_allocator.h: vtable, non_persistent*, persistent*, builtin_data_allocator*, memory_planner*,
#: model_is_allocating_, scratch_buffer_request_count_, scratch_buffer_head_*, max_head_buffer_usage_.
MICRO_ALLOCATOR = "p pppp b z p z"
MICRO_BUILTIN_DATA_ALLOCATOR = "p p"               # vtable, persistent_allocator_*

_OP_DATA_CONV = "iiii iii ii pp ii i"              # micro/kernels/conv.h OpDataConv
_OP_DATA_FC = "iiii i iii i pp b"                  # micro/kernels/fully_connected.h OpDataFullyConnected
_SOFTMAX_PARAMS = "d iiiiiii ppppp"                # kernels/internal/types.h SoftmaxParams
_COMPRESSION_EXTRA = {"CONV_2D": "ii", "DEPTHWISE_CONV_2D": "ii", "FULLY_CONNECTED": "ii", "CONCATENATION": "i" * 10}

#: Kernel OpData allocated in Init: op -> field codes (a struct with pointers, whose size depends on the ABI) or a
#: byte count (a struct of int32/float/int8/int16/int64/double fields only: the same size under ILP32 and LP64, and
#: the figure is the one the wheel allocates on LP64). 0: the kernel allocates no OpData.
OPDATA: Mapping[str, str | int] = MappingProxyType({
    "CONV_2D": _OP_DATA_CONV, "DEPTHWISE_CONV_2D": _OP_DATA_CONV, "FULLY_CONNECTED": _OP_DATA_FC,
    "SOFTMAX": _SOFTMAX_PARAMS,
    "AVERAGE_POOL_2D": 32, "MAX_POOL_2D": 32,       # OpDataPooling: padding{4 int}, 2 int32, 2 float
    "ADD": 60, "SUB": 52, "MUL": 36,                 # OpDataAdd / OpDataSub / OpDataMul
    "RELU": 28, "RELU6": 8, "LOGISTIC": 16, "TANH": 16, "HARD_SWISH": 20, "LEAKY_RELU": 24,
    "QUANTIZE": 32, "DEQUANTIZE": 32, "PAD": 56, "PADV2": 56, "MEAN": 44, "SUM": 44, "REDUCE_MAX": 44,
    "STRIDED_SLICE": 84, "GATHER": 20, "UNIDIRECTIONAL_SEQUENCE_LSTM": 688,
    "CONCATENATION": "ipp iii",                      # ConcatenationParams (+ 10 scratch indices with compression)
    "DIV": 28, "CAST": 0, "PACK": 0,
    "RESHAPE": 0, "TRANSPOSE": 0, "MAXIMUM": 0, "MINIMUM": 0, "SQUEEZE": 0, "EXPAND_DIMS": 0, "ARG_MAX": 0,
    "ARG_MIN": 0, "RESIZE_NEAREST_NEIGHBOR": 0, "RESIZE_BILINEAR": 0, "SPLIT": 0, "SPLIT_V": 0, "SHAPE": 0,
})

#: Builtin options parsed into the arena (core/c/builtin_op_data.h): op -> (bytes, alignof). Ints, enums and bools
#: only, so the same on every ABI; FULLY_CONNECTED is what the pinned wheel allocates. Ops absent here parse to
#: nothing (their parse function allocates no struct).
BUILTIN_DATA: Mapping[str, tuple[int, int]] = MappingProxyType({
    "CONV_2D": (28, 4), "DEPTHWISE_CONV_2D": (28, 4), "TRANSPOSE_CONV": (20, 4), "FULLY_CONNECTED": (32, 4),
    "AVERAGE_POOL_2D": (40, 4), "MAX_POOL_2D": (40, 4), "L2_POOL_2D": (40, 4), "SOFTMAX": (4, 4),
    "RESHAPE": (36, 4), "SQUEEZE": (36, 4), "ADD": (8, 4), "SUB": (8, 4), "MUL": (4, 4), "DIV": (4, 4),
    "CONCATENATION": (8, 4), "PACK": (8, 4), "UNPACK": (8, 4), "GATHER": (8, 4), "STRIDED_SLICE": (24, 4),
    "LEAKY_RELU": (4, 4), "SPLIT": (4, 4), "SPLIT_V": (4, 4), "ARG_MAX": (4, 4), "ARG_MIN": (4, 4),
    "SHAPE": (4, 4), "SVDF": (12, 4), "UNIDIRECTIONAL_SEQUENCE_LSTM": (16, 4), "CAST": (8, 4),
    "RESIZE_BILINEAR": (2, 1), "RESIZE_NEAREST_NEIGHBOR": (2, 1),
    "MEAN": (1, 1), "SUM": (1, 1), "REDUCE_MAX": (1, 1), "REDUCE_MIN": (1, 1), "REDUCE_PROD": (1, 1),
})

#: Builtin options on a Cortex-M build, as field codes for :meth:`Abi.sizeof` (core/c/builtin_op_data.h of the device
#: build's TFLM, :data:`microinterp.targets.BUILD`). Under arm-none-eabi's short enums a struct of enums and bools is
#: a few bytes with alignment 1 (TfLiteFullyConnectedParams: 5 bytes). The LP64 replay keeps :data:`BUILTIN_DATA`,
#: which is what the wheel's (newer) TFLM allocates.
DEVICE_BUILTIN_DATA: Mapping[str, str] = MappingProxyType({
    "CONV_2D": "eiieiie", "DEPTHWISE_CONV_2D": "eiiieii", "TRANSPOSE_CONV": "eiiee", "FULLY_CONNECTED": "eebbe",
    "AVERAGE_POOL_2D": "eiiiieiiii", "MAX_POOL_2D": "eiiiieiiii", "L2_POOL_2D": "eiiiieiiii", "SOFTMAX": "i",
    "RESHAPE": "i" * 9, "SQUEEZE": "i" * 9, "ADD": "eb", "SUB": "eb", "MUL": "e", "DIV": "e",
    "CONCATENATION": "ie", "PACK": "ii", "UNPACK": "ii", "GATHER": "ii", "STRIDED_SLICE": "iiiiib",
    "LEAKY_RELU": "i", "SPLIT": "i", "SPLIT_V": "i", "ARG_MAX": "e", "ARG_MIN": "e", "SHAPE": "e", "SVDF": "ieb",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "eiibbb", "CAST": "ee", "RESIZE_BILINEAR": "bb", "RESIZE_NEAREST_NEIGHBOR": "bb",
    "MEAN": "b", "SUM": "b", "REDUCE_MAX": "b", "REDUCE_MIN": "b", "REDUCE_PROD": "b",
})


def builtin_data(op_name: str, abi: Abi) -> tuple[int, int]:
    """(bytes, alignof) of the builtin options TFLM parses for ``op_name`` under ``abi``; (0, 1) when none."""
    if abi.name == "lp64":
        return BUILTIN_DATA.get(op_name, (0, 1))
    spec = DEVICE_BUILTIN_DATA.get(op_name)
    return (abi.sizeof(spec), abi.alignof(spec)) if spec else (0, 1)


#: Categories of :attr:`ArenaEstimate.categories`, in allocation order.
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


def opdata_bytes(op_name: str, abi: Abi = ILP32, compression: bool = False) -> int | None:
    """``sizeof`` the OpData TFLM's kernel for ``op_name`` allocates in Init (None when the op is not in
    :data:`OPDATA`)."""
    spec = OPDATA.get(op_name)
    if spec is None:
        return None
    if isinstance(spec, int):
        return spec
    if compression and op_name in _COMPRESSION_EXTRA:
        spec += " " + _COMPRESSION_EXTRA[op_name]
    return abi.sizeof(spec)


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


def _skips_prepare(op: Any, tensors: Any) -> bool:
    """True for an op whose persistent arrays and scratch requests are known without running its prepare: a
    FULLY_CONNECTED with an int8 input and a per-tensor int8 filter allocates neither (TFLM keeps per-channel arrays
    for per-channel filters only and a scratch buffer for int4 filters only). Its reference prepare converts the
    whole weight matrix, which on a VGG-sized FC costs seconds and gigabytes."""
    if op.key != "FULLY_CONNECTED" or len(op.inputs) < 2 or min(op.inputs[:2]) < 0:
        return False
    x, w = tensors[op.inputs[0]], tensors[op.inputs[1]]
    return (x.type_name == "INT8" and w.type_name == "INT8" and w.quantization is not None
            and w.quantization.scales.size == 1)


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
        if kernel is not None and not _skips_prepare(op, sg.tensors):
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
    from .interpreter import Interpreter
    from .resolver import default_resolver

    if isinstance(source, Interpreter):
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
            inits = init_allocations(op, sg.tensors, abi) if op.name == "CUSTOM" else None
            if inits is not None:           # a signal-library kernel keeps everything from its Init
                for nbytes in inits:
                    t.alloc("op_data", nbytes, BUFFER_ALIGNMENT)
                if sg.index == 0:
                    opdata_of[op.index] = sum(inits)
                    records[op.index] = ([], records[op.index][1])
                continue
            n = device_opdata.get(op.index) if sg.index == 0 else None
            n = opdata_bytes(op.name, abi, compression) if n is None else n
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
                                                                                offsets)))
