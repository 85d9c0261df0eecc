"""The training recipe ``hoprag train`` runs when it is given none, and the one ``hoprag demo`` runs.

docs/glm.md ("Which recipe, measured where") measures the recipes against each other on every
benchmark in docs/: fine-tuning the GLM shipped with hoprag (``packaged-glm``) for 100 steps is the
one that wins most, so it is the default. Training from scratch (the :class:`TrainConfig`
defaults, a 4-layer T5 GLM) is ``hoprag train --from-scratch``; a ``--config`` file is a recipe of
its own and replaces this one. ``training/configs/glm-packaged-finetune-cpu.yaml`` writes the same
recipe out as a file (tests/unit/test_train_recipes.py keeps the two equal).
"""

from __future__ import annotations

from typing import Any

from hoprag.glm.artifact import PACKAGED_GLM_NAME

# 100 steps of fine-tuning put the shipped GLM ahead of dense at recall@2 and @5 on the packaged
# sample's test split (docs/bench-retrievers.md, "the packaged sample"); 127 s on 2 undisturbed cores.
FINE_TUNE_STEPS = 100


def default_recipe(max_steps: int = FINE_TUNE_STEPS) -> dict[str, Any]:
    """The default recipe as config values (``load_config``'s ``base``): fine-tune ``packaged-glm``
    for ``max_steps`` steps. The sampler and document ranker start as the shipped GLM's; the run
    exports the ranker that validates best (training/loop.py)."""
    return {
        "init": PACKAGED_GLM_NAME,
        "max_steps": max_steps,
        # max_steps ends the run; epochs only has to be large enough not to end it first
        "epochs": 50,
        "run": {"checkpoint_every": 50},
        # on 2 cores a Ray Data stream's scheduling loop would take a core (docs/glm.md §15)
        "data": {"streaming": False},
    }
