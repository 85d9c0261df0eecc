"""GFM-RAG's dataset layout: reading a pre-built stage1 graph, and writing an index back out.

The layout (GFM-RAG ``docs/workflow/data_format.md``)::

    DATA/
      raw/documents.json                {title: text} (older datasets: raw/dataset_corpus.json)
      raw/train.json, raw/test.json     [{id, question, answer, answer_aliases?, supporting_documents?, ...}]
      processed/stage1/nodes.csv        name,type,attributes   (type: entity, document, summary, ...)
      processed/stage1/relations.csv    name,attributes
      processed/stage1/edges.csv        source,relation,target,attributes
      processed/stage1/train.json, test.json   the raw fields plus start_nodes / target_nodes
                                        ({node type: [node name, ...]})

``attributes`` is a JSON object (GFM-RAG itself writes Python dict literals; both are read). A
``uid`` column in nodes.csv / relations.csv, when present, identifies rows instead of ``name``
(edges and question nodes then refer to uids).

How a stage1 graph maps onto a KG index (:func:`read_stage1`):

- ``entity`` nodes are KG entities (names normalized as for extracted ones), ``document`` nodes
  are documents (text from ``raw/documents.json`` beside ``processed/``, else the node's
  ``content`` attribute); nodes of other types (GFM-RAG's ``summary``) and their edges are skipped
  and counted.
- An entity→entity edge is a triple; an ``equivalent`` edge is a synonym edge. An edge between an
  entity and a document (either direction, any relation; GFM-RAG uses ``is_mentioned_in``) links
  the two. A triple's provenance is its ``documents`` attribute (a list of titles, as
  :func:`export_gfm_rag` writes) when present, else the documents linked to both its head and its
  tail; a triple with neither is kept without provenance.
- Questions come from ``processed/stage1/{train,test}.json``, else ``raw/{train,test}.json``;
  ``start_nodes`` seed them (:func:`indexing.questions.link_questions`).

Malformed files (a missing column, a duplicate node, unreadable attributes, an edge to an unknown
node or relation) are a :class:`~indexing.corpus.CorpusError` naming the file and line.
"""

from __future__ import annotations

import ast
import csv
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoprag.kg.tables import EQUIVALENT, KIND_EQUIVALENT
from hoprag.text import clean_document_text, normalize_entity
from indexing.corpus import SPLITS, CorpusError, Document, raw_document_file, read_corpus, read_questions

if TYPE_CHECKING:
    from hoprag.kg.index import KGIndex

GFM_RAG_STAGE1 = "gfm-rag-stage1"
NODES, RELATIONS, EDGES = "nodes.csv", "relations.csv", "edges.csv"
ENTITY, DOCUMENT = "entity", "document"
# The relation of entity → document edges (GFM-RAG's name for it).
MENTIONED_IN = "is_mentioned_in"
# Edge attribute: titles of the documents stating the triple (written by export_gfm_rag).
PROVENANCE = "documents"
# Entity node attribute: the spelling shown for the entity (written by export_gfm_rag).
SURFACE = "surface"
_CSV_FIELD_LIMIT = 2**31 - 1  # document contents in nodes.csv exceed csv's 128 KiB default


@dataclass
class Stage1Graph:
    """A stage1 graph in the shape the index builder takes (see the module docstring)."""

    path: Path
    documents: list[Document]
    doc_triples: list[list[tuple[str, str, str]]]
    doc_entities: list[list[str]]
    unattributed_triples: list[tuple[str, str, str]] = field(default_factory=list)
    equivalent_pairs: set[tuple[str, str]] = field(default_factory=set)
    questions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    problems: Counter[str] = field(default_factory=Counter)


def find_stage1_dir(path: str | Path) -> Path:
    """The directory holding ``nodes.csv``: ``path`` itself, ``path/stage1`` or
    ``path/processed/stage1`` (so a dataset directory works too)."""
    p = Path(path)
    for candidate in (p, p / "stage1", p / "processed" / "stage1"):
        if (candidate / NODES).is_file():
            return candidate
    if not p.exists():
        raise CorpusError(f"graph directory {p} does not exist")
    raise CorpusError(
        f"{p}: no {NODES} (GFM-RAG pre-built layout: DATA/processed/stage1/{{{NODES},{RELATIONS},{EDGES}}})"
    )


