"""``hoprag bench extract``: extraction scored against a benchmark's true facts, values computed by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.extract import (
    BenchDocuments,
    GoldFact,
    RelationAgreement,
    build_config,
    load_documents,
    run_system,
    score_extractions,
)
from hoprag.config import ConfigError
from indexing.config import ExtractionConfig
from indexing.formats.gold import normalize_argument
from tests.support.planner_llm import Rule, ScriptedPlannerLLM

DOC_A = "Juno Hale is an actor born in 1980. Juno Hale was born in Quifen. She studied at Carrow College."
DOC_B = "The Salt Ledger is a film released in 1987. The Salt Ledger was directed by Oriel Fane. It stars Ava Stone."
GOLD_A = [
    GoldFact("Juno Hale", "birth_year", "1980", "attribute"),
    GoldFact("Juno Hale", "kind", "actor", "attribute"),
    GoldFact("Juno Hale", "born_in", "Quifen", template="born_in/0"),
    GoldFact("Juno Hale", "educated_at", "Carrow College", template="educated_at/0", pronoun="she"),
]
GOLD_B = [
    GoldFact("The Salt Ledger", "release_year", "1987", "attribute"),
    GoldFact("The Salt Ledger", "directed_by", "Oriel Fane", template="directed_by/0", frame="conjunction"),
    GoldFact("The Salt Ledger", "stars", "Ava Stone", template="stars/1", pronoun="it"),
]
# What the scripted system answers: in A a right pair with the right relation, a reversed pair with
# another relation word, an attribute pair, a wrong pair; in B the right pair twice (with and without
# "The": one triple after normalization) and a wrong pair. It misses A's kind, B's year and B's star.
OUT_A = [
    ("Juno Hale", "born in", "Quifen"),
    ("Carrow College", "alumna", "Juno Hale"),
    ("Juno Hale", "born in", "1980"),
    ("Quifen", "located in", "Carrow College"),
]
OUT_B = [
    ("Salt Ledger", "directed by", "Oriel Fane"),
    ("The Salt Ledger", "directed by", "Oriel Fane"),
    ("Oriel Fane", "stars", "Ava Stone"),
]


def _fake_embed(vectors: dict[str, list[float]]) -> Any:
    """Known strings get the given vectors; every other string its own axis (cosine 0 with the rest)."""
    dim = 1024
    axes: dict[str, int] = {}

    def embed(texts: list[str]) -> np.ndarray:
        out = []
        for t in texts:
            if t in vectors:
                v = np.zeros(dim)
                v[: len(vectors[t])] = vectors[t]
            else:
                v = np.zeros(dim)
                v[10 + axes.setdefault(t, len(axes))] = 1.0
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)

    return embed


def test_scores_by_hand_with_relation_equality_only() -> None:
    s = score_extractions([GOLD_A, GOLD_B], [OUT_A, OUT_B], RelationAgreement(None))
    assert s["extracted_triples"] == 6  # B's two directed-by triples are one
    assert (s["gold_relation_facts"], s["gold_attribute_facts"]) == (4, 3)
    # Relations: 5 triples count (the attribute pair "born in 1980" is left out); 3 hit a relation
    # pair (born in, reversed alumna, directed by), 2 of them with an equal relation; 3 of 4 facts found.
    assert s["relations"]["pair"] == {"precision": 0.6, "recall": 0.75, "f1": 0.6667}
    assert s["relations"]["relation"] == {"precision": 0.4, "recall": 0.5, "f1": 0.4444}
    # All facts: 4 of 6 triples hit a pair, 2 agree; 4 of 7 facts found by pair, 2 with relation.
    assert s["all"]["pair"] == {"precision": 0.6667, "recall": 0.5714, "f1": 0.6154}
    assert s["all"]["relation"] == {"precision": 0.3333, "recall": 0.2857, "f1": 0.3077}
    assert s["attribute_pair_recall"] == 0.3333
    by = s["relation_pair_recall_by"]
    assert by["subject"] == {"name": [1.0, 2], "pronoun": [0.5, 2]}
    assert by["frame"] == {"conjunction": [1.0, 1], "single": [0.6667, 3]}


def test_relation_agreement_by_cosine() -> None:
    embed = _fake_embed(
        {
            "alumna": [1.0, 0.0],
            "educated at": [0.9, np.sqrt(1 - 0.81)],  # cosine 0.9 with "alumna"
            "born in": [0.0, 1.0, 0.0],
            "birth year": [0.0, 0.3, np.sqrt(1 - 0.09)],  # cosine 0.3 with "born in"
            "lives near": [0.5, 0.0, 0.0, np.sqrt(0.75)],  # cosine 0.5 with "alumna", 0.45 with "educated at"
        }
    )
    wordings = {"educated_at": ["educated at"], "birth_year": ["birth year"], "kind": ["is a"]}
    agreement = RelationAgreement(embed, threshold=0.5, wordings=wordings)
    assert agreement.agrees("alumna", "educated_at")
    assert not agreement.agrees("born in", "birth_year")
    assert agreement.agrees("Born  In", "born_in")  # equal after normalization
    assert agreement.agrees("is an", "kind") is False and agreement.agrees("is a", "kind")
    s = score_extractions([GOLD_A, GOLD_B], [OUT_A, OUT_B], agreement)
    # "alumna" now agrees with educated_at: 3 of 5 relation triples, 3 of 4 relation facts.
    assert s["relations"]["relation"] == {"precision": 0.6, "recall": 0.75, "f1": 0.6667}
    assert s["relations"]["pair"] == {"precision": 0.6, "recall": 0.75, "f1": 0.6667}
    assert agreement.cosine("alumna", "lives near") == pytest.approx(0.5)
    assert agreement.agrees("lives near", "educated_at") is False  # cosine 0.45 with "educated at"
    assert RelationAgreement(embed, threshold=0.44, wordings=wordings).agrees("lives near", "educated_at")


def test_the_generator_wordings_agree_without_embeddings() -> None:
    agreement = RelationAgreement(None)  # the generator's wordings, equality only
    assert agreement.agrees("is the birthplace of", "born_in")
    assert agreement.agrees("Hails from", "born_in")
    assert agreement.agrees("was released in", "release_year")
    assert not agreement.agrees("is the birthplace of", "educated_at")
    assert not agreement.agrees("born in", "birth_year")


def test_normalization_drops_case_punctuation_and_a_leading_article() -> None:
    assert normalize_argument("The Salt-Ledger") == "salt ledger"
    assert normalize_argument("an actor") == "actor"
    assert normalize_argument("The") == "the"  # nothing left to drop


def test_a_scripted_system_through_indexing_extraction() -> None:
    """The same answers, produced by an LLM and parsed by indexing's extraction code, score the same."""
    llm = ScriptedPlannerLLM(
        [
            Rule("other", "\n".join(f"({h} | {r} | {t})" for h, r, t in OUT_A) + "\n", contains="Juno Hale"),
            Rule(
                "other", "\n".join(f"({h} | {r} | {t})" for h, r, t in OUT_B) + "\n", contains="Salt Ledger"
            ),
        ]
    )
    docs = BenchDocuments(["A", "B"], [DOC_A, DOC_B], [GOLD_A, GOLD_B])
    run = run_system("scripted", llm, docs, ExtractionConfig(batch_size=1))
    assert llm.batches == [1, 1]  # one generate call per batch of documents
    assert run.triples == [OUT_A, OUT_B]  # parsed as written; the scorer merges the two "Salt Ledger"s
    s = score_extractions(docs.gold, run.triples, RelationAgreement(None))
    assert s["relations"]["pair"] == {"precision": 0.6, "recall": 0.75, "f1": 0.6667}
    assert run.prompt_tokens > 0 and run.statuses == {"ok": 2}


