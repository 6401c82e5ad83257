"""DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, MIRROR_PAD and REVERSE_V2 against the TFLM
wheel: random shapes, block sizes, paddings, crops and axes (constant and as graph inputs), every type each takes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, InvokeError
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import compare_with_tflm

from .single_op_models import T, assert_bitwise_matches_tflm, assert_refused, single_op, with_specials


def _values(rng, shape, type_name):
    if type_name == "FLOAT32":
        return with_specials(random_tensor(rng, shape, "FLOAT32"))
    if type_name == "BOOL":
        return np.asarray(rng.integers(0, 2, size=shape), bool)
    if type_name == "INT64":
        return np.asarray(rng.integers(-(1 << 60), 1 << 60, size=shape), np.int64)
    return random_tensor(rng, shape, type_name)


def _q(type_name):
    return (0.1, 3) if type_name in ("INT8", "INT16", "UINT8") else (None, None)


def _check(model, inputs, type_name):
    if type_name == "FLOAT32":
        assert_bitwise_matches_tflm(model, inputs)
    else:
        assert_matches_tflm(model, inputs)


@given(op=st.sampled_from(["DEPTH_TO_SPACE", "SPACE_TO_DEPTH"]), type_name=st.sampled_from(["FLOAT32", "INT8"]),
       bs=st.integers(1, 3), n=st.integers(1, 2), h=st.integers(1, 3), w=st.integers(1, 3), c=st.integers(1, 3),
       seed=st.integers(0, 2**32 - 1))
def test_depth_space_match_tflm(op, type_name, bs, n, h, w, c, seed):
    if op == "DEPTH_TO_SPACE":
        x_shape, y_shape = (n, h, w, c * bs * bs), (n, h * bs, w * bs, c)
    else:
        x_shape, y_shape = (n, h * bs, w * bs, c), (n, h, w, c * bs * bs)
    x = _values(np.random.default_rng(seed), x_shape, type_name)
    _check(single_op(op, [T(x_shape, type_name, *_q(type_name))], T(y_shape, type_name, *_q(type_name)),
                     block_size=bs), [x], type_name)


@st.composite
def batch_space_cases(draw):
    rank = draw(st.sampled_from([3, 4]))
    spatial = rank - 2
    block = [draw(st.integers(1, 3)) for _ in range(spatial)]
    pads = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(spatial)]
    b, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 4)) for _ in range(spatial)]
    return rank, block, pads, b, c, sizes


def padded_positions(x_shape, y_shape, block, pads):
    """TFLM's SpaceToBatchND loop, literally: True where it writes its (uninitialised) pad value."""
    four = len(x_shape) == 4
    b, h, w = x_shape[0], x_shape[1], x_shape[2] if four else 1
    bo, ho, wo = y_shape[0], y_shape[1], y_shape[2] if four else 1
    bh, bw = int(block[0]), int(block[1]) if four else 1
    top, left = int(pads[0][0]), int(pads[1][0]) if four else 0
    mask = np.zeros((bo, ho, wo), bool)
    for ob in range(bo):
        sw, sh = (ob // b) % bw, (ob // b) // bw
        for oh in range(ho):
            for ow in range(wo):
                hh, ww = oh * bh + sh, ow * bw + sw
                mask[ob, oh, ow] = not (top <= hh < top + h and left <= ww < left + w)
    return mask.reshape(y_shape[:-1])


@given(case=batch_space_cases(), type_name=st.sampled_from(["FLOAT32", "INT8"]), const=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_space_to_batch_then_back_match_tflm(case, type_name, const, seed):
    """SPACE_TO_BATCH_ND pads with ``params.output_offset``, a field the wheel never initialises (its value changes
    from run to run): padded positions are compared with TFLM's own loop (this kernel writes 0 there), every other
    position with the wheel, bit for bit."""
    _rank, block, pads, b, c, sizes = case
    # SPACE_TO_BATCH_ND: padded sizes must divide by the block, so extend the bottom/right padding
    pads = [(lo, hi + (-(s + lo + hi)) % k) for (lo, hi), s, k in zip(pads, sizes, block)]
    out_sizes = [(s + lo + hi) // k for s, (lo, hi), k in zip(sizes, pads, block)]
    x_shape = (b, *sizes, c)
    y_shape = (b * int(np.prod(block)), *out_sizes, c)
    block_a = np.array(block, np.int32)
    pads_a = np.array(pads, np.int32).reshape(len(block), 2)
    x = _values(np.random.default_rng(seed), x_shape, type_name)
    q = _q(type_name)
    specs = [T(x_shape, type_name, *q), T(block_a.shape, "INT32", data=block_a if const else None),
             T(pads_a.shape, "INT32", data=pads_a if const else None)]
    inputs = [x] if const else [x, block_a, pads_a]
    result = compare_with_tflm(single_op("SPACE_TO_BATCH_ND", specs, T(y_shape, type_name, *q)), inputs,
                               per_op=False)
    mine, theirs = result.outputs[0], result.tflm_outputs[0]
    padded = padded_positions(x_shape, y_shape, block, pads)
    assert np.array_equal(mine[~padded].view(np.uint8), theirs[~padded].view(np.uint8))
    assert not mine[padded].view(np.uint8).any()
    z = _values(np.random.default_rng(seed + 1), y_shape, type_name)
    specs[0] = T(y_shape, type_name, *q)
    inputs = [z] if const else [z, block_a, pads_a]
    _check(single_op("BATCH_TO_SPACE_ND", specs, T(x_shape, type_name, *q)), inputs, type_name)


def test_space_to_batch_without_padding_matches_tflm_whole():
    x = np.arange(-8, 8, dtype=np.int8).reshape(1, 4, 4, 1)
    model = single_op("SPACE_TO_BATCH_ND", [T((1, 4, 4, 1), "INT8", 0.1, 77),
                                            T((2,), "INT32", data=np.array([2, 2], np.int32)),
                                            T((2, 2), "INT32", data=np.zeros((2, 2), np.int32))],
                      T((4, 2, 2, 1), "INT8", 0.1, 77))
    assert_matches_tflm(model, [x])


@given(mode=st.sampled_from([0, 1]), type_name=st.sampled_from(["FLOAT32", "INT8"]),
       shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data(),
       pad_type=st.sampled_from(["INT32", "INT64"]), const=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_mirror_pad_matches_tflm(mode, type_name, shape, data, pad_type, const, seed):
    limit = [d - 1 if mode == 0 else d for d in shape]
    pads = np.array([[data.draw(st.integers(0, m)), data.draw(st.integers(0, m))] for m in limit],
                    np.int32 if pad_type == "INT32" else np.int64)
    y_shape = tuple(int(d + p.sum()) for d, p in zip(shape, pads))
    x = _values(np.random.default_rng(seed), shape, type_name)
    q = _q(type_name)
    model = single_op("MIRROR_PAD", [T(shape, type_name, *q), T(pads.shape, pad_type, data=pads if const else None)],
                      T(y_shape, type_name, *q), mode=mode)
    _check(model, [x] if const else [x, pads], type_name)


@given(type_name=st.sampled_from(["FLOAT32", "INT32", "INT8", "INT16", "INT64", "BOOL"]),
       shape=st.lists(st.integers(1, 4), min_size=1, max_size=5), data=st.data(), const=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_reverse_v2_matches_tflm(type_name, shape, data, const, seed):
    rank = len(shape)
    first = data.draw(st.integers(0, rank - 1))
    count = data.draw(st.integers(1, rank - first))
    axes = [a - rank if data.draw(st.booleans()) else a for a in range(first, first + count)]
    axes = np.array(data.draw(st.permutations(axes)), np.int32)
    x = _values(np.random.default_rng(seed), shape, type_name)
    q = _q(type_name)
    model = single_op("REVERSE_V2", [T(shape, type_name, *q), T(axes.shape, "INT32", data=axes if const else None)],
                      T(shape, type_name, *q))
    _check(model, [x] if const else [x, axes], type_name)


def test_refusals():
    assert_refused(single_op("DEPTH_TO_SPACE", [T((1, 2, 2, 8), "INT16", 0.1, 0)], T((1, 4, 4, 2), "INT16", 0.1, 0),
                             block_size=2), [])
    assert_refused(single_op("DEPTH_TO_SPACE", [T((1, 2, 2, 6), "INT8", 0.1, 0)], T((1, 4, 4, 1), "INT8", 0.1, 0),
                             block_size=2), [])
    assert_refused(single_op("SPACE_TO_DEPTH", [T((1, 3, 3, 1), "INT8", 0.1, 0)], T((1, 1, 1, 9), "INT8", 0.1, 0),
                             block_size=2), [])
    axes = np.array([0, 2], np.int32)
    assert_refused(single_op("REVERSE_V2", [T((2, 2, 2), "FLOAT32"), T((2,), "INT32", data=axes)],
                             T((2, 2, 2), "FLOAT32")), [np.zeros((2, 2, 2), np.float32)], tflm="invoke",
                   match="Non-contiguous")
    pads = np.array([[3, 0]], np.int32)
    assert_refused(single_op("MIRROR_PAD", [T((3,), "FLOAT32"), T((1, 2), "INT32", data=pads)], T((6,), "FLOAT32"),
                             mode=0), [], tflm=None, match="beyond")



def test_batch_space_refusals_name_the_op_s_own_words():
    """Both ops share one check (``_batch_space.BatchSpaceOp.problem``); each speaks of its own matrix, and the
    depth of input and output must agree."""
    block = np.array([2, 2], np.int32)
    neg = np.array([[0, 0], [-1, 0]], np.int32)
    zero = np.zeros((2, 2), np.int32)
    assert_refused(single_op("SPACE_TO_BATCH_ND", [T((1, 4, 4, 1), "FLOAT32"), T((2,), "INT32", data=block),
                                                   T((2, 2), "INT32", data=neg)], T((4, 2, 2, 1), "FLOAT32")),
                   [], tflm=None, match="paddings 0, -1 non-negative")
    assert_refused(single_op("BATCH_TO_SPACE_ND", [T((4, 2, 2, 1), "FLOAT32"), T((2,), "INT32", data=block),
                                                   T((2, 2), "INT32", data=neg)], T((1, 4, 4, 1), "FLOAT32")),
                   [], tflm=None, match="crops 0, -1 non-negative")
    for op, x, y in (("SPACE_TO_BATCH_ND", (1, 4, 4, 1), (4, 2, 2, 2)), ("BATCH_TO_SPACE_ND", (4, 2, 2, 2),
                                                                         (1, 4, 4, 1))):
        assert_refused(single_op(op, [T(x, "FLOAT32"), T((2,), "INT32", data=block), T((2, 2), "INT32", data=zero)],
                                 T(y, "FLOAT32")), [], tflm=None, match="need a batch and the same depth")

def test_reverse_with_non_contiguous_axes_as_input_fails_at_invoke():
    model = single_op("REVERSE_V2", [T((2, 2, 2), "FLOAT32"), T((2,), "INT32")], T((2, 2, 2), "FLOAT32"))
    it = Interpreter(model)
    it.set_input(np.zeros((2, 2, 2), np.float32), 0)
    it.set_input(np.array([0, 2], np.int32), 1)
    with pytest.raises(InvokeError, match="Non-contiguous"):
        it.invoke()


def _dilated_conv1d_as_converted(stb_out_batch: int) -> bytes:
    """What a stock converter writes for Keras ``Conv1D(dilation_rate=2)`` with a dynamic batch, int8: SPACE_TO_BATCH_ND
    (block 2) -> EXPAND_DIMS -> CONV_2D -> RESHAPE -> BATCH_TO_SPACE_ND, with the batch of the block-2 tensors stored as
    ``stb_out_batch`` (1 where the batch was dynamic; 2 is what the arithmetic says)."""
    from microinterp.testing.builder import ModelBuilder

    rng = np.random.default_rng(3)
    b = ModelBuilder()
    q = dict(scale=0.05, zero_point=-3)
    x = b.add_tensor("x", (1, 32, 16), "INT8", **q)
    block = b.add_tensor("block", (1,), "INT32", data=np.array([2], np.int32))
    pads = b.add_tensor("pads", (1, 2), "INT32", data=np.zeros((1, 2), np.int32))
    s = b.add_tensor("stb", (stb_out_batch, 16, 16), "INT8", **q)
    axis = b.add_tensor("axis", (1,), "INT32", data=np.array([1], np.int32))
    e = b.add_tensor("e", (stb_out_batch, 1, 16, 16), "INT8", **q)
    w = b.add_tensor("w", (8, 1, 3, 16), "INT8", data=rng.integers(-127, 128, (8, 1, 3, 16)), scale=[0.01] * 8,
                     zero_point=0, axis=0)
    bias = b.add_tensor("bias", (8,), "INT32", data=rng.integers(-300, 300, 8), scale=[5e-4] * 8)
    c = b.add_tensor("c", (stb_out_batch, 1, 14, 8), "INT8", scale=0.1, zero_point=2)
    r = b.add_tensor("r", (stb_out_batch, 14, 8), "INT8", scale=0.1, zero_point=2)
    crops = b.add_tensor("crops", (1, 2), "INT32", data=np.zeros((1, 2), np.int32))
    y = b.add_tensor("y", (1, 28, 8), "INT8", scale=0.1, zero_point=2)
    b.add_op("SPACE_TO_BATCH_ND", [x, block, pads], [s])
    b.add_op("EXPAND_DIMS", [s, axis], [e])
    b.add_op("CONV_2D", [e, w, bias], [c], padding="VALID")
    b.add_op("RESHAPE", [c], [r], new_shape=[stb_out_batch, 14, 8])
    b.add_op("BATCH_TO_SPACE_ND", [r, block, crops], [y])
    b.inputs, b.outputs = [x], [y]
    return b.build()


@pytest.mark.filterwarnings("ignore::microinterp.errors.ModelShapeWarning")
@pytest.mark.parametrize("stored_batch", [1, 2])
def test_a_stored_batch_that_disagrees_runs_as_tflm_runs_it(stored_batch):
    """The stock converter stores SPACE_TO_BATCH_ND's output of a dilated Conv1D with a dynamic batch as (1, 16, 16)
    for an input (1, 32, 16) with block 2. TFLM loops over the stored shapes; so does microinterp, bit for bit, and
    it warns that the stored shape disagrees with the op's arithmetic."""
    import warnings

    from microinterp.errors import ModelShapeWarning

    model = _dilated_conv1d_as_converted(stored_batch)
    x = np.random.default_rng(5).integers(-128, 128, (1, 32, 16)).astype(np.int8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        it = Interpreter(model)
    shape_warnings = [w for w in caught if issubclass(w.category, ModelShapeWarning)]
    assert len(shape_warnings) == (2 if stored_batch == 1 else 0)
    if shape_warnings:
        assert "SPACE_TO_BATCH_ND" in str(shape_warnings[0].message)
    first = None
    for _ in range(2):                              # the same output every time
        it.set_input(x, 0)
        it.invoke()
        first = it.get_output(0) if first is None else first
        assert np.array_equal(it.get_output(0), first)
    # BATCH_TO_SPACE_ND leaves the output rows no input lands on as the arena held them: with TFLM's own (greedy)
    # plan the arena holds the same bytes there as the wheel's, so compare whole runs with that plan
    result = compare_with_tflm(model, [x], per_op=False)
    assert result.ok, result