@contextmanager
def _csv_rows(
    path: Path, required: tuple[str, ...]
) -> Iterator[tuple[list[str], Iterator[tuple[int, dict[str, str]]]]]:
    """``(header, rows)`` of a CSV file, each row with its line number; a missing file or column,
    or a row with the wrong number of fields, is a :class:`CorpusError` naming file and line."""
    if not path.is_file():
        raise CorpusError(f"{path} does not exist (a stage1 graph needs {NODES}, {RELATIONS} and {EDGES})")
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:  # -sig: a BOM is no header
        reader = csv.DictReader(fh)
        header = [h.strip() for h in reader.fieldnames or []]
        reader.fieldnames = header
        missing = [c for c in required if c not in header]
        if missing:
            raise CorpusError(
                f"{path}:1: missing column(s) {', '.join(missing)} (header: {','.join(header) or 'empty'}; "
                f"{path.name} needs {','.join(required)})"
            )

        def rows() -> Iterator[tuple[int, dict[str, str]]]:
            try:
                for row in reader:
                    if None in row or any(v is None for v in row.values()):
                        raise CorpusError(
                            f"{path}:{reader.line_num}: {len(header)} fields expected (header: {','.join(header)})"
                        )
                    yield reader.line_num, row
            except csv.Error as exc:
                raise CorpusError(f"{path}:{reader.line_num}: unreadable CSV: {exc}") from exc

        yield header, rows()


def parse_attributes(text: str, where: str) -> dict[str, Any]:
    """An ``attributes`` cell: a JSON object or a Python dict literal (GFM-RAG writes the latter);
    empty means no attributes."""
    text = text.strip()
    if text in ("", "{}"):
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise CorpusError(
                f"{where}: attributes {text[:80]!r} are neither JSON nor a Python literal"
            ) from None
    if not isinstance(value, dict):
        raise CorpusError(f"{where}: attributes must be an object, not {type(value).__name__}")
    return value


def _title(name: str) -> str:
    """A document node's name as a document title (the cleaning read_corpus applies to titles)."""
    return clean_document_text(name).replace("\n", " ")


def _key_column(path: Path, header: list[str]) -> str:
    """The column that keys a node or relation: ``uid`` where the file has one, else ``name``."""
    key = "uid" if "uid" in header else "name"
    if key not in header:
        raise CorpusError(f"{path}:1: missing column name (header: {','.join(header)})")
    return key


def _has_raw_documents(data_dir: Path) -> bool:
    try:
        raw_document_file(data_dir)
    except CorpusError:
        return False
    return True


