"""``hoprag index``: corpus → extraction (Ray Data, resumable) → graph → questions → atomic snapshot."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.config import dump_config
from hoprag.embedding import Embedder, SentenceTransformerEmbedder
from hoprag.extraction.prompts import PROMPT_VERSION
from hoprag.kg.index import KGIndex
from hoprag.kg.store import KGIndexError, index_writer_lock, write_snapshot
from hoprag.kg.tables import KIND_EQUIVALENT, MANIFEST, triple_texts
from hoprag.linking.linker import normalize_question
from hoprag.llm.base import TASK_NER, TASK_OPENIE
from hoprag.llm.factory import LLMBackendConfig, expected_model_id
from hoprag.retrieval.dense import document_passages
from hoprag.text import content_hash
from hoprag.threads import usable_cpus
from indexing.cache import RETRY_STATUSES, ExtractionCache
from indexing.config import IndexConfig
from indexing.corpus import Corpus, Document
from indexing.extract import ExtractionRecord, LLMExtractor, extraction_key, extraction_model_id, ner_key
from indexing.gfmrag import GFM_RAG_STAGE1, Stage1Graph
from indexing.graph import PreviousState, build_tables
from indexing.questions import START_NODES, LinkingStats, link_questions, questions_table
from indexing.summary import IndexSummary

logger = logging.getLogger(__name__)


def _actor_llm_config(config: IndexConfig) -> LLMBackendConfig:
    """Give each CPU-model actor (embedded, llama.cpp) its share of the cores, never all of them
    per actor (hoprag/threads.py says why),
    and the dtype this driver keyed the extraction cache with (``auto`` decided here, so an actor
    on a node with another CPU still writes what the cache key says)."""
    llm = config.llm.model_copy(deep=True)
    share = max(1, usable_cpus() // config.extraction.concurrency)
    if llm.backend == "embedded":
        llm.embedded.dtype = llm.embedded.compute_dtype
        if llm.embedded.num_threads is None:
            llm.embedded.num_threads = share
    elif llm.backend == "llamacpp" and llm.llamacpp.n_threads is None:
        llm.llamacpp.n_threads = share
    return llm


def run_extraction(
    pending: Sequence[tuple[str, str, str]],
    config: IndexConfig,
    cache: ExtractionCache,
    on_batch: Callable[[list[ExtractionRecord]], None] | None = None,
) -> list[ExtractionRecord]:
    """Run the LLM over ``(task, key, text)`` rows with Ray Data, persisting each finished batch.

    ``task`` is ``openie`` (documents) or ``ner`` (questions); one actor pool serves both, so the
    model is loaded once per actor for the whole build.
    """
    import ray

    from hoprag.logs import progress
    from hoprag.ray_runtime import init_ray

    if not pending:
        return []
    init_ray(config.ray)
    ex = config.extraction
    # Output length follows input length; batching similar lengths keeps a batch from waiting on
    # one long generation while its other rows are done.
    pending = sorted(pending, key=lambda row: (row[0], len(row[2])))
    if config.llm.backend == "vllm" and ex.mode == "one_step":
        return _run_vllm_processor(pending, config, cache, on_batch)
    ds = ray.data.from_items(
        [{"task": task, "doc_key": k, "text": t} for task, k, t in pending],
        override_num_blocks=max(1, math.ceil(len(pending) / ex.batch_size)),
    )
    ds = ds.map_batches(
        LLMExtractor,
        fn_constructor_kwargs={"llm_config": _actor_llm_config(config), "extraction_config": ex},
        batch_size=ex.batch_size,
        compute=ray.data.ActorPoolStrategy(size=ex.concurrency),
        num_cpus=ex.num_cpus,
        num_gpus=ex.num_gpus or None,
    )
    records: list[ExtractionRecord] = []
    with progress(len(pending), "LLM extraction (documents + questions)", unit="row") as bar:
        for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            rows = batch.to_pylist()
            cache.append_rows(rows)
            new = [ExtractionRecord.from_row(r) for r in rows]
            records.extend(new)
            if on_batch is not None:
                on_batch(new)
            bar.update(len(rows))
    return records


def _run_vllm_processor(
    pending: Sequence[tuple[str, str, str]],
    config: IndexConfig,
    cache: ExtractionCache,
    on_batch: Callable[[list[ExtractionRecord]], None] | None,
) -> list[ExtractionRecord]:
    """The GPU path: a ``ray.data.llm`` vLLM processor; finished documents are cached per batch."""
    import ray

    from hoprag.llm.vllm_requests import vllm_student_tasks
    from hoprag.logs import progress
    from indexing.vllm_stage import build_vllm_stage, fold_result, passage_rows

    vllm = config.llm.vllm
    assert vllm is not None
    model_id = extraction_model_id(lambda task: expected_model_id(config.llm, task), config.extraction)
    ner_model_id = expected_model_id(config.llm, TASK_NER)
    student_tasks = vllm_student_tasks(vllm)
    rows, assembler = passage_rows(pending, config.extraction, model_id)
    records = assembler.ready()
    cache.append_rows([r.to_row() for r in records])
    stage = build_vllm_stage(vllm, config.extraction)
    ds = stage(ray.data.from_items(rows, override_num_blocks=max(1, math.ceil(len(rows) / vllm.batch_size))))
    with progress(len(rows), "vLLM extraction (passages + questions)", unit="row") as bar:
        for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            done = [
                r
                for r in (
                    fold_result(row, assembler, vllm.prompt_style, ner_model_id, student_tasks)
                    for row in batch.to_pylist()
                )
                if r
            ]
            cache.append_rows([r.to_row() for r in done])
            records.extend(done)
            if on_batch is not None and done:
                on_batch(done)
            bar.update(batch.num_rows)
    return records


def _previous_state(previous: KGIndex | None, config: IndexConfig) -> PreviousState | None:
    """Reuse embeddings and synonym edges only when they were made the same way."""
    if previous is None:
        return None
    same = previous.manifest.get("embedder") == config.embedder.model and previous.manifest.get(
        "synonyms"
    ) == config.synonyms.model_dump(mode="json")
    if not same:
        return None
    vecs = np.asarray(previous.entity_embeddings)
    rvecs = np.asarray(previous.relation_embeddings)
    tvecs, dvecs = previous.triple_embeddings, previous.document_embeddings
    theses, thvecs = previous.theses, previous.thesis_embeddings
    pairs = {
        (previous.entity_names[int(h)], previous.entity_names[int(t)])
        for h, t, k in zip(previous.head, previous.tail, previous.kind, strict=True)
        if k == KIND_EQUIVALENT
    }
    return PreviousState(
        entity_vectors={n: vecs[i] for i, n in enumerate(previous.entity_names)},
        relation_vectors={n: rvecs[i] for i, n in enumerate(previous.relation_names)},
        triple_vectors={} if tvecs is None else dict(zip(_triple_texts(previous), tvecs, strict=True)),
        document_vectors={} if dvecs is None else dict(zip(document_passages(previous), dvecs, strict=True)),
        thesis_vectors={}
        if theses is None or thvecs is None
        else dict(zip(theses.texts, thvecs, strict=True)),
        equivalent_pairs=pairs,
    )


def _triple_texts(index: KGIndex) -> list[str]:
    return triple_texts(
        index.entity_names, index.entity_surface, index.relation_names, index.head, index.relation, index.tail
    )


def _previous_questions(previous: KGIndex) -> dict[str, list[dict[str, Any]]]:
    table = previous.questions
    out: dict[str, list[dict[str, Any]]] = {}
    if table is None:
        return out
    for row in table.to_pylist():
        question = {
            "id": row["id"],
            "question": row["question"],
            "answer": row["answer"],
            "answer_aliases": row["answer_aliases"],
            "supporting_facts": row.get("supporting_facts") or row["supporting_docs"],
            "metadata": json.loads(row.get("metadata") or "{}"),
        }
        if row.get("candidate_docs"):
            question["candidate_documents"] = list(row["candidate_docs"])
        sources = row.get("link_sources") or []
        if sources and all(s == START_NODES for s in sources):
            question["start_nodes"] = {"entity": list(row["question_entities"])}
        out.setdefault(row["split"], []).append(question)
    return out


def merge_questions(
    kept: dict[str, list[dict[str, Any]]], new: dict[str, list[dict[str, Any]]]
) -> dict[str, list[dict[str, Any]]]:
    """The questions of an index after ``--add``: per split, the kept questions in their order, a
    new question with a kept id in its place, then the other new ones (two benchmark files added to
    one pool keep both question sets)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for split in [*kept, *(s for s in new if s not in kept)]:
        incoming = {str(q["id"]): q for q in new.get(split, [])}
        merged = [incoming.pop(str(q["id"]), q) for q in kept.get(split, [])]
        out[split] = merged + list(incoming.values())
    return out


