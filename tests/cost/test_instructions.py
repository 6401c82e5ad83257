"""Layer 1 of the cost model against the device oracle: instructions per op of TFLM's Cortex-M builds.

The fit (microinterp.testing.fit) sees only the shape sweeps; the zoo and the int8 population models are held out.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict

import pytest

from microinterp import Interpreter
from microinterp.cost import instructions as ins
from microinterp.errors import ConfigError
from microinterp.testing import fit, sweep
from microinterp.testing.device import SWEEP_DIR, model_file, output_digest, seeded_inputs, sweep_digest

BUILDS = sorted(ins.coefficients())


@functools.cache
def _rows(build):
    """fit.compare's rows of ``build`` (once per build: two tests read them). A data-dependent op (SOFTMAX) is
    predicted from the values the oracle's first invoke gave it, replayed by microinterp."""
    rows = fit.compare(build)
    if not rows or model_file(rows[0]["model"]) is None:
        pytest.skip("the zoo is not in ../shared")
    return rows


def test_every_core_and_both_kernel_sets_have_a_fit():
    cores = ("cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")
    assert {f"{c}.cmsis-nn" for c in cores} | {"cortex-m4.reference"} <= set(BUILDS)
    assert set(BUILDS) <= {f"{c}.{k}" for c in cores for k in ("cmsis-nn", "reference")}
    for build in BUILDS:
        table = ins.coefficients()[build]
        assert "*" in table and table["CONV_2D/" + ("ref" if "reference" in build else "im2col")]["fitted_on"] == "sweep"
        for path, entry in table.items():
            assert all(c >= 0 for c in entry["terms"].values()), (build, path)


@pytest.mark.parametrize("build", BUILDS)
def test_every_held_out_op_within_10_percent(build):
    """Every node of every zoo and int8 population model the oracle ran, per core: within 10 % of its count."""
    bad = [(r["model"], r["path"], r["oracle"], round(r["predicted"])) for r in _rows(build)
           if abs(r["predicted"] / r["oracle"] - 1) > 0.10]
    assert not bad, bad


@pytest.mark.parametrize("build", BUILDS)
def test_every_held_out_model_within_5_percent(build):
    totals = defaultdict(lambda: [0.0, 0.0])
    for r in _rows(build):
        totals[r["model"]][0] += r["oracle"]
        totals[r["model"]][1] += r["predicted"]
    bad = {m: round(p / o - 1, 3) for m, (o, p) in totals.items() if abs(p / o - 1) > 0.05}
    assert not bad, bad


@pytest.mark.parametrize("build", BUILDS)
def test_the_stored_coefficients_are_the_fit_of_the_goldens(build):
    """instructions.json is what the fit gives on the goldens (nothing in it was edited by hand), checked by what
    matters rather than by a solver's tie-breaking: the stored coefficients reproduce every fitted node within the
    error they state, a refit is no better by the fit's own objective (the ridge makes its minimiser unique, so the
    stored one is it), and the refit predicts every node as the stored coefficients do."""
    pytest.importorskip("scipy")
    stored = ins.coefficients()[build]
    data = fit.fitting_data(build)
    if model_file("person_detect") is not None:
        assert data.keys() == stored.keys()
    else:       # without ../shared only the sweeps (built in-process) are refitted; the models' paths are skipped
        assert data.keys() == {p for p, e in stored.items() if e["fitted_on"] == "sweep"}
    for path, (feats, counts, terms, fitted_on) in data.items():
        entry = stored[path]
        assert entry["fitted_on"] == fitted_on and entry["nodes"] == len(feats), path
        assert set(entry["terms"]) <= set(terms), path
        assert fit._worst(entry["terms"], feats, counts) <= entry["max_rel_error"] + 1e-9, path
        refit = fit._nnls(feats, counts, terms)
        assert fit.objective(refit, feats, counts) >= fit.objective(entry["terms"], feats, counts) * (1 - 1e-6) - 1e-12, \
            path
        for f in feats:
            want = sum(c * f.get(t, 0) for t, c in entry["terms"].items())
            got = sum(c * f.get(t, 0) for t, c in refit.items())
            assert got == pytest.approx(want, rel=1e-6), (path, f)


