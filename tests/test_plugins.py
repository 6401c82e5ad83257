"""Kernel-override plugins end to end, with the example plugin in examples/microinterp-plugin-example.

The example binds RELU (computed directly instead of from a table) and ADD (counts calls, delegates to the
reference) in the plugin layer. Here: registered directly; loaded through ``load_plugins`` with a real
``importlib.metadata.EntryPoint``; discovered by ``OpResolver(plugins=True)`` from installed metadata (a dist-info
folder on sys.path, as pip would write it); precedence reference < optimized < plugin < explicit; the ``replace=``
rules; ``describe()``; bit-exactness against the wheel and the reference kernels. The real ``pip install`` into a
temporary virtual environment is behind the ``slow`` marker.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import microinterp.kernels.optimized as optimized_pkg
import microinterp.resolver as resolver_mod
from microinterp import Interpreter, OpResolver, RegistrationError
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.kernels.contract import Kernel
from microinterp.resolver import PLUGIN_GROUP
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import TflmRunner, compare_with_tflm

from .kernels.single_op_models import T, scales, shapes, single_op, with_specials, zero_points

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "microinterp-plugin-example"
EP_NAME, EP_VALUE = "example", "microinterp_plugin_example:register"
RELU_DESC = "plugin: microinterp_plugin_example.relu.DirectRelu"
ADD_DESC = "plugin: microinterp_plugin_example.counting.CountingKernel"


@pytest.fixture(scope="module")
def plugin():
    """The example package, imported from its source folder (as an installed copy would be)."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        importlib.import_module("microinterp_plugin_example.demo")  # the demo model, as plugin.demo
        yield importlib.import_module("microinterp_plugin_example")
    finally:
        sys.path.remove(str(EXAMPLE))


def entry_point() -> EntryPoint:
    return EntryPoint(name=EP_NAME, value=EP_VALUE, group=PLUGIN_GROUP)


def plugged(plugin, optimized: bool = True) -> OpResolver:
    r = OpResolver(optimized=optimized)
    plugin.register(r)
    return r


def test_pyproject_declares_the_entry_point():
    text = (EXAMPLE / "pyproject.toml").read_text()
    section = text.split(f'[project.entry-points."{PLUGIN_GROUP}"]')[1].split("\n[")[0]
    assert re.search(rf'^{EP_NAME}\s*=\s*"{re.escape(EP_VALUE)}"', section, re.MULTILINE)


# -- three ways in ---------------------------------------------------------------------------------------------------


def test_register_directly(plugin):
    r = plugged(plugin)
    assert r.layer_of("RELU") == r.layer_of("ADD") == "plugin"
    assert r.describe(["ADD", "RELU", "RESHAPE"]) == {
        "ADD": ADD_DESC, "RELU": RELU_DESC, "RESHAPE": OpResolver().describe(["RESHAPE"])["RESHAPE"]}
    assert r.plugins_loaded == []  # plugins_loaded lists entry points only


def test_load_plugins_with_an_entry_point(plugin):
    r = OpResolver()
    assert r.load_plugins(entry_points=[entry_point()]) == [EP_NAME]
    assert r.plugins_loaded == [EP_NAME] and r.describe(["ADD", "RELU"]) == {"ADD": ADD_DESC, "RELU": RELU_DESC}
    assert r.load_plugins(entry_points=[entry_point()]) == []  # once per resolver


def test_discovered_from_installed_metadata(plugin, tmp_path, monkeypatch):
    """What pip leaves behind: a dist-info folder with entry_points.txt on sys.path; plugins=True finds it."""
    info = tmp_path / "microinterp_plugin_example-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: microinterp-plugin-example\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\n{EP_NAME} = {EP_VALUE}\n")
    from importlib.metadata import entry_points

    # the README's `pip install ./examples/microinterp-plugin-example` registers the entry point for real: then it is
    # found before the fake dist-info below is on the path, too
    installed = any(ep.name == EP_NAME for ep in entry_points(group=PLUGIN_GROUP))
    assert OpResolver().find("RELU") is not None
    assert (EP_NAME in OpResolver(plugins=True).plugins_loaded) == installed
    monkeypatch.syspath_prepend(str(tmp_path))
    r = OpResolver(plugins=True)
    assert EP_NAME in r.plugins_loaded and r.describe(["ADD", "RELU"]) == {"ADD": ADD_DESC, "RELU": RELU_DESC}
    it = Interpreter(plugin.demo.demo_model(), resolver=r)
    assert it.describe() == {"ADD": ADD_DESC, "RELU": RELU_DESC}


# -- precedence and replace= -----------------------------------------------------------------------------------------


