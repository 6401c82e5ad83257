"""TFLite_Detection_PostProcess (SSD heads) against the TFLM wheel: fast and regular NMS, with and without a
background class, random boxes and scores with ties; the scratch plan; refusals."""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, InvokeError, PrepareError
from microinterp.kernels.detection_postprocess import written_slot
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.tflm import TflmRunner, tflm_arena_head

pytest.importorskip("tflite_micro")


def model(n: int, classes: int, background: bool, max_det: int, per_det: int, regular: bool, anchors: np.ndarray,
          score_threshold: float = 0.3, iou: float = 0.5) -> bytes:
    b = ModelBuilder()
    cols = classes + int(background)
    enc = b.add_tensor("enc", (1, n, 4), "FLOAT32")
    cls = b.add_tensor("cls", (1, n, cols), "FLOAT32")
    anc = b.add_tensor("anchors", (n, 4), "FLOAT32", data=anchors)
    cat = 1 if regular else min(per_det, classes)
    per = max_det * cat * cat       # room for TFLM's spread-out fast-NMS slots, so the wheel never writes past them
    outs = [b.add_tensor("boxes", (1, per, 4), "FLOAT32"), b.add_tensor("classes", (1, per), "FLOAT32"),
            b.add_tensor("scores", (1, per), "FLOAT32"), b.add_tensor("num", (1,), "FLOAT32")]
    opts = {"max_detections": max_det, "max_classes_per_detection": per_det, "detections_per_class": 5,
            "use_regular_nms": regular, "nms_score_threshold": score_threshold, "nms_iou_threshold": iou,
            "num_classes": classes, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}
    b.add_op("CUSTOM", [enc, cls, anc], outs, custom_code="TFLite_Detection_PostProcess",
             custom_options=flexbuffers.Dumps(opts))
    b.inputs, b.outputs = [enc, cls], outs
    return b.build()


@given(n=st.integers(1, 40), classes=st.integers(1, 5), background=st.booleans(), max_det=st.integers(1, 8),
       per_det=st.integers(1, 3), regular=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_detection_postprocess_matches_tflm(n, classes, background, max_det, per_det, regular, seed):
    rng = np.random.default_rng(seed)
    anchors = np.stack([rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.uniform(0.05, 0.5, n),
                        rng.uniform(0.05, 0.5, n)], axis=1).astype(np.float32)
    data = model(n, classes, background, max_det, per_det, regular, anchors)
    enc = rng.uniform(-2, 2, size=(1, n, 4)).astype(np.float32)
    cls = (rng.integers(0, 8, size=(1, n, classes + int(background))) / 8).astype(np.float32)   # ties
    mine, wheel = Interpreter(data), TflmRunner(data, preserve_all=False)
    mine.set_input(enc, 0)
    mine.set_input(cls, 1)
    mine.invoke()
    wheel.run([enc, cls])
    count = int(wheel.output(3)[0])
    assert int(mine.get_output(3)[0]) == count
    cat = min(per_det, classes)
    slots = list(range(max_det)) if regular else [written_slot(k, cat) for k in range(count)]   # the written ones
    for k in range(3):
        a, w = mine.get_output(k), wheel.output(k)
        a, w = (x.reshape(len(x.reshape(-1)) // (4 if k == 0 else 1), -1)[slots] for x in (a, w))
        np.testing.assert_array_equal(a, w)
    assert mine.head_bytes == tflm_arena_head(data)


def test_options_are_required():
    b = ModelBuilder()
    ts = [b.add_tensor(f"t{k}", s, "FLOAT32") for k, s in enumerate([(1, 2, 4), (1, 2, 2), (2, 4)])]
    outs = [b.add_tensor(f"o{k}", s, "FLOAT32") for k, s in enumerate([(1, 1, 4), (1, 1), (1, 1), (1,)])]
    b.add_op("CUSTOM", ts, outs, custom_code="TFLite_Detection_PostProcess",
             custom_options=flexbuffers.Dumps({"max_detections": 1}))
    b.inputs, b.outputs = ts, outs
    with pytest.raises(PrepareError, match="FlexBuffers map"):
        Interpreter(b.build())


def test_fast_nms_slot_past_the_outputs_is_refused():
    """With two classes per detection TFLM's slots spread out (0, 3, 4, 7, ...): four detections need eight slots;
    outputs sized for TFLite's four would be written out of bounds by TFLM, so microinterp refuses at invoke."""
    anchors = np.array([[0.2, 0.2, 0.1, 0.1], [0.8, 0.8, 0.1, 0.1]], np.float32)
    data = model(2, 2, False, 2, 2, False, anchors)
    b = ModelBuilder()
    enc = b.add_tensor("enc", (1, 2, 4), "FLOAT32")
    cls = b.add_tensor("cls", (1, 2, 2), "FLOAT32")
    anc = b.add_tensor("anchors", (2, 4), "FLOAT32", data=anchors)
    outs = [b.add_tensor("boxes", (1, 4, 4), "FLOAT32"), b.add_tensor("classes", (1, 4), "FLOAT32"),
            b.add_tensor("scores", (1, 4), "FLOAT32"), b.add_tensor("num", (1,), "FLOAT32")]
    opts = {"max_detections": 2, "max_classes_per_detection": 2, "nms_score_threshold": 0.3,
            "nms_iou_threshold": 0.5, "num_classes": 2, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0,
            "w_scale": 5.0}
    b.add_op("CUSTOM", [enc, cls, anc], outs, custom_code="TFLite_Detection_PostProcess",
             custom_options=flexbuffers.Dumps(opts))
    b.inputs, b.outputs = [enc, cls], outs
    interp = Interpreter(b.build())
    interp.set_input(np.zeros((1, 2, 4), np.float32), 0)
    interp.set_input(np.full((1, 2, 2), 0.9, np.float32), 1)
    with pytest.raises(InvokeError, match="past the outputs"):
        interp.invoke()
    mine = Interpreter(data)                       # the test's model sizes the outputs for TFLM's slots: it runs
    mine.set_input(np.zeros((1, 2, 4), np.float32), 0)
    mine.set_input(np.full((1, 2, 2), 0.9, np.float32), 1)
    mine.invoke()
    assert mine.get_output(3)[0] == 4
    assert mine.get_output(1).reshape(-1)[[written_slot(k, 2) for k in range(4)]].tolist() == [0, 1, 0, 1]