def read_stage1(path: str | Path, synonym_edges: bool = True) -> Stage1Graph:
    """Read a GFM-RAG stage1 graph (and its questions) for :func:`indexing.pipeline.build_index_from_graph`.

    ``path`` is ``DATA/processed/stage1`` (or ``DATA``). ``synonym_edges``: read ``equivalent``
    edges as synonym edges (else they are ordinary triples).
    """
    stage1 = find_stage1_dir(path)
    resolved = stage1.resolve()
    # Raw documents and questions only in GFM-RAG's layout (DATA/raw beside DATA/processed/stage1):
    # a stage1 directory elsewhere must not pick up whatever corpus sits in its parent.
    data_dir = resolved.parent.parent if resolved.parent.name == "processed" else None
    problems: Counter[str] = Counter()
    norm = cache(normalize_entity)

    raw_docs: list[Document] = []
    raw_questions: dict[str, list[dict[str, Any]]] = {}
    if data_dir is not None and _has_raw_documents(data_dir):
        corpus = read_corpus(data_dir)
        raw_docs, raw_questions = corpus.documents, corpus.questions
        problems.update(corpus.problems)

    # nodes.csv: key (uid, else name) → (type, entity spelling or document title)
    nodes_path = stage1 / NODES
    nodes: dict[str, tuple[str, str]] = {}
    node_line: dict[str, int] = {}
    node_text: dict[str, str] = {}
    seen_entities: dict[str, str] = {}
    with _csv_rows(nodes_path, ("type",)) as (header, rows):
        key_col = _key_column(nodes_path, header)
        for line, row in rows:
            where = f"{nodes_path}:{line}"
            key = row[key_col]
            name = row.get("name", key)
            if not key.strip():
                raise CorpusError(f"{where}: empty node {key_col}")
            if key in nodes:
                raise CorpusError(
                    f"{where}: node {key!r} is already on line {node_line[key]} ({key_col} must be unique)"
                )
            node_line[key] = line
            kind = row["type"].strip()
            attrs = parse_attributes(row.get("attributes", ""), where)
            if kind == ENTITY:
                surface = attrs.get(SURFACE)
                spelling = surface if isinstance(surface, str) and norm(surface) == norm(name) else name
                normalized = norm(spelling)
                if not normalized:
                    problems["empty_entity_names"] += 1
                    nodes[key] = ("", name)
                    continue
                if seen_entities.setdefault(normalized, key) != key:
                    problems["merged_entity_nodes"] += 1
                nodes[key] = (ENTITY, spelling)
            elif kind == DOCUMENT:
                title = _title(name)
                nodes[key] = (DOCUMENT, title)
                content = attrs.get("content", attrs.get("text"))
                if isinstance(content, str):
                    node_text[title] = content
            else:
                problems[f"skipped_{kind or 'untyped'}_nodes"] += 1
                nodes[key] = (kind, name)

    # Documents: the raw corpus (its order), then document nodes it lacks.
    docs: dict[str, Document] = {d.title: d for d in raw_docs}
    for kind, title in nodes.values():
        if kind != DOCUMENT or title in docs:
            continue
        if raw_docs:
            problems["document_nodes_not_in_raw_documents"] += 1
        if title not in node_text:
            problems["documents_without_text"] += 1
        docs[title] = Document(title, clean_document_text(node_text.get(title, "")))
    documents = list(docs.values())
    doc_index = {d.title: i for i, d in enumerate(documents)}

    relations_path = stage1 / RELATIONS
    relations: dict[str, str] = {}
    with _csv_rows(relations_path, ()) as (header, rows):
        rkey = _key_column(relations_path, header)
        for line, row in rows:
            where = f"{relations_path}:{line}"
            key = row[rkey]
            if not key.strip():
                raise CorpusError(f"{where}: empty relation {rkey}")
            if key in relations:
                raise CorpusError(f"{where}: relation {key!r} is listed twice ({rkey} must be unique)")
            parse_attributes(row.get("attributes", ""), where)
            relations[key] = row.get("name", key)

    doc_triples: list[list[tuple[str, str, str]]] = [[] for _ in documents]
    doc_entities: list[list[str]] = [[] for _ in documents]
    entity_docs: dict[str, set[int]] = defaultdict(set)
    to_infer: list[tuple[str, str, str]] = []
    unattributed: list[tuple[str, str, str]] = []
    pairs: set[tuple[str, str]] = set()
    edges_path = stage1 / EDGES
    with _csv_rows(edges_path, ("source", "relation", "target")) as (_, rows):
        for line, row in rows:
            where = f"{edges_path}:{line}"
            source, rel_key, target = row["source"], row["relation"], row["target"]
            for role, key in (("source", source), ("target", target)):
                if key not in nodes:
                    raise CorpusError(f"{where}: {role} {key!r} is not a node of {NODES}")
            if rel_key not in relations:
                raise CorpusError(f"{where}: relation {rel_key!r} is not in {RELATIONS}")
            attrs = parse_attributes(row.get("attributes", ""), where)
            (s_kind, s_val), (t_kind, t_val) = nodes[source], nodes[target]
            if s_kind == ENTITY and t_kind == ENTITY:
                relation = relations[rel_key]
                if synonym_edges and relation.strip().lower() == EQUIVALENT:
                    a, b = norm(s_val), norm(t_val)
                    if a != b:
                        pairs.add((a, b))
                    continue
                triple = (s_val, relation, t_val)
                stated = attrs.get(PROVENANCE)
                if not isinstance(stated, list):
                    to_infer.append(triple)
                    continue
                found = {
                    doc_index[t] for t in (_provenance_title(x, nodes) for x in stated) if t in doc_index
                }
                problems["unknown_provenance_documents"] += len(stated) - len(found)
                for d in sorted(found):
                    doc_triples[d].append(triple)
                if not found:
                    unattributed.append(triple)
            elif {s_kind, t_kind} == {ENTITY, DOCUMENT}:
                entity, title = (s_val, t_val) if s_kind == ENTITY else (t_val, s_val)
                d = doc_index[title]
                doc_entities[d].append(entity)
                entity_docs[norm(entity)].add(d)
            elif s_kind == DOCUMENT and t_kind == DOCUMENT:
                problems["document_document_edges"] += 1
            else:
                problems["edges_of_skipped_nodes"] += 1

    # Provenance not stated: the documents mentioning both ends.
    for triple in to_infer:
        both = entity_docs.get(norm(triple[0]), set()) & entity_docs.get(norm(triple[2]), set())
        for d in sorted(both):
            doc_triples[d].append(triple)
        if not both:
            unattributed.append(triple)
    if unattributed:
        problems["triples_without_documents"] += len(unattributed)

    questions: dict[str, list[dict[str, Any]]] = {}
    for split in SPLITS:
        qfile = stage1 / f"{split}.json"
        if qfile.is_file():
            questions[split] = read_questions(qfile, problems)
        elif split in raw_questions:
            questions[split] = raw_questions[split]
    for qs in questions.values():
        for q in qs:
            _resolve_question_nodes(q, nodes, doc_index)
    return Stage1Graph(
        path=stage1,
        documents=documents,
        doc_triples=doc_triples,
        doc_entities=doc_entities,
        unattributed_triples=unattributed,
        equivalent_pairs=pairs,
        questions=questions,
        problems=problems,
    )


