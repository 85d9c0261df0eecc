"""Choosing a reader: ``--format`` or detection, then one pass over the question items.

Formats (``FORMATS``):

* ``hotpotqa`` / ``2wikimultihopqa``: a JSON list of items with ``context``
  (:mod:`indexing.formats.hotpotqa`);
* ``musique``: JSONL (or a JSON list) of items with ``paragraphs`` (:mod:`indexing.formats.musique`);
* ``hipporag``: HippoRAG 2's release, ``NAME_corpus.json`` (``[{title, text}]``) beside ``NAME.json``
  (the dataset's own items, usually without ``context``); the path is the directory (one NAME in it)
  or either file;
* ``gfmrag``: hoprag's native inputs (:func:`indexing.corpus.read_corpus`).

``auto`` picks a published format when the layout says so unambiguously and ``gfmrag`` otherwise.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from indexing.corpus import Corpus, CorpusError, Document, read_corpus
from indexing.formats.hotpotqa import read_hotpot_item
from indexing.formats.items import first_item, iter_items
from indexing.formats.model import ParagraphPool, ReadReport
from indexing.formats.musique import read_musique_item

CorpusFormat = Literal["auto", "gfmrag", "hotpotqa", "2wikimultihopqa", "musique", "hipporag"]
FORMATS: tuple[str, ...] = ("auto", "gfmrag", "hotpotqa", "2wikimultihopqa", "musique", "hipporag")
_CORPUS_SUFFIX = "_corpus.json"


def _hipporag_files(path: Path) -> tuple[Path, Path] | None:
    """(corpus file, question file) of a HippoRAG 2 release at ``path``, or ``None``."""
    if path.is_dir():
        pairs = [
            (c, c.with_name(c.name[: -len(_CORPUS_SUFFIX)] + ".json"))
            for c in sorted(path.glob(f"*{_CORPUS_SUFFIX}"))
        ]
        pairs = [(c, q) for c, q in pairs if q.is_file()]
        if len(pairs) > 1:
            names = ", ".join(q.stem for _, q in pairs)
            raise CorpusError(f"{path} holds several HippoRAG 2 datasets ({names}): pass one NAME.json")
        return pairs[0] if pairs else None
    if path.name.endswith(_CORPUS_SUFFIX):
        questions = path.with_name(path.name[: -len(_CORPUS_SUFFIX)] + ".json")
        return (path, questions) if questions.is_file() else None
    corpus = path.with_name(path.stem + _CORPUS_SUFFIX)
    return (corpus, path) if path.suffix == ".json" and corpus.is_file() else None


def _item_format(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    if "paragraphs" in item and "question" in item:
        return "musique"
    if "context" in item and "supporting_facts" in item:
        return "2wikimultihopqa" if "evidences" in item else "hotpotqa"
    return None


def detect_format(path: str | Path) -> str:
    """The format of ``path`` (never ``auto``): a published one when its layout is unambiguous,
    else ``gfmrag``."""
    p = Path(path)
    if not p.exists():
        raise CorpusError(f"corpus {p} does not exist")
    if _hipporag_files(p) is not None:
        return "hipporag"
    if p.is_file() and p.suffix in (".json", ".jsonl"):
        found = _item_format(first_item(p))
        if found is not None:
            return found
    return "gfmrag"


def read_published(path: str | Path, fmt: CorpusFormat = "auto", train_fraction: float = 0.0) -> Corpus:
    """Documents and questions from a published benchmark file (or any corpus, with ``gfmrag`` /
    ``auto``): the questions are ``test``, or with ``train_fraction`` split by
    :func:`train_test_split`. Malformed items are skipped or read in part, never fatal; the corpus's
    ``report`` says which and why."""
    if not 0.0 <= train_fraction < 1.0:
        raise CorpusError(f"train fraction {train_fraction} is not in [0, 1)")
    p = Path(path)
    chosen = detect_format(p) if fmt == "auto" else fmt
    if chosen == "gfmrag":
        if train_fraction:
            raise CorpusError(
                "a train fraction splits a published benchmark's questions; this corpus is gfmrag"
            )
        return read_corpus(p)
    if not p.exists():
        raise CorpusError(f"corpus {p} does not exist")
    pool = ParagraphPool()
    report = ReadReport()
    if chosen == "hipporag":
        files = _hipporag_files(p)
        if files is None:
            raise CorpusError(
                f"{p}: not a HippoRAG 2 release (NAME{_CORPUS_SUFFIX} beside NAME.json, or a directory with one pair)"
            )
        corpus_file, question_file = files
        _pool_corpus_file(corpus_file, pool, report)
    else:
        question_file = p
        if p.is_dir():
            raise CorpusError(f"{p} is a directory: pass the {chosen} question file")
    questions = []
    for index, item in iter_items(question_file, report):
        report.items += 1
        reader = (
            read_musique_item if _item_format(item) == "musique" or chosen == "musique" else read_hotpot_item
        )
        question = reader(item, index, pool, report)
        if question is not None:
            questions.append(question)
    report.questions = len(questions)
    problems: Counter[str] = Counter({f"item_problem: {kind}": n for kind, n in report.counts.items()})
    documents = [Document(title, text) for title, text in pool.documents.items()]
    empty = sum(1 for d in documents if not d.text)
    if empty:
        problems["empty_document"] += empty
    split = train_test_split(questions, train_fraction)
    lines = report.lines()
    if train_fraction:
        lines.append(f"questions split by id: {len(split.get('train', []))} train, {len(split['test'])} test")
    return Corpus(documents, split, problems, str(p), report=lines, format=chosen)


def train_test_split(
    questions: list[dict[str, Any]], train_fraction: float
) -> dict[str, list[dict[str, Any]]]:
    """``{"train": ..., "test": ...}``: a question is ``train`` when the hash of its id falls below
    ``train_fraction``, so its split never depends on which other questions are read (an ``--add``
    of more questions, a reordered file); ``test`` only when ``train_fraction`` is 0."""
    if not train_fraction:
        return {"test": questions}
    out: dict[str, list[dict[str, Any]]] = {"train": [], "test": []}
    for question in questions:
        digest = hashlib.sha256(str(question["id"]).encode()).digest()
        position = int.from_bytes(digest[:8], "big") / 2**64
        out["train" if position < train_fraction else "test"].append(question)
    return out


def _pool_corpus_file(corpus_file: Path, pool: ParagraphPool, report: ReadReport) -> None:
    """HippoRAG 2's ``NAME_corpus.json``: a list of ``{title, text}``."""
    for index, row in iter_items(corpus_file, report):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("title"), str)
            or not isinstance(row.get("text"), str)
        ):
            report.problem(index, "corpus", f"{corpus_file.name} entry is not {{title, text}}", skipped=False)
            continue
        pool.add(row["title"], row["text"])
