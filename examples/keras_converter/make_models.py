"""Convert small Keras models with the stock TFLite converter (full-integer int8 and float32) into OUT_DIR.

Run it in a throwaway environment (TensorFlow is not a dependency of microinterp):

    python3 -m venv /tmp/tfenv && /tmp/tfenv/bin/pip install tensorflow-cpu
    /tmp/tfenv/bin/python examples/keras_converter/make_models.py /tmp/converted

then compare every model against the TFLM wheel with ``python examples/keras_converter/check_converted.py
/tmp/converted`` in microinterp's environment.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import tensorflow as tf

keras = tf.keras


def dilated_conv1d_swish(padding: str) -> keras.Model:
    x = keras.Input((32, 6), batch_size=1)
    y = keras.layers.Conv1D(8, 3, dilation_rate=2, padding=padding)(x)
    y = keras.layers.Activation("swish")(y)
    y = keras.layers.Conv1D(8, 3, dilation_rate=4, padding=padding)(y)
    return keras.Model(x, y)


def reflect_pixel_shuffle() -> keras.Model:
    x = keras.Input((12, 12, 4), batch_size=1)
    y = keras.layers.Lambda(lambda t: tf.pad(t, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT"))(x)
    y = keras.layers.Conv2D(16, 3, padding="valid", activation="relu")(y)
    y = keras.layers.Lambda(lambda t: tf.nn.depth_to_space(t, 2))(y)
    y = keras.layers.Lambda(lambda t: tf.pad(t, [[0, 0], [2, 2], [2, 2], [0, 0]], mode="SYMMETRIC"))(y)
    y = keras.layers.Lambda(lambda t: tf.nn.space_to_depth(t, 2))(y)
    y = keras.layers.Lambda(lambda t: tf.reverse(t, axis=[2]))(y)
    y = keras.layers.Lambda(lambda t: tf.square(t))(y)
    return keras.Model(x, y)


def where_reduce_cumsum() -> keras.Model:
    x = keras.Input((6, 16), batch_size=1)
    y = keras.layers.Dense(16)(x)
    # a scalar branch makes the converter emit SELECT_V2 (equal shapes give SELECT, which TFLM does not have)
    w = keras.layers.Lambda(lambda ab: tf.where(ab[0] > ab[1], ab[0], -1.0))([x, y])
    r = keras.layers.Lambda(lambda t: tf.reduce_min(t, axis=-1))(w)
    c = keras.layers.Lambda(lambda t: tf.math.cumsum(t, axis=1))(r)
    return keras.Model(x, c)


def attention_block() -> keras.Model:
    x = keras.Input((8, 16), batch_size=1)
    h = keras.layers.LayerNormalization()(x)
    a = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(h, h)
    y = keras.layers.Add()([x, a])
    h2 = keras.layers.LayerNormalization()(y)
    f = keras.layers.Dense(32, activation="relu")(h2)      # GELU: TFLM has no kernel for it
    f = keras.layers.Dense(16)(f)
    return keras.Model(x, keras.layers.Add()([y, f]))


MODELS = {"dilated_conv1d_valid": lambda: dilated_conv1d_swish("valid"),
          "dilated_conv1d_same": lambda: dilated_conv1d_swish("same"),
          "reflect_pixel_shuffle": reflect_pixel_shuffle, "where_reduce_cumsum": where_reduce_cumsum,
          "attention_block": attention_block}


def convert(model: keras.Model, int8: bool) -> bytes:
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:
        shape = [1, *model.input_shape[1:]]
        rng = np.random.default_rng(0)

        def representative():
            for _ in range(32):
                yield [rng.uniform(-2, 2, size=shape).astype(np.float32)]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = representative
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    return conv.convert()


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for name, make in MODELS.items():
        model = make()
        for int8 in (True, False):
            try:
                data = convert(model, int8)
            except Exception as e:  # noqa: BLE001 - report and go on with the others
                print(f"{name} {'int8' if int8 else 'float'}: the converter failed: {e}")
                continue
            path = os.path.join(out_dir, f"{name}_{'int8' if int8 else 'float'}.tflite")
            with open(path, "wb") as f:
                f.write(data)
            print(path, len(data), "bytes")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/converted")
