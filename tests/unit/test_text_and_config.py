"""Normalization, document cleaning and the typed config loader."""

from __future__ import annotations

import pytest

from hoprag.config import ConfigError, load_config, parse_override
from hoprag.text import clean_document_text, content_hash, normalize_entity
from indexing.config import IndexConfig


def test_normalize_entity_follows_gfm_rag_and_keeps_unicode_letters():
    assert normalize_entity("  The Salt-Ledger (1987) ") == "the salt ledger 1987"
    assert normalize_entity("Cheri's Kingdom") == "cheri s kingdom"
    assert normalize_entity("Zoë ÅBERG") == "zoë åberg"
    assert normalize_entity("!!!") == ""


def test_clean_document_text_replaces_bad_bytes_and_control_chars():
    assert clean_document_text(b"Caf\xe9 \xff ok") == "Caf\ufffd \ufffd ok"
    assert clean_document_text("a\x00b\x07c\nd") == "abc\nd"


def test_content_hash_is_stable_and_separates_parts():
    assert content_hash("a", "bc") != content_hash("ab", "c")
    assert content_hash("x") == content_hash("x")


def test_yaml_plus_overrides(tmp_path):
    cfg_file = tmp_path / "index.yaml"
    cfg_file.write_text("extraction:\n  batch_size: 4\nllm:\n  embedded:\n    dtype: float32\n")
    cfg = load_config(IndexConfig, cfg_file, ["extraction.concurrency=2", "synonyms.threshold=0.9"])
    assert cfg.extraction.batch_size == 4
    assert cfg.extraction.concurrency == 2
    assert cfg.synonyms.threshold == 0.9
    assert cfg.llm.embedded.dtype == "float32"


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        (["extraction.batch_size=0"], "extraction.batch_size"),
        (["synonyms.threshold=1.5"], "synonyms.threshold"),
        (["llm.backend=openai"], "openai"),
        (["llm.backend=cohere"], "llm.backend"),
        (["nonsense"], "key.sub=value"),
    ],
)
def test_invalid_configs_name_the_problem(overrides, needle):
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        load_config(IndexConfig, None, overrides)


