"""Split a convolution and the channelwise ops after it into groups of output channels, with TFLM builtin ops only.

A *chain* is a ``CONV_2D`` followed by ops that compute each channel from the same channel of their input only --
``DEPTHWISE_CONV_2D`` with one filter per channel, spatial ``PAD`` / ``PADV2``, activations, ``QUANTIZE`` -- each
op the only reader of the previous one's output. Output channel ``c`` of such a chain depends on the convolution's
filter row ``c``, bias ``c`` and per-channel scale ``c`` and on nothing else that differs between channels, so the
chain can run once per group of channels, each copy with its slice of every filter, bias and per-channel
quantization, and ``CONCATENATION`` over channels joins the groups into the chain's output. Every output value is
computed by the same kernel arithmetic from the same inputs, so the outputs are bit-identical.

What it saves: while the chain runs, only one group's intermediate feature maps are alive instead of every
channel's. That pays where the chain ends smaller than its widest map -- MobileNetV2's expand convolution followed by
a stride-2 depthwise convolution: the expanded map, the largest of the block, is alive one group at a time -- and it
costs no MACs and little persistent memory (the per-channel arrays of the copies add up to the original's; each copy
brings its node and OpData).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import Model
from ..resolver import declaration_of
from ..rewrite import copy_op, rebuild
from .emit import Writer, split, without_main_ops
from .regions import geometry


def _channelwise(op: Any) -> bool:
    """Output channel c reads only channel c of input 0 (its kernel's trait: activations, PAD, depthwise with one
    filter per channel)."""
    return declaration_of(op.key).traits.channelwise


#: TFLM's CONCATENATION takes at most this many inputs (``concatenation.cc``: kMaxInputNum)
MAX_GROUPS = 10


@dataclass(frozen=True)
class Chain:
    """Ops ``[start, stop)`` of subgraph 0: a CONV_2D and the channelwise ops after it; ``y`` their last output."""

    start: int
    stop: int
    y: int
    channels: int

    def describe(self, groups: int) -> str:
        return f"ops {self.start}-{self.stop - 1} in {groups} groups of channels"


def find_chains(model: Model) -> list[Chain]:
    """Every longest chain of subgraph 0 with at least one channelwise op after its convolution."""
    sg = model.main
    ops, tensors = sg.operators, sg.tensors
    if any(op.subgraph_refs for op in ops):
        return []
    readers: dict[int, int] = {}
    for op in ops:
        for ti in {*op.inputs, *op.intermediates}:
            if ti >= 0:
                readers[ti] = readers.get(ti, 0) + 1
    outputs = set(sg.outputs)
    chains = []
    for i, op in enumerate(ops):
        if geometry(op) != "filter" or _channelwise(op) or not _conv_ok(op, tensors):
            continue
        channels = tensors[op.outputs[0]].shape[3]
        stop = i + 1
        while stop < len(ops):
            prev = ops[stop - 1].outputs[0]
            nxt = ops[stop]
            if readers.get(prev) != 1 or prev in outputs or not _follower_ok(nxt, prev, channels, tensors):
                break
            stop += 1
        if stop - i >= 2:
            chains.append(Chain(i, stop, ops[stop - 1].outputs[0], channels))
    return chains


def _per_tensor(t: Any) -> bool:
    return t.quantization is None or not t.quantization.per_channel


def _conv_ok(op: Any, tensors: Any) -> bool:
    if len(op.inputs) < 2 or len(op.outputs) != 1 or op.intermediates:
        return False
    x, f, y = tensors[op.inputs[0]], tensors[op.inputs[1]], tensors[op.outputs[0]]
    bias = tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    return (f.data is not None and len(f.shape) == 4 and len(x.shape) == 4 and len(y.shape) == 4 and
            x.shape[0] == 1 and f.shape[3] == x.shape[3] and f.shape[0] == y.shape[3] and y.data is None and
            _per_tensor(y) and (f.quantization is None or not f.quantization.per_channel or
                                f.quantization.axis == 0) and
            (bias is None or (bias.data is not None and bias.shape == (f.shape[0],))))


def _follower_ok(op: Any, x: int, channels: int, tensors: Any) -> bool:
    if not _channelwise(op) or not op.inputs or op.inputs[0] != x or len(op.outputs) != 1 or op.intermediates:
        return False
    y = tensors[op.outputs[0]]
    if len(y.shape) != 4 or y.shape[3] != channels or y.data is not None or not _per_tensor(y):
        return False
    if any(ti == x or (ti >= 0 and tensors[ti].data is None) for ti in op.inputs[1:]):
        return False          # a second feature map (not channelwise)
    kind = geometry(op)
    if kind == "pad":
        pads = tensors[op.inputs[1]].data
        return pads is not None and pads.shape == (4, 2) and not pads[3].any() and not pads[0].any()
    if kind == "filter":                # a depthwise convolution
        f = tensors[op.inputs[1]]
        bias = tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
        return (f.data is not None and f.shape[:1] == (1,) and f.shape[3] == channels and
                tensors[x].shape[3] == channels and op.options.get("depth_multiplier", 1) in (0, 1) and
                (f.quantization is None or not f.quantization.per_channel or f.quantization.axis == 3) and
                (bias is None or (bias.data is not None and bias.shape == (channels,))))
    return all(ti < 0 or tensors[ti].data is None or tensors[ti].data.size == 1 for ti in op.inputs[1:])


def split_chain(model: Model, chain: Chain, groups: int) -> bytes:
    """``model`` with ``chain`` run once per group of its output channels (near-equal groups, a multiple of 4
    channels each where the channel count allows), joined by a CONCATENATION into the chain's output."""
    return split_chains(model, {chain.start: (chain, groups)})


