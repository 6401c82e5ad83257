"""TFLM's signal library (``signal/micro/kernels``): the audio front end's custom ops, keyed by custom code.

``SIGNAL_KERNELS`` is merged into :data:`microinterp.kernels.REFERENCE_KERNELS`. Custom options are FlexBuffers
maps (:func:`._common.options`); kernels with state (FilterBankSpectralSubtraction) keep it in the arena's tail
and clear it in ``reset``.

A window runs about 250 NumPy calls on a few hundred values, so the bound forms pass every ufunc's output
positionally (``np.add(a, b, out)``; a keyword costs a call 40 ns more, 4-5 us a window) -- except ``maximum`` and
``minimum``, whose positional output NumPy 2.4 deprecates.
"""

from __future__ import annotations

from . import (
    delay,
    energy,
    fft_auto_scale,
    filter_bank,
    filter_bank_log,
    filter_bank_spectral_subtraction,
    filter_bank_square_root,
    framer,
    irfft,
    overlap_add,
    pcan,
    rfft,
    stacker,
    window,
)

SIGNAL_KERNELS: dict[str, object] = {
    "SignalWindow": window.KERNEL,
    "SignalFftAutoScale": fft_auto_scale.KERNEL,
    "SignalRfft": rfft.KERNEL,
    "SignalEnergy": energy.KERNEL,
    "SignalFilterBank": filter_bank.KERNEL,
    "SignalFilterBankSquareRoot": filter_bank_square_root.KERNEL,
    "SignalFilterBankSpectralSubtraction": filter_bank_spectral_subtraction.KERNEL,
    "SignalPCAN": pcan.KERNEL,
    "SignalFilterBankLog": filter_bank_log.KERNEL,
    "SignalIrfft": irfft.KERNEL,
    "SignalDelay": delay.KERNEL,
    "SignalStacker": stacker.KERNEL,
    "SignalFramer": framer.KERNEL,
    "SignalOverlapAdd": overlap_add.KERNEL,
}
