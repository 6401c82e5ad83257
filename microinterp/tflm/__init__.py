"""Facts about TFLM and TFLite that are not about microinterp's behaviour: the schema's builtin options and what the
converter writes (:mod:`.options`), the ``MicroMutableOpResolver`` method of each op (:mod:`.ops`) and the 32-bit
struct sizes of a firmware build (:mod:`.structs32`). Nothing here imports the rest of microinterp; the firmware
arena's estimate (:mod:`microinterp.memory32`) replays microinterp's prepare on top of these facts."""
