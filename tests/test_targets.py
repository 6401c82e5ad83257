"""target=: the firmware's arena and outputs, against TFLM's own Cortex-M builds run in QEMU (the goldens).

Every golden model whose file is in ../shared is checked for every build: ``arena_used_bytes``, head and tail to the
byte (estimate_arena and Interpreter), each node's scratch requests, and the outputs of every seeded input.
"""

from __future__ import annotations

import numpy as np
import pytest

from microinterp import Interpreter
from microinterp.errors import ArenaOverflowError, ConfigError, PrepareError, UnsupportedOpError
from microinterp.kernels.contract import Kernel
from microinterp.memory32 import estimate_arena
from microinterp.resolver import OpResolver
from microinterp.targets import CORES, KERNEL_SETS, Target, get_target
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.device import (
    golden_files,
    load_goldens,
    model_file,
    output_digest,
    seeded_input,
    seeded_inputs,
)

CASES = [(core, kernels, name) for core, kernels in golden_files()
         for name, entry in load_goldens(core, kernels)["models"].items() if "error" not in entry]
#: Models microinterp refuses on purpose although a firmware runs them: int8 inputs into a float32 ADD output, which
#: the reference kernels compute as garbage (README, "population").
REFUSED = {"tflite__add_quantized_int8"}


def _golden(core: str, kernels: str, name: str) -> tuple[dict, str]:
    path = model_file(name)
    if path is None:
        pytest.skip(f"{name} is not in ../shared")
    return load_goldens(core, kernels)["models"][name], path


def test_goldens_cover_every_core_and_the_reference_build():
    builds = set(golden_files())
    assert {(core, "cmsis-nn") for core, c in CORES.items() if c.board} <= builds     # the M85 has no oracle
    assert ("cortex-m4", "reference") in builds
    assert len(CASES) >= 6 * 20


def _built(build, core, kernels, name):
    """(golden, ``build(model, target=...)``); for a model the firmware refuses, checks that ``build`` refuses it too
    and returns (golden, None)."""
    g, path = _golden(core, kernels, name)
    if name in REFUSED:
        with pytest.raises(PrepareError):
            build(path, target=f"{core}/{kernels}")
        return g, None
    return g, build(path, target=f"{core}/{kernels}")


@pytest.mark.parametrize("core,kernels,name", CASES)
def test_arena_equals_the_firmware(core, kernels, name):
    g, e = _built(estimate_arena, core, kernels, name)
    if e is None:
        return
    assert (e.total_bytes, e.head_bytes, e.persistent_bytes) == \
        (g["arena_used_bytes"], g["head_bytes"], g["tail_bytes"])
    assert [p["scratch_bytes"] for p in e.per_op] == [n["scratch"] for n in g["nodes"]]
    assert e.unmodelled_ops == ()


@pytest.mark.parametrize("core,kernels,name", CASES)
def test_outputs_equal_the_firmware(core, kernels, name):
    g, it = _built(Interpreter, core, kernels, name)
    if it is None:
        return
    assert (it.arena_used_bytes, it.head_bytes, it.tail_bytes) == \
        (g["arena_used_bytes"], g["head_bytes"], g["tail_bytes"])
    for seed, expected in enumerate(g["outputs"]):
        for i, x in enumerate(seeded_inputs(it, seed)):
            it.set_input(x, i)
        it.invoke()
        got = [output_digest(np.ascontiguousarray(it.get_output(o)).tobytes()) for o in range(it.num_outputs)]
        assert got == expected, f"seed {seed}"


def test_cmsis_nn_lstm_keeps_no_state_between_invokes(zoo):
    """TFLM's CMSIS-NN LSTM starts every invoke from a zero state; the reference kernel carries it over."""
    path = zoo("trained_lstm_int8.tflite")
    device, host = Interpreter(path, target="cortex-m4"), Interpreter(path)
    first = seeded_input(np.int8, (1, 28, 28), 0, 0)
    second = seeded_input(np.int8, (1, 28, 28), 1, 0)
    for it in (device, host):
        it.set_input(first, 0)
        it.invoke()
        it.set_input(second, 0)
        it.invoke()
    fresh = Interpreter(path)
    fresh.set_input(second, 0)
    fresh.invoke()
    assert np.array_equal(device.get_output(0), fresh.get_output(0))
    assert not np.array_equal(host.get_output(0), fresh.get_output(0))


