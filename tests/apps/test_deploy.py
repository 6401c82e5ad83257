"""microinterp deploy: the resolver snippet lists exactly the model's ops with TFLM's Add methods, the arena for a
32-bit target (rounded to a KiB), latency, memory against the part, and out-of-core settings that really run."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import microinterp as mi
from microinterp.apps.cli import main
from microinterp.apps.deploy import deploy, resolver_snippet
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.memory32 import estimate_arena
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.models import demo_cnn
from microinterp.tflm.ops import RESOLVER_METHODS

from ..conftest import MODELS_DIR

ZOO = MODELS_DIR


def added(snippet: str) -> list[str]:
    return re.findall(r"op_resolver\.(Add\w+)\(", snippet)


def test_every_op_microinterp_runs_has_its_tflm_method():
    assert set(REFERENCE_KERNELS) <= set(RESOLVER_METHODS)


def test_demo_model_report():
    d = deploy(demo_cnn(), "apollo3")
    ops = mi.load_model(demo_cnn()).op_names()
    assert sorted(d.ops) == ops
    assert sorted(added(d.resolver)) == sorted(RESOLVER_METHODS[o] for o in ops)
    assert f"MicroMutableOpResolver<{len(ops)}>" in d.resolver
    est = estimate_arena(demo_cnn(), target="cortex-m4")            # the Apollo3's core, CMSIS-NN kernels
    assert d.arena_bytes == est.total_bytes and d.arena_size % 1024 == 0 and 0 <= d.arena_size - d.arena_bytes < 1024
    assert (d.head_bytes, d.tail_bytes) == (est.head_bytes, est.persistent_bytes)
    assert d.target["core"] == "cortex-m4" and d.target["kernels"] == "cmsis-nn"
    assert deploy(demo_cnn(), "apollo3", target="cortex-m55").arena_bytes == \
        estimate_arena(demo_cnn(), target="cortex-m55").total_bytes
    assert d.fits and d.out_of_core is None and d.latency_ms > 0
    doc = json.loads(json.dumps(d.as_dict()))
    assert doc["ops"] == list(d.ops) and doc["arena_size"] == d.arena_size
    assert abs(doc["cycles"] - sum(o["cycles"] for o in doc["per_op"])) < 1e-6 * doc["cycles"]


def test_a_custom_op_tflm_does_not_ship_gets_a_placeholder():
    snippet = resolver_snippet(["CONV_2D", "MyOp", "SignalRfft"])
    assert snippet.splitlines() == ["static tflite::MicroMutableOpResolver<3> op_resolver;",
                                    "op_resolver.AddConv2D();",
                                    'op_resolver.AddCustom("MyOp", /* TFLM has no kernel for MyOp: your '
                                    'TFLMRegistration */ nullptr);',
                                    "op_resolver.AddRfft();"]


@pytest.mark.skipif(not (ZOO / "person_detect.tflite").exists(), reason="../shared/models not present")
def test_every_zoo_model(tmp_path, capsys):
    for path in sorted(ZOO.glob("*.tflite")):
        if "mobilenet" in path.name:
            continue
        d = deploy(path)
        assert sorted(d.ops) == mi.load_model(path).op_names(), path.name
        assert sorted(added(d.resolver)) == sorted(RESOLVER_METHODS[o] for o in d.ops)
        assert d.fits
    big = ZOO / "mobilenet_v2_quantized_1x3x224x224.tflite"
    d = deploy(big)
    o = d.out_of_core
    assert not d.fits and o["runs"] and o["arena"] <= d.mcu.sram_bytes
    x = np.random.default_rng(0).integers(-128, 128, size=(1, 3, 224, 224), dtype=np.int8)
    with mi.Interpreter(big, arena=o["arena"], backing=tmp_path / "sd.img", flash=o["flash"], pools=o["pools"],
                        mcu=o["mcu"]) as it:          # the settings it printed do run, exactly
        it.set_input(x)
        it.invoke()
        ref = mi.Interpreter(big)
        ref.set_input(x)
        ref.invoke()
        assert np.array_equal(it.get_output(), ref.get_output())
    assert main(["deploy", str(ZOO / "person_detect.tflite"), "--mcu", "apollo3", "--per-op"]) == 0
    out = capsys.readouterr().out
    assert "MicroMutableOpResolver<5>" in out and "kTensorArenaSize = 82944" in out and "fits" in out
    assert main(["deploy", str(big), "--json"]) == 1          # does not fit in memory; runs out of core
    assert json.loads(capsys.readouterr().out)["out_of_core"]["runs"] is True


def _gelu_model() -> bytes:
    from microinterp.testing.builder import ModelBuilder

    b = ModelBuilder()
    x = b.add_tensor("x", (1, 8), "FLOAT32")
    y = b.add_tensor("y", (1, 8), "FLOAT32")
    b.add_op("GELU", [x], [y])
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_deploy_says_when_tflm_cannot_run_a_model_and_exits_non_zero(tmp_path, capsys):
    from microinterp.apps.cli import main

    path = tmp_path / "gelu.tflite"
    path.write_bytes(_gelu_model())
    d = deploy(str(path))
    assert d.unsupported == ("GELU",) and not d.deployable
    assert "TFLM has no kernel for GELU" in d.resolver
    assert main(["deploy", str(path)]) == 2
    assert "NOT deployable" in capsys.readouterr().out
    assert main(["deploy", str(path), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["unsupported_ops"] == ["GELU"] and doc["deployable"] is False and doc["exit_code"] == 2
    assert doc["latency_ms"] is None and doc["cycles"] is None          # no latency where no firmware runs it


def test_deploy_exits_zero_when_it_fits_and_one_when_it_does_not(tmp_path, capsys):
    from microinterp.apps.cli import main
    from microinterp.testing.models import mobilenet_v1

    small, big = tmp_path / "small.tflite", tmp_path / "big.tflite"
    small.write_bytes(demo_cnn())
    big.write_bytes(mobilenet_v1(input_size=128, classes=10))
    assert main(["deploy", str(small), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exit_code"] == 0
    assert main(["deploy", str(big), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is False and doc["exit_code"] == 1
    assert resolver_snippet(["ethos-u"]).endswith("op_resolver.AddEthosU();")


def test_target_without_mcu_prices_a_board_of_that_core(capsys):
    """``--target cortex-m55`` alone prices a Cortex-M55 board, not the default Cortex-M7 one; the output names the
    board and what it assumes."""
    d = deploy(demo_cnn(), target="cortex-m55")
    assert d.mcu.core_key == "cortex-m55" and d.target["core"] == "cortex-m55" and d.mcu.name == "cortex-m55@400MHz"
    assert d.latency_ms == pytest.approx(d.cycles / 400e6 * 1e3)
    assert deploy(demo_cnn(), target="cortex-m4").mcu.core_key == "cortex-m4"
    assert deploy(demo_cnn(), target="cortex-m3").mcu.core_key == "cortex-m3"
    assert deploy(demo_cnn()).mcu.name == "stm32f746"
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/m.tflite"
        with open(path, "wb") as f:
            f.write(demo_cnn())
        assert main(["deploy", path, "--target", "cortex-m55", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["mcu"] == "cortex-m55@400MHz" and doc["core"] == "cortex-m55" and doc["target"]["core"] == \
            "cortex-m55"
        assert "assumed" in doc["board_assumptions"]
        assert main(["deploy", path, "--target", "cortex-m55"]) == 0
        out = capsys.readouterr().out
        assert "on cortex-m55@400MHz (Cortex-M55 @ 400 MHz" in out and "stm32f746" not in out
        # a board and a core that differ: the text says whose latency it shows
        assert main(["deploy", path, "--target", "cortex-m55", "--mcu", "apollo3"]) == 0
        assert "the latency below is apollo3's (cortex-m4); this arena is the cortex-m55 build's" in \
            capsys.readouterr().out


def test_a_vela_model_is_not_deployable_on_a_board_without_an_npu(tmp_path, capsys):
    from microinterp.testing.models import vela_like

    path = tmp_path / "person_detect_vela.tflite"
    path.write_bytes(vela_like())
    d = deploy(path, "stm32f746")
    assert not d.deployable and set(d.needs_accelerator) == {"ethos-u"} and d.latency_ms is None
    assert main(["deploy", str(path), "--mcu", "stm32f746"]) == 2
    out = capsys.readouterr().out
    assert "NOT deployable on stm32f746: ethos-u needs an Arm Ethos-U NPU" in out and "latency 0" not in out
    assert main(["deploy", str(path), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["needs_accelerator"].keys() == {"ethos-u"} and doc["latency_ms"] is None and doc["exit_code"] == 2


def _gather_int32_model() -> bytes:
    """GATHER of int32 params: TFLM's Prepare refuses the type (as tflite__dynamic_shapes in the population)."""
    b = ModelBuilder()
    x = b.add_tensor("x", (4, 3), "INT32")
    i = b.add_tensor("i", (2,), "INT32", data=np.array([0, 2], np.int32))
    y = b.add_tensor("y", (2, 3), "INT32")
    b.add_op("GATHER", [x, i], [y], axis=0)
    b.inputs, b.outputs = [x], [y]
    return b.build()


