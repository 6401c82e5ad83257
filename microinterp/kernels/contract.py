"""The kernel contract: what a kernel is, and everything it declares about its op.

A kernel is an instance of :class:`Kernel` (TFLM's ``TFLMRegistration``, without ``init``/``free``):

- ``prepare(ctx, op) -> OpData`` and ``invoke(ctx, op, data)`` are required (:mod:`.base` describes the contexts);
- ``bind(ctx, op, data)`` (a call without arguments, or None to decline) and ``reset(ctx, op, data)`` (state back to
  what ``prepare`` left) are optional;
- ``ops``: the ops it serves -- builtin ops by their schema name, custom ops by their custom code;
- ``bands`` (:mod:`.bands`) and ``streams`` (:mod:`.streams`): how it runs in pieces and in lockstep streams;
- ``traits`` (:class:`Traits`): whether it reaches other subgraphs, uses resource variables, keeps state, mixes the
  samples of a batch, is a view of its input, reads each output position from the same position of its inputs
  (pointwise) or each output channel from the same input channel (channelwise);
- its work (``macs``: multiply-accumulates, compares or adds per output; elements are the output's), its cost
  family (the loop model of :mod:`microinterp.cost.instructions`), its op class (:mod:`microinterp.cost.mcu`), and
  the OpData struct TFLM's kernel allocates in ``Init`` (``opdata``: field codes of
  :class:`microinterp.tflm.structs32.Abi`, or a byte count).

Every undeclared trait is the conservative one: an op that says nothing is not paged across subgraphs, reordered,
batched or streamed as if it were safe. The registry (:mod:`.registry`) is derived from the kernel modules, and every
consumer -- the runtimes, the pager and tiler, the planners, batch, streams, the cost model, the firmware arena --
asks a kernel's :class:`Declaration`, never the op's name.

A kernel that replaces another one for the same op (an optimized kernel over the reference, a plugin or an explicit
registration over the shipped kernel) inherits every declaration it does not make itself: :func:`declaration`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

#: Op classes of the cost model's per-class factors.
OP_CLASSES = ("conv", "depthwise", "fc", "pool", "elementwise", "softmax", "other")
#: Values of ``Kernel.geometry``: ``filter`` -- each output row from a window of input rows, the window from the
#: filter (input 1) and the stride/dilation/padding options, output rows written in order each after its window is
#: read (CONV_2D, DEPTHWISE_CONV_2D); ``pool`` -- the same with the window from ``filter_height``/``filter_width``
#: (MAX_POOL_2D, AVERAGE_POOL_2D); ``pad`` -- the input inside the output at the constant paddings of input 1 (PAD,
#: PADV2); ``concat`` -- the inputs side by side along ``axis``; ``slice`` -- a box of input 0 (STRIDED_SLICE);
#: ``transpose`` -- input 0's axes permuted by the constant input 1.
GEOMETRIES = ("filter", "pool", "pad", "concat", "slice", "transpose")
#: Loop models of the instruction cost model; ``view`` costs what ``generic`` costs and does no work.
COST_FAMILIES = ("conv", "depthwise", "fully_connected", "pool", "softmax", "pad", "transpose", "elementwise",
                 "view", "generic")


@dataclass(frozen=True)
class Traits:
    """What an op does beyond computing its outputs from its inputs. The defaults are the conservative answers."""

    #: runs other subgraphs (IF, WHILE, CALL_ONCE)
    subgraphs: bool = True
    #: reads or writes resource variables
    resources: bool = True
    #: keeps state across invokes (variable tensors, the arena's tail, a kernel's ``reset``)
    stateful: bool = True
    #: may mix the samples of a leading batch axis (a batch-1 model rebatched would compute something else)
    mixes_batch: bool = True
    #: its output is its input's bytes reinterpreted (no work; out of core an alias of the input)
    view: bool = False
    #: every output element reads the same spatial position of each feature-map input
    pointwise: bool = False
    #: output channel c reads only channel c of input 0 (its other inputs do not vary by channel)
    channelwise: bool = False

    @property
    def graph(self) -> bool:
        """Reaches beyond its own operands (other subgraphs or resource variables)."""
        return self.subgraphs or self.resources


#: What an undeclared op is taken to be.
UNDECLARED = Traits()
#: A plain function of its inputs, sample by sample (most ops).
PURE = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=False)
#: A function of its inputs that may mix the samples of a batch (transposes, gathers, slices, concatenation).
MIXING = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=True)
#: Elementwise: the same position of every input, channel by channel.
ELEMENTWISE = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=False, pointwise=True,
                     channelwise=True)
#: Pointwise over several feature maps (ADD, MUL, ...): the same position of each, but every channel of each.
POINTWISE = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=False, pointwise=True)
#: Its output is its input's bytes (RESHAPE, SQUEEZE, EXPAND_DIMS).
VIEW = Traits(subgraphs=False, resources=False, stateful=False, mixes_batch=False, view=True)
#: Keeps state across invokes outside its tensors, which its ``reset`` clears (the signal library's delays, framers
#: and filters). LSTM and SVDF keep theirs in variable tensors, which every consumer sees on the model itself.
STATEFUL = Traits(subgraphs=False, resources=False, stateful=True, mixes_batch=False)
#: Reads or writes resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE).
RESOURCE = Traits(subgraphs=False, resources=True, stateful=True, mixes_batch=True)
#: Runs other subgraphs (IF, WHILE, CALL_ONCE): everything the subgraphs may do.
CONTROL_FLOW = Traits()


class Kernel:
    """The base of every kernel (see the module docstring). Subclasses set the class attributes they declare."""

    ops: tuple[str, ...] = ()
    traits: Traits = UNDECLARED
    bands: Any = None
    streams: str | None = None
    op_class: str = "other"
    cost_family: str = "generic"
    #: TFLM's OpData: field codes (ILP32/LP64 sizes differ) or bytes; None: not known for this op
    opdata: str | int | None = None
    #: the OpData fields TFLM adds when built with compression
    opdata_compression: str = ""
    #: its output type differs from its input's by design (QUANTIZE, DEQUANTIZE, CAST): a loop per type pair
    converts_type: bool = False
    #: how its output's bytes and positions relate to its input's (:data:`GEOMETRIES`), for the planners and
    #: ``optimize``; None: no such declaration (the op is left as it is)
    geometry: str | None = None
    #: the input (position) and the option (name) that hold the output's shape, for ops that take one (RESHAPE)
    shape_input: int | None = None
    shape_option: str | None = None

    def prepare(self, ctx: Any, op: Any) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__}.prepare")

    def invoke(self, ctx: Any, op: Any, data: Any) -> None:
        raise NotImplementedError(f"{type(self).__qualname__}.invoke")

    def bind(self, ctx: Any, op: Any, data: Any) -> Callable[[], None] | None:
        """A call computing what ``invoke`` computes on these views, or None (``invoke`` then runs)."""
        return None

    def reset(self, ctx: Any, op: Any, data: Any) -> None:
        """State back to what ``prepare`` left (TFLM's ``Reset``); stateless kernels have nothing to do."""

    def allocates_nothing(self, op: Any, tensors: Any) -> bool:
        """Whether this op's prepare is known, from the shapes and types alone, to request no persistent array and no
        scratch buffer (the firmware arena's estimate then skips running it: a VGG-sized FULLY_CONNECTED's prepare
        converts its whole filter). False unless a kernel knows."""
        return False

    def macs(self, op: Any, tensors: Any, elements: int) -> int:
        """Multiply-accumulates (compares, adds) to compute ``elements`` output elements of ``op``."""
        return 0

    def batch_safe(self, op: Any, tensors: Any) -> bool:
        """Whether this op keeps the samples of a leading batch axis apart (its trait, unless the op's options say
        more: a CONCATENATION along channels does)."""
        return not self.traits.mixes_batch

    # -- streams = "explicit" (:mod:`.streams`) --------------------------------------------------------------------
    def stream_state(self, data: Any, streams: int) -> Any:
        return None

    def invoke_streams(self, ctx: Any, op: Any, data: Any, state: Any) -> None:
        raise NotImplementedError(f"{type(self).__qualname__}.invoke_streams")

    def reset_streams(self, data: Any, state: Any) -> None:
        """Every stream's state back to what ``stream_state`` gave."""


#: The members a kernel declares (everything but ``prepare``/``invoke``), in :class:`Declaration`'s order.
DECLARED = ("ops", "traits", "bands", "streams", "op_class", "cost_family", "opdata", "opdata_compression",
            "converts_type", "geometry", "shape_input", "shape_option", "bind",
            "reset", "macs", "batch_safe", "stream_state", "invoke_streams", "reset_streams")


class Declaration:
    """What one kernel declares about its op (the members of :data:`DECLARED`, and ``kernel``), with what it inherits
    from the kernel it replaces filled in: see :func:`declaration`. (A plain slotted class: it is built per kernel
    and op, and a dataclass of this many fields would cost the package's import a millisecond.)"""

    __slots__ = ("kernel", *DECLARED)

    def __init__(self, kernel: Any, **values: Any):
        self.kernel = kernel
        for name in DECLARED:
            setattr(self, name, values[name])

    def __repr__(self) -> str:
        return f"Declaration({type(self.kernel).__qualname__}, ops={self.ops}, traits={self.traits})"


_BASE = Kernel()
#: What an override inherits from the kernel it replaces: facts about the op, not about one kernel's OpData. Its
#: ``bind``, ``reset`` and stream members are its own (they read its OpData), or the conservative defaults.
INHERITED = ("traits", "bands", "op_class", "cost_family", "opdata", "opdata_compression", "converts_type",
             "geometry", "shape_input", "shape_option", "macs", "batch_safe")


def _not_mixing(traits: Traits, op: Any, tensors: Any) -> bool:
    return not traits.mixes_batch


def declares(kernel: Any, name: str) -> bool:
    """Whether ``kernel`` makes declaration ``name`` itself (its instance, or a class of its own above
    :class:`Kernel`)."""
    if name in getattr(kernel, "__dict__", {}):
        return True
    return any(name in vars(c) for c in type(kernel).__mro__ if c not in (Kernel, object))


def declaration(kernel: Any, replaced: Any = None) -> Declaration:
    """``kernel``'s declaration: what it declares itself; for what it does not, what ``replaced`` (the kernel it
    overrides for the same op, None for a new op) declares of :data:`INHERITED`; else :class:`Kernel`'s
    conservative default. ``reset`` and ``invoke_streams`` are None when the kernel has none of its own (the runtimes
    skip the one, the streams runner does not offer the other)."""
    values: dict[str, Any] = {}
    inherited = declaration(replaced) if replaced is not None else None
    for name in DECLARED:
        if declares(kernel, name):
            values[name] = getattr(kernel, name)
        elif inherited is not None and name in INHERITED:
            values[name] = getattr(inherited, name)
        else:
            values[name] = getattr(kernel if isinstance(kernel, Kernel) else _BASE, name)
    if getattr(values["batch_safe"], "__func__", None) is Kernel.batch_safe:    # the default: the trait
        values["batch_safe"] = partial(_not_mixing, values["traits"])
    for optional in ("reset", "invoke_streams"):
        if not declares(kernel, optional):
            values[optional] = None
    return Declaration(kernel=kernel, **values)