def test_an_arena_below_the_firmware_fails_as_allocate_tensors_does(zoo):
    path = zoo("kws_ref_model.tflite")
    need = Interpreter(path, target="cortex-m55").arena_used_bytes
    Interpreter(path, arena=need, target="cortex-m55")
    with pytest.raises(ArenaOverflowError) as e:
        Interpreter(path, arena=need - 1, target="cortex-m55")
    assert e.value.needed_arena == need and "cortex-m55" in str(e.value)


def _tiny_model(op: str = "RELU", custom_code: str | None = None) -> bytes:
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.5, zero_point=0)
    y = b.add_tensor("y", (1, 4), "INT8", scale=0.5, zero_point=0)
    b.add_op(op, [x], [y], custom_code=custom_code)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_targets_are_named_with_their_kernel_set():
    assert get_target("cortex-m55") == Target(CORES["cortex-m55"], "cmsis-nn")
    assert get_target("Cortex-M4/reference").features == "none"
    assert get_target("cortex-m4", "reference") == get_target("cortex-m4/reference")
    assert get_target("cortex-m3").features == "none" and get_target("cortex-m7").features == "dsp"
    assert set(KERNEL_SETS) == {"cmsis-nn", "reference"}


def test_unknown_cores_and_kernel_sets_list_the_known_ones():
    with pytest.raises(ConfigError, match="known cores: cortex-m3, cortex-m4"):
        get_target("cortex-m99")
    with pytest.raises(ConfigError, match="known kernel sets: cmsis-nn, reference"):
        Interpreter(_tiny_model(), target="cortex-m4", kernels="helium")
    with pytest.raises(ConfigError, match="kernels= selects"):
        Interpreter(_tiny_model(), kernels="reference")
    with pytest.raises(ConfigError, match="out of core"):
        Interpreter(_tiny_model(), arena=64, backing="x.img", target="cortex-m4")


def test_without_a_target_nothing_changes(zoo):
    path = zoo("person_detect.tflite")
    host, device = Interpreter(path), Interpreter(path, target="cortex-m4")
    assert host.target is None and host.device is None
    assert device.head_bytes == host.head_bytes == 55296
    assert device.tail_bytes != host.tail_bytes


def test_ops_the_firmware_lacks_are_listed():
    class Double(Kernel):
        def prepare(self, ctx, op):
            return None

        def invoke(self, ctx, op, data):
            ctx.output(op, 0)[...] = ctx.input(op, 0) * 2

    resolver = OpResolver()
    resolver.register("MyDouble", Double())
    model = _tiny_model("CUSTOM", custom_code="MyDouble")
    Interpreter(model, resolver=resolver).invoke()           # the host runs the plugin
    with pytest.raises(UnsupportedOpError, match="in TFLM's cortex-m4/cmsis-nn build .*MyDouble"):
        Interpreter(model, resolver=resolver, target="cortex-m4")


@pytest.mark.device
@pytest.mark.parametrize("core,kernels", list(golden_files()))
def test_fresh_oracle_logs_give_the_committed_goldens(core, kernels):
    """With ``MICROINTERP_DEVICE_LOGS`` pointing at a fresh run of the device oracle (one folder of harness logs per
    build, ``<core>-<kernels>/<model>.log``; see docs/device-oracle.md), every model parses to its committed golden:
    the firmware still gives what microinterp is checked against."""
    import os
    from pathlib import Path

    from microinterp.testing.device import parse_log

    root = os.environ.get("MICROINTERP_DEVICE_LOGS")
    if not root:
        pytest.skip("set MICROINTERP_DEVICE_LOGS to a fresh device-oracle run")
    logs = Path(root) / f"{core}-{kernels}"
    if not logs.is_dir():
        pytest.skip(f"no logs for {core}/{kernels} in {root}")
    goldens = load_goldens(core, kernels)["models"]
    for name, golden in goldens.items():
        log, path = logs / f"{name}.log", model_file(name)
        if not log.exists() or path is None:
            continue
        fresh = parse_log(log.read_text(errors="replace"), Path(path).read_bytes())
        fresh.pop("instructions", None)
        assert fresh == {k: v for k, v in golden.items() if k != "instructions"}, name
