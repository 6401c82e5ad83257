"""Layer 1 of the cost model: how many instructions TFLM's Cortex-M build executes for one op.

The count of an op is a linear function of its **loop-structure features** -- products of the trip counts of the
kernel's loops (output positions, output channels, accumulation depth, kernel taps that fall inside the input and
taps that fall in the padding, channel groups of 4 for the DSP kernels and of 16 for Helium, remainders) -- with
coefficients fitted per firmware build (core and kernel set) and per **path**: the function the kernel dispatches
to. The paths are CMSIS-NN's own dispatch (``arm_convolve_wrapper_s8``: 1x1 fast / 1x1 strided / 1xN / im2col;
``arm_depthwise_conv_wrapper_s8``: 3x3 / opt / generic / as a convolution on Helium), reproduced with
:mod:`microinterp.kernels.cmsis_nn.buffer_sizes`; the reference build has one path per op.

The coefficients (``instructions.json`` next to this module) are fitted by :mod:`microinterp.testing.fit` on the
device oracle's counts of the shape sweeps (:mod:`microinterp.testing.sweep`: many instances of one op in one
model, each with its own input); the zoo and the population are not used by the fit except for the op kinds no
sweep covers (``fitted_on`` in the JSON says which data each path was fitted on). The tests compare the prediction
with the oracle's counts of every node of every model it ran (``tests/goldens/device/``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..kernels.cmsis_nn import buffer_sizes as bs
from ..resolver import declaration_of

COEFFICIENTS = Path(__file__).with_name("instructions.json")
#: Builds the instruction model knows: ``<core>.<kernels>`` as the device goldens name them.
CORE_FEATURES = {"cortex-m3": "none", "cortex-m4": "dsp", "cortex-m7": "dsp", "cortex-m33": "dsp",
                 "cortex-m55": "mve"}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _same_pad(size: int, k: int, stride: int, dilation: int, out: int) -> int:
    eff = (k - 1) * dilation + 1
    return max((out - 1) * stride + eff - size, 0) // 2


def _valid(size: int, k: int, stride: int, dilation: int, out: int, pad: int) -> int:
    """Sum over output positions of the kernel taps that fall inside the input (one axis)."""
    total = 0
    for o in range(out):
        start = o * stride - pad
        total += sum(1 for t in range(k) if 0 <= start + t * dilation < size)
    return total


def _geometry(op: Any, tensors: Sequence[Any], kh: int, kw: int) -> dict[str, int]:
    """Output positions, taps, valid and padded taps of a windowed op (conv, depthwise, pooling)."""
    x, y = tensors[op.inputs[0]], tensors[op.outputs[0]]
    n, ih, iw = x.shape[0], x.shape[1], x.shape[2]
    oh, ow = y.shape[1], y.shape[2]
    o = op.options
    sh, sw = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
    dh, dw = int(o.get("dilation_h_factor", 1)), int(o.get("dilation_w_factor", 1))
    same = str(o.get("padding", "SAME")).upper() == "SAME"
    ph = _same_pad(ih, kh, sh, dh, oh) if same else 0
    pw = _same_pad(iw, kw, sw, dw, ow) if same else 0
    vy, vx = _valid(ih, kh, sh, dh, oh, ph), _valid(iw, kw, sw, dw, ow, pw)
    positions = n * oh * ow
    valid = n * vy * vx
    return {"n": n, "ih": ih, "iw": iw, "oh": oh, "ow": ow, "sh": sh, "sw": sw, "dh": dh, "dw": dw, "ph": ph,
            "pw": pw, "P": positions, "taps": kh * kw, "valid": valid, "padded": positions * kh * kw - valid}


def _conv(op, tensors, features):
    w = tensors[op.inputs[1]]
    oc, kh, kw, kc = w.shape
    g = _geometry(op, tensors, kh, kw)
    ic = tensors[op.inputs[0]].shape[3]
    P, K = g["P"], kh * kw * kc
    if features is None:
        path = "ref"
    elif bs.is_convolve_1x1((g["ph"], g["pw"]), (g["dh"], g["dw"]), ic, (kh, kw, kc)):
        path = "1x1_fast" if (g["sh"], g["sw"]) == (1, 1) else "1x1"
    elif bs.is_convolve_1_x_n(g["dw"], g["sw"], (g["ih"], ic), (kh, kc)):
        path = "1xn"
    else:
        path = "im2col"
    # the matrix multiplication's calls and the output positions (lhs rows) of each: the strided 1x1 path calls
    # it once per output row, the others once for every position
    calls, lhs = (g["n"] * g["oh"], g["ow"]) if path == "1x1" else (1, P)
    p4, r4, p2, r2 = calls * (lhs // 4), calls * (lhs % 4), calls * (lhs // 2), calls * (lhs % 2)
    f = {"1": 1, "oc": oc, "P": P, "P_oc": P * oc, "P_K": P * K, "macs": P * oc * K, "oc_K": oc * K,
         "calls": calls, "calls_oc": calls * oc,
         "P_oc_K4": P * oc * _cdiv(K, 4), "P_oc_Krem4": P * oc * (K % 4),
         # the DSP kernels: 2 positions x 2 channels per step, then the odd position and the odd channel
         "Podd_oc_K": r2 * oc * K, "P_ocodd_K": P * (oc % 2) * K, "P2_oc2_K": p2 * (oc // 2) * K,
         "P2_oc2": p2 * (oc // 2), "Podd_oc": r2 * oc, "P_ocodd": P * (oc % 2), "Podd_ocodd_K": r2 * (oc % 2) * K,
         # ... per call, the filter sums of each channel pair; per step K in blocks of 16, of 4, then one by one
         "calls_oc2_K": calls * (oc // 2) * K, "P2_oc2_Kb16": p2 * (oc // 2) * (K // 16),
         "P2_oc2_Kb4": p2 * (oc // 2) * (K % 16 // 4), "P2_oc2_Kb1": p2 * (oc // 2) * (K % 4),
         "Podd_oc2_Kb16": r2 * (oc // 2) * (K // 16), "Podd_oc2_Kb4": r2 * (oc // 2) * (K % 16 // 4),
         "Podd_oc2_Kb1": r2 * (oc // 2) * (K % 4), "Podd_oc2": r2 * (oc // 2),
         # arm_convolve_s8 on DSP: columns converted to int16 two at a time, 2 channels x 2 columns per step with
         # K in blocks of 4; the odd channel and the odd column by themselves
         "P2_K": p2 * K, "P2_ocodd_Kb4": p2 * (oc % 2) * (K // 4), "P2_ocodd_Kb1": p2 * (oc % 2) * (K % 4),
         "Podd_oc_Kb4": r2 * oc * (K // 4), "Podd_oc_Kb1": r2 * oc * (K % 4),
         "P2_oc2_Kq4": p2 * (oc // 2) * (K // 4), "P2_oc2_Kr4": p2 * (oc // 2) * (K % 4),
         "P_taps": P * kh * kw, "valid_ic": g["valid"] * kc, "padded_ic": g["padded"] * kc, "valid": g["valid"],
         "padded": g["padded"], "P_oc_taps": P * oc * kh * kw, "valid_oc": g["valid"] * oc,
         "valid_oc_ic": g["valid"] * oc * kc, "rows": g["n"] * g["oh"], "rows_oc": g["n"] * g["oh"] * oc,
         # Helium's arm_nn_mat_mult_nt_t_s8: blocks of 4 output positions, then the remaining positions one at
         # a time with the channels requantized 4 at a time; K in 16-lane vectors
         "P_oc_K16": P * oc * _cdiv(K, 16), "P4_oc_K16": p4 * oc * _cdiv(K, 16), "P4_oc": p4 * oc,
         "Prem4_oc_K16": r4 * oc * _cdiv(K, 16), "Prem4_oc": r4 * oc,
         "Prem4_oc4": r4 * (oc // 4), "Prem4_ocrem4": r4 * (oc % 4)}
    return path, f


def mult_of_4(multiplier: int) -> bool:
    return multiplier % 4 == 0


def _depthwise(op, tensors, features):
    w = tensors[op.inputs[1]]
    _, kh, kw, oc = w.shape
    x = tensors[op.inputs[0]]
    ic = x.shape[3]
    g = _geometry(op, tensors, kh, kw)
    P = g["P"]
    if features is None:
        path = "ref"
    elif features == "mve" and ic == 1 and oc > bs.DW_ONE_IN_CH_THRESHOLD:
        path = "as_conv"
    elif ic == oc and g["n"] == 1 and (g["dh"], g["dw"]) == (1, 1):
        path = "3x3" if features != "mve" and (kh, kw) == (3, 3) and g["ph"] <= 1 and g["pw"] <= 1 else "opt"
    elif mult_of_4(oc // max(ic, 1)) and g["n"] == 1 and (g["dh"], g["dw"]) == (1, 1):
        path = "generic_mult4"          # arm_depthwise_conv_s8's depthwise_conv_s8_mult_4
    else:
        path = "generic"
    c4, c16 = _cdiv(oc, 4), _cdiv(oc, 16)
    f = {"1": 1, "P": P, "P_oc": P * oc, "P_oc_taps": P * oc * kh * kw, "valid_oc": g["valid"] * oc,
         "padded_oc": g["padded"] * oc, "P_c4": P * c4, "P_crem4": P * (oc % 4), "valid_c4": g["valid"] * c4,
         "valid_crem4": g["valid"] * (oc % 4), "P_c16": P * c16, "valid_c16": g["valid"] * c16,
         "P_taps": P * kh * kw, "valid": g["valid"], "padded": g["padded"], "rows": g["n"] * g["oh"],
         "rows_oc": g["n"] * g["oh"] * oc, "oc": oc, "oc_taps": oc * kh * kw, "in": x.num_elements,
         "padded_c4": g["padded"] * c4}
    return path, f


def _fully_connected(op, tensors, features):
    w = tensors[op.inputs[1]]
    U, K = w.shape[0], w.shape[-1]
    y = tensors[op.outputs[0]]
    B = y.num_elements // max(U, 1)
    path = "ref" if features is None else "fc"
    f = {"1": 1, "B": B, "U": U, "B_U": B * U, "macs": B * U * K, "B_K": B * K, "U_K": U * K,
         "B_U_K4": B * U * _cdiv(K, 4), "B_U_K16": B * U * _cdiv(K, 16), "B_U_Krem4": B * U * (K % 4),
         "B_Uodd_K": B * (U % 2) * K, "B_U4_K": B * _cdiv(U, 4) * K, "B_U_Krem16": B * U * (K % 16),
         "B_U4_K16": B * _cdiv(U, 4) * _cdiv(K, 16), "B_Urem4_K16": B * (U % 4) * _cdiv(K, 16),
         # the plain C kernel (no DSP): three filter rows per step, then the remaining rows one at a time
         "B_U3_K": B * (U // 3) * K, "B_Urem3_K": B * (U % 3) * K, "B_U3": B * (U // 3), "B_Urem3": B * (U % 3)}
    return path, f


def _pool(op, tensors, features):
    o = op.options
    kh, kw = int(o.get("filter_height", 1)), int(o.get("filter_width", 1))
    g = _geometry(op, tensors, kh, kw)
    c = tensors[op.outputs[0]].shape[3]
    P = g["P"]
    path = op.key
    f = {"1": 1, "P": P, "P_c": P * c, "valid_c": g["valid"] * c, "valid": g["valid"], "P_c4": P * _cdiv(c, 4),
         "valid_c4": g["valid"] * _cdiv(c, 4), "valid_c16": g["valid"] * _cdiv(c, 16), "P_c16": P * _cdiv(c, 16),
         "P_crem4": P * (c % 4), "valid_crem4": g["valid"] * (c % 4), "P_taps_c": P * kh * kw * c,
         "rows": g["n"] * g["oh"]}
    return path, f


def _elementwise(op, tensors, features):
    y = tensors[op.outputs[0]]
    ins = [tensors[i] for i in op.inputs if i >= 0 and not tensors[i].is_constant]
    n = y.num_elements
    bcast = any(t.num_elements != n for t in ins)
    inner = y.shape[-1] if y.shape else 1
    path = op.key + ("-bcast" if bcast else "") + _types(op, tensors)
    f = {"1": 1, "n": n, "n4": _cdiv(n, 4), "n16": _cdiv(n, 16), "nrem4": n % 4, "nrem16": n % 16,
         "rows": n // max(inner, 1)}
    return path, f


def _types(op: Any, tensors: Sequence[Any]) -> str:
    """``""`` for an int8 op, else ``-<input type>`` (``-<input>-<output>`` for conversions): a kernel's other
    type is another loop (and, in a soft-float build, calls into the float emulation)."""
    x, y = tensors[op.inputs[0]].type_name.lower(), tensors[op.outputs[0]].type_name.lower()
    if x != y or declaration_of(op.key).converts_type:
        return f"-{x}-{y}"
    return "" if x == "int8" else f"-{x}"


def _pads(op: Any, tensors: Sequence[Any]) -> Any:
    """PAD's constant paddings ((before, after) per axis, padded to 4 axes), or None."""
    if len(op.inputs) < 2 or op.inputs[1] < 0 or tensors[op.inputs[1]].data is None:
        return None
    p = [tuple(int(v) for v in r) for r in tensors[op.inputs[1]].data.reshape(-1, 2)]
    return [(0, 0)] * (4 - len(p)) + p


