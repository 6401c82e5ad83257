"""invoke_batch: N samples through a rebatched copy of the model equal N single invokes (from a reset state) on
every zoo model and on random builder networks, chunked or not; what cannot be batched is refused."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microinterp as mi
from microinterp.errors import ConfigError, InputError
from microinterp.testing.models import demo_cnn

from .kernels.test_resource_variables import accumulator_model
from .pager.conftest import small_net

ZOO = Path(__file__).resolve().parents[2] / "shared" / "models"


def singles(it: mi.Interpreter, xs: np.ndarray) -> list[np.ndarray]:
    out = []
    for x in xs:
        it.reset()
        it.set_input(x[None])
        it.invoke()
        out.append(it.get_output())
    return out


def samples(it: mi.Interpreter, n: int, seed: int) -> np.ndarray:
    d = it.get_input_details(0)
    dt = np.dtype(d["dtype"])
    rng = np.random.default_rng(seed)
    shape = (n, *d["shape"][1:])
    return (rng.integers(-128, 128, size=shape) if dt.kind in "iu" else rng.standard_normal(shape)).astype(dt)


@settings(max_examples=8)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 9), batch=st.integers(1, 5), threads=st.integers(1, 3))
def test_random_networks(seed, n, batch, threads):
    it = mi.Interpreter(small_net(seed, 32 + 8 * (seed % 3), 2 + seed % 4))
    xs = samples(it, n, seed)
    got = it.invoke_batch(xs, batch, threads=threads)
    assert got.shape[0] == n
    assert all(np.array_equal(got[k:k + 1], s) for k, s in enumerate(singles(it, xs)))


def test_threads_report_progress_and_errors():
    it = mi.Interpreter(demo_cnn())
    xs = samples(it, 10, 2)
    seen = []

    def progress(done, total):
        seen.append((done, total))

    got = it.invoke_batch(xs, 3, progress, threads=2)
    assert np.array_equal(got, it.invoke_batch(xs, 3))
    assert seen and seen[-1] == (10, 10) and all(a <= b for (a, _), (b, _) in pairwise(seen))
    with pytest.raises(InputError, match="threads"):
        it.invoke_batch(xs, 3, threads=0)

    def failing(done, total):
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):     # a progress callback's exception reaches the caller
        it.invoke_batch(xs, 3, failing, threads=2)


@pytest.mark.skipif(not (ZOO / "person_detect.tflite").exists(), reason="../shared/models not present")
@pytest.mark.parametrize("name", sorted(p.name for p in ZOO.glob("*.tflite") if "mobilenet" not in p.name)
                         if ZOO.exists() else [])
def test_zoo_models(name):
    it = mi.Interpreter(ZOO / name)
    if it.num_inputs != 1:
        with pytest.raises((ConfigError, mi.InputError)):
            it.invoke_batch([samples(it, 2, 0)] * it.num_inputs)
        return
    try:
        xs = samples(it, 7, 1)
        got = it.invoke_batch(xs, 4)
    except ConfigError as e:        # an op that may mix samples: refused, never a wrong answer
        assert "batch" in str(e)
        return
    outs = got if isinstance(got, list) else [got]
    for k, s in enumerate(singles(it, xs)):
        assert np.array_equal(outs[0][k:k + 1], s if s.shape[:1] == (1,) else s[None])


def test_refusals_and_input_checks():
    it = mi.Interpreter(demo_cnn())
    with pytest.raises(InputError, match="expected an array"):
        it.invoke_batch(np.zeros((3, 64, 64, 3), np.float32))
    with pytest.raises(InputError, match="1 input"):
        it.invoke_batch([np.zeros((3, 64, 64, 3), np.int8)] * 2)
    for batch in (0, 2.5, "4", True):
        with pytest.raises(InputError, match="batch must be an integer"):
            it.invoke_batch(np.zeros((3, 64, 64, 3), np.int8), batch)
    # resource variables: not rebatched, run sample by sample from a reset state instead
    xs = np.arange(8, dtype=np.int8).reshape(2, 4)
    want = np.concatenate(singles(mi.Interpreter(accumulator_model()), xs))   # CALL_ONCE runs on a fresh one only
    assert np.array_equal(mi.Interpreter(accumulator_model()).invoke_batch(xs), want)
    # no samples: no outputs, of the outputs' dtype and per-sample shape (batched and sample by sample)
    y = it.invoke_batch(np.zeros((0, 64, 64, 3), np.int8))
    d = it.get_output_details(0)
    assert y.shape == (0, *d["shape"][1:]) and y.dtype == d["dtype"]
    y = mi.Interpreter(accumulator_model()).invoke_batch(xs[:0])
    assert y.shape[0] == 0 and y.shape[1:] == want.shape[1:] and y.dtype == want.dtype


def test_cli_eval(tmp_path, capsys):
    import json

    from microinterp.apps.cli import main

    model = tmp_path / "m.tflite"
    model.write_bytes(demo_cnn())
    it = mi.Interpreter(model)
    xs = samples(it, 6, 3)
    np.save(tmp_path / "x.npy", xs)
    want = np.concatenate(singles(it, xs))
    labels = want.reshape(6, -1).argmax(axis=1)
    labels[0] = (labels[0] + 1) % 10                    # one wrong label
    np.save(tmp_path / "y.npy", labels)
    assert main(["eval", str(model), "--inputs", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "y.npy"),
                 "--batch", "4", "--json", "--output", str(tmp_path / "out.npy")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["samples"] == 6 and doc["accuracy"] == pytest.approx(5 / 6)
    assert np.array_equal(np.load(tmp_path / "out.npy"), want)
    assert sum(map(sum, doc["confusion"])) == 6
    np.save(tmp_path / "none.npy", xs[:0])
    assert main(["eval", str(model), "--inputs", str(tmp_path / "none.npy")]) == 1
    assert "holds no samples" in capsys.readouterr().err


def test_processes_and_ray_give_the_single_process_result():
    from microinterp.apps.scaleout import evaluate

    model = demo_cnn()
    it = mi.Interpreter(model)
    xs = samples(it, 11, 5)
    want = it.invoke_batch(xs, 4)
    assert np.array_equal(evaluate(model, xs, 4, jobs=2, chunks=3), want)
    ray = pytest.importorskip("ray")
    try:
        got = evaluate(model, xs, 4, ray="local", chunks=4)
        sweep_rows = _sweep(ray="local")
    finally:
        ray.shutdown()
    assert np.array_equal(got, want)
    assert sweep_rows == _sweep(ray=None)         # the schedule sweep's grid points over Ray: the same rows


def _sweep(ray):
    import json
    import tempfile

    from microinterp.apps.cli import main

    with tempfile.TemporaryDirectory() as out:
        args = ["sweep", "gen:demo_cnn", "--sram", "40K,60K", "--tile", "8K", "--frames", "1", "--out", out]
        assert main(args + (["--ray", ray] if ray else [])) == 0
        rows = json.loads(Path(out, "demo_cnn-sweep.json").read_text())["results"]
    return [{k: v for k, v in r.items() if "seconds" not in k and k != "host_s"} for r in rows]


def _two_branch_cnn() -> bytes:
    """A Keras-style two-branch CNN: two convolutions of one input joined along channels (CONCATENATION axis 3)."""
    from microinterp.testing.builder import ModelBuilder

    rng = np.random.default_rng(9)
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 8, 8, 3), "INT8", scale=0.05, zero_point=-2)
    outs = []
    for k in range(2):
        w = b.add_tensor(f"w{k}", (4, 3, 3, 3), "INT8", data=rng.integers(-127, 128, (4, 3, 3, 3)),
                         scale=[0.01] * 4, zero_point=0, axis=0)
        y = b.add_tensor(f"y{k}", (1, 8, 8, 4), "INT8", scale=0.1, zero_point=0)
        b.add_op("CONV_2D", [x, w], [y], padding="SAME")
        outs.append(y)
    z = b.add_tensor("z", (1, 8, 8, 8), "INT8", scale=0.1, zero_point=0)
    b.add_op("CONCATENATION", outs, [z], axis=3)
    b.inputs, b.outputs = [x], [z]
    return b.build()


def test_a_two_branch_cnn_is_batched():
    it = mi.Interpreter(_two_branch_cnn())
    xs = samples(it, 5, 2)
    got = it.invoke_batch(xs, 4)
    assert np.array_equal(got, np.concatenate(singles(mi.Interpreter(_two_branch_cnn()), xs)))
    assert it._batch_runner.cache                   # rebatched: the concatenation is along channels


def test_eval_quantizes_a_float_dataset_with_the_inputs_quantization(tmp_path, capsys):
    import json

    from microinterp.apps.cli import main
    from microinterp.batch import quantize_samples

    model = tmp_path / "m.tflite"
    model.write_bytes(demo_cnn())
    it = mi.Interpreter(model)
    d = it.get_input_details()[0]
    scale, zp = d["quantization"]
    xs = np.random.default_rng(3).uniform(-5, 5, (4, *d["shape"][1:])).astype(np.float32)
    q = quantize_samples(it, xs)
    assert q.dtype == np.int8
    assert np.array_equal(q, np.clip(np.trunc(xs / np.float32(scale) + np.copysign(0.5, xs)) + zp, -128, 127))
    np.save(tmp_path / "x.npy", xs)
    assert main(["eval", str(model), "--inputs", str(tmp_path / "x.npy"), "--quantize", "--output",
                 str(tmp_path / "y.npy"), "--json"]) == 0
    json.loads(capsys.readouterr().out)
    assert np.array_equal(np.load(tmp_path / "y.npy"), it.invoke_batch(q))