def _write_benchmark(root: Path) -> Path:
    raw = root / "raw"
    raw.mkdir(parents=True)
    corpus = {"A": DOC_A, "B": DOC_B, "C": "Quifen is a city founded in 1200."}
    facts = {
        "A": [{**vars(f), "domain": "film"} for f in GOLD_A],
        "B": [{**vars(f), "domain": "film"} for f in GOLD_B],
        "C": [{**vars(GoldFact("Quifen", "founded_year", "1200", "attribute")), "domain": "general"}],
    }
    world = {
        "config": {"held_out_domains": ["film"]},
        "entities": [
            {"name": "A", "domain": "biomedical"},
            {"name": "B", "domain": "film"},
            {"name": "C", "domain": "general"},
        ],
        "phrasing": {"held_out_templates": ["stars/1"]},
    }
    for name, obj in (("dataset_corpus", corpus), ("facts", facts), ("world", world)):
        (raw / f"{name}.json").write_text(json.dumps(obj))
    return root


def test_document_filters(tmp_path: Path) -> None:
    root = _write_benchmark(tmp_path / "bench")
    assert load_documents(root).titles == ["A", "B"]  # C states no relation fact
    assert load_documents(root, held_out_domains=True).titles == ["B"]
    assert load_documents(root, held_out_templates=True).titles == ["B"]
    assert load_documents(root, seen_templates=True).titles == ["A"]
    with pytest.raises(ValueError, match="exclude each other"):
        load_documents(root, held_out_templates=True, seen_templates=True)
    assert len(load_documents(root, limit=1).titles) == 1
    assert load_documents(root, limit=1, seed=3).titles == load_documents(root, limit=1, seed=3).titles
    world = json.loads((root / "raw" / "world.json").read_text())
    world["config"]["held_out_domains"] = []
    world["phrasing"]["held_out_templates"] = []
    (root / "raw" / "world.json").write_text(json.dumps(world))
    with pytest.raises(ValueError, match="no held-out domains"):
        load_documents(root, held_out_domains=True)
    with pytest.raises(ValueError, match="no held-out templates"):
        load_documents(root, held_out_templates=True)
    (root / "raw" / "facts.json").unlink()
    with pytest.raises(ValueError, match=r"facts\.json"):
        load_documents(root)