def _pad(op, tensors, features):
    """PAD / PADV2: arm_pad_s8 (and the reference Pad) set the padding and copy the input one row of
    ``width x channels`` at a time (one channel vector at a time when the channels are padded)."""
    x, y = tensors[op.inputs[0]], tensors[op.outputs[0]]
    shape = (1,) * (4 - len(x.shape)) + tuple(x.shape)
    oshape = (1,) * (4 - len(y.shape)) + tuple(y.shape)
    n, h, w, c = shape
    item = y.dtype.itemsize if y.dtype is not None else 1
    copies = n * h if oshape[3] == c else n * h * w
    # newlib's memcpy copies words when source and destination share their alignment, else bytes: the rows'
    # alignments follow from the (16-byte aligned) tensors' offsets
    same = diff = 0
    if oshape[3] == c:
        row, orow = w * c * item, oshape[2] * c * item
        top, left = (oshape[1] - h) // 2, (oshape[2] - w) // 2     # estimate when the split is unknown
        pads = _pads(op, tensors)
        if pads is not None:
            top, left = pads[1][0], pads[2][0]
        for r in range(h):
            src, dst = r * row, (top + r) * orow + left * c * item
            if src % 4 == dst % 4:
                same += 1
            else:
                diff += 1
    f = {"1": 1, "copies": copies, "same_bytes": same * w * c * item * n, "diff_bytes": diff * w * c * item * n,
         "in_bytes": x.num_elements * item, "out_bytes": y.num_elements * item,
         "pad_bytes": (y.num_elements - x.num_elements) * item, "out_rows": oshape[0] * oshape[1],
         "copy_words": copies * _cdiv(w * c * item if oshape[3] == c else c * item, 4)}
    return op.key + _types(op, tensors), f


