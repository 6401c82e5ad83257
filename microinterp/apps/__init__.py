"""Applications built on the runtime: the ``microinterp`` command (:mod:`.cli`), the firmware report (:mod:`.deploy`),
the offline plan for TFLM (:mod:`.optimize`), the HTML report (:mod:`.report`), the built-in demo (:mod:`.demo`),
the micro_speech front end (:mod:`.audio`), the tiny language model (:mod:`.lm`) and Ray scale-out
(:mod:`.scaleout`). The runtime never imports them."""
