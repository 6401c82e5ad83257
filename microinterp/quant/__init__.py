"""Fixed-point primitives of TFLM/gemmlowp, vectorized over int64 NumPy arrays.

Everything here reproduces C integer semantics exactly (truncating division, arithmetic shifts, int32 wrap-around
where TFLM's C code wraps). Scalars in, scalars out works too. Sources: ``kernels/internal/quantization_util.cc``,
``kernels/internal/common.h`` and gemmlowp ``fixedpoint/fixedpoint.h`` (see docs/tflm-facts.md §4). This is the one
home of the fixed-point primitives: the kernels call these, they do not re-derive them.

Fast exact forms
----------------
The requantization primitives are on every quantized kernel's hot path, so :func:`srdhm`, :func:`rdbpot` and
:func:`mbqm` do not transcribe the C code literally (a literal transcription took ~15 int64 temporaries per
element; ``tests/test_quant_fixedpoint.py`` keeps one and checks these against it at every rounding boundary).
They compute the same values, for every int64 input whose products do not overflow int64, with these identities
(``>>`` is the floor shift of two's complement integers, ``p = a*b``):

* ``SRDHM``: gemmlowp computes ``trunc((p + nudge) / 2^31)`` with ``nudge = 2^30`` for ``p >= 0`` and ``1 - 2^30``
  for ``p < 0``. This equals ``(p + 2^30) >> 31``. For ``p >= 0`` both are ``floor((p + 2^30) / 2^31)``. For
  ``p < 0`` the numerator ``p + 1 - 2^30`` is negative, so ``trunc(.) = -floor((2^30 - 1 - p) / 2^31)``; and
  ``floor((p + 2^30) / 2^31) = -ceil((-p - 2^30) / 2^31) = -floor((-p - 2^30 + 2^31 - 1) / 2^31)``, the same
  value. The identity depends on the sign of the product only, so negative multipliers (LEAKY_RELU's alpha) are
  covered. The one saturating case, ``a == b == INT32_MIN`` (-> INT32_MAX), is patched in afterwards, and only
  looked for when both operands can hold INT32_MIN (checked with a ``min()`` of the multiplier first).
* ``RDBPOT(x, e)`` (round half away from zero) is ``(x >> e) + (r > 2^(e-1) - 1 + (x < 0))`` with ``r = x & (2^e -
  1)``. Writing ``x = q 2^e + r`` (``q = x >> e``, ``0 <= r < 2^e``): ``(x + 2^(e-1) - (x < 0)) >> e = q + floor((r +
  2^(e-1) - (x < 0)) / 2^e)``; for ``e >= 1`` the numerator lies in ``[0, 2^(e+1))``, so the floor is 1 exactly when
  ``r + 2^(e-1) - (x < 0) >= 2^e``, i.e. ``r > 2^(e-1) - 1 + (x < 0)``: the same. ``e == 0`` is the identity, and
  per-channel exponents mix both cases (``2^(e-1)`` is then ``(1 << e) >> 1`` and ``(x < 0)`` is masked by ``e > 0``).
* ``MBQM`` = ``RDBPOT(SRDHM(x 2^left [int32 wrap], M), right)``: the product array is created once (int32 inputs
  are multiplied into int64 directly) and updated in place. RDBPOT's half is added ahead of SRDHM's shift:
  ``y = (x M + 2^30 + 2^31 h) >> 31 = SRDHM + h`` (a multiple of ``2^31`` passes through the floor shift), so
  ``SRDHM < 0`` is ``y < h`` and the result is ``(y - (y < h)) >> e``: four in-place operations after the product,
  with the constants prepared as int64 arrays (NumPy handles 0-d array operands faster than scalars). Needs
  ``e <= 31`` so that ``x M + 2^31 h`` stays in int64; larger exponents take the two-step form.

The primitives live in :mod:`.multipliers`, :mod:`.fixedpoint`, :mod:`.activations`, :mod:`.gemmlowp` and
:mod:`.int16`; this package is where kernels import them from.
"""

from __future__ import annotations

from .activations import (  # noqa: F401
    FLT_MAX,
    activation_range,
    activation_range_float,
)
from .fixedpoint import (  # noqa: F401
    Requantizer,
    mbqm,
    mbqm_greater_than_one,
    mbqm_int64,
    mbqm_smaller_than_one_exp,
    rdbpot,
    saturating_left_shift,
    srdhm,
    wrap_int32,
)
from .gemmlowp import (  # noqa: F401
    calculate_input_radius,
    checked_log2,
    clz32,
    exp_on_interval_between_negative_one_quarter_and_0_excl,
    exp_on_negative_values,
    fixed_point_logistic,
    fixed_point_tanh,
    get_reciprocal,
    one_minus_x_over_one_plus_x_for_x_in_0_1,
    one_over_one_plus_x_for_x_in_0_1,
    rdbpot16,
    reciprocal_int,
    rescale,
    rounding_half_sum,
    saturating_rounding_multiply_by_pot,
    srdhm16,
    wrap_int16,
)
from .int16 import (  # noqa: F401
    bit_length,
    inv_sqrt_quantized_multiplier_exp,
    log_x_for_x_greater_than_or_equal_to_1,
    logistic_int16,
    lut_lookup_int16,
    lut_populate_int16,
    round_half_away,
    round_half_away_f32,
    saturating_left_shift_array,
    scale_int16_input,
    sigmoid_table_uint16,
    tanh_int16,
)
from .multipliers import (  # noqa: F401
    INT32_MAX,
    INT32_MIN,
    QMAX,
    QMIN,
    QuantizationOverflow,
    downscale_int32_to_int16_multiplier,
    quantize_multiplier,
    quantize_multiplier_greater_than_one,
    quantize_multiplier_smaller_than_one_exp,
    quantize_multipliers,
)
