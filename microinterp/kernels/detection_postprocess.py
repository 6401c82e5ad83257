"""TFLite_Detection_PostProcess: SSD box decoding and non-max suppression (custom op,
``micro/kernels/detection_postprocess.cc``).

Options (a FlexBuffers map read by key): ``max_detections``, ``max_classes_per_detection``, ``detections_per_class``
(default 100), ``use_regular_nms`` (default false), ``nms_score_threshold``, ``nms_iou_threshold``,
``num_classes``, ``y_scale``, ``x_scale``, ``h_scale``, ``w_scale``. Inputs: box encodings ``[1, boxes, >= 4]``,
class scores ``[1, boxes, classes (+1 background)]``, anchors ``[boxes, 4]`` -- FLOAT32 (TFLM's Eval decodes
nothing else); outputs: boxes ``[1, max_det, 4]``, classes, scores ``[1, max_det]``, the count ``[1]``, all FLOAT32.
Prepare requests TFLM's eleven scratch buffers (their sizes decide the arena plan).

* Decoding (double arithmetic, stored as float): ``yc = y / y_scale * ah + ay``, ``xc`` likewise,
  ``half_h = 0.5 * exp(h / h_scale) * ah``, ``half_w`` likewise; corners ``yc -+ half_h``, ``xc -+ half_w`` in float.
  A box with ``ymin >= ymax`` or ``xmin >= xmax`` fails the op (:class:`~microinterp.errors.InvokeError`).
* Single-class NMS: scores ``>= threshold`` kept, sorted decreasingly by a *stable* merge sort; greedily select, and
  drop later candidates whose float32 IoU with a selected box is ``> iou_threshold``, up to ``max_detections``.
* Fast NMS (default): per box the top ``min(max_classes_per_detection, num_classes)`` classes by
  ``std::partial_sort`` on (score desc, index asc); NMS on each box's best score; for every selected box its top
  classes are written in order. Regular NMS: NMS per class (``detections_per_class``), the running best
  ``max_detections`` merged by the same (score, index) partial sort; the remaining output slots are zeroed.
Only the written detections are defined. Fast NMS writes detection ``k`` to slot ``per_anchor * k + k % per_anchor``
(:func:`written_slot`, TFLM's indexing, which differs from TFLite's when ``max_classes_per_detection > 1``); the
other slots keep what the output memory held, and a slot past the outputs (where TFLM writes out of bounds) is an
:class:`~microinterp.errors.InvokeError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from flatbuffers import flexbuffers

from ..errors import InvokeError
from .contract import PURE, Kernel

REQUIRED = ("max_detections", "max_classes_per_detection", "nms_score_threshold", "nms_iou_threshold",
            "num_classes", "y_scale", "x_scale", "h_scale", "w_scale")
f32 = np.float32


@dataclass(frozen=True)
class DetectionData:
    max_detections: int
    max_classes_per_detection: int
    detections_per_class: int
    regular: bool
    score_threshold: np.float32
    iou_threshold: np.float32
    num_classes: int
    scales: tuple[float, float, float, float]      # y, x, h, w (float32 values)


def decode(boxes: np.ndarray, anchors: np.ndarray, s: tuple) -> np.ndarray:
    """DecodeCenterSizeBoxes: ``[boxes, 4]`` corners (ymin, xmin, ymax, xmax) as float32."""
    out = np.empty((boxes.shape[0], 4), np.float32)
    for k, (b, a) in enumerate(zip(boxes[:, :4].tolist(), anchors.tolist())):
        yc = f32(b[0] / s[0] * a[2] + a[0])
        xc = f32(b[1] / s[1] * a[3] + a[1])
        half_h = f32(0.5 * math.exp(b[2] / s[2]) * a[2])
        half_w = f32(0.5 * math.exp(b[3] / s[3]) * a[3])
        out[k] = (yc - half_h, xc - half_w, yc + half_h, xc + half_w)
    return out


def iou_row(boxes: np.ndarray, i: int, js: np.ndarray) -> np.ndarray:
    """ComputeIntersectionOverUnion of box ``i`` against boxes ``js``, float32 (0 where an area is <= 0)."""
    bi, bj = boxes[i], boxes[js]
    with np.errstate(all="ignore"):
        area_i = (bi[2] - bi[0]) * (bi[3] - bi[1])
        area_j = (bj[:, 2] - bj[:, 0]) * (bj[:, 3] - bj[:, 1])
        ih = np.maximum(np.minimum(bi[2], bj[:, 2]) - np.maximum(bi[0], bj[:, 0]), f32(0))
        iw = np.maximum(np.minimum(bi[3], bj[:, 3]) - np.maximum(bi[1], bj[:, 1]), f32(0))
        inter = (ih * iw).astype(np.float32)
        iou = (inter / ((area_i + area_j) - inter)).astype(np.float32)
    return np.where((area_i <= 0) | (area_j <= 0), f32(0), iou)


def nms_single_class(boxes: np.ndarray, scores: np.ndarray, threshold, iou_threshold, max_detections: int) -> list:
    kept = [i for i, v in enumerate(scores.tolist()) if v >= threshold]
    order = sorted(range(len(kept)), key=lambda k: -float(scores[kept[k]]))   # stable, as TFLM's merge sort
    candidates = np.array([kept[k] for k in order], dtype=np.int64)
    active = np.ones(len(candidates), bool)
    selected: list[int] = []
    limit = min(len(candidates), max_detections)
    for i in range(len(candidates)):
        if not active.any() or len(selected) >= limit:
            break
        if not active[i]:
            continue
        selected.append(int(candidates[i]))
        active[i] = False
        rest = np.nonzero(active[i + 1:])[0] + i + 1
        if rest.size:
            drop = iou_row(boxes, int(candidates[i]), candidates[rest]) > iou_threshold
            active[rest[drop]] = False
    return selected


def top_by_score(values, count: int) -> list[int]:
    """DecreasingPartialArgSort: the first ``count`` indices by (value descending, index ascending)."""
    return sorted(range(len(values)), key=lambda i: (-float(values[i]), i))[:count]


class DetectionPostProcess(Kernel):
    ops = ("TFLite_Detection_PostProcess",)
    traits = PURE
    def prepare(self, ctx, op) -> DetectionData:
        try:
            o = flexbuffers.Loads(bytes(op.custom_options)) if op.custom_options else None
        except Exception:  # noqa: BLE001 - a malformed buffer is the model's fault
            o = None
        if not isinstance(o, dict) or any(k not in o for k in REQUIRED):
            raise ctx.fail(op, f"custom options must be a FlexBuffers map with {', '.join(REQUIRED)}")
        ctx.check_io_count(op, 3, 4)
        boxes, scores, anchors = (ctx.require_input(op, k) for k in range(3))
        outs = [ctx.output(op, k) for k in range(4)]
        if len(boxes.shape) != 3 or len(scores.shape) != 3 or len(anchors.shape) != 2:
            raise ctx.fail(op, "box encodings and scores must be 3-D, anchors 2-D")
        if any(t.type_name != "FLOAT32" for t in (boxes, scores, anchors, *outs)):
            raise ctx.fail(op, "TFLM's Eval decodes FLOAT32 inputs only, into FLOAT32 outputs")
        n = boxes.shape[1]
        d = DetectionData(int(o["max_detections"]), int(o["max_classes_per_detection"]),
                          int(o.get("detections_per_class", 100)), bool(o.get("use_regular_nms", False)),
                          f32(o["nms_score_threshold"]), f32(o["nms_iou_threshold"]), int(o["num_classes"]),
                          tuple(float(f32(o[k])) for k in ("y_scale", "x_scale", "h_scale", "w_scale")))
        with_bg = scores.shape[2]
        if boxes.shape[0] != 1 or scores.shape[0] != 1 or scores.shape[1] != n or boxes.shape[2] < 4 or \
                tuple(anchors.shape) != (n, 4):
            raise ctx.fail(op, f"shapes do not fit: boxes {boxes.shape}, scores {scores.shape}, anchors "
                               f"{anchors.shape}")
        if not (0 <= with_bg - d.num_classes <= 1) or d.num_classes < 1:
            raise ctx.fail(op, f"{with_bg} score columns for {d.num_classes} classes (at most one background)")
        if not (0 < d.iou_threshold <= 1) or d.max_detections < 0 or d.max_classes_per_detection <= 0 or \
                (d.regular and d.detections_per_class <= 0):
            raise ctx.fail(op, "thresholds or detection counts out of range")
        per = d.max_detections * (min(d.max_classes_per_detection, d.num_classes) if not d.regular else 1)
        if outs[0].num_elements < 4 * per or outs[1].num_elements < per or outs[2].num_elements < per or \
                outs[3].num_elements < 1:
            raise ctx.fail(op, f"outputs cannot hold {per} detections")
        for nbytes in (n, n * 16, scores.shape[1] * with_bg * 4, n * 4, n * 4, d.max_detections * n * 4,
                       d.max_detections * n * 4, n * 4, d.max_detections * n * 4,
                       max(d.num_classes, d.max_detections) * n * 4, min(n, d.max_detections) * n * 4):
            ctx.request_scratch(op, nbytes)
        return d

    def invoke(self, ctx, op, d: DetectionData) -> None:
        enc, cls, anchors = (ctx.input(op, k) for k in range(3))
        out_boxes, out_classes, out_scores, out_num = (ctx.output(op, k).reshape(-1) for k in range(4))
        boxes = decode(enc[0], anchors, d.scales)
        if ((boxes[:, 0] >= boxes[:, 2]) | (boxes[:, 1] >= boxes[:, 3])).any():
            raise InvokeError(op.index, op.key, "a decoded box has ymin >= ymax or xmin >= xmax")
        scores = cls[0]
        offset = scores.shape[1] - d.num_classes
        if d.regular:
            kept_idx: list[int] = []
            kept_score: list[float] = []
            for c in range(d.num_classes):
                col = scores[:, c + offset]
                sel = nms_single_class(boxes, col, d.score_threshold, d.iou_threshold, d.detections_per_class)
                kept_idx += [s * scores.shape[1] + c + offset for s in sel]
                kept_score += [float(col[s]) for s in sel]
                order = top_by_score(kept_score, min(len(kept_idx), d.max_detections))
                kept_idx, kept_score = [kept_idx[k] for k in order], [kept_score[k] for k in order]
            for k in range(d.max_detections):
                if k < len(kept_idx):
                    anchor = kept_idx[k] // scores.shape[1]
                    out_boxes[4 * k:4 * k + 4] = boxes[anchor]
                    out_classes[k] = kept_idx[k] - anchor * scores.shape[1] - offset
                    out_scores[k] = kept_score[k]
                else:
                    out_boxes[4 * k:4 * k + 4] = 0
                    out_classes[k] = out_scores[k] = 0
            out_num[0] = len(kept_idx)
            return
        per_anchor = min(d.max_classes_per_detection, d.num_classes)
        tops = [top_by_score(row[offset:].tolist(), per_anchor) for row in scores]
        best = np.array([scores[r, offset + t[0]] for r, t in enumerate(tops)], np.float32)
        selected = nms_single_class(boxes, best, d.score_threshold, d.iou_threshold, d.max_detections)
        capacity = min(out_boxes.size // 4, out_classes.size, out_scores.size)
        k = 0
        for s in selected:
            for c in tops[s]:
                slot = written_slot(k, per_anchor)
                if slot >= capacity:
                    raise InvokeError(op.index, op.key, f"TFLM writes detection {k} to slot {slot}, past the outputs' "
                                                        f"{capacity} slots (undefined behaviour in TFLM)")
                out_boxes[4 * slot:4 * slot + 4] = boxes[s]
                out_classes[slot] = c
                out_scores[slot] = scores[s, offset + c]
                k += 1
        out_num[0] = k


def written_slot(k: int, per_anchor: int) -> int:
    """The output slot TFLM's fast NMS writes its ``k``-th detection to: ``per_anchor * k + k % per_anchor``
    (TFLM counts ``output_box_index`` per class, not per box as TFLite does, so with more than one class per
    detection the slots spread out and leave gaps that keep what the output memory held)."""
    return per_anchor * k + k % per_anchor


KERNEL = DetectionPostProcess()
