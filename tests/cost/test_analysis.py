"""Arithmetic-intensity analysis: W, Q, N, the class rule, totals, and the literature's picture of VGG16."""

from __future__ import annotations

import math

import numpy as np
import pytest

from microinterp import Interpreter, load_model
from microinterp.cost.analysis import CLASSES, NEGLIGIBLE_SHARE, S_CPU_RANGE, S_IO_RANGE, analyze, classes_of
from microinterp.cost.mcu import get_profile
from microinterp.errors import ConfigError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.models import QuantNet, vgg16


@pytest.fixture(scope="module")
def vgg():
    return analyze(vgg16(), "stm32f746")


def test_vgg16_matches_the_literature(vgg):
    """SwapNN: VGG16 has 13 compute-bound layers (the convs) and IO-bound FC layers; pooling etc. negligible."""
    assert vgg.totals["counts"] == {"compute-bound": 13, "io-bound": 3, "negligible": 7}
    assert classes_of(vgg, ["CONV_2D"]) == {"compute-bound": 13, "io-bound": 0, "negligible": 0}
    assert classes_of(vgg, ["FULLY_CONNECTED"]) == {"compute-bound": 0, "io-bound": 3, "negligible": 0}
    assert {r.op for r in vgg.layers if r.klass == "negligible"} == {"MAX_POOL_2D", "RESHAPE", "SOFTMAX"}
    # ~15.5 G MACs and ~138 M weights
    assert vgg.totals["mops"] == pytest.approx(15_470, rel=0.01)
    assert vgg.totals["weight_mb"] == pytest.approx(138.4, rel=0.01)
    # FC layers move about one byte per MAC: N ~ S_io / S_cpu, IO-bound over the whole SwapNN range
    for r in vgg.layers:
        if r.op == "FULLY_CONNECTED":
            assert r.n_max < 1
    assert all(r.n_min < r.n < r.n_max for r in vgg.layers if r.mops > 0)


def test_conv_layer_numbers_by_hand():
    net = QuantNet((1, 8, 8, 4), seed=0)
    net.conv(16, 3, act="RELU")
    a = analyze(net.build(), "stm32f746")
    (r,) = a.layers
    w = 8 * 8 * 16 * 3 * 3 * 4
    q = 8 * 8 * 4 + (16 * 3 * 3 * 4 + 16 * 4) + 8 * 8 * 16          # input + weights + int32 bias + output
    assert r.mops == pytest.approx(w / 1e6) and r.io_mb == pytest.approx(q / 1e6)
    assert r.weight_mb == pytest.approx((16 * 3 * 3 * 4 + 64) / 1e6)
    p = get_profile("stm32f746")
    assert a.s_cpu == pytest.approx(p.clock_hz / p.cycles_per_mac("optimized", "conv"))
    assert a.s_io == p.sd_read_bytes_per_s
    assert r.n == pytest.approx((w / a.s_cpu) / (q / a.s_io))
    assert r.n_min == pytest.approx((w / S_CPU_RANGE[1]) / (q / S_IO_RANGE[0]))
    assert r.n_max == pytest.approx((w / S_CPU_RANGE[0]) / (q / S_IO_RANGE[1]))
    assert r.klass == ("compute-bound" if r.n >= 1 else "io-bound")
    assert r.cycles > 0 and a.totals["cycles"] == pytest.approx(r.cycles)


