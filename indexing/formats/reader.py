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
from indexing.formats.model import ParagraphPool, ReadReport, item_id
from indexing.formats.musique import read_musique_item
from indexing.inputs import head_text, logical_suffix

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
    if p.is_file() and logical_suffix(p) in (".json", ".jsonl"):
        found = _item_format(first_item(p))
        if found is not None:
            return found
    return "gfmrag"


def describe(path: Path) -> str:
    """What a file looks like, in a few words (for an error that says the file is not what it was
    taken for)."""
    if path.is_dir():
        return "a directory"
    if logical_suffix(path) not in (".json", ".jsonl"):
        return f"a {path.suffix or 'suffix-less'} file"
    head = head_text(path, 64)
    layout = "JSONL" if logical_suffix(path) == ".jsonl" else "JSON"
    if layout == "JSON" and head[:1] == "{":
        return "a JSON object (a {title: text} corpus)"
    item = first_item(path)
    if item is None:
        return f"{layout} with no readable item"
    if not isinstance(item, dict):
        return f"{layout} whose first item is a {type(item).__name__}, not an object"
    fields = ", ".join(sorted(item)[:8]) + (", ..." if len(item) > 8 else "")
    guess = _item_format(item)
    return f"{layout} whose first item has the fields {{{fields}}}" + (f" (a {guess} item)" if guess else "")


# The families a forced --format may be given for a detected one: the HotpotQA reader reads 2Wiki.
_SAME_READER = {"hotpotqa": "hotpot", "2wikimultihopqa": "hotpot"}


def _check_forced(p: Path, fmt: str, detected: str) -> None:
    """A ``--format`` that does not match what the file is: an error naming what it looks like."""
    if _SAME_READER.get(fmt, fmt) == _SAME_READER.get(detected, detected):
        return
    if fmt == "hipporag":
        return  # read_published says what a HippoRAG 2 release needs
    if detected == "gfmrag" and p.is_file():
        raise CorpusError(f"{p} is not a {fmt} file: it is {describe(p)}. {VALID_ITEMS[fmt]}")
    if detected != "gfmrag":
        raise CorpusError(
            f"{p} looks like {detected}, not {fmt}: it is {describe(p) if p.is_file() else 'a HippoRAG 2 release'}"
            f" (--format {detected}, or auto, reads it)"
        )


VALID_ITEMS = {
    "gfmrag": 'A valid gfmrag corpus holds {title, text} rows: JSONL lines like {"title": "Alan Turing", '
    '"text": "Alan Turing was an English mathematician."}, a JSON list of them, a {"Alan Turing": "..."} '
    "object, a Parquet table with title and text columns, or a GFM-RAG raw directory.",
    "hotpotqa": 'A valid hotpotqa item: {"_id": "5a8b...", "question": "...?", "answer": "...", '
    '"supporting_facts": [["Title", 0]], "context": [["Title", ["First sentence.", "Second."]]]} '
    "(a JSON list of them).",
    "2wikimultihopqa": 'A valid 2wikimultihopqa item: {"_id": "...", "question": "...?", "answer": "...", '
    '"supporting_facts": [["Title", 0]], "context": [["Title", ["First sentence."]]], "evidences": '
    '[["Subject", "relation", "Object"]]} (a JSON list of them).',
    "musique": 'A valid musique item (one per JSONL line): {"id": "2hop__1_2", "question": "...?", '
    '"answer": "...", "paragraphs": [{"idx": 0, "title": "Title", "paragraph_text": "...", '
    '"is_supporting": true}]}.',
    "hipporag": "A valid HippoRAG 2 release: NAME_corpus.json ([{title, text}]) beside NAME.json (items with "
    "question, answer and supporting_facts naming corpus titles).",
}


class NothingToIndexError(CorpusError):
    """An input that holds no document (or, for a benchmark format, no question) to index; ``read``
    says what was read and what was left out, where."""

    def __init__(self, message: str, read: ReadReport, fmt: str, documents: int, questions: int) -> None:
        super().__init__(message)
        self.read = read
        self.format = fmt
        self.documents = documents
        self.questions = questions


