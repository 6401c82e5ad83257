"""The op list is the wheel's: every builtin operator the pinned TFLM wheel registers has a kernel here.

:func:`microinterp.testing.tflm.wheel_builtin_ops` derives the wheel's list mechanically (a one-op model per
builtin code, does the wheel find a kernel?), so this test fails the day the wheel gains an op microinterp lacks.
The graph-level ops of issue 12 (control flow, resource variables) are listed explicitly while they are missing.
"""

from __future__ import annotations

import pytest

from microinterp.kernels import REFERENCE_KERNELS

pytest.importorskip("tflite_micro")

from microinterp.testing.tflm import wheel_builtin_ops

#: Ops the wheel has that need graph-level work rather than a kernel (control flow, resource variables).
GRAPH_LEVEL: frozenset[str] = frozenset()


@pytest.fixture(scope="module")
def wheel_ops():
    return wheel_builtin_ops()


def test_the_probe_finds_the_wheels_kernels(wheel_ops):
    # sanity of the mechanical derivation: ops every TFLM build has are found, ops it never had are not
    assert {"CONV_2D", "FULLY_CONNECTED", "SOFTMAX", "BATCH_MATMUL"} <= wheel_ops
    assert not {"LSH_PROJECTION", "HASHTABLE_LOOKUP", "SKIP_GRAM"} & wheel_ops


def test_every_wheel_builtin_has_a_kernel(wheel_ops):
    missing = sorted(wheel_ops - set(REFERENCE_KERNELS) - GRAPH_LEVEL)
    assert not missing, f"the wheel registers builtin ops microinterp lacks: {missing}"


def test_graph_level_list_is_current(wheel_ops):
    assert GRAPH_LEVEL <= wheel_ops, sorted(GRAPH_LEVEL - wheel_ops)
    assert not GRAPH_LEVEL & set(REFERENCE_KERNELS), "implemented: remove from GRAPH_LEVEL"


#: Custom op names TFLM's sources define (the signal library, the SSD post-processing op): custom codes cannot be
#: enumerated, so these are the candidates the wheel is asked about.
CUSTOM_CANDIDATES = ("SignalWindow", "SignalFftAutoScale", "SignalRfft", "SignalIrfft", "SignalEnergy",
                     "SignalFilterBank", "SignalFilterBankSquareRoot", "SignalFilterBankSpectralSubtraction",
                     "SignalPCAN", "SignalFilterBankLog", "SignalStacker", "SignalOverlapAdd", "SignalFramer",
                     "SignalDelay", "TFLite_Detection_PostProcess")
#: Registered by the wheel, not implemented here yet.
CUSTOM_NOT_YET: frozenset[str] = frozenset()


def test_every_custom_op_the_wheel_registers_has_a_kernel_or_is_listed():
    from microinterp.testing.tflm import wheel_custom_ops

    wheel = wheel_custom_ops(CUSTOM_CANDIDATES + ("NoSuchCustomOp",))
    assert "NoSuchCustomOp" not in wheel and "SignalRfft" in wheel
    missing = sorted(wheel - set(REFERENCE_KERNELS) - CUSTOM_NOT_YET)
    assert not missing, f"the wheel registers custom ops microinterp lacks: {missing}"
    assert not CUSTOM_NOT_YET & set(REFERENCE_KERNELS), "implemented: remove from CUSTOM_NOT_YET"
