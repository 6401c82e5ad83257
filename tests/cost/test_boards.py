"""Generic boards: a core, a clock and memory facts make a profile that prices like the named ones."""

from __future__ import annotations

import pytest

from microinterp.cost.boards import DEFAULT_BOARD_OF_CORE, parse_clock
from microinterp.cost.mcu import CORE_CPI, get_profile
from microinterp.errors import ConfigError


def test_a_spec_is_a_profile():
    p = get_profile("cortex-m33@200MHz")
    assert (p.name, p.core_key, p.clock_hz, p.memory_factor) == ("cortex-m33@200MHz", "cortex-m33", 200e6, 1.0)
    assert p.cpi == CORE_CPI["cortex-m33"] and "assumed" in p.assumed and "generic board" in p.figure_note()
    q = get_profile("M7@480mhz, sram=1M, flash=2M, memory_factor=1.1")
    assert (q.core_key, q.clock_hz, q.sram_bytes, q.flash_bytes) == ("cortex-m7", 480e6, 1 << 20, 2 << 20)
    assert q.cpi == pytest.approx(CORE_CPI["cortex-m7"] * 1.1) and q.assumed == "generic board"
    assert get_profile("cortex-m4f@1.2GHz").clock_hz == 1.2e9 and parse_clock("32768Hz") == 32768


def test_same_core_same_instructions_clock_scales_time():
    """Two generic boards of one core differ only by clock: the same cycles, the time in proportion."""
    from microinterp.cost.analysis import predict_cycles
    from microinterp.testing.models import demo_cnn

    a, b = get_profile("cortex-m4@100MHz"), get_profile("cortex-m4@200MHz")
    ca, cb = sum(predict_cycles(demo_cnn(), a, "optimized")), sum(predict_cycles(demo_cnn(), b, "optimized"))
    assert ca == pytest.approx(cb) and a.seconds(ca) == pytest.approx(2 * b.seconds(cb))


@pytest.mark.parametrize("spec, words", [
    ("cortex-m0@48MHz", ["unknown core", "cortex-m33"]),
    ("cortex-m4@48", ["needs a unit", "MHz"]),
    ("cortex-m4@", ["needs a unit"]),
    ("cortex-m4@48MHz,wait=3", ["unknown board fact", "sram=VALUE", "memory_factor=VALUE"]),
    ("cortex-m4@48MHz,sram=lots", ["not a byte count"]),
    ("cortex-m4@48MHz,memory_factor=0.5", ["memory_factor", ">= 1"]),
    ("cortex-m4@48MHz,memory_factor=x", ["not a number"]),
    ("stm32f999", ["unknown MCU profile", "stm32f746", "CORE@CLOCK"]),
])
def test_bad_specs_say_what_is_accepted(spec, words):
    with pytest.raises(ConfigError) as e:
        get_profile(spec)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_every_core_has_a_default_board():
    from microinterp.targets import CORES

    assert set(DEFAULT_BOARD_OF_CORE) == set(CORES)
    for core, board in DEFAULT_BOARD_OF_CORE.items():
        assert get_profile(board).core_key == core