@pytest.mark.parametrize("bad", ["prepare", "garbage"])
def test_a_model_tflm_cannot_prepare_or_read_exits_2(tmp_path, capsys, bad):
    path = tmp_path / "m.tflite"
    path.write_bytes(_gather_int32_model() if bad == "prepare" else b"not a model" * 8)
    assert main(["deploy", str(path)]) == 2
    err = capsys.readouterr().err
    assert "NOT deployable" in err and ("PrepareError" if bad == "prepare" else "ModelError") in err
    assert main(["deploy", str(path), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["deployable"] is False and doc["latency_ms"] is None and doc["exit_code"] == 2


def test_the_population_model_tflm_refuses_exits_2(capsys):
    """tflite__dynamic_shapes (a GATHER of int32 params, which TFLM's Prepare refuses) exited 1, 'does not fit'."""
    path = MODELS_DIR.parent / "population" / "tflite__dynamic_shapes.tflite"
    if not path.exists():
        pytest.skip("../shared/population not present")
    assert main(["deploy", str(path)]) == 2
    assert "PrepareError" in capsys.readouterr().err


def test_a_model_that_does_not_fit_shows_the_arena_after_optimize(capsys):
    from microinterp.apps.deploy import deploy
    from microinterp.testing.models import mobilenet_v2

    model = mobilenet_v2(alpha=0.35, input_size=96, classes=10)
    d = deploy(model, mcu="cortex-m4@80MHz,sram=64K")
    assert not d.fits and d.optimized is not None
    z = d.optimized
    assert z["arena_bytes"] < d.arena_bytes and z["extra_macs"] <= 0.15 and "--target cortex-m4" in z["command"]
    assert d.as_dict()["optimized"] == z
    assert deploy(model, mcu="cortex-m4@80MHz,sram=1M").optimized is None     # it fits: nothing to show


def test_the_out_of_core_command_names_pools_only_when_fixed():
    from microinterp.apps.deploy import POOL_SPLITS, out_of_core_command

    assert POOL_SPLITS[0] == (1, 2, 1) and POOL_SPLITS[-1] is None       # the default first, fitted pools last
    fixed = out_of_core_command({"arena": 1024, "backing": "sd.img", "pools": (2, 1, 1), "mcu": "stm32f746"})
    fitted = out_of_core_command({"arena": 1024, "backing": "sd.img", "pools": None, "mcu": "stm32f746"})
    assert "--pools 2:1:1" in fixed and "--pools" not in fitted and fitted.endswith("--mcu stm32f746")