def _nothing_read(
    p: Path, fmt: str, chosen: str, what: str, report: ReadReport, counts: Counter[str], documents: int = 0
) -> NothingToIndexError:
    """The one message of an input that yields no document (or, for a benchmark format, no
    question): the format and how it was chosen, the formats tried, the top problems, a valid item."""
    how = "forced by --format" if fmt != "auto" else "detected"
    tried = (
        ""
        if fmt != "auto"
        else "; tried: hipporag (NAME_corpus.json beside NAME.json), musique (question + "
        "paragraphs), hotpotqa / 2wikimultihopqa (question + context + supporting_facts), else gfmrag"
    )
    items = f"{report.items} item" + ("" if report.items == 1 else "s")
    lines = [f"{p}: no {what} to index in {items}, read as {chosen} ({how}{tried})."]
    top = counts.most_common(5)
    if top:
        lines.append("problems: " + "; ".join(f"{n} x {kind}" for kind, n in top))
    if report.problems:
        lines.append("first: " + "; ".join(str(x) for x in report.problems[:3]))
    lines.append(VALID_ITEMS[chosen])
    return NothingToIndexError("\n".join(lines), report, chosen, documents, report.questions)


def read_published(path: str | Path, fmt: CorpusFormat = "auto", train_fraction: float = 0.0) -> Corpus:
    """Documents and questions from a published benchmark file (or any corpus, with ``gfmrag`` /
    ``auto``): the questions are ``test``, or with ``train_fraction`` split by
    :func:`train_test_split`. A malformed item is left out whole (neither its paragraphs nor its
    question are read), as is a second item with an id already read; the corpus's ``read`` says
    which, where and why. A :class:`CorpusError` when the input yields no document or, for a
    benchmark format, no question, or when ``fmt`` is not what the file is."""
    if not 0.0 <= train_fraction < 1.0:
        raise CorpusError(f"train fraction {train_fraction} is not in [0, 1)")
    p = Path(path)
    detected = detect_format(p)
    if fmt != "auto":
        _check_forced(p, fmt, detected)
    chosen = detected if fmt == "auto" else fmt
    if chosen == "gfmrag":
        if train_fraction:
            raise CorpusError(
                "a train fraction splits a published benchmark's questions; this corpus is gfmrag"
            )
        corpus = read_corpus(p)
        if not corpus.documents:
            raise _nothing_read(p, fmt, chosen, "document", corpus.read, corpus.problems)
        return corpus
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
    questions = _read_questions(question_file, chosen, pool, report)
    documents = [Document(title, text) for title, text in pool.documents.items()]
    if not questions or not documents:
        raise _nothing_read(
            p, fmt, chosen, "question" if not questions else "document", report, report.counts
        )
    report.questions = len(questions)
    problems: Counter[str] = Counter({f"item_problem: {kind}": n for kind, n in report.counts.items()})
    empty = sum(1 for d in documents if not d.text)
    if empty:
        problems["empty_document"] += empty
    split = train_test_split(questions, train_fraction)
    lines = report.lines()
    if train_fraction:
        lines.append(f"questions split by id: {len(split.get('train', []))} train, {len(split['test'])} test")
    return Corpus(documents, split, problems, str(p), report=lines, format=chosen, read=report)


def _read_questions(path: Path, chosen: str, pool: ParagraphPool, report: ReadReport) -> list[dict[str, Any]]:
    """Every valid item of ``path`` as a question, its paragraphs pooled; the first of an id kept."""
    questions: list[dict[str, Any]] = []
    seen: set[str] = set()
    for where, item in iter_items(path, report, name_file=chosen == "hipporag"):
        musique = chosen == "musique" or (chosen == "hipporag" and _item_format(item) == "musique")
        pending = (read_musique_item if musique else read_hotpot_item)(item, where, pool, report)
        if pending is None:
            continue
        qid = item_id(item)
        if qid is not None:
            if qid in seen:
                report.duplicates += 1
                report.problem(where, "id", "an earlier item has this id (the first is kept)", item_id=qid)
                continue
            seen.add(qid)
        questions.append(pending(pool))
    return questions


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
    for where, row in iter_items(corpus_file, report, name_file=True):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("title"), str)
            or not isinstance(row.get("text"), str)
        ):
            report.problem(where, "corpus", "not a {title, text} object")
            continue
        pool.add(row["title"], row["text"])
        report.documents += 1