def _select_documents(
    previous: KGIndex | None,
    corpus: Corpus | None,
    add: bool,
    delete_titles: Sequence[str],
    summary: IndexSummary,
) -> tuple[list[Document], dict[str, list[dict[str, Any]]]]:
    """The document set and questions of this build: previous ones (when modifying), the corpus's, minus deletions."""
    docs: dict[str, Document] = {}
    questions: dict[str, list[dict[str, Any]]] = {}
    if previous is not None and (add or (delete_titles and corpus is None)):
        table = previous.documents
        for title, text in zip(
            table.column("title").to_pylist(), table.column("text").to_pylist(), strict=True
        ):
            docs[title] = Document(title, text)
        questions = _previous_questions(previous)
    if corpus is not None:
        summary.input_problems.update(corpus.problems)
        for d in corpus.documents:
            docs[d.title] = d  # with --add, a known title with new text replaces the old document
        questions = merge_questions(questions, corpus.questions)
    for title in delete_titles:
        if docs.pop(title, None) is None:
            summary.unknown_deletions.append(title)
    return list(docs.values()), questions


def _uncached(
    task: str, keys: Sequence[str], texts: Sequence[str], cached: dict[str, ExtractionRecord]
) -> list[tuple[str, str, str]]:
    """``(task, key, text)`` rows still to run: not cached, or cached as a transient LLM failure."""
    rows, seen = [], set()
    for key, text in zip(keys, texts, strict=True):
        rec = cached.get(key)
        if (rec is None or rec.status in RETRY_STATUSES) and key not in seen:
            rows.append((task, key, text))
            seen.add(key)
    return rows


