"""Fit the instruction model (:mod:`microinterp.cost.instructions`) on the device oracle's counts.

For each firmware build and each kernel path, the coefficients minimise the squared **relative** error over the
path's nodes, under non-negativity (every loop-structure term costs instructions; it cannot save them):
``scipy.optimize.nnls`` on the rows ``features / count`` against 1, with those rows' columns scaled to unit maximum.
Where collinear terms leave several minimisers, a stated rule picks one (:func:`_nnls`: a linear programme puts the
work on the simplest terms, :func:`simplicity`), so every SciPy release and BLAS kernel gives the same coefficients.

Fitting data: the shape sweeps' goldens (``tests/goldens/device/sweep/``), built in-process. A path no sweep
covers (the Signal library, the LSTM, PACK, SHAPE ...) is fitted on the zoo's and the population's own nodes with
the generic terms (fixed, per output and per input element) and marked ``"fitted_on": "models"`` -- those figures
are not held out, and the docs say so. ``*`` is each build's fallback for an op kind the oracle never ran: the
generic terms fitted on every sweep node of the elementwise and data-movement ops.

Run ``python -m microinterp.testing.fit`` after new goldens to rewrite ``instructions.json`` (needs the ``fit``
extra: scipy).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ..cost import instructions as ins
from ..model import load_model
from . import device

#: Generic terms (``instructions._generic``) for paths fitted on the models themselves and for the fallback.
GENERIC_TERMS = ("1", "out", "in")


def _nodes(golden_dir, build: str, sweep: bool) -> list[tuple[str, dict[str, int], int, str, dict[str, int]]]:
    """(path, features, instructions, model, generic features) of every node of every model in one golden file."""
    from .sweep import SWEEPS
    from .sweep import build as build_sweep

    path = (golden_dir / f"{build}.json")
    if not path.exists():
        return []
    data = json.loads(path.read_text())["models"]
    rows = []
    for name, entry in data.items():
        if "instructions" not in entry:
            continue
        if sweep:
            raw = build_sweep(name) if name in SWEEPS else None
        else:
            f = device.model_file(name)
            raw = Path(f).read_bytes() if f else None
        if raw is None:
            continue
        if hashlib.sha256(raw).hexdigest() != entry["model_sha256"]:
            raise ValueError(f"{path}: the golden of {name} was measured on another model (rerun the oracle)")
        sg = load_model(raw).subgraphs[0]
        values = _data_dependent_inputs(raw, sg, build)
        for op, count in zip(sg.operators, entry["instructions"]):
            p, feats = ins.op_features(op, sg.tensors, build, values.get(op.index))
            rows.append((p, feats, count, name, ins._generic(op, sg.tensors, None)[1]))
    return rows


#: Terms of one core feature set's loops only: Helium's 16-lane vectors and 4-position blocks, the DSP kernels'
#: 4-element SIMD steps, their remainders and 2x2 blocks. Offering both to the fit only lets it trade collinear terms.
_MVE_ONLY = ("K16", "P4_", "Prem4_", "c16", "C16", "n16", "nrem16", "Krem16", "U4_K16", "Urem4_K16")
_PLAIN_ONLY = ("U3", "Urem3")
_DSP_ONLY = ("K4", "Krem4", "odd", "P2_", "c4", "crem4", "C4", "Crem4", "n4", "nrem4")


def _applies(term: str, build: str) -> bool:
    if ".reference" in build:
        return True
    mve = build.startswith("cortex-m55")
    if any(k in term for k in _PLAIN_ONLY):
        return ins.CORE_FEATURES[build.partition(".")[0]] == "none"
    if any(k in term for k in _MVE_ONLY):
        return mve
    if any(k in term for k in _DSP_ONLY):
        return not mve
    return True


def _data_dependent_inputs(raw: bytes, sg: Any, build: str) -> dict[int, Any]:
    """The first input of every data-dependent op (SOFTMAX) as the oracle's first invoke saw it: microinterp, which
    is bit-exact with the firmware, runs the same seeded input with every tensor preserved."""
    wanted = [op for op in sg.operators if ins.data_dependent(op)]
    if not wanted:
        return {}
    from ..interpreter import Interpreter

    core, _, kernels = build.partition(".")
    it = Interpreter(raw, target=f"{core}/{kernels}", preserve_all_tensors=True)
    for i, x in enumerate(device.seeded_inputs(it, 0)):
        it.set_input(x, i)
    it.invoke()
    return {op.index: it.get_tensor(op.inputs[0]).copy() for op in wanted}


def _nnls(features: list[dict[str, int]], counts: list[int], terms: list[str]) -> dict[str, float]:
    """min ||R c - 1||^2 over c >= 0, R the rows ``features / count`` (so the squared terms are the nodes' relative
    errors) with each column scaled to unit maximum; then back to unscaled coefficients.

    Many loop-structure terms are collinear over a path's nodes (on a sweep where every RESHAPE has one row,
    ``rows`` is the constant ``1``), so the minimisers form a polytope and plain NNLS returns whichever vertex its
    pivoting reaches -- which moves with the BLAS kernel and the SciPy release. Every minimiser has the same fitted
    values p = R c* (the objective is strictly convex in p), so the tie is broken by a stated rule: among
    c >= 0 with R c = p, the one that minimises sum_j (rank_j + 1) c_j, rank_j the term's place in the order of
    :func:`simplicity` -- a linear programme whose vertex puts the work on the simplest terms (a loop's own count
    before a count of its inner blocks)."""
    from scipy.optimize import linprog, nnls

    a, y = _design(features, counts, terms)
    rows = a / y[:, None]
    scale = _scale(rows)
    rows = rows / scale
    coef, _ = nnls(rows, np.ones(len(y)), maxiter=50 * len(terms))
    rank = {t: i for i, t in enumerate(sorted(terms, key=simplicity))}
    lp = linprog(np.array([rank[t] + 1.0 for t in terms]), A_eq=rows, b_eq=rows @ coef,
                 bounds=(0, None), method="highs")
    if lp.status == 0:
        coef = lp.x
    return {t: float(c / s) for t, c, s in zip(terms, coef, scale) if c > TINY}


def simplicity(term: str) -> tuple[int, str]:
    """The tie-breaking order of terms: fewer factors first (``1``, then ``B``, ``B_U3``, ``B_U3_K`` ...), then by
    name."""
    return (0 if term == "1" else len(term.split("_")), term)


#: Coefficients (on unit-maximum columns) below this are the solvers' round-off, not work: left out.
TINY = 1e-9


def _design(features: list[dict[str, int]], counts: list[int], terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The feature matrix and the counts of the nodes with a non-zero count."""
    a = np.array([[f.get(t, 0) for t in terms] for f in features], dtype=np.float64).reshape(len(features), len(terms))
    y = np.array(counts, dtype=np.float64)
    keep = y > 0
    return a[keep], y[keep]


