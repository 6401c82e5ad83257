"""The two contexts the interpreter hands to kernels, and what a kernel's prepare asks for.

A kernel (:class:`~.contract.Kernel`, the contract) gets a :class:`PrepareContext` in ``prepare(ctx, op) ->
OpData``, which runs once: it validates the op (raising ``ctx.fail(op, rule)`` the way TFLM's Prepare returns an
error), does all quantization maths, requests planned scratch buffers (:class:`ScratchRequest`) and persistent
memory, and returns an immutable OpData record. ``invoke(ctx, op, data)`` gets an :class:`InvokeContext`: it only
reads the OpData and computes on the numpy views the context gives; it never allocates tensor memory. A kernel's
``bind`` gets the same context once, after the build (the arena views never move afterwards).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PrepareError
from ..model import Model, Operator, Subgraph, Tensor
from ._qutil import to_int32_x86


@dataclass(frozen=True)
class ScratchRequest:
    """A kernel's request for a planned scratch buffer of ``nbytes`` while op ``node`` of ``subgraph`` runs
    (:meth:`PrepareContext.request_scratch`; the planner gives it a lifetime, :mod:`microinterp.planner.lifetimes`)."""

    subgraph: int
    node: int
    nbytes: int


def is_batch1_nhwc(*tensors: Any) -> bool:
    """Every tensor given is 4-D with batch 1 (what row bands along axis 1 need)."""
    return all(t is not None and len(t.shape) == 4 and t.shape[0] == 1 for t in tensors)


class HostBudget:
    """Bytes of host memory (the Python heap, not the arena) that the kernels of one interpreter may keep across
    invokes for derived data, such as out-of-core GEMM operands: :meth:`take` grants a request while the total
    stays within ``limit``."""

    def __init__(self, limit: int):
        self.limit = int(limit)
        self.used = 0

    def take(self, nbytes: int) -> bool:
        if self.used + nbytes > self.limit:
            return False
        self.used += nbytes
        return True


#: The default :class:`HostBudget` of one preparation (one interpreter): out of core it bounds what the band kernels
#: keep across invokes (converted filter tiles, small im2col blocks), whatever the model's size.
HOST_CACHE_BYTES = 16 << 20
#: In memory, what the kernels of one interpreter may keep across invokes beyond the weights they derive (a layer's
#: own im2col block and padded image): typical MCU models stay well inside it, and an ImageNet-size network's largest
#: layers share one block instead of keeping hundreds of MB (issue 28's host-memory goal).
IN_MEMORY_CACHE_BYTES = 64 << 20


class PrepareContext:
    """What a kernel may look at and ask for while preparing (shapes, quantization, constants, memory)."""

    def __init__(self, model: Model, subgraph: Subgraph, arena: Any,
                 scratch_requests: list[ScratchRequest] | None = None, graph: Any = None):
        self.model = model
        self.subgraph = subgraph
        self.arena = arena
        #: shared by the contexts of all subgraphs of one build (TFLM numbers scratch buffers model-wide)
        self.scratch_requests: list[ScratchRequest] = [] if scratch_requests is None else scratch_requests
        #: the :class:`~microinterp.graph.MicroGraph` (other subgraphs, resource variables); None where a caller
        #: prepares ops outside an interpreter
        self.graph = graph
        #: False when the interpreter runs out of core: constant tensors may live on the SD card, so a kernel must
        #: not derive weight-sized host arrays from them at prepare (it gets weight tiles at invoke instead).
        self.weights_resident = True
        #: host memory the kernels of this preparation may keep across invokes (shared by all its ops)
        self.host_budget = HostBudget(HOST_CACHE_BYTES)
        #: C's ``static_cast<int32_t>`` of an out-of-range float on the build being emulated: x86-64's (INT32_MIN,
        #: the wheel) unless the interpreter emulates a Cortex-M target (saturation; ``_qutil.to_int32_arm``)
        self.float_to_int32 = to_int32_x86
        #: the firmware arena's image (:class:`~microinterp.kernels.cmsis_nn.device_image.DeviceImage`) on a
        #: Helium target, for kernels whose CMSIS-NN version reads outside their tensors; None otherwise
        self.device_image: Any = None

    # -- tensors -------------------------------------------------------------------------------------------------
    def tensor(self, index: int) -> Tensor:
        return self.subgraph.tensors[index]

    def input(self, op: Operator, k: int) -> Tensor | None:
        """Input ``k`` of ``op``; None when absent (index -1 or fewer inputs), as TFLM's GetOptionalInputTensor."""
        if k >= len(op.inputs) or op.inputs[k] < 0:
            return None
        return self.subgraph.tensors[op.inputs[k]]

    def output(self, op: Operator, k: int) -> Tensor:
        if k >= len(op.outputs) or op.outputs[k] < 0:
            raise self.fail(op, f"missing output {k}")
        return self.subgraph.tensors[op.outputs[k]]

    def require_input(self, op: Operator, k: int) -> Tensor:
        t = self.input(op, k)
        if t is None:
            raise self.fail(op, f"missing input {k}")
        return t

    def constant(self, op: Operator, k: int) -> np.ndarray:
        """The constant data of input ``k`` (fails the op if that input is not a constant)."""
        t = self.require_input(op, k)
        if t.data is None:
            raise self.fail(op, f"input {k} ({t.name!r}) must be a constant tensor")
        return t.data

    def check_io_count(self, op: Operator, inputs: int | tuple[int, int], outputs: int) -> None:
        lo, hi = (inputs, inputs) if isinstance(inputs, int) else inputs
        if not lo <= len(op.inputs) <= hi:
            want = lo if lo == hi else f"{lo}..{hi}"
            raise self.fail(op, f"expected {want} inputs, got {len(op.inputs)}")
        if len(op.outputs) != outputs:
            raise self.fail(op, f"expected {outputs} outputs, got {len(op.outputs)}")

    # -- memory --------------------------------------------------------------------------------------------------
    def request_scratch(self, op: Operator, nbytes: int) -> int:
        """Request a planned scratch buffer alive while ``op`` runs; returns a handle for ``InvokeContext.scratch``."""
        self.scratch_requests.append(ScratchRequest(self.subgraph.index, op.index, int(nbytes)))
        return len(self.scratch_requests) - 1

    def persistent(self, values: np.ndarray) -> np.ndarray:
        """Copy ``values`` into persistent arena memory (the tail) and return a read-only view of the same dtype."""
        values = np.ascontiguousarray(values)
        raw = self.arena.allocate_persistent(values.nbytes)
        view = raw.view(values.dtype).reshape(values.shape) if values.nbytes else values.copy()
        view[...] = values
        view.flags.writeable = False
        return view

    # -- errors --------------------------------------------------------------------------------------------------
    @staticmethod
    def fail(op: Operator, rule: str) -> PrepareError:
        return PrepareError(op.index, op.key, rule)


