"""Hypothesis cases shared by test_average_pool.py and test_max_pool.py (one Prepare, two Evals in TFLM)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from microinterp.kernels.padding import compute_out_size
from microinterp.kernels.pooling_common import valid_taps
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def out_hw(params: dict[str, Any]) -> tuple[int, int]:
    """Output H/W: the padding formula plus ``delta`` (TFLM loops over the output tensor's dims)."""
    _, h, w, _ = params["shape"]
    (fh, fw), (sh, sw), pad = params["filter"], params["stride"], params["padding"]
    dh, dw = params.get("delta", (0, 0))
    return compute_out_size(pad, h, fh, sh) + dh, compute_out_size(pad, w, fw, sw) + dw


def build(op: str, *, kind: str, shape: tuple, filter: tuple, stride: tuple, padding: str, act: str = "NONE",
          scale: float = 0.05, zp: int = 0, out_scale: float | None = None, out_zp: int | None = None,
          delta: tuple = (0, 0), out_kind: str | None = None) -> bytes:
    n, _, _, c = shape
    oh, ow = out_hw({"shape": shape, "filter": filter, "stride": stride, "padding": padding, "delta": delta})
    b = ModelBuilder()
    quant = kind != "FLOAT32"
    x = b.add_tensor("x", shape, kind, **({"scale": scale, "zero_point": zp} if quant else {}))
    y = b.add_tensor("y", (n, oh, ow, c), out_kind or kind,
                     **({"scale": scale if out_scale is None else out_scale,
                             "zero_point": zp if out_zp is None else out_zp} if quant else {}))
    b.add_op(op, [x], [y], padding=padding, stride_h=stride[0], stride_w=stride[1], filter_height=filter[0],
             filter_width=filter[1], fused_activation_function=act)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def case(seed: int, **params: Any) -> dict[str, Any]:
    """One explicit case, in the form :func:`cases` draws (for ``@example``)."""
    return {"params": params, "seed": seed}


@st.composite
def cases(draw, op: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["INT8", "INT8", "INT16", "FLOAT32"]))
    dims = st.integers(1, 12)
    shape = (draw(st.integers(1, 2)), draw(dims), draw(dims), draw(st.integers(1, 5)))
    global_pool = draw(st.integers(0, 5)) == 0
    filt = ((shape[1], shape[2]) if global_pool
            else (draw(st.integers(1, 5)), draw(st.integers(1, 5))))
    params = {"kind": kind, "shape": shape, "filter": filt,
              "stride": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
              "padding": draw(st.sampled_from(["SAME", "VALID"])), "act": draw(st.sampled_from(ACTS)),
              "delta": (draw(st.sampled_from([0, 0, 0, -1, 1])), draw(st.sampled_from([0, 0, 0, -1, 1])))}
    if kind != "FLOAT32":
        lo, hi = (-128, 127) if kind == "INT8" else (-32768, 32767)
        params["zp"] = draw(st.sampled_from([lo, hi, 0]) | st.integers(lo, hi))
        params["scale"] = 10 ** draw(st.floats(-4, 1))
        # TFLM accepts an output scale within 1e-6 of the input scale.
        params["out_scale"] = params["scale"] + draw(st.sampled_from([0.0, 0.0, 5e-7, -5e-7]))
    oh, ow = out_hw(params)
    assume(oh >= 1 and ow >= 1)
    if op == "AVERAGE_POOL_2D":  # windows without any input tap are refused (TFLM leaves them unwritten)
        pad = compute_padding(params)
        assume(valid_taps(oh, params["stride"][0], pad[0], filt[0], shape[1]).all())
        assume(valid_taps(ow, params["stride"][1], pad[1], filt[1], shape[2]).all())
    return {"params": params, "seed": draw(st.integers(0, 2**32 - 1))}


def compute_padding(params: dict[str, Any]) -> tuple[int, int]:
    from microinterp.kernels.padding import compute_padding_height_width

    _, h, w, _ = params["shape"]
    p = compute_padding_height_width(*params["stride"], 1, 1, h, w, *params["filter"], params["padding"])
    return p.height, p.width


def check_case(op: str, case: dict[str, Any]) -> None:
    params = case["params"]
    rng = np.random.default_rng(case["seed"])
    model = build(op, **params)
    kind = params["kind"]
    for _ in range(2):
        if kind == "FLOAT32":
            x = (rng.normal(size=params["shape"]) * 10 ** rng.uniform(-3, 3)).astype(np.float32)
        else:
            x = random_tensor(rng, params["shape"], kind)
        assert_matches_tflm(model, [x])
