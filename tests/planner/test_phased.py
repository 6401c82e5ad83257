"""The phased planner (planner/phased.py) and its runtime (phases.py): bit-exact with the whole-tensor run on random
CNN graphs (chains, residual blocks with identity and convolution shortcuts, pads, pools, shared inputs) and on
the zoo, never a larger head than TFLM's, no two live buffers overlapping except an output over the input rows it
has consumed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microinterp as mi
from microinterp.errors import ConfigError, InputError
from microinterp.testing.models import QuantNet

from ..conftest import zoo_model


def random_cnn(seed: int) -> bytes:
    """A random DAG of row-local layers: conv / depthwise / pool / pad, residual blocks whose shortcut is the
    block input (read by two ops) or a 1x1 convolution (an ADD fed by two computed branches)."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(12, 40))
    net = QuantNet((1, size, size, int(rng.integers(1, 5))), seed=seed, name=f"phased net {seed}")
    for _ in range(int(rng.integers(2, 9))):
        kind = rng.choice(["conv", "depthwise", "pool", "pad", "residual", "shortcut"])
        h = net.shape[1]
        if kind == "conv" or h < 6:
            k = int(rng.choice([1, 3, 5]))
            net.conv(int(rng.integers(2, 13)), k, stride=int(rng.choice([1, 2])) if h >= 8 else 1,
                     act=str(rng.choice(["RELU", "NONE"])))
        elif kind == "depthwise":
            net.depthwise(3, stride=int(rng.choice([1, 2])), multiplier=int(rng.choice([1, 2])))
        elif kind == "pool":
            net.pool(str(rng.choice(["MAX", "AVERAGE"])), 2, 2, padding=str(rng.choice(["SAME", "VALID"])))
        elif kind == "pad":
            net.pad(*(int(v) for v in rng.integers(0, 3, size=4)))
            net.depthwise(3, padding="VALID")
        elif kind == "residual":
            mark = net.mark()
            net.conv(net.shape[3], 3, act="NONE")
            net.add(mark, act="RELU")
        else:
            block = net.mark()
            filters = int(rng.integers(2, 13))
            stride = int(rng.choice([1, 2]))
            net.conv(filters, 3, stride=stride)
            net.conv(filters, 3, act="NONE")
            branch = net.mark()
            net.resume(block)
            net.conv(filters, 1, stride=stride, act="NONE")
            net.add(branch, act="RELU")
    net.flatten()
    net.fc(int(rng.integers(2, 8)), act="NONE")
    return net.build()


def outputs(it: mi.Interpreter, x: np.ndarray) -> list[np.ndarray]:
    it.set_input(x)
    it.invoke()
    return [it.get_output(i) for i in range(it.num_outputs)]


def check_plan(it: mi.Interpreter) -> None:
    """No two buffers alive at the same time share a byte unless they are one merged group; every buffer lies in
    the head."""
    p = it.runtime.phased
    reqs, offs, groups = p.requests, p.offsets, p.groups
    for i, (a, oa) in enumerate(zip(reqs, offs)):
        assert 0 <= oa and oa + a.size <= it.head_bytes
        for j in range(i):
            b, ob = reqs[j], offs[j]
            live = not (a.first > b.last or b.first > a.last)
            if live and a.size and b.size and oa < ob + b.size and ob < oa + a.size:
                assert groups[i] == groups[j], (i, j)


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), optimized=st.booleans())
def test_phased_is_exact_valid_and_never_larger(seed, optimized):
    model = random_cnn(seed)
    tflm = mi.Interpreter(model, optimized=optimized)
    phased = mi.Interpreter(model, optimized=optimized, planner="phased")
    assert phased.head_bytes <= tflm.head_bytes
    assert phased.tail_bytes == tflm.tail_bytes
    check_plan(phased)
    rng = np.random.default_rng(seed)
    for _ in range(2):      # twice: nothing of one invoke may leak into the next
        x = rng.integers(-128, 128, size=tflm._input_slots[0][2]).astype(np.int8)
        for a, b in zip(outputs(tflm, x), outputs(phased, x)):
            assert np.array_equal(a, b)


def test_a_residual_block_overwrites_its_input():
    """ResNet's downsampling block: both branches read the block input in bands, the ADD's output takes its
    place (a merged pair) and the segment holds the whole block."""
    from ..pager.test_fusion import resnet_block_net

    model = resnet_block_net()
    phased = mi.Interpreter(model, planner="phased")
    tflm = mi.Interpreter(model)
    assert any(len(s.ops) == 4 and s.merge is not None for s in phased.runtime.phased.segments)
    assert phased.head_bytes < 0.7 * tflm.head_bytes
    x = np.random.default_rng(0).integers(-128, 128, size=(1, 32, 32, 4)).astype(np.int8)
    assert np.array_equal(outputs(phased, x)[0], outputs(tflm, x)[0])


def test_phased_errors():
    model = random_cnn(3)
    with pytest.raises(ConfigError, match="phased"):
        mi.Interpreter(model, planner="phased", preserve_all_tensors=True)
    it = mi.Interpreter(model, planner="phased")
    lines = it.runtime.phased.view_rows()
    if lines:
        with pytest.raises(InputError, match="phased segment"):
            it.get_tensor(next(iter(lines)))


