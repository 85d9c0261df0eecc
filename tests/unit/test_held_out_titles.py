"""No student is taught from held-out paragraphs (distillation/held_out.py): held-out real questions
are measured over the 2Wiki corpus file's first 3,000 entries, so none of their paragraphs may enter
a student's training data, from the corpus being distilled or from a gold source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distillation.config import DistillConfig, GoldSource, HeldOutTitles
from distillation.gold import GoldReport, gold_paragraphs
from distillation.held_out import HeldOutTitlesError, held_out_titles, teachable_documents
from hoprag.config import load_config
from indexing.corpus import Document

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "benchmarks" / "data" / "real" / "2wikimultihopqa" / "2wikimultihopqa_corpus.json"
# the distill recipes that read a real benchmark file (the others read generated corpora only)
REAL_RECIPES = sorted(
    p for p in (ROOT / "distillation" / "configs").glob("*.yaml") if "benchmarks/data/real/" in p.read_text()
)


def _corpus(tmp_path: Path, titles: list[str], jsonl: bool = False) -> Path:
    rows = [{"title": t, "text": f"{t} is a paragraph."} for t in titles]
    path = tmp_path / ("corpus.jsonl" if jsonl else "corpus.json")
    path.write_text("\n".join(map(json.dumps, rows)) if jsonl else json.dumps(rows))
    return path


@pytest.mark.parametrize("jsonl", [False, True])
def test_the_first_entries_of_a_json_or_jsonl_corpus_are_held_out(tmp_path: Path, jsonl: bool):
    path = _corpus(tmp_path, ["A", "B", "C", "D"], jsonl)
    assert held_out_titles([HeldOutTitles(path=path, first=2)]) == {"A", "B"}
    assert held_out_titles([HeldOutTitles(path=path, first=10)]) == {"A", "B", "C", "D"}
    assert held_out_titles([]) == frozenset()


def test_documents_with_a_held_out_title_are_not_teachable_and_the_rest_keep_their_order(tmp_path: Path):
    spec = HeldOutTitles(path=_corpus(tmp_path, ["A", "B", "C"]), first=2)
    documents = [Document("C", "c"), Document("B", "b"), Document("E", "e"), Document("A", "a")]
    assert [d.title for d in teachable_documents(documents, [spec])] == ["C", "E"]
    test_question = {"id": "t", "question": "?", "supporting_facts": ["E"]}
    assert [d.title for d in teachable_documents(documents, [spec], [test_question])] == ["C"]
    assert teachable_documents(documents, []) == documents


def test_a_file_that_is_not_a_titled_corpus_is_a_clear_error(tmp_path: Path):
    with pytest.raises(HeldOutTitlesError, match="is not a file"):
        held_out_titles([HeldOutTitles(path=tmp_path / "missing.json", first=1)])
    (tmp_path / "bad.json").write_text("{not json\n[neither")
    with pytest.raises(HeldOutTitlesError, match="neither JSON nor JSONL"):
        held_out_titles([HeldOutTitles(path=tmp_path / "bad.json", first=1)])
    (tmp_path / "object.json").write_text('{"title": "A"}')
    with pytest.raises(HeldOutTitlesError, match="no list of entries"):
        held_out_titles([HeldOutTitles(path=tmp_path / "object.json", first=1)])
    (tmp_path / "untitled.json").write_text('[{"title": "A"}, {"text": "no title"}]')
    with pytest.raises(HeldOutTitlesError, match=r"entry 2 .* no string 'title'"):
        held_out_titles([HeldOutTitles(path=tmp_path / "untitled.json", first=2)])
    assert held_out_titles([HeldOutTitles(path=tmp_path / "untitled.json", first=1)]) == {"A"}


def test_a_gold_sources_held_out_paragraph_is_neither_taught_nor_a_distractor(tmp_path: Path):
    """The 2Wiki release (HippoRAG 2's corpus and its dev questions) read as a gold source: every
    paragraph of the corpus' first 3,000 entries is gone from the taught paragraphs and the
    distractor pool, and the rest of the corpus is still there."""
    source = GoldSource(path=str(CORPUS.parent), format="hipporag", train_fraction=0.5)
    held = held_out_titles([HeldOutTitles(path=CORPUS, first=3000)])
    assert len(held) == 3000
    free = gold_paragraphs([source], GoldReport())
    guarded = gold_paragraphs([source], GoldReport(), held)
    free_titles = {d.title for d in [*free.documents, *free.distractor_pool]}
    guarded_titles = {d.title for d in [*guarded.documents, *guarded.distractor_pool]}
    assert free_titles & held  # without the guard the corpus' leading paragraphs would be shown
    assert not guarded_titles & held
    assert guarded_titles == free_titles - held


@pytest.mark.parametrize("recipe", REAL_RECIPES, ids=lambda p: p.name)
def test_every_recipe_that_reads_2wiki_holds_out_the_corpus_first_3000_titles(
    recipe: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(ROOT)
    config = load_config(DistillConfig, recipe, [])
    specs = [(Path(s.path).resolve(), s.first) for s in config.held_out_titles]
    assert (CORPUS, 3000) in specs
    held = held_out_titles(config.held_out_titles)
    report = GoldReport()
    paragraphs = gold_paragraphs(config.gold.sources, report, held)
    assert not {d.title for d in [*paragraphs.documents, *paragraphs.distractor_pool]} & held
