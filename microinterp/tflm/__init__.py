"""Facts about TFLM and TFLite that are not about microinterp's behaviour: the schema's builtin options
(:mod:`.options`), the ``MicroMutableOpResolver`` method of each op (:mod:`.ops`), the 32-bit struct sizes of a
firmware build (:mod:`.structs32`) and the arithmetic of a firmware's arena (:mod:`.memory32`)."""