def build_index(
    out: str | Path,
    config: IndexConfig,
    corpus: Corpus | None = None,
    add: bool = False,
    delete_titles: Sequence[str] = (),
) -> IndexSummary:
    """Build (or resume, extend, shrink) the index at ``out``; see ``hoprag index --help``. One
    writer at a time per index (:func:`~hoprag.kg.store.index_writer_lock`; a second one waits)."""
    out = Path(out)
    with index_writer_lock(out):
        return _build_index_locked(out, config, corpus, add, delete_titles)


def _build_index_locked(
    out: Path, config: IndexConfig, corpus: Corpus | None, add: bool, delete_titles: Sequence[str]
) -> IndexSummary:
    started = time.perf_counter()
    summary = IndexSummary()
    previous = _open_previous(out, modifying=bool(add or delete_titles))
    if (add or delete_titles) and corpus is None and previous is None:
        raise KGIndexError(f"{out} has no index to modify; build one first")
    if (add or delete_titles) and previous is not None and previous.manifest.get("source"):
        raise KGIndexError(
            f"{out} was built from a pre-built graph ({previous.manifest['source'].get('path')}), which "
            "--add/--delete cannot extend (its triples do not come from LLM extraction); rebuild it "
            "with hoprag index --graph"
        )

    documents, questions = _select_documents(previous, corpus, add, delete_titles, summary)
    summary.documents = len(documents)

    model_id = extraction_model_id(lambda task: expected_model_id(config.llm, task), config.extraction)
    ner_model_id = expected_model_id(config.llm, TASK_NER)
    keys = [extraction_key(d.content_hash, model_id, config.extraction) for d in documents]
    all_questions = [dict(q, split=split) for split, qs in sorted(questions.items()) for q in qs]
    # NER runs on the question as query-time linking sees it (hoprag.linking.normalize_question).
    q_texts = [normalize_question(q["question"]) for q in all_questions]
    q_keys = [ner_key(text, ner_model_id) for text in q_texts]
    cache = ExtractionCache(out)
    cached = cache.load()
    pending = _uncached(TASK_OPENIE, keys, [d.text for d in documents], cached)
    summary.reused_from_cache = len(documents) - len(pending)
    if config.questions.use_llm_ner:
        pending += _uncached(TASK_NER, q_keys, q_texts, cached)
    t0 = time.perf_counter()
    for rec in run_extraction(pending, config, cache):
        cached[rec.doc_key] = rec
    summary.extraction_seconds = time.perf_counter() - t0 if pending else 0.0
    summary.extracted_now = sum(1 for task, _, _ in pending if task == TASK_OPENIE)

    doc_triples, doc_entities = [], []
    for key in keys:
        rec = cached[key]
        summary.statuses[rec.status] += 1
        summary.dropped_triples.update(rec.dropped)
        summary.clean_triples += rec.clean
        summary.repaired_triples += rec.repaired
        summary.llm_calls += rec.llm_calls
        summary.prompt_tokens += rec.prompt_tokens
        summary.completion_tokens += rec.completion_tokens
        if rec.truncated_passages:
            summary.input_problems["truncated_passages"] += rec.truncated_passages
        doc_triples.append(rec.triples if rec.status == "ok" else [])
        doc_entities.append(rec.entities if rec.status == "ok" else [])

    mentions = [cached[k].entities if k in cached and cached[k].status == "ok" else [] for k in q_keys]
    _write_index(
        out,
        config,
        summary,
        GraphInput(documents, doc_triples, doc_entities),
        all_questions,
        mentions,
        _previous_state(previous, config),
        # the linker reuses the stored question links under the same NER model id
        {
            "llm_model_id": expected_model_id(config.llm),
            "ner_model_id": ner_model_id,
            "prompt_version": PROMPT_VERSION,
        },
        started,
    )
    return summary


