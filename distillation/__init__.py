"""Distillation (issue 14, in progress): teacher LLM outputs → a LoRA student of the embedded model.

:mod:`distillation.examples` turns teacher outputs into the student's training examples (its short
prompt → the teacher's answer). The training job (`hoprag distill`) comes next.
"""
