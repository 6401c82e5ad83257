"""MCU profiles: the figures the issue names, the helper formulas, errors, and a sanity check on person_detect."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from microinterp.errors import MicroInterpError
from microinterp.mcu import (
    KERNEL_SETS,
    MCU_PROFILES,
    OP_CLASS_NAMES,
    OP_CYCLES,
    McuProfile,
    get_profile,
    op_class,
)


def test_the_two_profiles():
    f7, a3 = get_profile("stm32f746"), get_profile("apollo3")
    assert (f7.core, f7.clock_hz, f7.sram_bytes) == ("Cortex-M7", 216e6, 340 * 1024)
    assert (a3.core, a3.clock_hz, a3.sram_bytes) == ("Cortex-M4F", 96e6, 384 * 1024)
    assert 10e6 <= f7.sd_write_bytes_per_s <= f7.sd_read_bytes_per_s <= 40e6      # out-of-core.md: 10-40 MB/s
    for p in (f7, a3):
        assert p.flash_bytes == 1024 * 1024 and p.sd_command_latency_s > 0
        assert p.op_cycles is OP_CYCLES[p.name]


@pytest.mark.parametrize("name", ["STM32F746", "stm32f746ng", " f746 ", "apollo3-blue", "SparkFun-Edge"])
def test_aliases_and_case(name):
    assert get_profile(name) in MCU_PROFILES.values()


def test_unknown_profile_lists_known_names():
    with pytest.raises(MicroInterpError) as info:
        get_profile("esp32")
    assert "'esp32'" in str(info.value) and "apollo3" in str(info.value) and "stm32f746" in str(info.value)


def test_profiles_are_frozen_and_replaceable():
    p = get_profile("apollo3")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.clock_hz = 1
    q = p.replace(clock_hz=48e6)
    assert isinstance(q, McuProfile) and q.clock_hz == 48e6 and p.clock_hz == 96e6


@pytest.mark.parametrize("name", sorted(MCU_PROFILES))
def test_coefficient_table_is_complete_and_sane(name):
    p = MCU_PROFILES[name]
    assert set(p.op_cycles) == set(KERNEL_SETS)
    for kernels in KERNEL_SETS:
        assert set(p.op_cycles[kernels]) == set(OP_CLASS_NAMES)
    for cls in OP_CLASS_NAMES:
        opt, ref = p.op_cycles["optimized"][cls], p.op_cycles["reference"][cls]
        assert 0 <= opt.cycles_per_mac <= ref.cycles_per_mac
        assert 0 <= opt.cycles_per_element <= ref.cycles_per_element
        assert 0 <= opt.fixed_cycles <= ref.fixed_cycles
    # the M7 needs fewer cycles than the M4 for the same op
    assert (MCU_PROFILES["stm32f746"].compute_cycles("conv", 10**6, 10**4)
            < MCU_PROFILES["apollo3"].compute_cycles("conv", 10**6, 10**4))


def test_compute_cycles_formula():
    p = get_profile("apollo3")
    c = p.op_cycles["reference"]["depthwise"]
    assert p.compute_cycles("depthwise", 1000, 50, kernels="reference") == pytest.approx(
        c.fixed_cycles + 1000 * c.cycles_per_mac + 50 * c.cycles_per_element)
    c = p.op_cycles["optimized"]["softmax"]
    assert p.compute_cycles("softmax", elements=10) == pytest.approx(c.fixed_cycles + 10 * c.cycles_per_element)
    assert p.compute_cycles("other") == p.op_cycles["optimized"]["other"].fixed_cycles
    with pytest.raises(MicroInterpError, match="unknown op class 'lstm'.*conv"):
        p.compute_cycles("lstm", 1, 1)
    with pytest.raises(MicroInterpError, match="unknown kernel set"):
        p.compute_cycles("conv", 1, 1, kernels="helium")


def test_sd_io_cycles_formula():
    p = get_profile("stm32f746")
    one_mb_read = p.sd_io_cycles(10**6, 1)
    assert one_mb_read == pytest.approx(216e6 * (100e-6 + 10**6 / 20e6))
    assert p.sd_io_cycles(10**6, 1, write=True) == pytest.approx(216e6 * (100e-6 + 10**6 / 10e6))
    assert p.sd_io_cycles(10**6, 9) - one_mb_read == pytest.approx(8 * 100e-6 * 216e6)    # latency per command
    assert p.sd_io_cycles(0, 0) == 0
    assert p.seconds(one_mb_read) == pytest.approx(0.0501)


def test_flash_and_hash_cycles():
    p = get_profile("apollo3")
    assert p.flash_cycles(1000) == pytest.approx(1000 * p.flash_read_cycles_per_byte)
    assert p.hash_cycles(1000) == pytest.approx(1000 * p.hash_accel_cycles_per_byte)          # crc32 engine
    assert p.hash_cycles(1000, accelerated=False) == pytest.approx(1000 * p.hash_cycles_per_byte["crc32"])
    assert p.hash_cycles(1000, "blake2b") == pytest.approx(1000 * p.hash_cycles_per_byte["blake2b"])
    assert p.hash_cycles(1000, "xxh3") < p.hash_cycles(1000, "blake2b")
    with pytest.raises(MicroInterpError, match="no hash engine for 'blake2b'"):
        p.hash_cycles(1000, "blake2b", accelerated=True)
    with pytest.raises(MicroInterpError, match="no software cost"):
        p.hash_cycles(1000, "md5")
    no_engine = p.replace(has_hash_accelerator=False)
    assert no_engine.hash_cycles(1000) == pytest.approx(1000 * p.hash_cycles_per_byte["crc32"])
    with pytest.raises(MicroInterpError, match="no hash engine"):
        no_engine.hash_cycles(1000, accelerated=True)


def test_op_class_names():
    assert op_class("CONV_2D") == "conv" and op_class("DEPTHWISE_CONV_2D") == "depthwise"
    assert op_class("FULLY_CONNECTED") == "fc" and op_class("MAX_POOL_2D") == "pool"
    assert op_class("ADD") == "elementwise" and op_class("SOFTMAX") == "softmax"
    assert op_class("RESHAPE") == "other" and op_class("SOMETHING_NEW") == "other"


def test_person_detect_matches_the_tflm_paper_on_apollo3(zoo):
    """The Apollo3 coefficients reproduce the TFLM paper's kernel totals (out-of-core.md) within 5 %."""
    from microinterp import load_model

    sg = load_model(zoo("person_detect.tflite")).main
    p = get_profile("apollo3")
    totals = {}
    for kernels in KERNEL_SETS:
        total = 0.0
        for op in sg.operators:
            elements = int(np.prod(sg.tensors[op.outputs[0]].shape))
            cls = op_class(op.name)
            macs = 0
            if cls in ("conv", "depthwise"):
                w = sg.tensors[op.inputs[1]].shape
                macs = elements * (int(np.prod(w[1:])) if cls == "conv" else w[1] * w[2])
            elif cls == "pool":
                macs = elements * op.options["filter_height"] * op.options["filter_width"]
            total += p.compute_cycles(cls, macs, elements, kernels=kernels)
        totals[kernels] = total
    assert totals["reference"] == pytest.approx(18_987.1e3, rel=0.05)
    assert totals["optimized"] == pytest.approx(4_852.9e3, rel=0.05)