# -- the zoo -------------------------------------------------------------------------------------------------------------
#: The issue's goals: at least this much below TFLM's head.
GOALS = {"person_detect.tflite": 0.30, "vww_96_int8.tflite": 0.30, "pretrainedResnet_quant.tflite": 0.30,
         "mobilenet_v2_quantized_1x3x224x224.tflite": 0.50}
ZOO = ["ad01_int8.tflite", "audio_preprocessor_int8.tflite", "hello_world_int8.tflite", "kws_ref_model.tflite",
       "micro_speech_quantized.tflite", "person_detect.tflite", "pretrainedResnet_quant.tflite",
       "trained_lstm_int8.tflite", "vww_96_int8.tflite", "mobilenet_v2_quantized_1x3x224x224.tflite"]


@pytest.mark.parametrize("name", ZOO)
def test_zoo_phased_is_exact_and_smaller(name):
    path = zoo_model(name)
    tflm = mi.Interpreter(path)
    phased = mi.Interpreter(path, planner="phased")
    check_plan(phased)
    assert phased.head_bytes <= tflm.head_bytes * (1 - GOALS.get(name, 0.0))
    rng = np.random.default_rng(1)
    for _ in range(2):
        for i, (_, dtype, shape) in enumerate(tflm._input_slots):
            if np.issubdtype(dtype, np.integer):
                info = np.iinfo(dtype)
                x = rng.integers(info.min, info.max + 1, size=shape).astype(dtype)
            else:
                x = rng.standard_normal(shape).astype(dtype)
            tflm.set_input(x, i)
            phased.set_input(x, i)
        tflm.invoke()
        phased.invoke()
        for o in range(tflm.num_outputs):
            assert np.array_equal(tflm.get_output(o), phased.get_output(o))


def test_plan_command_shows_the_phased_strategy(tmp_path, capsys):
    import json

    from microinterp.apps.cli import main
    from microinterp.testing.models import demo_cnn

    path = tmp_path / "demo.tflite"
    path.write_bytes(demo_cnn())
    assert main(["plan", str(path), "--strategy", "all", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    it = mi.Interpreter(path, planner="phased")
    assert doc["heads"]["phased"] == it.head_bytes < doc["heads"]["tflm"]
    cost = doc["phased"]
    assert cost["segments"] == [s.ops for s in it.runtime.phased.segments]
    assert cost["extra_kernel_calls"] == it.runtime.phased.extra_calls() > 0
    assert 0 < cost["extra_cycles"] and 0 < cost["throughput_decrease_percent"] < 10
    assert main(["plan", str(path), "--strategy", "all", "--picture", "--width", "32"]) == 0
    text = capsys.readouterr().out
    assert "phased: head" in text and "optimal: head" in text and "tflm: head" in text
    assert main(["plan", str(path), "--strategy", "phased", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["planner"] == "phased" and doc["head_bytes"] == it.head_bytes


def _float_add_chain() -> bytes:
    """x + x, then that + x, on a float 8x8x3 map: the first sum is a phased segment's intermediate."""
    from microinterp.testing.builder import ModelBuilder

    b = ModelBuilder()
    x, t, y = (b.add_tensor(n, (1, 8, 8, 3), "FLOAT32") for n in ("x", "t", "y"))
    b.add_op("ADD", [x, x], [t], fused_activation_function="NONE")
    b.add_op("ADD", [t, x], [y], fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    return b.build()


@pytest.mark.parametrize("optimized", [True, False])
def test_a_segments_ops_are_not_bound_on_their_band_views(optimized):
    """Binding a float ADD on the one-row band of a segment's intermediate failed (ValueError at Interpreter(), seen
    on real float models: tflite__add, the float MobileNets); a segment's ops run through the segment only."""
    model = _float_add_chain()
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 3)).astype(np.float32)
    ref = mi.Interpreter(model, optimized=optimized)
    ref.set_input(x)
    ref.invoke()
    it = mi.Interpreter(model, planner="phased", optimized=optimized)
    assert it.runtime.phased.segments and it.head_bytes < ref.head_bytes
    it.set_input(x)
    it.invoke()
    np.testing.assert_array_equal(it.get_output(0), ref.get_output(0))


@pytest.mark.parametrize("name", ["t2onnx__mobilenet_v1_0.25_128", "tfsupport__model_without_metadata", "tflite__add"])
def test_real_float_models_run_phased(name):
    from ..conftest import MODELS_DIR

    path = MODELS_DIR.parent / "population" / f"{name}.tflite"
    if not path.exists():
        pytest.skip("../shared/population not present")
    ref = mi.Interpreter(path)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(d["shape"]).astype(d["dtype"]) for d in ref.get_input_details()]
    it = mi.Interpreter(path, planner="phased")
    for interp in (ref, it):
        for i, x in enumerate(xs):
            interp.set_input(x, i)
        interp.invoke()
    assert it.head_bytes < ref.head_bytes
    for k in range(ref.num_outputs):
        np.testing.assert_array_equal(it.get_output(k), ref.get_output(k))
