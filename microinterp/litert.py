"""The LiteRT (``tf.lite.Interpreter`` / ``ai_edge_litert``) interpreter surface on microinterp's
:class:`~microinterp.interpreter.Interpreter`, so an evaluation script written for LiteRT runs with one import
changed. The TFLM wheel's names (``set_input``, ``get_output``, ``get_input_details(i)``) stay.

=============================  =====================================================================================
LiteRT                         microinterp
=============================  =====================================================================================
``allocate_tensors()``         nothing to do: TFLM allocates the arena when the interpreter is built
``get_input_details()``        a list of LiteRT-shaped dicts (``name``, ``index``, ``shape``, ``shape_signature``,
``get_output_details()``       ``dtype``, ``quantization``, ``quantization_parameters``, ``sparsity_parameters``);
                               with an index, that one dict (the wheel's call)
``get_tensor_details()``       the same dict for every tensor of the main subgraph
``set_tensor(i, value)``       tensor ``i`` must be a model input; its dtype and shape must match (``ValueError``)
``get_tensor(i)``              a copy of tensor ``i`` (intermediates share planned memory: meaningful with
                               ``preserve_all_tensors=True``, LiteRT's ``experimental_preserve_all_tensors``)
``tensor(i)``                  a callable returning a numpy view of tensor ``i`` (out of core: a copy read from
                               the SD image, since the tensor lives there)
``invoke()``                   ``invoke()``
``resize_tensor_input``        refused (``ConfigError``) unless the shape is the current one: TFLM has fixed shapes
``get_signature_list()``       ``{key: {"inputs": [names], "outputs": [names]}}`` from the model's SignatureDefs
``get_signature_runner(key)``  a runner called with keyword inputs, returning a dict of outputs (signatures of
                               subgraph 0 only: TFLM invokes subgraph 0)
``reset_all_variables()``      ``reset()``
=============================  =====================================================================================

The constructor takes LiteRT's arguments too (:func:`litert_arguments`): ``model_path=`` / ``model_content=``
instead of the first argument, ``experimental_preserve_all_tensors=`` for ``preserve_all_tensors=``, and
``num_threads``, ``experimental_op_resolver_type``, ``experimental_disable_delegate_clustering`` and
``experimental_default_delegate_latest_features`` accepted and ignored (TFLM runs one thread, with its own resolver
and no delegates); ``experimental_delegates`` must be empty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import ConfigError, InputError

#: LiteRT constructor arguments that do not apply to a TFLM emulator: accepted, documented, ignored.
IGNORED_LITERT_ARGUMENTS = ("num_threads", "experimental_op_resolver_type", "experimental_disable_delegate_clustering",
                            "experimental_default_delegate_latest_features")


def litert_arguments(model: Any, preserve_all_tensors: bool, kwargs: dict[str, Any]) -> tuple[Any, bool]:
    """The model and ``preserve_all_tensors`` from LiteRT's constructor arguments (consumed from ``kwargs``);
    anything else left in ``kwargs`` is a TypeError, as an unknown keyword is."""
    path, content = kwargs.pop("model_path", None), kwargs.pop("model_content", None)
    given = [v for v in (model, path, content) if v is not None]
    if len(given) != 1:
        raise TypeError("pass exactly one model: the first argument, model_path= or model_content=")
    if kwargs.pop("experimental_preserve_all_tensors", False):
        preserve_all_tensors = True
    delegates = kwargs.pop("experimental_delegates", None)
    if delegates:
        raise ConfigError("experimental_delegates: TFLM runs no delegates (an NPU model needs its own runtime)")
    for name in IGNORED_LITERT_ARGUMENTS:
        kwargs.pop(name, None)
    if kwargs:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(kwargs))}")
    return given[0], preserve_all_tensors


def tensor_details(t: Any) -> dict[str, Any]:
    """LiteRT's dict for one tensor."""
    q = t.quantization
    quantized = q is not None and q.scales.size > 0
    return {
        "name": t.name,
        "index": t.index,
        "shape": np.array(t.shape, dtype=np.int32),
        "shape_signature": np.array(t.shape, dtype=np.int32),
        "dtype": t.dtype.type if t.dtype is not None else None,
        "quantization": (float(q.scales[0]), int(q.zero_points[0])) if quantized and q.scales.size == 1 else
        (0.0, 0),
        "quantization_parameters": {
            "scales": q.scales.copy() if quantized else np.zeros(0, np.float32),
            "zero_points": q.zero_points.astype(np.int32) if quantized else np.zeros(0, np.int32),
            "quantized_dimension": q.axis if quantized else 0,
            "block_size": 0,
        },
        "sparsity_parameters": {},
    }


