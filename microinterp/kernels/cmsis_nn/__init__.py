"""CMSIS-NN's TFLM kernels, as their ``Prepare`` shapes a firmware's arena (``OPTIMIZED_KERNEL_DIR=cmsis_nn``).

TFLM's CMSIS-NN kernels (``tensorflow/lite/micro/kernels/cmsis_nn/*.cc``) compute what the reference kernels
compute (or CMSIS-NN's bit-exact equivalent) but keep OpData structs of their own, request scratch buffers sized by
CMSIS-NN's ``arm_*_get_buffer_size*`` for the core's feature set, and on Helium (MVE) cores precompute kernel sums
into persistent buffers. A rule per op says what that build's ``Init`` and ``Prepare`` take:

* ``opdata``: ``sizeof`` the struct ``Init`` allocates on a 32-bit core (ILP32);
* ``scratch``: the scratch requests in order, instead of the reference kernel's;
* ``persistent``: what ``Prepare`` allocates on top of the reference kernel's arrays (the per-channel multipliers
  and shifts, LUTs), which every CMSIS-NN kernel keeps as the reference kernel does.

Ops without a rule use the reference kernel's ``Init``/``Prepare`` in that build too (MUL, PAD, TRANSPOSE, MAXIMUM,
MINIMUM and every op TFLM has no CMSIS-NN file for). :data:`RULES` is the registry, derived from the modules: one
per TFLM file, each exporting its ``RULES``.
TRANSPOSE_CONV and BATCH_MATMUL have CMSIS-NN files whose Prepare is not modelled yet: :data:`UNMODELLED` lists
them, and a device estimate of a model that has them says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ...errors import PrepareError
from ...model import Operator, Tensor


@dataclass(frozen=True)
class DevicePrepare:
    """What one op's ``Init`` and ``Prepare`` take from a CMSIS-NN firmware's arena (bytes)."""

    opdata: int
    scratch: tuple[int, ...] = ()
    persistent: tuple[int, ...] = ()


#: A rule: (op, the subgraph's tensors, core feature set "none" | "dsp" | "mve") -> DevicePrepare.
Rule = Callable[[Operator, Sequence[Tensor], str], DevicePrepare]


def _rules() -> Mapping[str, Rule]:
    """Every public module of this package that exports ``RULES`` (one module per TFLM file), merged."""
    import importlib

    from ..registry import public_modules

    table: dict[str, Rule] = {}
    for name in public_modules(__path__):
        module = vars(importlib.import_module(f"{__name__}.{name}"))
        table.update(module.get("RULES", {}))
    return MappingProxyType(table)


RULES: Mapping[str, Rule] = _rules()
#: CMSIS-NN kernels that keep no state between invokes where TFLM's reference kernel does (op -> its state
#: inputs): TFLM's CMSIS-NN LSTM (int8 or int16 activations, int16 cell) calls ``arm_lstm_unidirectional_s8/s16`` with no hidden-state buffer,
#: so CMSIS-NN zeroes the cell state and starts from a zero hidden state on every invoke, and the variable state
#: tensors are never written (cmsis_nn/unidirectional_sequence_lstm.cc, CMSIS-NN arm_lstm_unidirectional_s8.c).
STATELESS_INPUTS: Mapping[str, tuple[int, ...]] = MappingProxyType({"UNIDIRECTIONAL_SEQUENCE_LSTM": (18, 19)})
#: Ops with a CMSIS-NN kernel file whose Prepare has no rule here yet.
UNMODELLED = frozenset({"TRANSPOSE_CONV", "BATCH_MATMUL"})


def device_prepare(op: Operator, tensors: Sequence[Tensor], features: str) -> DevicePrepare | None:
    """The CMSIS-NN build's Prepare for ``op`` (None: the op runs TFLM's reference kernel in that build too). An op
    without an output tensor fails as TFLM's Prepare does (``GetOutput`` gives null; ``TF_LITE_ENSURE`` fails)."""
    rule = RULES.get(op.key)
    if rule is None:
        return None
    if not op.outputs or not 0 <= op.outputs[0] < len(tensors):
        raise PrepareError(op.index, op.key, "the op has no output tensor (TFLM's GetOutput returns null)")
    return rule(op, tensors, features)
