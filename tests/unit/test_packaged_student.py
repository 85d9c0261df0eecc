"""The distilled student shipped in ``hoprag/data/student``: it is what its recipe makes, and the
embedded backend uses it by default (issue 14).

The recipe ``distillation/configs/student-embedded-cpu.yaml`` opens with the distill command and
names the ``hoprag generate`` command of its corpus; the shipped ``student.json`` must record that
config and that generator config, so re-running the two commands reproduces the adapter.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from distillation.config import DistillConfig
from hoprag.config import load_config
from hoprag.extraction.prompts import STUDENT_PROMPT_VERSION
from hoprag.llm.adapters import PACKAGED_STUDENT, packaged_student_dir, student_tasks
from hoprag.llm.embedded import EmbeddedLLMConfig, embedded_model_id
from hoprag_cli.entry import main as hoprag_main

RECIPE = Path(__file__).resolve().parents[2] / "distillation" / "configs" / "student-embedded-cpu.yaml"


@pytest.fixture(scope="module")
def meta() -> dict:
    return json.loads((packaged_student_dir() / "student.json").read_text())


def _recipe_command(prefix: str) -> list[str]:
    lines = [line.lstrip("# ").strip() for line in RECIPE.read_text().splitlines() if line.startswith("#")]
    (command,) = [line for line in lines if line.startswith(prefix)]
    return shlex.split(command)


def test_the_shipped_adapter_is_complete_and_small() -> None:
    folder = packaged_student_dir()
    for name in ("adapter_config.json", "adapter_model.safetensors", "student.json"):
        assert (folder / name).is_file(), name
    assert (folder / "adapter_model.safetensors").stat().st_size < 16 * 2**20


def test_the_shipped_student_was_made_by_its_recipe(meta: dict) -> None:
    distill = _recipe_command("hoprag distill")
    assert distill[distill.index("--config") + 1] == "distillation/configs/student-embedded-cpu.yaml"
    recipe = load_config(DistillConfig, RECIPE, [])
    # Read back through today's schema: a field added since (with the default that means the old
    # behaviour, e.g. lora.layers: null = every layer) must not break the match; any other change does
    # (and a key the schema does not know fails validation).
    shipped = DistillConfig.model_validate(meta["config"])
    # The sections of backends that did not teach cannot have shaped the adapter: the embedded
    # section's dtype default became "auto" after this adapter was taught by the reference backend.
    idle = {
        "teacher": {
            name for name in ("embedded", "openai", "vllm", "reference") if name != recipe.teacher.backend
        }
    }
    assert shipped.model_dump(exclude=idle) == recipe.model_dump(exclude=idle)
    assert shipped.teacher.section() == recipe.teacher.section()
    assert meta["steps"] == recipe.optim.max_steps
    assert meta["tasks"] == list(recipe.tasks)
    assert meta["base_model"] == "packaged:gemma-3-270m"


def test_the_shipped_students_corpus_is_the_recipes_generate_command(meta: dict, tmp_path: Path) -> None:
    generate = _recipe_command("hoprag generate")
    corpus = Path(generate[generate.index("--out") + 1])
    assert distill_corpus(_recipe_command("hoprag distill")) == corpus
    out = tmp_path / corpus.name
    generate[generate.index("--out") + 1] = str(out)
    assert hoprag_main(generate[1:]) == 0
    world = json.loads((out / "raw" / "world.json").read_text())
    assert meta["corpus"] == {"name": corpus.name, "generator": world["config"]}
    # Whole domains and templates held out: what `hoprag bench extract` measures the student on.
    assert set(world["config"]["domains"]) < {"biomedical", "business", "film"}
    assert world["config"]["phrasing"]["held_out_template_fraction"] > 0


def distill_corpus(command: list[str]) -> Path:
    return Path(command[command.index("--corpus") + 1])


def test_the_shipped_student_was_trained_on_todays_student_prompts(meta: dict) -> None:
    """Changing a student prompt's text bumps STUDENT_PROMPT_VERSION; the shipped student must then
    be retrained (an adapter of older prompts gets the base prompts, see the next test)."""
    assert meta["prompt_versions"]["student"] == STUDENT_PROMPT_VERSION
    assert student_tasks(packaged_student_dir()) == {"openie", "ner", "answer"}


def test_a_student_of_other_prompt_texts_gets_the_base_prompts(tmp_path: Path, meta: dict) -> None:
    old = tmp_path / "old"
    old.mkdir()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (old / name).write_bytes((packaged_student_dir() / name).read_bytes())
    (old / "student.json").write_text(json.dumps({**meta, "prompt_versions": {"student": "student-v0"}}))
    assert student_tasks(old) == frozenset()


def test_the_embedded_backend_defaults_to_the_shipped_student(tmp_path: Path) -> None:
    default = EmbeddedLLMConfig()
    assert default.adapter == PACKAGED_STUDENT
    assert default.adapter_dirs == (packaged_student_dir(),)
    assert "+adapter:" in embedded_model_id(default)
    base = EmbeddedLLMConfig(adapter=None)
    assert base.adapter_dirs == () and "+adapter:" not in embedded_model_id(base)
    # The packaged student fits the packaged base only; another model gets no adapter by default.
    assert EmbeddedLLMConfig(model_path=str(tmp_path)).adapter_dirs == ()


@pytest.mark.parametrize("recipe", sorted(RECIPE.parent.glob("*.yaml")), ids=lambda p: p.name)
def test_every_distill_recipe_validates_and_opens_with_its_command(recipe: Path) -> None:
    first = recipe.read_text().splitlines()[0]
    assert first.startswith("# hoprag distill "), first
    command = shlex.split(first.removeprefix("# "))
    assert command[command.index("--config") + 1] == f"distillation/configs/{recipe.name}"
    load_config(DistillConfig, recipe, [])