def _provenance_title(value: Any, nodes: dict[str, tuple[str, str]]) -> str:
    """A provenance entry as a document title: a document node's key, else the title itself."""
    key = str(value)
    kind, title = nodes.get(key, ("", ""))
    return title if kind == DOCUMENT else _title(key)


def _resolve_question_nodes(
    question: dict[str, Any], nodes: dict[str, tuple[str, str]], doc_index: dict[str, int]
) -> None:
    """Node keys in a question (uids, when nodes.csv has them) as entity spellings and titles."""
    start = question.get("start_nodes")
    if start and start.get(ENTITY):
        start[ENTITY] = [nodes[n][1] if nodes.get(n, ("",))[0] == ENTITY else n for n in start[ENTITY]]
    question["supporting_facts"] = [
        nodes[t][1] if t not in doc_index and nodes.get(t, ("",))[0] == DOCUMENT else t
        for t in question.get("supporting_facts", [])
    ]


# -- export ----------------------------------------------------------------------------------


def _attributes_cell(attrs: dict[str, Any]) -> str:
    """JSON that GFM-RAG's Python-literal reader parses too (only strings and lists are written)."""
    return json.dumps(attrs, ensure_ascii=False) if attrs else "{}"


def _write_csv(path: Path, header: list[str], rows: Iterator[list[str]] | list[list[str]]) -> int:
    count = 0
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for row in rows:
            writer.writerow(row)
            count += 1
    return count


