"""x86's float32 NaN rules, for the outputs of TFLM's float kernels that end as NaN.

SSE arithmetic returns the first operand's NaN (quieted) when both operands are NaN, and the "real indefinite" NaN
``0xFFC00000`` for an invalid operation (``0 * inf``, ``inf - inf``); NumPy's vector loops agree except in their
remainder elements, which return the second operand's NaN. The fast paths of :mod:`._float_dot` therefore compute
every output that ends as NaN again here, one tap at a time (:func:`x86_nan_dot`), and add a bias with the operand
order the compiled kernel has (:func:`add_bias_x86`).
"""

from __future__ import annotations

import math

import numpy as np

from ._qutil import copyto


def nans_as_x86(total: np.ndarray, inputs_of, skip_t: np.ndarray | None, nan_from: str = "total") -> np.ndarray:
    """Every NaN output ``[i, j]`` again with :func:`x86_nan_dot` on ``inputs_of(i, j)`` (its inputs and filter taps,
    see the module docstring)."""
    whole = np.add.reduce(total, axis=None)
    if math.isnan(whole):       # a NaN somewhere (or inf - inf in this sum): find them
        repair_nans(total, inputs_of, skip_t, nan_from)
    return total


def repair_nans(total: np.ndarray, inputs_of, skip_t: np.ndarray | None, nan_from: str) -> None:
    """:func:`nans_as_x86` once a NaN is known to be there (a sum over the totals is NaN; a dot product with ones,
    BLAS's, is as good a test: a NaN term makes any sum NaN)."""
    for i, j in zip(*np.nonzero(np.isnan(total))):
        total[i, j] = x86_nan_dot(*inputs_of(i, j), None if skip_t is None else skip_t[:, i], nan_from)


#: The quiet bit of a float32 NaN: x86 sets it in the NaN an operation passes on (``nan | QUIET``).
QUIET = np.uint32(0x00400000)
#: x86's default NaN, what an invalid operation returns
DEFAULT_NAN = np.array([0xFFC00000], np.uint32).view(np.float32)[0]


def _quiet(v: np.float32) -> np.float32:
    return np.array([v], np.float32).view(np.uint32).__or__(QUIET).view(np.float32)[0]


def x86_op(a: np.float32, b: np.float32, op: str) -> np.float32:
    """``a * b`` or ``a + b`` in float32 as SSE computes it: the first NaN operand's NaN (quieted), else the rounded
    result, else (an invalid operation) the default NaN."""
    if np.isnan(a):
        return _quiet(a)
    if np.isnan(b):
        return _quiet(b)
    with np.errstate(all="ignore"):
        r = np.float32(a * b) if op == "*" else np.float32(a + b)
    return DEFAULT_NAN if np.isnan(r) else r


def x86_nan_dot(x: np.ndarray, w: np.ndarray, skip: np.ndarray | None, nan_from: str = "total") -> np.float32:
    """One output of :func:`sequential_dot`, one tap at a time with the hardware's NaN rules (the running total the
    first operand of each add, or the product with ``nan_from="product"``)."""
    total = np.float32(0.0)
    for k in range(x.shape[0]):
        if skip is not None and skip[k]:
            continue
        product = x86_op(x[k], w[k], "*")
        total = x86_op(total, product, "+") if nan_from == "total" else x86_op(product, total, "+")
    return total


def add_bias_x86(acc: np.ndarray, bias: np.ndarray, nan_from: str = "total") -> None:
    """``acc += bias`` (channels last) in float32 as TFLM's compiled ``total + bias_value``: where both are NaN the
    result is one operand's NaN, quieted -- which one is the compiler's choice of operand order, measured against the
    wheel per kernel (``nan_from``: ``total`` for CONV_2D, ``bias`` for DEPTHWISE_CONV_2D and FULLY_CONNECTED).
    NumPy's add quiets a signalling NaN as the hardware does, but its remainder elements would pick the bias's NaN
    everywhere (see the module docstring)."""
    if not np.isnan(bias).any():
        np.add(acc, bias, out=acc)
        return
    before = acc.copy()
    with np.errstate(invalid="ignore"):
        np.add(acc, bias, out=acc)
    both = np.isnan(before) & np.isnan(bias)
    chosen = before if nan_from == "total" else np.broadcast_to(bias, acc.shape)
    copyto(acc.view(np.uint32), chosen.view(np.uint32) | QUIET, where=both)