def _scale(rows: np.ndarray) -> np.ndarray:
    """Each column's largest magnitude (1 for an all-zero column): the scaled rows have unit-maximum columns."""
    scale = np.abs(rows).max(axis=0) if len(rows) else np.ones(rows.shape[1])
    scale[scale == 0] = 1.0
    return scale


def objective(coefs: dict[str, float], features: list[dict[str, int]], counts: list[int]) -> float:
    """The fit's objective for given coefficients: the sum of the nodes' squared relative errors."""
    a, y = _design(features, counts, sorted(coefs))
    c = np.array([coefs[t] for t in sorted(coefs)])
    return float(np.sum((a @ c / y - 1) ** 2))


def _worst(terms: dict[str, float], features, counts) -> float:
    errs = [abs(sum(c * f.get(t, 0) for t, c in terms.items()) / y - 1) for f, y in zip(features, counts) if y > 0]
    return max(errs) if errs else 0.0


def fitting_data(build: str) -> dict[str, tuple[list[dict[str, int]], list[int], list[str], str]]:
    """Per fitted path of one build: the nodes' features, their counts, the terms offered and what they come from
    (``"sweep"`` or ``"models"``). ``*`` is the generic fallback over the sweeps' elementwise and data-movement ops."""
    sweep_rows = _nodes(device.SWEEP_DIR, build, sweep=True)
    model_rows = _nodes(device.GOLDEN_DIR, build, sweep=False)
    by_path: dict[str, list] = defaultdict(list)
    for p, f, y, _, _ in sweep_rows:
        by_path[p].append((f, y))
    out: dict[str, tuple] = {}
    for p, rows in sorted(by_path.items()):
        feats, counts = [r[0] for r in rows], [r[1] for r in rows]
        terms = [t for t in sorted(feats[0]) if _applies(t, build)]
        if len(rows) < 12:      # too few nodes for the loop terms: fixed + the main size only
            terms = [t for t in terms if t in ("1", "n", "out", "P_oc", "macs", "R_C", "B_U")] or terms[:2]
        out[p] = (feats, counts, terms, "sweep")
    uncovered: dict[str, list] = defaultdict(list)
    for p, _, y, _, g in model_rows:
        if p not in out:
            uncovered[p].append((g, y))
    for p, rows in sorted(uncovered.items()):
        out[p] = ([r[0] for r in rows], [r[1] for r in rows], list(GENERIC_TERMS), "models")
    generic = [(g, y) for p, _, y, _, g in sweep_rows if "/" not in p and not p.endswith("POOL_2D") and p != "SOFTMAX"]
    out["*"] = ([g for g, _ in generic], [y for _, y in generic], list(GENERIC_TERMS), "sweep")
    return out


def fit_build(build: str) -> dict[str, Any]:
    """The fitted paths of one build."""
    out: dict[str, Any] = {}
    for p, (feats, counts, terms, fitted_on) in fitting_data(build).items():
        fit = _nnls(feats, counts, terms)
        out[p] = {"terms": fit, "fitted_on": fitted_on, "nodes": len(feats), "max_rel_error": _worst(fit, feats, counts)}
        if fitted_on == "models" or p == "*":
            out[p]["generic"] = True
    return out


def fit_all() -> dict[str, Any]:
    builds = sorted(p.stem for p in device.SWEEP_DIR.glob("*.json"))
    return {"about": "instructions per op of TFLM's Cortex-M build: microinterp.testing.fit over the device oracle's "
                     "goldens (tests/goldens/device/)",
            "builds": {b: fit_build(b) for b in builds}}


if __name__ == "__main__":
    ins.COEFFICIENTS.write_text(json.dumps(fit_all(), indent=1, sort_keys=True) + "\n")
    print(ins.COEFFICIENTS)


def compare(build: str, sweep: bool = False) -> list[dict[str, Any]]:
    """Every node of every golden model of ``build`` (the zoo and the population, or the sweeps): the oracle's
    count, the model's prediction, the path and whether that path was fitted on these nodes themselves."""
    table = ins.coefficients()[build]
    out = []
    for p, f, y, name, g in _nodes(device.SWEEP_DIR if sweep else device.GOLDEN_DIR, build, sweep=sweep):
        out.append({"model": name, "path": p, "oracle": y, "predicted": ins.predict(build, p, f, lambda g=g: g),
                    "fitted_on": table[p]["fitted_on"] if p in table else "fallback"})
    return out
