"""TFLM's signal library (``signal/micro/kernels``): the audio front end's custom ops, keyed by custom code.

``SIGNAL_KERNELS`` is merged into :data:`microinterp.kernels.REFERENCE_KERNELS`. Custom options are FlexBuffers
maps (:func:`._common.options`); kernels with state (FilterBankSpectralSubtraction) keep it in the arena's tail
and clear it in ``reset``.

A window runs about 250 NumPy calls on a few hundred values, so the bound forms pass every ufunc's output
positionally (``np.add(a, b, out)``; a keyword costs a call 40 ns more, 4-5 us a window) -- except ``maximum`` and
``minimum``, whose positional output NumPy 2.4 deprecates.
"""

from __future__ import annotations

from ..registry import collect

#: The signal library's kernels (also in :data:`microinterp.kernels.REFERENCE_KERNELS`), derived from its modules.
SIGNAL_KERNELS = collect(__name__)
