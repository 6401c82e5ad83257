"""The LiteRT interpreter surface (microinterp/litert.py): one LiteRT-style evaluation script runs unchanged on
microinterp and on LiteRT itself (ai_edge_litert, reference kernels) -- details, outputs, signatures -- and every
method's microinterp behaviour (fixed shapes, inputs only, views)."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.errors import ConfigError, InputError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.models import demo_cnn
from microinterp.testing.tflm import TflmRunner


def signature_model() -> bytes:
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.5, zero_point=1)
    y = b.add_tensor("y", (1, 4), "INT8", scale=0.5, zero_point=1)
    z = b.add_tensor("z", (1, 4), "INT8", scale=1.0, zero_point=-3)
    b.add_op("ADD", [x, y], [z], fused_activation_function="NONE")
    b.inputs, b.outputs = [x, y], [z]
    b.add_signature("serving_default", {"left": x, "right": y}, {"sum": z})
    return b.build()


def litert_script(interp, samples):
    """What a LiteRT user writes: allocate, details as lists, set_tensor / invoke / get_tensor by index."""
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    results = []
    for x in samples:
        interp.set_tensor(inp["index"], x.astype(inp["dtype"]))
        interp.invoke()
        results.append(interp.get_tensor(out["index"]))
    return inp, out, results


def litert(model: bytes):
    mod = pytest.importorskip("ai_edge_litert.interpreter")
    return mod.Interpreter(model_content=model,
                           experimental_op_resolver_type=mod.OpResolverType.BUILTIN_REF)


def same_details(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for k in ("name", "index", "dtype", "quantization"):
        assert a[k] == b[k], k
    for k in ("shape", "shape_signature"):
        assert a[k].tolist() == b[k].tolist() and a[k].dtype == b[k].dtype
    for k in ("scales", "zero_points"):
        np.testing.assert_array_equal(a["quantization_parameters"][k], b["quantization_parameters"][k])
        assert a["quantization_parameters"][k].dtype == b["quantization_parameters"][k].dtype
    assert a["quantization_parameters"]["quantized_dimension"] == b["quantization_parameters"][
        "quantized_dimension"]


def test_the_same_script_runs_on_microinterp_and_litert():
    model = demo_cnn()
    samples = [np.random.default_rng(s).integers(-128, 128, size=(1, 64, 64, 3)) for s in range(3)]
    mine = litert_script(mi.Interpreter(model), samples)
    theirs = litert_script(litert(model), samples)
    same_details(mine[0], theirs[0])
    same_details(mine[1], theirs[1])
    wheel = TflmRunner(model, preserve_all=False)
    for x, a, b in zip(samples, mine[2], theirs[2]):
        wheel.run([x.astype(np.int8)])
        assert np.array_equal(a, wheel.output(0))         # the oracle is TFLM
        assert np.array_equal(a, b)                         # and LiteRT's reference kernels agree here
    details = mi.Interpreter(model).get_tensor_details()
    assert [d["name"] for d in details] == [d["name"] for d in litert(model).get_tensor_details()]


def test_signatures():
    model = signature_model()
    ours, ref = mi.Interpreter(model), litert(model)
    assert ours.get_signature_list() == ref.get_signature_list() == {
        "serving_default": {"inputs": ["left", "right"], "outputs": ["sum"]}}
    left, right = np.array([[1, 2, 3, 4]], np.int8), np.array([[5, -6, 7, 100]], np.int8)
    got = ours.get_signature_runner()(left=left, right=right)
    ref.allocate_tensors()
    want = ref.get_signature_runner("serving_default")(left=left, right=right)
    assert set(got) == set(want) == {"sum"} and np.array_equal(got["sum"], want["sum"])
    runner = ours.get_signature_runner("serving_default")
    assert set(runner.get_input_details()) == {"left", "right"}
    with pytest.raises(InputError, match="missing"):
        runner(left=left)
    with pytest.raises(ConfigError, match="no signature"):
        ours.get_signature_runner("other")
    with pytest.raises(ConfigError, match="no SignatureDefs"):
        mi.Interpreter(demo_cnn()).get_signature_runner()


def test_tflm_differences_are_clear_errors():
    it = mi.Interpreter(demo_cnn())
    inp = it.get_input_details()[0]
    it.resize_tensor_input(inp["index"], [1, 64, 64, 3])        # the current shape: fine
    with pytest.raises(ConfigError, match="fixed shapes.*invoke_batch"):        # a batch: says what does it
        it.resize_tensor_input(inp["index"], [2, 64, 64, 3])
    with pytest.raises(ConfigError, match="fixed shapes") as e:
        it.resize_tensor_input(inp["index"], [1, 32, 32, 3])
    assert "invoke_batch" not in str(e.value)
    with pytest.raises(InputError, match="not an input"):
        it.set_tensor(it.get_output_details()[0]["index"], np.zeros((1, 10), np.int8))
    with pytest.raises(ValueError, match="dtype"):                 # LiteRT raises ValueError too
        it.set_tensor(inp["index"], np.zeros((1, 64, 64, 3), np.float32))
    with pytest.raises(ValueError, match="shape"):
        it.set_tensor(inp["index"], np.zeros((1, 2), np.int8))
    with pytest.raises(InputError, match="out of range"):
        it.tensor(10**6)


def test_tensor_returns_a_view_and_reset_all_variables_resets():
    it = mi.Interpreter(demo_cnn())
    inp = it.get_input_details()[0]
    view = it.tensor(inp["index"])
    x = np.full((1, 64, 64, 3), 7, np.int8)
    it.set_tensor(inp["index"], x)
    assert callable(view) and np.array_equal(view(), x) and np.shares_memory(view(), view())
    it.reset_all_variables()
    assert it.allocate_tensors() is None


def label_image(Interpreter, model_file: str, image: np.ndarray, num_threads=None, ext_delegate=None):
    """The interpreter code path of LiteRT's ``label_image.py`` example, unchanged (the image decoding aside):
    constructed with ``model_path=``, ``experimental_delegates=`` and ``num_threads=``."""
    interpreter = Interpreter(model_path=model_file, experimental_delegates=ext_delegate, num_threads=num_threads)
    interpreter.allocate_tensors()
    input_details = interpreter.get_input_details()
    output_details = interpreter.get_output_details()
    floating_model = input_details[0]["dtype"] == np.float32
    height = input_details[0]["shape"][1]
    width = input_details[0]["shape"][2]
    input_data = np.expand_dims(image[:height, :width], axis=0)
    if floating_model:
        input_data = (np.float32(input_data) - 127.5) / 127.5
    interpreter.set_tensor(input_details[0]["index"], input_data)
    interpreter.invoke()
    output_data = interpreter.get_tensor(output_details[0]["index"])
    results = np.squeeze(output_data)
    return results, results.argsort()[-5:][::-1]


def test_litert_example_code_runs_unchanged(tmp_path):
    mod = pytest.importorskip("ai_edge_litert.interpreter")
    path = tmp_path / "demo.tflite"
    path.write_bytes(demo_cnn())
    image = np.random.default_rng(4).integers(-128, 128, (64, 64, 3)).astype(np.int8)
    mine = label_image(mi.Interpreter, str(path), image, num_threads=1)
    theirs = label_image(mod.Interpreter, str(path), image, num_threads=1)
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])
    with pytest.raises(ConfigError, match="delegates"):
        mi.Interpreter(model_path=str(path), experimental_delegates=[object()])
    with pytest.raises(TypeError, match="exactly one model"):
        mi.Interpreter(str(path), model_path=str(path))
    assert mi.Interpreter(model_content=path.read_bytes(), experimental_preserve_all_tensors=True).preserve_all_tensors
