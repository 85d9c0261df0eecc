"""Distillation: teacher LLM outputs → a LoRA student of the embedded model (``hoprag distill``).

- :mod:`distillation.config`: the typed recipe (tasks, teacher, LoRA, optimization, Ray Train run);
- :mod:`distillation.teacher`: teacher answers per passage / question, with Ray Data and the
  indexing extraction cache (a re-run pays the teacher only for new inputs);
- :mod:`distillation.examples`: student prompt → teacher answer, in the parsers' format;
- :mod:`distillation.loop`: the Ray Train worker (peft LoRA, loss on the answer only, checkpoints);
- :mod:`distillation.job`: the driver; exports ``RUN_DIR/adapter`` with ``student.json``.

Recipes: ``distillation/configs/``. The embedded backend loads the adapter by config
(``llm.embedded.adapter``; :mod:`hoprag.llm.adapters`).
"""
