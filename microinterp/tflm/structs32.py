"""TFLM's C structs on a given ABI: the data models (:data:`ILP32` for Cortex-M, :data:`LP64` for the x86-64 wheel),
the field layouts of the structs TFLM keeps in its arena, and the OpData each kernel allocates in ``Init``.

Struct sizes follow the TFLM headers (``tensorflow/lite/core/c/common.h`` under ``TF_LITE_STATIC_MEMORY``,
``micro/kernels/*.h``, ``kernels/internal/types.h``), laid out with C rules (:meth:`Abi.sizeof`). Used by the arena
replay (:mod:`microinterp.memory32`) and by the CMSIS-NN Prepare rules (:mod:`microinterp.kernels.cmsis_nn`), which
is why they live in a module of their own: neither imports the other through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


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


def opdata_bytes(spec: str | int | None, abi: Abi = ILP32, compression: str = "") -> int | None:
    """``sizeof`` an OpData struct a kernel declares (``Kernel.opdata``: field codes, or bytes when the struct has
    no pointer), with the fields ``compression`` adds (``Kernel.opdata_compression``, when the build has
    compression); None when the kernel does not declare one."""
    if spec is None:
        return None
    if isinstance(spec, int):
        return spec
    return abi.sizeof(f"{spec} {compression}" if compression else spec)