def _open_previous(out: Path, modifying: bool) -> KGIndex | None:
    """The index already at ``out`` (verified in full), or ``None``; a damaged one is an error when
    ``modifying`` (``--add`` / ``--delete``) and ignored otherwise."""
    if not (out / MANIFEST).exists():
        return None
    try:
        # Every file in full: what is reused (documents, embeddings, synonym edges) is written
        # into the new snapshot with fresh checksums, so damage would be blessed, not caught.
        return KGIndex(out, verify="full")
    except KGIndexError as exc:
        if modifying:
            raise KGIndexError(
                f"refusing --add/--delete on a damaged index (the new snapshot would carry the damage "
                f"over with fresh checksums): {exc}. Rebuild it from the complete corpus without "
                f"--add/--delete: hoprag index --corpus CORPUS --out {out} (documents extracted "
                "before come from the extraction cache)"
            ) from exc
        logger.warning("ignoring unreadable previous index (%s); rebuilding", exc)
        return None


@dataclass
class GraphInput:
    """What a snapshot is built from: documents with the triples and entities each states (from
    LLM extraction or a pre-built graph), triples no document states, and given synonym pairs."""

    documents: list[Document]
    doc_triples: list[list[tuple[str, str, str]]]
    doc_entities: list[list[str]]
    unattributed_triples: list[tuple[str, str, str]] = field(default_factory=list)
    equivalent_pairs: set[tuple[str, str]] = field(default_factory=set)