class Marker(Kernel):
    def __init__(self, tag: str):
        self.tag = tag

    def prepare(self, ctx, op):
        return REFERENCE_KERNELS["RELU"].prepare(ctx, op)

    def invoke(self, ctx, op, data):
        REFERENCE_KERNELS["RELU"].invoke(ctx, op, data)


def test_precedence_reference_optimized_plugin_explicit(plugin, monkeypatch):
    fast = Marker("optimized")
    monkeypatch.setattr(resolver_mod, "optimized_kernels", lambda: {**optimized_pkg.OPTIMIZED_KERNELS, "RELU": fast})
    r = OpResolver()
    assert r.find("RELU") is fast and r.find("RELU", optimized=False) is REFERENCE_KERNELS["RELU"]
    plugin.register(r)
    assert isinstance(r.find("RELU"), plugin.DirectRelu) and r.layer_of("RELU") == "plugin"
    assert isinstance(r.find("RELU", optimized=False), plugin.DirectRelu)  # optimized=False skips only that layer
    explicit = Marker("explicit")
    r.register("RELU", explicit)
    assert r.find("RELU") is explicit and r.describe(["RELU"]) == {"RELU": "explicit: tests.test_plugins.Marker"}
    r.unregister("RELU")
    assert r.describe(["RELU"]) == {"RELU": RELU_DESC}
    model = plugin.demo.demo_model()
    for optimized in (True, False):
        assert Interpreter(model, resolver=r, optimized=optimized).describe() == {"ADD": ADD_DESC, "RELU": RELU_DESC}


def test_replace_rules(plugin):
    r = plugged(plugin)
    with pytest.raises(RegistrationError, match=r"RELU is already bound to microinterp_plugin_example\.relu\."
                                                r"DirectRelu in the plugin layer; pass replace=True"):
        plugin.register(r)
    # the same kernels through the entry point: refused, and the plugin layer is left exactly as it was
    before = {op: r.find(op) for op in ("ADD", "RELU")}
    with pytest.raises(RegistrationError, match=r"plugin 'example' \(microinterp_plugin_example:register\): .*"
                                                r"already bound"):
        r.load_plugins(entry_points=[entry_point()])
    assert {op: r.find(op) for op in ("ADD", "RELU")} == before and r.plugins_loaded == []
    other = Marker("other plugin")
    r.register_plugin("RELU", other, replace=True)
    assert r.find("RELU") is other and r.layer_of("RELU") == "plugin"
    r.register("RELU", plugin.DirectRelu())  # explicit is another layer: no replace needed
    assert r.layer_of("RELU") == "explicit"


def test_each_resolver_gets_its_own_counters(plugin):
    a, b = plugged(plugin), plugged(plugin)
    assert a.find("ADD") is not b.find("ADD") and a.find("ADD").inner is REFERENCE_KERNELS["ADD"]


# -- bit-exactness ---------------------------------------------------------------------------------------------------


def test_demo_model_matches_wheel_and_reference(plugin):
    pytest.importorskip("tflite_micro")
    r = plugged(plugin)
    model = plugin.demo.demo_model()
    rng = np.random.default_rng(1)
    it = Interpreter(model, resolver=r, preserve_all_tensors=True)
    reference = Interpreter(model, optimized=False)
    wheel = TflmRunner(model)
    for _ in range(4):
        inputs = [random_tensor(rng, (1, 6, 6, 8)), random_tensor(rng, (1, 1, 1, 8))]
        result = compare_with_tflm(model, inputs, interpreter=it, tflm=wheel)
        assert result.ok, str(result)
        for i, x in enumerate(inputs):
            reference.set_input(x, i)
        reference.invoke()
        assert np.array_equal(it.get_output(0), reference.get_output(0))
    add = r.find("ADD")
    assert add.invokes == 4 and add.prepares >= 1


@given(dtype=st.sampled_from(["INT8", "INT16", "FLOAT32"]), shape=shapes(), s_in=scales(-3, 1),
       ratio=st.floats(-2.5, 2.5), data=st.data(), seed=st.integers(0, 2**32 - 1))
@example(dtype="INT8", shape=(256,), s_in=0.1, ratio=0.0, data=None, seed=0)
def test_direct_relu_matches_the_wheel(plugin, dtype, shape, s_in, ratio, data, seed):
    """The plugin's RELU, not the reference one, against the wheel: int8 (every code), int16, float32 bitwise."""
    pytest.importorskip("tflite_micro")
    rng = np.random.default_rng(seed)
    x = random_tensor(rng, shape, dtype)
    if dtype == "FLOAT32":
        model = single_op("RELU", [T(shape, dtype)], T(shape, dtype))
        x = with_specials(x)
    else:
        zp_in = zp_out = 0
        if dtype == "INT8" and data is not None:
            zp_in, zp_out = data.draw(zero_points(dtype)), data.draw(zero_points(dtype))
        s_out = float(np.float32(s_in * 10.0 ** ratio))
        model = single_op("RELU", [T(shape, dtype, s_in, zp_in)], T(shape, dtype, s_out, zp_out))
        if dtype == "INT8":
            flat = x.reshape(-1)
            flat[:256] = np.arange(-128, 128, dtype=np.int8)[:flat.size]
    it = Interpreter(model, resolver=plugged(plugin), preserve_all_tensors=True)
    assert it.describe() == {"RELU": RELU_DESC}
    result = compare_with_tflm(model, [x], interpreter=it)
    assert result.ok, str(result)