def test_the_fit_has_one_minimiser():
    """Two collinear terms: plain NNLS may split their work any way, and which way moves with the solver; the
    stated rule keeps the first-named one (the reason a new SciPy or another BLAS kernel cannot change
    instructions.json)."""
    pytest.importorskip("scipy")
    feats = [{"1": 1, "a": n, "b": n, "c": 1} for n in range(1, 30)]
    counts = [10 + 7 * n for n in range(1, 30)]
    c = fit._nnls(feats, counts, ["1", "a", "b", "c"])
    assert c.keys() == {"1", "a"}
    assert c["a"] == pytest.approx(7, rel=1e-9) and c["1"] == pytest.approx(10, rel=1e-9)


def test_paths_follow_cmsis_nn_dispatch():
    conv = sweep.build("sweep_conv_1x1")
    from microinterp.model import load_model

    sg = load_model(conv).subgraphs[0]
    paths = {ins.op_features(op, sg.tensors, "cortex-m4.cmsis-nn")[0] for op in sg.operators}
    assert paths == {"CONV_2D/1x1_fast", "CONV_2D/1x1"}
    assert {ins.op_features(op, sg.tensors, "cortex-m4.reference")[0] for op in sg.operators} == {"CONV_2D/ref"}
    with pytest.raises(ConfigError, match="unknown firmware build"):
        ins.op_features(sg.operators[0], sg.tensors, "cortex-m0.cmsis-nn")


#: (build, sweep) -> the outputs CMSIS-NN's Helium arm_convolve_1_x_n_s8 computes otherwise than the reference
#: (odd total padding: VALID drops the last tap of the last position, SAME reads stale scratch columns or past the
#: input; docs/device-oracle.md). target= emulates them on the firmware arena's image; without it they differ.
HELIUM_1XN = {("cortex-m55.cmsis-nn", "sweep_conv_1xn"): frozenset({0, 6, 17, 29, 37, 43, 45})}


@pytest.mark.parametrize("build", BUILDS)
def test_sweep_outputs_equal_the_firmware(build):
    """The sweeps are device goldens too: with target=, every output of every seed equals the firmware's, and the
    arena to the byte."""
    core, _, kernels = build.partition(".")
    goldens = json.loads((SWEEP_DIR / f"{build}.json").read_text())["models"]
    assert set(goldens) == set(sweep.SWEEPS)
    for name, g in goldens.items():
        it = Interpreter(sweep.build(name), target=f"{core}/{kernels}")
        assert it.arena_used_bytes == g["arena_used_bytes"], name
        for seed, want in enumerate(g["outputs"]):
            for i, x in enumerate(seeded_inputs(it, seed)):
                it.set_input(x, i)
            it.invoke()
            got = [sweep_digest(output_digest(it.get_tensor(d["index"]).tobytes()))
                   for d in it.get_output_details()]
            differ = {k for k, (a, b) in enumerate(zip(got, want)) if a != b}
            assert len(got) == len(want) and not differ, (name, seed, sorted(differ))


def test_the_helium_1xn_outputs_are_the_firmware_s_own():
    """The seven Helium 1xN outputs differ from the reference arithmetic (the host build), and only those, on
    every seed: the emulation under target= is what makes them equal."""
    (build, name), quirky = next(iter(HELIUM_1XN.items()))
    goldens = json.loads((SWEEP_DIR / f"{build}.json").read_text())["models"][name]
    host = Interpreter(sweep.build(name))
    device = Interpreter(sweep.build(name), target="cortex-m55")
    assert {i for i, d in enumerate(device.runtime.op_data) if d.helium_1xn is not None} == quirky
    m4 = Interpreter(sweep.build(name), target="cortex-m4")       # DSP: arm_convolve_s8, the reference's values
    assert all(d.helium_1xn is None for d in m4.runtime.op_data)
    for seed, want in enumerate(goldens["outputs"]):
        for i, x in enumerate(seeded_inputs(host, seed)):
            host.set_input(x, i)
        host.invoke()
        got = [sweep_digest(output_digest(host.get_tensor(d["index"]).tobytes())) for d in host.get_output_details()]
        assert {k for k, (a, b) in enumerate(zip(got, want)) if a != b} == quirky, seed
