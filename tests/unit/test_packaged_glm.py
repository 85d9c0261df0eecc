"""The general GLM shipped in ``hoprag/data/glm`` (issue 15): small, what its recipe trains, and
usable by name (``packaged-glm``) wherever a retriever or an init is read.

It was trained in two stages, each by a recipe that opens with its train command and names the
generate and index commands of its benchmarks: ``training/configs/glm-minilm-lora-general-cpu.yaml``
(film and business; its run's config and curve are kept in ``stage1/``), then
``training/configs/glm-minilm-lora-multidomain-cpu.yaml`` (warm-started from the first, four
domains). Each shipped ``train_config.yaml`` (a run's effective config) must be its recipe's config,
so re-running the commands reproduces the retriever.
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

CONFIGS = Path(__file__).resolve().parents[2] / "training" / "configs"
RECIPE = CONFIGS / "glm-minilm-lora-general-cpu.yaml"
MULTIDOMAIN_RECIPE = CONFIGS / "glm-minilm-lora-multidomain-cpu.yaml"


def _recipe_command(prefix: str, recipe: Path = RECIPE) -> list[str]:
    lines = [line.lstrip("# ").strip() for line in recipe.read_text().splitlines() if line.startswith("#")]
    (command,) = [line for line in lines if line.startswith(prefix)]
    return shlex.split(command)


def _flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def test_the_shipped_glm_is_a_small_lora_retriever() -> None:
    directory, meta = read_retriever_meta(PACKAGED_GLM_NAME)
    assert directory == PACKAGED_GLM / "retriever"
    assert meta["backbone"]["name"] == "minilm" and meta["backbone"]["lora"] is not None
    assert (directory / "model.safetensors").stat().st_size < 8 * 2**20
    for name in ("train_config.yaml", "metrics.json", "validation.jsonl", "init.json", "README.md"):
        assert (PACKAGED_GLM / name).is_file(), name
    for name in ("train_config.yaml", "metrics.json", "validation.jsonl"):
        assert (PACKAGED_GLM / "stage1" / name).is_file(), name


def _shipped_config(directory: Path) -> TrainConfig:
    return TrainConfig.model_validate(yaml.safe_load((directory / "train_config.yaml").read_text()))


def test_the_first_stage_was_trained_by_its_recipe() -> None:
    train = _recipe_command("hoprag train --index runs/synth15")
    assert train[train.index("--config") + 1] == "training/configs/glm-minilm-lora-general-cpu.yaml"
    recipe = load_config(TrainConfig, RECIPE, [])
    shipped = _shipped_config(PACKAGED_GLM / "stage1")
    assert [str(i.path) for i in shipped.data.indexes] == _flag_values(train, "--index")
    # the index comes from the command line, everything else from the recipe
    no_index = {"data": {"indexes"}}
    assert shipped.model_dump(exclude=no_index) == recipe.model_dump(exclude=no_index)
    metrics = json.loads((PACKAGED_GLM / "stage1" / "metrics.json").read_text())
    assert metrics["step"] == recipe.max_steps
    generate = _recipe_command("hoprag generate")
    assert "--held-out-domains" in generate  # the held-out domain issue 15 measures transfer on


def test_the_shipped_glm_is_the_first_stage_trained_on_by_the_multidomain_recipe() -> None:
    train = _recipe_command("hoprag train --index runs/synth15/index-ref --index", MULTIDOMAIN_RECIPE)
    assert train[train.index("--config") + 1] == "training/configs/glm-minilm-lora-multidomain-cpu.yaml"
    first_stage = _recipe_command("hoprag train --index runs/synth15/index-ref --out", MULTIDOMAIN_RECIPE)
    assert first_stage == _recipe_command("hoprag train --index runs/synth15")  # the general recipe's
    first_stage_out = first_stage[first_stage.index("--out") + 1]
    assert _flag_values(train, "--init") == [first_stage_out]
    recipe = load_config(TrainConfig, MULTIDOMAIN_RECIPE, [])
    shipped = _shipped_config(PACKAGED_GLM)
    assert [str(i.path) for i in shipped.data.indexes] == _flag_values(train, "--index")
    assert shipped.init == f"{first_stage_out}/retriever"
    # indexes and init come from the command line, everything else from the recipe
    from_command_line = {"data": {"indexes"}, "init": True}
    assert shipped.model_dump(exclude=from_command_line) == recipe.model_dump(exclude=from_command_line)
    metrics = json.loads((PACKAGED_GLM / "metrics.json").read_text())
    assert metrics["step"] == recipe.max_steps
    init = json.loads((PACKAGED_GLM / "init.json").read_text())
    assert init["path"] == shipped.init and len(init["weights_sha256"]) == 64
    _, meta = read_retriever_meta(PACKAGED_GLM_NAME)
    assert meta["backbone"]["lora"] == recipe.backbone.lora.model_dump(mode="json")
    assert meta["init"] == init
    # the new training domains, and the first stage's held-out domain still unseen
    new_benchmark = _recipe_command("hoprag generate --out runs/synth-ms", MULTIDOMAIN_RECIPE)
    assert new_benchmark[new_benchmark.index("--domains") + 1 :] == ["music", "sports"]
    assert _recipe_command("hoprag generate --out runs/synth15", MULTIDOMAIN_RECIPE) == _recipe_command(
        "hoprag generate"
    )


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