def test_counting_add_on_a_zoo_model(plugin, zoo):
    """ResNet-8 (3 ADD ops) through the counting ADD: same output as the wheel, one invoke per op."""
    pytest.importorskip("tflite_micro")
    path = zoo("pretrainedResnet_quant.tflite")
    r = plugged(plugin)
    n_add = [op.key for op in Interpreter(path).model.main.operators].count("ADD")
    it = Interpreter(path, resolver=r)
    x = random_tensor(np.random.default_rng(2), it.get_input_details(0)["shape"])
    it.set_input(x, 0)
    it.invoke()
    wheel = TflmRunner(path, preserve_all=False)
    wheel.run([x])
    assert np.array_equal(it.get_output(0), wheel.output(0))
    add = r.find("ADD")
    # one invoke per ADD op; prepare runs once per op per pass (the interpreter may size the arena in a first pass)
    assert n_add >= 1 and add.invokes == n_add and add.prepares in (n_add, 2 * n_add)


# -- a real installation (slow: builds a wheel, may need the package index for the build backend) ------------------

NETWORK_ERRORS = ("Could not find a version", "No matching distribution", "NewConnectionError",
                  "Temporary failure in name resolution", "Network is unreachable", "ProxyError")


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # the new venv sees this environment's packages (microinterp, numpy, the wheel) and gets only the plugin itself
    here = sysconfig.get_path("purelib")
    (Path(purelib) / "_parent_env.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", str(src)],
                         capture_output=True, text=True, check=False)
    if pip.returncode != 0 and any(e in pip.stdout + pip.stderr for e in NETWORK_ERRORS):
        pytest.skip("no package index for the build backend")
    assert pip.returncode == 0, pip.stdout + pip.stderr
    demo = subprocess.run([str(py), "-m", "microinterp_plugin_example"], capture_output=True, text=True,
                          check=False, cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "plugins loaded: example" in demo.stdout and "bit-exact with the reference kernels: yes" in demo.stdout
    assert "ADD   -> plugin: microinterp_plugin_example.counting.CountingKernel" in demo.stdout


def test_an_override_keeps_the_band_capability_of_the_kernel_it_replaces():
    """The runnable example of docs/kernels.md: a FULLY_CONNECTED override that delegates to the reference kernel
    runs out of core in 40 KB with its 2 MB filter streamed in channel groups (it declared nothing, so it keeps the
    built-in capability), outputs identical to the in-memory run."""
    import runpy
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "kernel_override" / "fc_override.py"
    result = runpy.run_path(str(example))["main"]()
    assert result == {"same": True, "mode": "channels", "out_of_core": True, "calls": result["calls"]}
    assert result["calls"] >= 2


def test_a_delegating_fc_override_runs_mobilenet_v2_out_of_core(tmp_path):
    """The case users hit: mobilenet_v2 at 512 KB out of core with FULLY_CONNECTED overridden by a kernel that only
    delegates to the reference one (it failed with ArenaOverflowError: the override ran whole)."""
    from .conftest import MODELS_DIR

    path = MODELS_DIR / "mobilenet_v2_quantized_1x3x224x224.tflite"
    if not path.exists():
        pytest.skip("../shared/models not present")
    fc = REFERENCE_KERNELS["FULLY_CONNECTED"]

    class Delegating(Kernel):
        def prepare(self, ctx, op):
            return fc.prepare(ctx, op)

        def invoke(self, ctx, op, data):
            fc.invoke(ctx, op, data)

    resolver = OpResolver()
    resolver.register("FULLY_CONNECTED", Delegating(), replace=True)
    x = np.random.default_rng(1).integers(-128, 128, (1, 3, 224, 224), dtype=np.int8)
    ref = Interpreter(path)
    ref.set_input(x)
    ref.invoke()
    with Interpreter(path, arena=512_000, backing=tmp_path / "sd.img", resolver=resolver) as it:
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), ref.get_output())
        assert {r.op: r.mode for r in it.profile}["FULLY_CONNECTED"] == "channels"