def _transpose(op, tensors, features):
    """TRANSPOSE: CMSIS-NN's arm_transpose_s8 loops over the input's 4 dimensions with one copy per element, or on
    Helium, when the two outer axes stay, gathers 8 elements of a column at a time (arm_transpose_s8_nhcw); the
    reference kernel recurses over the output's axes with a loop over the last one."""
    path, f = _generic(op, tensors, features)
    x = tensors[op.inputs[0]]
    shape = (1,) * (4 - len(x.shape)) + tuple(x.shape)
    n, h, w, c = shape
    perm = tensors[op.inputs[1]].data if len(op.inputs) > 1 and op.inputs[1] >= 0 else None
    if features == "mve" and perm is not None and len(perm) == 4 and tuple(perm[:2]) == (0, 1):
        path += "-nhcw"
    f.update({"in_rows": n * h * w, "in_rows2": n * h, "gathers": n * h * c * _cdiv(w, 8)})
    return path, f


def _softmax_radius(op: Any, x: Any) -> int | None:
    """``-diff_min`` of an int8 softmax (TFLM's PreprocessSoftmaxScaling), or None for other types."""
    from ..kernels.softmax import _SCALED_DIFF_INTEGER_BITS
    from ..quant import calculate_input_radius, quantize_multiplier

    if x.type_name != "INT8" or x.quantization is None:
        return None
    beta = float(op.options.get("beta", 1.0))
    real = min(beta * float(x.quantization.scale) * float(1 << (31 - _SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    if not real > 1.0:
        return None
    return calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, quantize_multiplier(real)[1])


def _softmax(op, tensors, features, values=None):
    """SOFTMAX: arm_softmax_s8 and the reference kernel take exponentials only for the elements within
    ``diff_min`` of their row's maximum. With the input's ``values`` (an invoke's), the count is exact; without,
    the elements are taken as spread evenly over the int8 range."""
    x = tensors[op.inputs[0]]
    C = x.shape[-1]
    R = x.num_elements // max(C, 1)
    radius = _softmax_radius(op, x)
    if radius is None:
        active = R * C
    elif values is not None:
        rows = values.reshape(R, C).astype(np.int32)
        active = int((rows - rows.max(axis=1, keepdims=True) >= -radius).sum())
    else:
        active = round(R * C * min(1.0, (radius + 1) / 256))
    f = {"1": 1, "R": R, "R_C": R * C, "R_C4": R * _cdiv(C, 4), "R_C16": R * _cdiv(C, 16),
         "R_Crem4": R * (C % 4), "R_C_active": active}
    return "SOFTMAX" + _types(op, tensors), f


def _generic(op, tensors, features):
    y = [tensors[i] for i in op.outputs if i >= 0]
    x = [tensors[i] for i in op.inputs if i >= 0 and not tensors[i].is_constant]
    n_out = sum(t.num_elements for t in y)
    n_in = sum(t.num_elements for t in x)
    inner = y[0].shape[-1] if y and y[0].shape else 1
    in_inner = x[0].shape[-1] if x and x[0].shape else 1
    item = y[0].dtype.itemsize if y and y[0].dtype is not None else 1
    rows = n_out // max(inner, 1)
    inner2 = inner * (y[0].shape[-2] if y and len(y[0].shape) >= 2 else 1)
    f = {"1": 1, "out": n_out, "in": n_in, "out4": _cdiv(n_out, 4), "in4": _cdiv(n_in, 4), "rows": rows,
         "rows2": n_out // max(inner2, 1), "in_rows": (x[0].num_elements if x else 0) // max(in_inner, 1),
         "inputs": len(x),
         "rows_inputs": rows * len(x), "extra": max(n_out - n_in, 0), "out_bytes": n_out * item}
    return op.key + (_types(op, tensors) if op.inputs and op.inputs[0] >= 0 and y else ""), f


#: The loop model of each cost family a kernel declares (``Kernel.cost_family``); a view costs what any op does.
_FAMILIES = {"conv": _conv, "depthwise": _depthwise, "fully_connected": _fully_connected, "pool": _pool,
             "softmax": _softmax, "pad": _pad, "transpose": _transpose, "elementwise": _elementwise,
             "view": _generic, "generic": _generic}


def data_dependent(op: Any) -> bool:
    """Whether ``op``'s instruction count depends on its input's values, not only on the shapes (SOFTMAX's)."""
    return declaration_of(op.key).cost_family == "softmax"


def op_features(op: Any, tensors: Sequence[Any], build: str, values: Any = None) -> tuple[str, dict[str, int]]:
    """``(path, features)`` of ``op`` on ``build`` (``<core>.<kernels>``): the kernel path it dispatches to and its
    loop-structure features. ``values``: the op's first input as an invoke saw it, for the kernels whose loops
    depend on the data (SOFTMAX); without it they assume inputs spread over their type's range."""
    core, kernels = _split(build)
    features = CORE_FEATURES[core] if kernels == "cmsis-nn" else None
    family = _FAMILIES[declaration_of(op.key).cost_family]
    if not op.outputs or any(i < 0 for i in op.outputs[:1]) or not _shaped_for(family, op, tensors):
        return _generic(op, tensors, features)
    path, f = family(op, tensors, features, values) if family is _softmax else family(op, tensors, features)
    if family in (_conv, _depthwise, _fully_connected):
        path = f"{op.key}/{path}"
    return path, f


def _shaped_for(family: Any, op: Any, tensors: Sequence[Any]) -> bool:
    """Whether ``op`` has the operands its family's loop model reads (a 4-D input, filter and output for the
    convolutions, a filter for FULLY_CONNECTED). A malformed op -- which TFLM's Prepare refuses -- gets the generic
    model."""
    if family not in (_conv, _depthwise, _fully_connected):
        return True
    ins = [tensors[i] if 0 <= i < len(tensors) else None for i in op.inputs[:2]]
    if len(ins) < 2 or ins[0] is None or ins[1] is None:
        return False
    if family is _fully_connected:
        return len(ins[1].shape) >= 1
    out = tensors[op.outputs[0]] if 0 <= op.outputs[0] < len(tensors) else None
    return len(ins[0].shape) == 4 and len(ins[1].shape) == 4 and out is not None and len(out.shape) == 4


def _split(build: str) -> tuple[str, str]:
    core, _, kernels = str(build).partition(".")
    if core not in CORE_FEATURES or kernels not in ("cmsis-nn", "reference"):
        raise ConfigError(f"unknown firmware build {build!r}; known: "
                          f"{', '.join(sorted(coefficients()))}")
    return core, kernels


@lru_cache(maxsize=1)
def coefficients() -> Mapping[str, Mapping[str, Any]]:
    """The fitted coefficients: build -> path -> {"terms": {feature: instructions}, ...}."""
    return json.loads(COEFFICIENTS.read_text())["builds"]


def op_instructions(op: Any, tensors: Sequence[Any], build: str, values: Any = None) -> float:
    """Predicted instructions of one op on ``build`` (``values``: see :func:`op_features`); an op kind without a
    fitted path takes the build's generic fit (``*``: fixed + per element), which the docs report as unvalidated."""
    path, f = op_features(op, tensors, build, values)
    return predict(build, path, f, lambda: _generic(op, tensors, None)[1])


def predict(build: str, path: str, features: Mapping[str, int], generic: Any) -> float:
    """Instructions of a node on ``path`` from its features: the path's fit, or the build's ``*`` fit for a path
    never fitted; a generic fit (fixed + per element) reads ``generic()``'s features instead."""
    table = coefficients()
    if build not in table:
        raise ConfigError(f"no instruction model for build {build!r}; known: {', '.join(sorted(table))}")
    fit = table[build].get(path) or table[build]["*"]
    f = generic() if fit.get("generic") else features
    return max(0.0, sum(c * f.get(k, 0) for k, c in fit["terms"].items()))


def model_instructions(model: Any, build: str) -> list[float]:
    """Predicted instructions of every node of ``model``'s main subgraph on ``build``."""
    sg = model.subgraphs[0]
    return [op_instructions(op, sg.tensors, build) for op in sg.operators]



def op_fixed_instructions(op: Any, tensors: Sequence[Any], build: str) -> float:
    """The fixed term of ``op``'s fit on ``build``: what every extra kernel call over part of the op pays again."""
    path, _ = op_features(op, tensors, build)
    table = coefficients()[build]
    return (table.get(path) or table["*"])["terms"].get("1", 0.0)


def _layer(key: str, shapes: Sequence[tuple[int, ...]], out: tuple[int, ...], **options: Any) -> tuple[Any, list]:
    """A synthetic op and its tensors (the first input is the activation, the others constants)."""
    from ..model import Operator, Tensor

    tensors = [Tensor(i, f"t{i}", tuple(s), "INT8", np.dtype(np.int8), 0, None, False,
                      None if i == 0 else np.zeros(1, np.int8)) for i, s in enumerate(shapes)]
    tensors.append(Tensor(len(shapes), "out", tuple(out), "INT8", np.dtype(np.int8), 0, None, False, None))
    op = Operator(0, key, None, tuple(range(len(shapes))), (len(shapes),), (), options, None)
    return op, tensors


#: The layers ``cycles_per_mac`` is quoted on, per MAC op class.
REFERENCE_LAYERS = {
    "conv": ("CONV_2D", [(1, 24, 24, 32), (32, 3, 3, 32), (32,)], (1, 24, 24, 32),
             {"padding": "SAME", "stride_h": 1, "stride_w": 1}),
    "depthwise": ("DEPTHWISE_CONV_2D", [(1, 24, 24, 32), (1, 3, 3, 32), (32,)], (1, 24, 24, 32),
                  {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1}),
    "fc": ("FULLY_CONNECTED", [(1, 256), (64, 256), (64,)], (1, 64), {}),
}


@cache
def reference_instructions_per_mac(build: str, op_class: str = "conv") -> float:
    """Instructions per MAC of :data:`REFERENCE_LAYERS`' layer of ``op_class`` on ``build``."""
    from .work import op_work

    key, shapes, out, options = REFERENCE_LAYERS[op_class]
    op, tensors = _layer(key, shapes, out, **options)
    return op_instructions(op, tensors, build) / op_work(op, tensors)[0]


@cache
def move_instructions_per_byte(build: str) -> float:
    """Instructions per byte of a RESHAPE that copies (TFLM's memcpy), from its fit: 64 KB less 0 bytes."""
    small = _layer("RESHAPE", [(1, 1)], (1, 1))
    big = _layer("RESHAPE", [(1, 65536)], (1, 65536))
    return (op_instructions(*big, build) - op_instructions(*small, build)) / 65535