def split_chains(model: Model, cuts: dict[int, tuple[Chain, int]]) -> bytes:
    """``model`` with every chain of ``cuts`` (by first op) split into its number of groups (:func:`split_chain`)."""
    b = rebuild(without_main_ops(model), {"OfflineMemoryAllocation": None})
    w = Writer(model, b)
    sg = model.main
    i = 0
    while i < len(sg.operators):
        if i in cuts:
            chain, groups = cuts[i]
            _emit_groups(w, chain, groups)
            i = chain.stop
        else:
            copy_op(w.b, sg.operators[i], w.old)
            i += 1
    b.inputs = [w.old(t) for t in sg.inputs]
    b.outputs = [w.old(t) for t in sg.outputs]
    return b.build()


def channel_groups(channels: int, groups: int) -> list[tuple[int, int]]:
    """``[0, channels)`` in ``groups`` near-equal bands, each a multiple of 4 channels when ``channels`` is (CMSIS-NN's
    kernels take their fast paths on multiples of 4)."""
    if channels % 4 == 0 and channels // 4 >= groups:
        return [(4 * a, 4 * b) for a, b in split(channels // 4, groups)]
    return split(channels, groups)


def _emit_groups(w: Writer, chain: Chain, groups: int) -> None:
    ops, tensors = w.model.main.operators, w.model.main.tensors
    if not 2 <= groups <= min(MAX_GROUPS, chain.channels):
        raise ValueError(f"{groups} groups of {chain.channels} channels")
    pieces = []
    for g, (c0, c1) in enumerate(channel_groups(chain.channels, groups)):
        prev = None
        for k in range(chain.start, chain.stop):
            op = ops[k]
            inputs = []
            for pos, ti in enumerate(op.inputs):
                if pos == 0 and prev is not None:
                    inputs.append(prev)
                elif ti >= 0 and geometry(op) == "filter" and pos in (1, 2):     # filter, bias by channel
                    axis = 3 if (_channelwise(op) and pos == 1) else 0
                    inputs.append(w.sliced(ti, (axis, c0, c1), f"{tensors[ti].name}/c{c0}_{c1}"))
                else:
                    inputs.append(w.old(ti))
            out = tensors[op.outputs[0]]
            prev = w.sliced(op.outputs[0], (3, c0, c1), f"{out.name}/c{c0}_{c1}", data=None)
            w.b.add_op(op.name, inputs, [prev], custom_code=op.custom_code, custom_options=op.custom_options,
                       **dict(op.options))
        pieces.append(prev)
    w.b.add_op("CONCATENATION", pieces, [w.old(chain.y)], axis=3, fused_activation_function="NONE")