def prepare_ops(ctx: PrepareContext, kernels: list[Any], ops: list[Operator]) -> list[Any]:
    """``kernel.prepare(ctx, op)`` for every op in order; a shared primitive's QuantizationOverflow (TFLM's
    ``TF_LITE_ENSURE`` in a helper such as CalculateActivationRangeQuantized, a multiplier that is not finite)
    becomes that op's PrepareError, and so does an output that is a constant tensor."""
    from ..quant import QuantizationOverflow

    data = []
    tensors = ctx.subgraph.tensors
    for kernel, op in zip(kernels, ops):
        for k, t in enumerate(op.outputs):
            if t < 0:
                raise ctx.fail(op, f"output {k} is absent (index {t}): TFLM's kernels need every output tensor")
            if 0 <= t < len(tensors) and tensors[t].is_constant:
                raise ctx.fail(op, f"output {k} ({tensors[t].name!r}) is a constant tensor of the model: its data "
                                   "is in the file, and TFLM would write the result into the flatbuffer")
        try:
            data.append(kernel.prepare(ctx, op))
        except QuantizationOverflow as e:
            raise ctx.fail(op, str(e)) from None
        except ZeroDivisionError:   # a zero scale or size the op divides by (TFLM gets inf or a fault)
            raise ctx.fail(op, "a zero quantization scale or size in this op's arithmetic (division by zero)") \
                from None
    return data


class InvokeContext:
    """The views a kernel computes on: ``views[t]`` is tensor ``t`` (arena view, or read-only constant data)."""

    __slots__ = ("scratch_views", "views")

    def __init__(self, views: list[np.ndarray | None], scratch_views: list[np.ndarray]):
        self.views = views
        self.scratch_views = scratch_views

    def input(self, op: Operator, k: int) -> np.ndarray:
        return self.views[op.inputs[k]]

    def output(self, op: Operator, k: int) -> np.ndarray:
        return self.views[op.outputs[k]]

    def scratch(self, handle: int) -> np.ndarray:
        return self.scratch_views[handle]