def test_systems_config(tmp_path: Path) -> None:
    root = _write_benchmark(tmp_path / "bench")
    cfg = build_config(root)
    assert list(cfg.systems) == ["student", "base", "reference"]
    assert cfg.systems["student"].embedded.adapter_dirs  # the shipped student
    assert not cfg.systems["base"].embedded.adapter_dirs  # the base model, few-shot prompts
    assert cfg.systems["reference"].reference is not None
    assert cfg.systems["reference"].reference.world == root / "raw" / "world.json"
    student = tmp_path / "student.yaml"
    student.write_text("llm:\n  backend: embedded\n  embedded:\n    dtype: float32\n")
    cfg = build_config(
        root,
        overrides=["systems.fp32b.backend=embedded", "systems.fp32b.embedded.max_batch_size=4"],
        llm_configs=[f"student={student}"],
    )
    assert list(cfg.systems) == ["student", "base", "reference", "fp32b"]
    assert cfg.systems["student"].embedded.dtype == "float32"
    assert cfg.systems["fp32b"].embedded.max_batch_size == 4
    with pytest.raises(ConfigError, match="NAME=FILE"):
        build_config(root, llm_configs=["nofile"])
    with pytest.raises(ConfigError):
        build_config(root, overrides=["systems.bad.backend=nonsense"])
    with pytest.raises(ConfigError):
        build_config(root, overrides=["relation_cosine=2"])


def test_cli_runs_the_reference_on_a_generated_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import hoprag.embedding
    from hoprag_cli import main
    from synthetic import PhrasingConfig, SyntheticConfig, write_benchmark

    class FakeEmbedder:  # no MiniLM load in a unit test: equality decides agreement here
        def __init__(self, config: Any = None) -> None:
            self.encode = _fake_embed({})

    monkeypatch.setattr(hoprag.embedding, "SentenceTransformerEmbedder", FakeEmbedder)
    write_benchmark(
        SyntheticConfig(
            seed=3,
            num_documents=300,
            num_train_questions=30,
            num_test_questions=30,
            phrasing=PhrasingConfig(held_out_template_fraction=0.3),
        ),
        tmp_path / "bench",
    )
    args = ["bench", "extract", "--benchmark", str(tmp_path / "bench"), "--systems", "reference"]
    args += ["--held-out-templates", "--docs", "12", "--workdir", str(tmp_path / "work"), "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    ref = result["systems"]["reference"]
    assert result["documents"] == 12 and ref["documents"] == 12
    # The oracle states every relation fact each document states, pronoun sentences included.
    assert ref["relations"]["pair"]["recall"] == 1.0
    assert ref["relations"]["relation"]["recall"] == 1.0
    assert ref["relation_pair_recall_by"]["template"]["held_out"][1] > 0
    assert (tmp_path / "work" / "extract-bench.json").is_file()
    rows = (tmp_path / "work" / "extract-bench-documents.jsonl").read_text().splitlines()
    assert len(rows) == 12 and "reference" in json.loads(rows[0])["systems"]
    assert main([*args[:-1], "--systems", "nobody"]) == 2
    assert "unknown system" in capsys.readouterr().err
    assert main(["bench", "extract", "--benchmark", str(tmp_path / "bench"), "--held-out-domains"]) == 2
    assert "no held-out domains" in capsys.readouterr().err