def _write_json(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def export_gfm_rag(index: KGIndex, out: str | Path) -> dict[str, Any]:
    """Write ``index`` in GFM-RAG's layout under ``out``; returns what was written (counts).

    ``raw/documents.json`` and ``raw/{split}.json`` (questions with ``supporting_documents`` and
    their metadata fields) are GFM-RAG's raw input; ``processed/stage1/`` holds the graph
    (entity and document nodes; triples, ``equivalent`` synonym edges and entity →
    ``is_mentioned_in`` → document edges) and the questions with ``start_nodes`` (the question's
    linked entities) and ``target_nodes`` (its supporting documents and their entities). Triples
    carry their provenance in a ``documents`` attribute, entities their shown spelling in
    ``surface``, documents their text in ``content`` (as GFM-RAG writes them), so
    ``hoprag index --graph`` rebuilds the same index. A document whose title equals an entity name
    gets a ``uid`` (nodes.csv then has a uid column) so node keys stay unique.
    """
    out = Path(out)
    raw, stage1 = out / "raw", out / "processed" / "stage1"
    raw.mkdir(parents=True, exist_ok=True)
    stage1.mkdir(parents=True, exist_ok=True)

    titles: list[str] = index.documents.column("title").to_pylist()
    texts: list[str] = index.documents.column("text").to_pylist()
    _write_json(raw / "documents.json", dict(zip(titles, texts, strict=True)))

    entity_names = index.entity_names
    taken = set(entity_names)
    doc_key: dict[str, str] = {}
    for title in titles:
        key = title
        if key in taken:
            key = f"document:{title}"
            while key in taken:
                key += "'"
        taken.add(key)
        doc_key[title] = key
    with_uid = any(doc_key[t] != t for t in titles)

    def node_rows() -> Iterator[list[str]]:
        for name, surface in zip(entity_names, index.entity_surface, strict=True):
            attrs = {SURFACE: surface} if surface and surface != name else {}
            yield ([name] if with_uid else []) + [name, ENTITY, _attributes_cell(attrs)]
        for title, text in zip(titles, texts, strict=True):
            yield ([doc_key[title]] if with_uid else []) + [
                title,
                DOCUMENT,
                _attributes_cell({"content": text}),
            ]

    num_nodes = _write_csv(
        stage1 / NODES, (["uid"] if with_uid else []) + ["name", "type", "attributes"], node_rows()
    )

    mention = MENTIONED_IN
    while mention in index.relation_names:
        mention += "_document"
    _write_csv(
        stage1 / RELATIONS, ["name", "attributes"], [[r, "{}"] for r in [*index.relation_names, mention]]
    )

    provenance = index.triple_doc_ids
    links = index.doc_entities

    def edge_rows() -> Iterator[list[str]]:
        for tid in range(index.num_triples):
            head, relation, tail = index.triple(tid)
            if index.kind[tid] == KIND_EQUIVALENT:
                attrs: dict[str, Any] = {}
            else:
                attrs = {PROVENANCE: [titles[d] for d in provenance[tid] or []]}
            yield [head, relation, tail, _attributes_cell(attrs)]
        for d, e in zip(
            links.column("doc_id").to_pylist(), links.column("entity_id").to_pylist(), strict=True
        ):
            yield [entity_names[e], mention, doc_key[titles[d]], "{}"]

    num_edges = _write_csv(stage1 / EDGES, ["source", "relation", "target", "attributes"], edge_rows())

    written: dict[str, Any] = {
        "documents": len(titles),
        "entities": len(entity_names),
        "relations": len(index.relation_names) + 1,
        "nodes": num_nodes,
        "edges": num_edges,
        "questions": {},
    }
    table = index.questions
    by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in table.to_pylist() if table is not None else []:
        by_split[row["split"]].append(row)
    for split, rows in sorted(by_split.items()):
        raw_rows, stage1_rows = [], []
        for row in rows:
            metadata = json.loads(row.get("metadata") or "{}")
            record = {
                "id": row["id"],
                "question": row["question"],
                "answer": row["answer"],
                "answer_aliases": row["answer_aliases"] or [],
                "supporting_documents": row.get("supporting_facts") or row["supporting_docs"] or [],
                **{k: v for k, v in metadata.items() if k not in _RESERVED},
            }
            raw_rows.append(record)
            stage1_rows.append(
                {
                    **record,
                    "start_nodes": {ENTITY: list(row["question_entities"] or [])},
                    "target_nodes": {
                        DOCUMENT: [doc_key[t] for t in row["supporting_docs"] or []],
                        ENTITY: list(row["supporting_entities"] or []),
                    },
                }
            )
        _write_json(raw / f"{split}.json", raw_rows)
        _write_json(stage1 / f"{split}.json", stage1_rows)
        written["questions"][split] = len(rows)
    # An earlier export into OUT may have had other splits: they are not this index's questions,
    # and `hoprag index` would read them back.
    for split in sorted(set(SPLITS) - set(by_split)):
        for stale in (raw / f"{split}.json", stage1 / f"{split}.json"):
            stale.unlink(missing_ok=True)
    return written


_RESERVED = frozenset(
    {
        "id",
        "question",
        "answer",
        "answer_aliases",
        "supporting_documents",
        "supporting_facts",
        "start_nodes",
        "target_nodes",
    }
)
