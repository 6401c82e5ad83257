"""CMSIS-NN's scratch-buffer sizes, per core feature set (``none``, ``dsp``, ``mve``).

Ports of the ``arm_*_get_buffer_size*`` functions of ARM-software/CMSIS-NN at 4ab83cc (``Source/*Functions/
arm_*_get_buffer_sizes_*.c``) as compiled by GCC: ``ARM_MATH_DSP`` / ``ARM_MATH_MVEI`` select the variant, and the
``__ARMCC_VERSION`` branches are not taken (so the DSP 1x1 fast convolution asks for no buffer, and a depthwise
convolution with one input channel turns into a regular convolution on MVE above one output channel, not eight).
Dimensions are ``(n, h, w, c)`` tuples as CMSIS-NN's ``cmsis_nn_dims``.
"""

from __future__ import annotations

#: Channels an MVE depthwise convolution processes per block (arm_nnsupportfunctions.h CH_IN_BLOCK_MVE).
CH_IN_BLOCK_MVE = 124
#: MVE converts a depthwise convolution with one input channel to a convolution above this many output channels
#: (arm_nnsupportfunctions.h, the GCC value).
DW_ONE_IN_CH_THRESHOLD = 1


def is_convolve_1x1(pad: tuple[int, int], dilation: tuple[int, int], input_c: int, filter_hwc: tuple) -> bool:
    """arm_nn_is_convolve_1x1 (``pad``/``dilation`` as (h, w))."""
    fh, fw, fc = filter_hwc
    return pad == (0, 0) and fh == 1 and fw == 1 and dilation == (1, 1) and input_c == fc


def is_convolve_1_x_n(dilation_w: int, stride_w: int, input_hc: tuple[int, int], filter_hc: tuple[int, int]) -> bool:
    """arm_nn_is_convolve_1_x_n."""
    ih, ic = input_hc
    fh, fc = filter_hc
    return ih == 1 and dilation_w == 1 and fh == 1 and (stride_w * ic) % 4 == 0 and ic == fc


def convolve_s8(features: str, input_c: int, filter_h: int, filter_w: int) -> int:
    """arm_convolve_s8_get_buffer_size: im2col of two columns (int16), or four MVE lanes of int8."""
    cols = input_c * filter_w * filter_h
    if features == "mve":
        return 4 * ((cols + 15) // 16) * 16
    aligned = cols + (4 - cols % 4) % 4
    return 2 * aligned * 2


def convolve_1_x_n_s8_mve(pad_w: int, stride_w: int, input_w: int, input_c: int, filter_h: int, filter_w: int,
                          output_w: int) -> int:
    """arm_convolve_1_x_n_s8_get_buffer_size_mve: the padded left/right columns, or the general im2col size when the
    padded and unpadded outputs do not tile the row."""
    total_pad = (output_w - 1) * stride_w + filter_w - input_w
    asym = total_pad % 2 if total_pad >= 0 else -((-total_pad) % 2)     # C's remainder keeps the sign
    right = max(1, _cdiv(pad_w + asym, stride_w)) if pad_w + asym != 0 else 0
    left = max(1, _cdiv(pad_w, stride_w)) if pad_w != 0 else 0
    no_pad = max(output_w - (right + left), 0)
    if right + no_pad + left != output_w:
        return convolve_s8("mve", input_c, filter_h, filter_w)
    pad_left = pad_w * input_c
    pad_right = right * input_c if asym else pad_left
    left_elems = filter_w * input_c
    return max(left_elems + pad_left, left_elems - input_c + pad_right)


def convolve_wrapper_s8(features: str, *, pad: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
                        input_hwc: tuple[int, int, int], filter_hwc: tuple[int, int, int], output_w: int) -> int:
    """arm_convolve_wrapper_s8_get_buffer_size (and its _dsp / _mve variants, the same dispatch)."""
    ih, iw, ic = input_hwc
    fh, fw, fc = filter_hwc
    if is_convolve_1x1(pad, dilation, ic, filter_hwc):
        return 0            # 1x1 fast (stride 1): 0 under GCC on DSP and MVE; 1x1 strided: no buffer
    if is_convolve_1_x_n(dilation[1], stride[1], (ih, ic), (fh, fc)):
        if features == "mve":
            return convolve_1_x_n_s8_mve(pad[1], stride[1], iw, ic, fh, fw, output_w)
        return convolve_s8(features, ic, fh, fw)
    return convolve_s8(features, ic, fh, fw)


def convolve_wrapper_s16(features: str, input_c: int, filter_h: int, filter_w: int) -> int:
    """arm_convolve_wrapper_s16_get_buffer_size: arm_convolve_s16_get_buffer_size for every shape."""
    cols = input_c * filter_w * filter_h
    if features == "mve":
        return 4 * ((cols + 7) // 8) * 8 * 2
    return 2 * cols * 2


def depthwise_conv_opt_s8(features: str, input_c: int, filter_h: int, filter_w: int) -> int:
    """arm_depthwise_conv_s8_opt_get_buffer_size."""
    if features == "mve":
        return 4 * CH_IN_BLOCK_MVE * filter_w * filter_h
    if features == "dsp":
        return input_c * filter_w * filter_h * 2
    return 0


def depthwise_conv_wrapper_s8(features: str, *, pad: tuple[int, int], stride: tuple[int, int],
                              dilation: tuple[int, int], input_nhwc: tuple[int, int, int, int],
                              filter_hwc: tuple[int, int, int], output_hwc: tuple[int, int, int]) -> int:
    """arm_depthwise_conv_wrapper_s8_get_buffer_size. ``filter_hwc``'s channels are the output depth, as TFLM's
    cmsis_nn/depthwise_conv.cc fills ``filter_dims``. On MVE a depthwise convolution with one input channel and
    more than :data:`DW_ONE_IN_CH_THRESHOLD` output channels runs as a regular convolution over a transposed
    filter, which it keeps in the buffer too."""
    n, ih, iw, ic = input_nhwc
    fh, fw, fc = filter_hwc
    oh, ow, oc = output_hwc
    if features == "mve" and ic == 1 and oc > DW_ONE_IN_CH_THRESHOLD:
        # filter as a convolution filter: (n, h, w, c) = (c, h, w, 1)
        conv = convolve_wrapper_s8("mve", pad=pad, stride=stride, dilation=dilation, input_hwc=(ih, iw, ic),
                                   filter_hwc=(fh, fw, 1), output_w=ow)
        return conv + fc * fh * fw
    if ic == oc and n == 1 and dilation == (1, 1):
        if features != "mve" and fh == 3 and fw == 3 and pad[0] <= 1 and pad[1] <= 1:
            return 0
        return depthwise_conv_opt_s8(features, ic, fh, fw)
    return 0


def fully_connected_s8(features: str, output_depth: int) -> int:
    """arm_fully_connected_s8_get_buffer_size: the MVE kernel's per-output-channel sums."""
    return output_depth * 4 if features == "mve" else 0


def avgpool(features: str, channels: int) -> int:
    """arm_avgpool_s8/s16_get_buffer_size: an int32 row on DSP cores."""
    return channels * 4 if features == "dsp" else 0


def svdf_s8(features: str, feature_batches: int) -> int:
    """arm_svdf_s8_get_buffer_size: per-filter sums on MVE."""
    return feature_batches * 4 if features == "mve" else 0


def _cdiv(a: int, b: int) -> int:
    """C's (a + b - 1) / b with truncation toward zero."""
    q = a + b - 1
    return q // b if q >= 0 else -((-q) // b)
