"""What TFLM's signal-library kernels allocate from the arena in ``Init`` (``signal/micro/kernels/*.cc``).

Unlike the builtin kernels, these parse their FlexBuffers options in ``Init`` and keep everything there: a params
struct and the state it points to, each a 16-aligned persistent buffer. The sizes depend on the ABI (pointers and
``size_t`` in the structs, short enums on Cortex-M), so they are given as field codes for
:meth:`microinterp.tflm.structs32.Abi.sizeof`. :func:`init_allocations` returns them for one op, or None for an op it does
not model (the replay then keeps what microinterp's own ``prepare`` allocates).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flatbuffers import flexbuffers

#: kissfft's KISS_FFT_MAXFACTORS: kiss_fft_state is {int nfft, inverse; int factors[2*32]; kiss_fft_cpx twiddles[1]}.
_KISS_FACTORS = 64
_CPX_BYTES = {7: 4, 2: 8, 0: 8}            # kiss_fft_cpx of int16, int32, float (option "T" as a TensorType)


def _opts(op) -> dict[str, Any]:
    try:
        return flexbuffers.Loads(bytes(op.custom_options or b"")) or {}
    except Exception:           # a malformed map: the kernel's own prepare refuses it
        return {}


def _kiss_fftr_bytes(nfft: int, cpx: int, abi) -> int:
    """kiss_fftr_alloc's ``memneeded`` for an ``nfft``-point real FFT (kiss_fftr.c, kiss_fft.c)."""
    half = nfft // 2
    sub = abi.sizeof("ii" + "i" * _KISS_FACTORS) + cpx          # kiss_fft_state with one twiddle
    sub = (sub + 3) // 4 * 4 + cpx * (half - 1)
    return abi.sizeof("ppp") + sub + cpx * (half * 3 // 2)


def _rfft(op, tensors, abi) -> list[int]:
    o = _opts(op)
    n, t = int(o.get("fft_length", 0)), int(o.get("T", 7))
    # TfLiteAudioFrontendRfftParams: 4 int32, TfLiteType, T* work_area, int scratch index, int8_t* state
    return [abi.sizeof("iiii e p i p"), _kiss_fftr_bytes(n, _CPX_BYTES.get(t, 4), abi)]


def _filter_bank(op, tensors, abi) -> list[int]:
    n = int(_opts(op).get("num_channels", 0))
    # TFLMSignalFilterBankParams {FilterbankConfig config (int32, 5 pointers, 2 int32); uint64_t* work_area}
    return [abi.sizeof("i ppppp ii p"), (n + 1) * 8]


def _spectral_subtraction(op, tensors, abi) -> list[int]:
    n = int(_opts(op).get("num_channels", 0))
    # {SpectralSubtractionConfig config (8 x 32-bit, bool clamping); uint32_t* noise_estimate; size_t size}
    return [abi.sizeof("iiiiiiii b p z"), n * 4]


def _params(fields: str) -> Callable[[Any, Sequence[Any], Any], list[int]]:
    return lambda op, tensors, abi: [abi.sizeof(fields)]


#: custom code -> Init allocations (bytes as requested, each 16-aligned by AllocatePersistentBuffer).
INIT: dict[str, Callable[[Any, Sequence[Any], Any], list[int]]] = {
    "SignalWindow": _params("ii"),                   # TFLMSignalWindowParams {shift, input_size}
    "SignalEnergy": _params("ii"),                   # TFLMSignalEnergyParams {end_index, start_index}
    "SignalPCAN": _params("i"),                      # TfLitePcanParams {snr_shift}
    "SignalFilterBankLog": _params("ii"),            # TFLMSignalLogParams {input_correction_bits, output_scale}
    "SignalFftAutoScale": lambda op, tensors, abi: [],
    "SignalFilterBankSquareRoot": lambda op, tensors, abi: [],
    "SignalRfft": _rfft,
    "SignalFilterBank": _filter_bank,
    "SignalFilterBankSpectralSubtraction": _spectral_subtraction,
}


def init_allocations(op, tensors: Sequence[Any], abi) -> list[int] | None:
    """The persistent buffers ``op``'s TFLM ``Init`` allocates under ``abi``; None for an op not modelled here."""
    rule = INIT.get(op.key)
    return None if rule is None else rule(op, tensors, abi)
