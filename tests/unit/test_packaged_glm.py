"""The general GLM shipped in ``hoprag/data/glm`` (issue 15): small, what its recipe trains, and
usable by name (``packaged-glm``) wherever a retriever or an init is read.

The recipe ``training/configs/glm-minilm-lora-general-cpu.yaml`` opens with the train command and
names the generate and index commands of its benchmark; the shipped ``train_config.yaml`` (the run's
effective config) must be that config, so re-running the three commands reproduces the retriever.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from hoprag.config import load_config
from hoprag.glm.artifact import PACKAGED_GLM_NAME, read_retriever_meta
from hoprag.glm.retriever import load_retriever_model
from hoprag.paths import PACKAGED_GLM
from training.config import TrainConfig
from training.warm_start import resolve_init

RECIPE = Path(__file__).resolve().parents[2] / "training" / "configs" / "glm-minilm-lora-general-cpu.yaml"


def _recipe_command(prefix: str) -> list[str]:
    lines = [line.lstrip("# ").strip() for line in RECIPE.read_text().splitlines() if line.startswith("#")]
    (command,) = [line for line in lines if line.startswith(prefix)]
    return shlex.split(command)


def test_the_shipped_glm_is_a_small_lora_retriever() -> None:
    directory, meta = read_retriever_meta(PACKAGED_GLM_NAME)
    assert directory == PACKAGED_GLM / "retriever"
    assert meta["backbone"]["name"] == "minilm" and meta["backbone"]["lora"] is not None
    assert (directory / "model.safetensors").stat().st_size < 8 * 2**20
    for name in ("train_config.yaml", "metrics.json", "validation.jsonl", "README.md"):
        assert (PACKAGED_GLM / name).is_file(), name


def test_the_shipped_glm_was_trained_by_its_recipe() -> None:
    train = _recipe_command("hoprag train --index runs/synth15")
    assert train[train.index("--config") + 1] == "training/configs/glm-minilm-lora-general-cpu.yaml"
    recipe = load_config(TrainConfig, RECIPE, [])
    shipped = TrainConfig.model_validate(yaml.safe_load((PACKAGED_GLM / "train_config.yaml").read_text()))
    assert [str(i.path) for i in shipped.data.indexes] == [train[train.index("--index") + 1]]
    # the index comes from the command line, everything else from the recipe
    no_index = {"data": {"indexes"}}
    assert shipped.model_dump(exclude=no_index) == recipe.model_dump(exclude=no_index)
    metrics = json.loads((PACKAGED_GLM / "metrics.json").read_text())
    assert metrics["step"] == recipe.max_steps
    _, meta = read_retriever_meta(PACKAGED_GLM_NAME)
    assert meta["backbone"]["lora"] == recipe.backbone.lora.model_dump(mode="json")
    generate = _recipe_command("hoprag generate")
    assert "--held-out-domains" in generate  # the held-out domain issue 15 measures transfer on


def test_the_shipped_glm_loads_by_name_and_is_an_init(tmp_path: Path) -> None:
    model, tokenizer, settings = load_retriever_model(PACKAGED_GLM_NAME)
    assert any(p.abs().sum() > 0 for n, p in model.named_parameters() if ".lora_B." in n)  # trained
    assert settings.sampler.max_triplets == 100 and tokenizer.pad_token_id == 0
    config, record = resolve_init(TrainConfig(init=PACKAGED_GLM_NAME), tmp_path / "run")
    assert config.init == str((PACKAGED_GLM / "retriever").resolve())
    assert config.backbone.lora is not None and "lora=rank" in record["backbone"]


@pytest.mark.parametrize("spec", [PACKAGED_GLM_NAME, f"{PACKAGED_GLM_NAME}+dense"])
def test_packaged_glm_is_a_retriever_spec(spec: str) -> None:
    from hoprag.retrieval.loading import check_retriever_spec

    check_retriever_spec(spec)