def _write_index(
    out: Path,
    config: IndexConfig,
    summary: IndexSummary,
    graph: GraphInput,
    all_questions: list[dict[str, Any]],
    mentions: list[list[str]],
    previous: PreviousState | None,
    manifest_fields: dict[str, Any],
    started: float,
    embedder: Embedder | None = None,
) -> None:
    """Embed, build the KG tables, link the questions and write the snapshot (shared by the LLM
    build and the pre-built-graph build)."""
    embedder = embedder or SentenceTransformerEmbedder(config.embedder)
    if graph.equivalent_pairs:
        previous = previous or PreviousState()
        previous.equivalent_pairs = previous.equivalent_pairs | graph.equivalent_pairs
    documents = graph.documents
    tables = build_tables(
        documents,
        graph.doc_triples,
        graph.doc_entities,
        embedder,
        config.synonyms,
        previous,
        graph.unattributed_triples,
        config.memory,
    )
    summary.entities = len(tables.entity_names)
    if tables.theses is not None:
        summary.theses = len(tables.theses)
        summary.theses_merged = tables.theses.merged
    summary.memory_graph_seconds = round(float(tables.extra["memory_graph_seconds"]), 3)
    summary.relations = len(tables.relation_names)
    summary.triples = tables.num_triples
    summary.equivalent_edges = int(tables.extra["equivalent_edges"])
    summary.new_entities_embedded = int(tables.extra["new_entities"])

    if all_questions:
        title_to_doc = {d.title: i for i, d in enumerate(documents)}
        doc_to_entities: dict[int, list[int]] = {}
        for d, e in zip(tables.doc_entity_doc.tolist(), tables.doc_entity_entity.tolist(), strict=True):
            doc_to_entities.setdefault(d, []).append(e)
        rows, link_stats = link_questions(
            all_questions,
            mentions,
            tables.entity_names,
            tables.entity_embeddings,
            title_to_doc,
            doc_to_entities,
            embedder,
            config.questions,
        )
        for row, q in zip(rows, all_questions, strict=True):
            row["split"] = q["split"]
            row["supporting_facts"] = q.get("supporting_facts", [])
            row["metadata"] = q.get("metadata", {})
        tables.questions = questions_table(rows)
        _record_linking(summary, link_stats)

    summary.total_seconds = time.perf_counter() - started
    write_snapshot(
        out,
        tables,
        {
            "counts": {
                "documents": summary.documents,
                "entities": summary.entities,
                "relations": summary.relations,
                "triples": summary.triples,
                "equivalent_edges": summary.equivalent_edges,
                "theses": summary.theses,
                "questions": summary.questions,
            },
            **manifest_fields,
            "embedder": config.embedder.model,
            "synonyms": config.synonyms.model_dump(mode="json"),
            "config_hash": content_hash(dump_config(config)),
            "config": config.model_dump(mode="json"),
            "summary": summary.to_dict(),
        },
        ann_min_rows=config.vectors.ann_min_rows,
    )


def _record_linking(summary: IndexSummary, stats: LinkingStats) -> None:
    summary.questions = stats.questions
    summary.questions_with_entities = stats.with_entities
    summary.link_sources.update(stats.sources)
    if stats.missing_supporting_docs:
        summary.input_problems["missing_supporting_docs"] += stats.missing_supporting_docs
    if stats.unknown_start_nodes:
        summary.input_problems["unknown_start_nodes"] += stats.unknown_start_nodes


def build_index_from_graph(
    out: str | Path,
    config: IndexConfig,
    stage1: Stage1Graph,
    embedder: Embedder | None = None,
) -> IndexSummary:
    """Build the index at ``out`` from a pre-built GFM-RAG graph (``processed/stage1``), no LLM.

    Entity and relation embeddings, synonym edges (added to the graph's own ``equivalent``
    edges), adjacency and the snapshot are made as for an LLM-built index; questions are seeded
    with their ``start_nodes`` where given, else linked without LLM NER (dictionary matching and
    the question-embedding fallback; recorded in the manifest, so query-time linking of this
    index does the same). Embeddings of an index already at ``out`` made the same way are reused.
    """
    started = time.perf_counter()
    out = Path(out)
    config = config.model_copy(deep=True)
    config.questions.use_llm_ner = False
    summary = IndexSummary(graph_source=str(stage1.path))
    summary.input_problems.update(stage1.problems)
    summary.documents = len(stage1.documents)
    with index_writer_lock(out):
        previous = _open_previous(out, modifying=False)
        all_questions = [dict(q, split=split) for split, qs in sorted(stage1.questions.items()) for q in qs]
        _write_index(
            out,
            config,
            summary,
            GraphInput(
                stage1.documents,
                stage1.doc_triples,
                stage1.doc_entities,
                stage1.unattributed_triples,
                stage1.equivalent_pairs,
            ),
            all_questions,
            [[] for _ in all_questions],
            _previous_state(previous, config),
            {
                "llm_model_id": None,
                "prompt_version": None,
                "source": {"format": GFM_RAG_STAGE1, "path": str(stage1.path)},
            },
            started,
            embedder,
        )
    return summary