class LiteRTMixin:
    """The LiteRT methods (see the module docstring); mixed into :class:`~microinterp.interpreter.Interpreter`."""

    def allocate_tensors(self) -> None:
        """Nothing to do (TFLM allocates when the interpreter is built); kept so LiteRT scripts run."""

    def get_input_details(self, index: int | None = None) -> Any:
        """All inputs' LiteRT dicts, or input ``index``'s."""
        if index is None:
            return [tensor_details(self._subgraph.tensors[i]) for i in self._subgraph.inputs]
        return tensor_details(self._io_tensor("input", index))

    def get_output_details(self, index: int | None = None) -> Any:
        """All outputs' LiteRT dicts, or output ``index``'s."""
        if index is None:
            return [tensor_details(self._subgraph.tensors[i]) for i in self._subgraph.outputs]
        return tensor_details(self._io_tensor("output", index))

    def get_tensor_details(self) -> list[dict[str, Any]]:
        return [tensor_details(t) for t in self._subgraph.tensors]

    def _position(self, kind: str, tensor_index: Any) -> int:
        ids = self._subgraph.inputs if kind == "input" else self._subgraph.outputs
        try:
            return list(ids).index(int(tensor_index))
        except (ValueError, TypeError):
            return -1

    def set_tensor(self, tensor_index: int, value: Any) -> None:
        """Set a model input by its tensor index (LiteRT's call)."""
        pos = self._position("input", tensor_index)
        if pos < 0:
            raise InputError(f"tensor {tensor_index!r} is not an input of the model (inputs: "
                             f"{list(self._subgraph.inputs)}); TFLM sets inputs only")
        self.set_input(np.asarray(value) if not isinstance(value, np.ndarray) else value, pos)

    def get_tensor(self, tensor_index: int) -> np.ndarray:
        """A copy of tensor ``tensor_index`` (outputs after the last invoke, inputs as set, constants)."""
        pos = self._position("output", tensor_index)
        if pos >= 0:
            return self.get_output(pos)
        return self._read_tensor(tensor_index)

    def tensor(self, tensor_index: int) -> Callable[[], np.ndarray]:
        """A callable returning tensor ``tensor_index`` as a numpy view (LiteRT's ``tensor``); out of core, a copy
        read from the SD image at each call."""
        self._check_tensor_index(tensor_index)
        if self.out_of_core:
            return lambda: self._read_tensor(tensor_index)
        view = self.runtime.tensor_views()[tensor_index]
        if view is None:
            raise InputError(f"tensor {tensor_index} has no data "
                             f"(type {self._subgraph.tensors[tensor_index].type_name})")
        return lambda: view

    def resize_tensor_input(self, input_index: int, tensor_size: Any, strict: bool = False) -> None:
        t = self._subgraph.tensors[int(input_index)] if 0 <= int(input_index) < len(self._subgraph.tensors) \
            else None
        if t is None or self._position("input", input_index) < 0:
            raise InputError(f"tensor {input_index!r} is not an input of the model")
        size = tuple(int(d) for d in tensor_size)
        if size != t.shape:
            batch_only = len(size) == len(t.shape) > 0 and size[1:] == t.shape[1:] and t.shape[0] == 1
            hint = ("; for a batch of samples, invoke_batch(xs) runs them exactly as single invokes"
                    if batch_only else "")
            raise ConfigError(f"TFLM has fixed shapes: input {t.name!r} is {t.shape}, cannot become "
                              f"{size} (convert the model with that shape{hint})")

    def reset_all_variables(self) -> None:
        self.reset()

    def get_signature_list(self) -> dict[str, dict[str, list[str]]]:
        return {s.key: {"inputs": list(s.inputs), "outputs": list(s.outputs)} for s in self.model.signature_defs}

    def get_signature_runner(self, signature_key: str | None = None) -> SignatureRunner:
        sigs = {s.key: s for s in self.model.signature_defs}
        if not sigs:
            raise ConfigError("the model has no SignatureDefs")
        if signature_key is None:
            if len(sigs) != 1:
                raise ConfigError(f"the model has {len(sigs)} signatures: name one of {sorted(sigs)}")
            signature_key = next(iter(sigs))
        if signature_key not in sigs:
            raise ConfigError(f"no signature {signature_key!r}; the model has {sorted(sigs)}")
        sig = sigs[signature_key]
        if sig.subgraph_index != 0:
            raise ConfigError(f"signature {signature_key!r} runs subgraph {sig.subgraph_index}; TFLM invokes "
                              "subgraph 0 only")
        return SignatureRunner(self, sig)


class SignatureRunner:
    """LiteRT's signature runner: ``runner(**inputs) -> {output name: array}``."""

    def __init__(self, interp: Any, signature: Any):
        self._interp, self._sig = interp, signature

    def get_input_details(self) -> dict[str, dict[str, Any]]:
        t = self._interp._subgraph.tensors
        return {name: tensor_details(t[i]) for name, i in self._sig.inputs.items()}

    def get_output_details(self) -> dict[str, dict[str, Any]]:
        t = self._interp._subgraph.tensors
        return {name: tensor_details(t[i]) for name, i in self._sig.outputs.items()}

    def __call__(self, **inputs: Any) -> dict[str, np.ndarray]:
        missing = set(self._sig.inputs) - set(inputs)
        unknown = set(inputs) - set(self._sig.inputs)
        if missing or unknown:
            raise InputError(f"signature {self._sig.key!r} takes inputs {sorted(self._sig.inputs)}; missing "
                             f"{sorted(missing)}, unknown {sorted(unknown)}")
        for name, value in inputs.items():
            self._interp.set_tensor(self._sig.inputs[name], value)
        self._interp.invoke()
        return {name: self._interp.get_tensor(i) for name, i in self._sig.outputs.items()}