def test_unknown_keys_are_refused_with_the_valid_names(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(IndexConfig, None, ["extraction.batchsize=8"])
    message = str(info.value)
    assert "unknown setting extraction.batchsize (did you mean extraction.batch_size?" in message
    assert "valid: batch_size, concurrency," in message and "\n" not in message
    typo = tmp_path / "typo.yaml"
    typo.write_text("synonyms:\n  treshold: 0.9\nllm:\n  embeded: {}\n")
    with pytest.raises(
        ConfigError, match=r"unknown setting llm\.embeded \(did you mean llm\.embedded\?"
    ) as info:
        load_config(IndexConfig, typo)
    assert "unknown setting synonyms.treshold" in str(info.value) and str(typo) in str(info.value)
    with pytest.raises(ConfigError, match=r"unknown setting surprise \(valid: embedder, extraction, llm,"):
        load_config(IndexConfig, None, ["surprise=1"])


def _config_modules() -> list[str]:
    """Every module of the project's packages that defines pydantic models (request/response
    schemas of the HTTP APIs, ``*schemas.py``, excepted: they have their own policy, and the OpenAI
    protocol's accept and ignore unknown fields as OpenAI-compatible servers do)."""
    from pathlib import Path

    root = Path(__file__).parents[2]
    found = []
    for package in ("hoprag", "indexing", "training", "serving", "evaluation", "cluster"):
        for path in sorted((root / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if not path.name.endswith("schemas.py") and (
                "from pydantic import" in text or "StrictModel" in text
            ):
                found.append(".".join(path.relative_to(root).with_suffix("").parts))
    return found


def test_every_config_model_refuses_unknown_keys():
    import importlib
    import inspect

    from pydantic import BaseModel, ValidationError

    modules = _config_modules()
    assert {"indexing.config", "training.config", "serving.settings", "evaluation.judge"} <= set(modules)
    models = [
        cls
        for name in modules
        for _, cls in inspect.getmembers(importlib.import_module(name), inspect.isclass)
        if issubclass(cls, BaseModel) and cls.__module__ == name
    ]
    assert len(models) >= 40
    lenient = []
    for cls in models:
        try:
            cls.model_validate({"surely_not_a_setting": 1})
        except ValidationError as exc:
            if any(e["type"] == "extra_forbidden" for e in exc.errors()):
                continue
        lenient.append(f"{cls.__module__}.{cls.__qualname__}")
    assert not lenient, "config models that ignore unknown keys: " + ", ".join(lenient)


def test_bad_yaml_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(IndexConfig, tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a list\n- not a mapping\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(IndexConfig, bad)


def test_override_values_are_yaml_typed():
    assert parse_override("a.b=3") == ("a.b", 3)
    assert parse_override("a=[1, 2]") == ("a", [1, 2])
    assert parse_override("a=hello") == ("a", "hello")


def test_shipped_indexing_configs_validate_and_show_their_command():
    from pathlib import Path

    configs = sorted((Path(__file__).parents[2] / "indexing" / "configs").glob("*.yaml"))
    assert configs
    for path in configs:
        assert path.read_text().startswith("# ") and "hoprag index" in path.read_text().splitlines()[0]
        load_config(IndexConfig, path)


def test_degenerate_list_outputs_are_detected():
    from hoprag.llm.base import is_degenerate_list_output

    assert not is_degenerate_list_output("(a | b | c)\n(d | e | f)\n(g | h")
    assert is_degenerate_list_output("(a | b | c)\n(a | b | c)\n")
    assert is_degenerate_list_output(
        "(Born in 1922 | in 1922 | in 1922 | in 1922 | in 1922 | in 1922 | in 1922 |"
    )
    assert is_degenerate_list_output("(" + "x" * 300)


def test_shipped_training_recipes_validate_and_show_their_command():
    from pathlib import Path

    from training.config import TrainConfig

    recipes = sorted((Path(__file__).parents[2] / "training" / "configs").glob("*.yaml"))
    assert len(recipes) >= 2
    for path in recipes:
        assert path.read_text().splitlines()[0].startswith("# hoprag train ")
        cfg = load_config(TrainConfig, path)
        if "gpu" in path.name:
            assert (
                cfg.run.use_gpu and cfg.deepspeed.precision == "bf16" and cfg.glm.sampler.max_triplets == 600
            )


def test_shipped_evaluation_configs_validate_and_show_their_command():
    from pathlib import Path

    from evaluation.config import EvalConfig

    configs = sorted((Path(__file__).parents[2] / "evaluation" / "configs").glob("*.yaml"))
    assert len(configs) >= 2
    for path in configs:
        assert (
            path.read_text().splitlines()[0] == f"# hoprag eval run --config evaluation/configs/{path.name}"
        )
        load_config(EvalConfig, path)


def test_shipped_benchmark_registry_entries_validate():
    from pathlib import Path

    import yaml

    from evaluation.config import REGISTRY, BenchmarkSpec

    entries = yaml.safe_load(Path(REGISTRY).read_text())["benchmarks"]
    assert entries
    for name, entry in entries.items():
        BenchmarkSpec.model_validate({"name": name, **entry})  # strict: a misspelled key fails here


def test_document_cleaning_drops_exactly_the_other_category_characters() -> None:
    """The regex path of clean_document_text equals its definition, character by character: every
    category-C character but tab and newline goes (NBSP, a space separator, stays)."""
    import random
    import unicodedata

    def by_definition(text: str) -> str:
        text = unicodedata.normalize("NFC", text)
        return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C").strip()

    rng = random.Random(0)
    pool = [
        chr(c) for c in [*range(0, 0x250), 0x00AD, 0x200B, 0x200E, 0x2028, 0xFEFF, 0xE000, 0xD800, 0x0378]
    ]
    pool += [chr(rng.randrange(0x110000)) for _ in range(300)]
    for _ in range(300):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 40)))
        assert clean_document_text(text) == by_definition(text), repr(text)
    assert clean_document_text("Hans\u00a0Fischer\u200b (born\x07 1881)\n") == "Hans\u00a0Fischer (born 1881)"
    assert clean_document_text(b"ok \xff") == "ok \ufffd"