def test_negligible_rule():
    """Non-MAC ops are negligible below 10 % of the model's W; a model made of ADDs is classified by N."""
    net = QuantNet((1, 16, 16, 8), seed=1)
    net.conv(16, 3)
    net.pool("MAX", 2, 2)
    net.pool("AVERAGE", 8, 8)
    net.flatten()
    net.softmax()
    a = analyze(net.build())
    assert [r.klass for r in a.layers][1:] == ["negligible"] * 4
    assert a.layers[3].mops == 0                                        # RESHAPE is a view: no work

    b = ModelBuilder()
    x = b.add_tensor("x", (1, 64), "INT8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 64), "INT8", scale=0.2, zero_point=0)
    b.add_op("ADD", [x, x], [y])
    b.inputs, b.outputs = [x], [y]
    (r,) = analyze(b.build()).layers
    assert r.klass == "io-bound" and r.mops == pytest.approx(64 / 1e6)
    assert NEGLIGIBLE_SHARE == 0.1


def test_totals_and_json_schema():
    net = QuantNet((1, 12, 12, 3), seed=2)
    net.conv(8, 3)
    net.flatten()
    net.fc(10, act="NONE")
    data = net.build()
    a = analyze(data, "apollo3", kernels="reference")
    doc = a.as_dict()
    assert doc["mcu"] == "apollo3" and doc["kernels"] == "reference"
    assert doc["range"] == {"s_cpu_mops": [64.0, 480.0], "s_io_mb_per_s": [10.0, 40.0]}
    for row in doc["layers"]:
        assert {"index", "op", "mops", "io_mb", "n", "n_min", "n_max", "class"} <= set(row)
        assert row["class"] in CLASSES
    t = doc["totals"]
    assert sum(t["counts"].values()) == t["layers"] == 3
    assert t["footprint_mb"] == pytest.approx(t["feature_map_mb"] + t["weight_mb"])
    m = load_model(data)
    consts = sum(x.nbytes for x in m.main.tensors if x.data is not None)
    assert t["weight_mb"] == pytest.approx(consts / 1e6)
    assert t["seconds"] == pytest.approx(t["cycles"] / 96e6)
    assert t["energy_mj"] == pytest.approx(get_profile("apollo3").power_active_mw * t["seconds"])
    # the same model through an Interpreter, and CMSIS-NN is faster than reference
    b = analyze(Interpreter(data), "apollo3", kernels="cmsis-nn")
    assert [r.mops for r in b.layers] == [r.mops for r in a.layers]
    assert b.totals["cycles"] < a.totals["cycles"]
    text = a.format_table()
    assert "compute-bound" in text or "io-bound" in text
    assert "FULLY_CONNECTED" in text and "footprint" in text


def test_bad_names():
    data = QuantNet((1, 4, 4, 1)).build()
    with pytest.raises(ConfigError, match="unknown MCU profile"):
        analyze(data, "esp32")
    with pytest.raises(ConfigError, match="unknown kernel set"):
        analyze(data, kernels="helium")


def test_person_detect_on_apollo3(zoo):
    a = analyze(zoo("person_detect.tflite"), "apollo3")
    assert a.totals["mops"] == pytest.approx(7.16, rel=0.01)
    # over SPI (4 MB/s): the depthwise layers (9 MACs per output byte) are IO-bound, the pointwise ones with 64
    # or more input channels compute-bound; the class follows N
    dw = [r for r in a.layers if r.op == "DEPTHWISE_CONV_2D"]
    assert dw and all(r.klass == "io-bound" for r in dw)
    assert all(r.klass == ("compute-bound" if r.n >= 1 else "io-bound") for r in a.layers if r.op_class == "conv")
    assert a.totals["counts"]["compute-bound"] == sum(r.klass == "compute-bound" for r in a.layers) > 0
    assert not any(math.isinf(r.n) for r in a.layers)
    assert np.isfinite(a.totals["cycles"])


def test_analyze_profile_and_schedule_give_one_estimate(tmp_path):
    """In memory, analyze, profile (and simulate) and the scheduler's latency are the same cycles."""
    from microinterp.schedule.run import Config, run
    from microinterp.testing.models import demo_cnn

    model = demo_cnn()
    for mcu in ("stm32f746", "apollo3"):
        a = analyze(model, mcu)
        it = Interpreter(model, mcu=mcu)
        it.invoke()
        assert sum(r.total_cycles for r in it.profile) == pytest.approx(a.totals["cycles"], rel=1e-12)
        assert sum(r.total_cycles for r in it.simulate()) == pytest.approx(a.totals["cycles"], rel=1e-12)
        r, *_ = run(model, Config(sram=1 << 22, tile=None, frames=1, mcu=mcu), "demo", tmp_path / "sd.img")
        assert not r.out_of_core and r.latency_s == pytest.approx(a.totals["seconds"], rel=1e-9)
