"""Reading corpora and benchmark questions: GFM-RAG raw directories, JSON, JSONL or Parquet.

GFM-RAG raw directories come in two spellings: ``raw/documents.json`` (GFM-RAG's current layout)
and ``raw/dataset_corpus.json`` (the older one); questions name their gold documents in
``supporting_documents`` (current) or ``supporting_facts`` (older; HotpotQA ``[title, sent_id]``
pairs too). Pre-built graphs (``processed/stage1``) are read by :mod:`indexing.gfmrag`.

Input problems never abort the read: undecodable bytes are replaced (and counted), empty
documents are kept but flagged, duplicate titles keep the first document and count the rest; every
row left out is reported with its place (:mod:`indexing.problems`). Files may be gzip / bzip2
compressed and start with a byte-order mark (:mod:`indexing.inputs`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoprag.text import clean_document_text, content_hash
from indexing.inputs import jsonl_items, logical_suffix, read_bytes
from indexing.problems import ReadReport, Where

SPLITS = ("train", "test")
# The document file of a GFM-RAG raw directory, current name first.
RAW_DOCUMENT_FILES = ("documents.json", "dataset_corpus.json")
_QUESTION_FIELDS = frozenset(
    {
        "id",
        "question",
        "answer",
        "answer_aliases",
        "supporting_facts",
        "supporting_documents",
        "start_nodes",
        "target_nodes",
    }
)


class CorpusError(ValueError):
    """A corpus path that cannot be read at all (missing, wrong layout, invalid JSON)."""


@dataclass(frozen=True)
class Document:
    title: str
    text: str

    @property
    def content_hash(self) -> str:
        return content_hash(self.title, self.text)


@dataclass
class Corpus:
    documents: list[Document]
    questions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    problems: Counter[str] = field(default_factory=Counter)
    source: str = ""
    report: list[str] = field(default_factory=list)  # the read's report as text lines
    format: str = "gfmrag"  # the reader that read it (indexing.formats)
    read: ReadReport = field(default_factory=ReadReport)  # items, and each left out with its place


def _read_text(path: Path, problems: Counter[str]) -> str:
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        problems["non_utf8_file"] += 1
        return data.decode("utf-8", errors="replace")


def _load_json(path: Path, problems: Counter[str]) -> Any:
    try:
        return json.loads(_read_text(path, problems))
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path} is not valid JSON: {exc}") from exc


def _add(
    docs: dict[str, Document],
    title: Any,
    text: Any,
    problems: Counter[str],
    report: ReadReport,
    where: Where,
) -> None:
    """One ``{title, text}`` row (counted in ``report.items`` by the caller): a document, or a
    problem located at ``where``."""
    if isinstance(text, bytes) or (isinstance(text, str) and "\ufffd" in text):
        problems["non_utf8_text"] += 1
    if not isinstance(title, str | bytes | None) or not isinstance(text, str | bytes | None):
        problems["bad_row"] += 1
        report.problem(where, "row", "title and text must be strings")
        return
    title_s = clean_document_text(title or "").replace("\n", " ")
    text_s = clean_document_text(text or "")
    if not title_s:
        problems["missing_title"] += 1
        report.problem(where, "title", "missing or empty")
        return
    if title_s in docs:
        same = docs[title_s].text == text_s
        problems["duplicate_document" if same else "duplicate_title"] += 1
        kept = "the same document" if same else "another text"
        report.problem(where, "title", f"{title_s!r} again ({kept}; the first is kept)")
        return
    if not text_s:
        problems["empty_document"] += 1
    docs[title_s] = Document(title_s, text_s)
    report.documents += 1


def _add_row(
    docs: dict[str, Document], row: Any, problems: Counter[str], report: ReadReport, where: Where
) -> None:
    """One ``{title, text}`` row of a list or a JSONL file (counted by the caller)."""
    if isinstance(row, dict):
        _add(docs, row.get("title"), row.get("text"), problems, report, where)
        return
    problems["bad_row"] += 1
    report.problem(where, "row", "not a {title, text} object")


def _corpus_from_mapping(
    obj: Any,
    path: Path,
    docs: dict[str, Document],
    problems: Counter[str],
    report: ReadReport,
    file: str = "",
) -> None:
    if isinstance(obj, dict):
        report.items += len(obj)
        for index, (title, text) in enumerate(obj.items()):
            _add(docs, title, text, problems, report, Where("entry", index, file))
    elif isinstance(obj, list):
        report.items += len(obj)
        for index, row in enumerate(obj):
            _add_row(docs, row, problems, report, Where("item", index, file))
    else:
        raise CorpusError(f"{path}: expected a {{title: text}} object or a list of {{title, text}} rows")


def _jsonl_rows(path: Path, docs: dict[str, Document], problems: Counter[str], report: ReadReport) -> None:
    """A JSONL corpus, streamed line by line (the file is never read whole)."""
    before_bad, before_undecodable = report.bad_lines, report.undecodable_lines
    for where, row in jsonl_items(path, report):
        _add_row(docs, row, problems, report, where)
    if report.bad_lines > before_bad:
        problems["bad_jsonl_line"] += report.bad_lines - before_bad
    if report.undecodable_lines > before_undecodable:
        problems["non_utf8_file"] += 1


def read_corpus(path: str | Path) -> Corpus:
    """Read documents (and, for raw directories, ``train``/``test`` questions) from ``path``.

    Accepted: a GFM-RAG raw directory, ``DIR/raw/documents.json`` or ``DIR/raw/dataset_corpus.json``
    (or either file directly in ``DIR``), with optional ``train.json``/``test.json`` beside it; a
    ``.json`` file (``{title: text}`` or rows); a ``.jsonl`` file of ``{title, text}`` rows; a
    ``.parquet`` file with ``title`` and ``text`` columns. JSON and JSONL files may be ``.gz`` /
    ``.bz2`` compressed.
    """
    p = Path(path)
    problems: Counter[str] = Counter()
    report = ReadReport()
    docs: dict[str, Document] = {}
    questions: dict[str, list[dict[str, Any]]] = {}
    if not p.exists():
        raise CorpusError(f"corpus {p} does not exist")
    suffix = logical_suffix(p)
    if p.is_dir():
        corpus_file = raw_document_file(p)
        raw = corpus_file.parent
        _corpus_from_mapping(
            _load_json(corpus_file, problems), corpus_file, docs, problems, report, corpus_file.name
        )
        for split in SPLITS:
            qfile = raw / f"{split}.json"
            if qfile.is_file():
                questions[split] = read_questions(qfile, problems, report)
    elif suffix == ".jsonl":
        _jsonl_rows(p, docs, problems, report)
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(p)
        missing = {"title", "text"} - set(table.column_names)
        if missing:
            raise CorpusError(f"{p}: missing column(s) {sorted(missing)}")
        report.items += table.num_rows
        for index, (title, text) in enumerate(
            zip(table.column("title").to_pylist(), table.column("text").to_pylist(), strict=True)
        ):
            _add(docs, title, text, problems, report, Where("row", index))
    elif suffix == ".json" and p.is_file():
        _corpus_from_mapping(_load_json(p, problems), p, docs, problems, report)
    else:
        raise CorpusError(
            f"{p}: unsupported corpus format (use a raw directory, .json, .jsonl or .parquet, "
            "optionally .gz / .bz2 compressed)"
        )
    report.questions = sum(len(q) for q in questions.values())
    lines = report.lines() if report.problems else []
    return Corpus(list(docs.values()), questions, problems, str(p), report=lines, read=report)


def raw_document_file(directory: Path) -> Path:
    """The document file of a GFM-RAG raw directory: ``raw/documents.json`` (current layout) or
    ``raw/dataset_corpus.json`` (older), looked for under ``directory/raw`` first, then in
    ``directory`` itself. A :class:`CorpusError` when there is neither."""
    for raw in (directory / "raw", directory):
        for name in RAW_DOCUMENT_FILES:
            if (raw / name).is_file():
                return raw / name
    hint = ""
    if (directory / "processed" / "stage1" / "nodes.csv").is_file():
        hint = f"; it has a pre-built graph: hoprag index --graph {directory / 'processed' / 'stage1'}"
    raise CorpusError(
        f"{directory}: neither raw/documents.json nor raw/dataset_corpus.json (GFM-RAG raw layout) found{hint}"
    )


def _titles(value: Any) -> list[str]:
    """Document titles from a supporting-documents field: plain titles, or HotpotQA-style
    ``[title, sentence_id]`` pairs (first element), deduplicated in order."""
    if not isinstance(value, list):
        return []
    titles = [f[0] if isinstance(f, list | tuple) and f else f for f in value]
    return list(dict.fromkeys(str(t) for t in titles if t not in (None, "")))


def _nodes_by_type(value: Any) -> dict[str, list[str]] | None:
    """GFM-RAG's ``start_nodes`` / ``target_nodes``: ``{node type: [node name, ...]}`` (a bare list
    is read as entities); ``None`` when absent or unreadable."""
    if isinstance(value, list):
        value = {"entity": value}
    if not isinstance(value, dict):
        return None
    return {
        str(kind): [str(n) for n in names if n not in (None, "")]
        for kind, names in value.items()
        if isinstance(names, list)
    }


def read_questions(
    path: Path, problems: Counter[str] | None = None, report: ReadReport | None = None
) -> list[dict[str, Any]]:
    """Questions in GFM-RAG form: ``[{id, question, answer, answer_aliases?, supporting_documents}]``.

    Gold documents come from ``supporting_documents`` (GFM-RAG's current field), else
    ``supporting_facts`` (older; titles or HotpotQA ``[title, sent_id]`` pairs), else the document
    part of ``target_nodes`` (processed stage1 questions). ``start_nodes`` (processed stage1
    questions: ``{node type: [names]}``) is kept, as ``start_nodes``, for use as question seeds.
    A gold search plan (``plan``: a list of ``{step, answer, ref}``, as ``hoprag generate`` writes it)
    is kept as ``plan``. Other scalar fields are kept in ``metadata``.
    """
    problems = problems if problems is not None else Counter()
    report = report if report is not None else ReadReport()
    rows = _load_json(path, problems)
    if not isinstance(rows, list):
        raise CorpusError(f"{path}: expected a list of questions")
    out = []
    for i, row in enumerate(rows):
        report.items += 1
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("question"), str)
            or not row["question"].strip()
        ):
            problems["bad_question"] += 1
            report.problem(Where("item", i, path.name), "question", "missing or empty")
            continue
        start_nodes = _nodes_by_type(row.get("start_nodes"))
        target_nodes = _nodes_by_type(row.get("target_nodes")) or {}
        if row.get("supporting_documents") is not None:
            titles = _titles(row["supporting_documents"])
        elif row.get("supporting_facts") is not None:
            titles = _titles(row["supporting_facts"])
        else:
            titles = _titles(target_nodes.get("document"))
        question: dict[str, Any] = {
            "id": str(row.get("id", f"{path.stem}-{i}")),
            "question": row["question"].strip(),
            "answer": str(row.get("answer", "")),
            "answer_aliases": [str(a) for a in row.get("answer_aliases") or []],
            "supporting_facts": titles,
            # Scalar extras (type, hops, domain, ...) are kept so evaluation can group by them.
            "metadata": {
                k: v
                for k, v in row.items()
                if k not in _QUESTION_FIELDS and isinstance(v, str | int | float | bool)
            },
        }
        if start_nodes is not None:
            question["start_nodes"] = start_nodes
        if isinstance(row.get("plan"), list):
            question["plan"] = row["plan"]  # a gold search plan, for `hoprag distill`'s planner tasks
            # the same steps as a decomposition: what `step_recall` scores a planner's steps against
            question["metadata"]["decomposition"] = [
                {"question": str(s.get("step", "")), "answer": str(s.get("answer", ""))}
                for s in row["plan"]
                if isinstance(s, dict)
            ]
        out.append(question)
    return out
