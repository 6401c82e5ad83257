"""The cost model's measured layer: instructions per op of TFLM's Cortex-M build (:mod:`.instructions`), fitted on
the device oracle's counts (:mod:`.fit`)."""
