"""Question → KG entity linking: one function for index time and query time.

A question's seed entities decide what the GLM samples and where the planner starts, so the
links that evaluation measures must be the links that the endpoint makes. Both run
:func:`link_mentions` over the mentions that :func:`question_mentions` gets from the LLM:

1. ``llm_exact`` / ``llm_nearest``: the LLM's NER answer, keeping only mentions that occur in the
   question (the embedded model sometimes "remembers" famous entities that are not there); a
   mention that is no KG name links to its nearest entity above ``min_link_similarity``;
2. ``dictionary``: KG entity names found in the question (normalized n-grams, longest first,
   entity-like spans only, so generic words such as "film" do not link);
3. ``question_embedding``: when both find nothing, the whole question embedded against entity
   names (GFM-RAG's fallback).

``hoprag index`` runs this for the benchmark's questions and stores the result in the index's
question table; :class:`QuestionLinker` (serving, ``hoprag ask``, evaluation) runs it on the
question text and reads those stored links only as a cache of the same call (same index snapshot,
same LLM, same prompt version, same settings).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hoprag.embedding import Embedder
from hoprag.extraction.parsing import parse_entity_list
from hoprag.extraction.prompts import PROMPT_VERSION, ner_prompt
from hoprag.linking.config import LinkingConfig
from hoprag.llm.base import LLM, TASK_NER, Completion, task_model_id, uses_student_prompt
from hoprag.planner.llm_calls import CachedLLM, CallLedger
from hoprag.text import dictionary_mentions, normalize_entity
from hoprag.vectorsearch import ExactSearch, VectorSearch

if TYPE_CHECKING:
    from hoprag.kg.index import KGIndex

LINKERS = ("llm_exact", "llm_nearest", "dictionary", "question_embedding")


@dataclass(frozen=True)
class EntityLinks:
    """A question's KG entities (normalized names, in link order) and the linker that found each."""

    entities: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()  # the LLM's grounded mentions (empty when it was not asked)

    def by_entity(self) -> dict[str, str]:
        return dict(zip(self.entities, self.sources, strict=True))


def normalize_question(text: str) -> str:
    """The question as every linker and pipeline sees it: whitespace collapsed, stripped."""
    return " ".join((text or "").split())


def mentions_from_completion(question: str, completion: Completion, output_format: str) -> list[str]:
    """The mentions of one NER completion that occur in ``question`` (none for a failed call)."""
    if not completion.ok:
        return []
    return parse_entity_list(completion.text, question, output_format)[0]


def link_mentions(
    questions: Sequence[str],
    llm_mentions: Sequence[Sequence[str]],
    entity_names: Sequence[str],
    entity_vectors: np.ndarray | VectorSearch,
    embedder: Embedder,
    config: LinkingConfig,
) -> list[EntityLinks]:
    """Link each question to KG entities from its LLM mentions, dictionary matches and, when both
    find nothing, the question's own embedding (see the module docstring). ``entity_vectors`` is
    the entity matrix (searched exactly) or the index's entity :class:`VectorSearch`."""
    search = ExactSearch(entity_vectors) if isinstance(entity_vectors, np.ndarray) else entity_vectors
    lookup = {n: i for i, n in enumerate(entity_names)}
    # Unmatched LLM mentions and fallback questions are embedded in one batched call each.
    unmatched = (
        sorted({normalize_entity(m) for ms in llm_mentions for m in ms} - set(lookup))
        if config.use_llm_ner
        else []
    )
    nearest: dict[str, tuple[int, float]] = {}
    if unmatched and len(entity_names):
        idx, sims = search.search(embedder.encode(unmatched), 1)
        nearest = {m: (int(i[0]), float(s[0])) for m, i, s in zip(unmatched, idx, sims, strict=True)}
    linked: list[dict[int, str]] = []
    for question, mentions in zip(questions, llm_mentions, strict=True):
        found: dict[int, str] = {}
        if config.use_llm_ner:
            for m in mentions:
                n = normalize_entity(m)
                if n in lookup:
                    found.setdefault(lookup[n], "llm_exact")
                elif n in nearest and nearest[n][1] >= config.min_link_similarity:
                    found.setdefault(nearest[n][0], "llm_nearest")
        if config.use_dictionary:
            for n in dictionary_mentions(question, lookup):
                found.setdefault(lookup[n], "dictionary")
        linked.append(found)
    pending = [i for i, found in enumerate(linked) if not found]
    if pending and len(entity_names):
        idx, _ = search.search(embedder.encode([questions[i] for i in pending]), 1)
        for i, best in zip(pending, idx, strict=True):
            linked[i][int(best[0])] = "question_embedding"
    return [
        EntityLinks(
            entities=tuple(entity_names[e] for e in found),
            sources=tuple(found.values()),
            mentions=tuple(mentions) if config.use_llm_ner else (),
        )
        for found, mentions in zip(linked, llm_mentions, strict=True)
    ]


def index_linking_config(index: KGIndex) -> LinkingConfig:
    """The linking settings an index was built with (the defaults for an index that predates them)."""
    recorded = (index.manifest.get("config") or {}).get("questions") or {}
    fields = LinkingConfig.model_fields
    return LinkingConfig.model_validate({k: v for k, v in recorded.items() if k in fields})


class QuestionLinker:
    """Query-time linking: :func:`question_mentions` + :func:`link_mentions` on the question text,
    with the index's own settings, cached per (question, index snapshot, LLM model).

    The links ``hoprag index`` stored for the benchmark's questions prefill the cache when they
    were made by this very call: the same snapshot (the index is immutable), the same LLM model
    id, prompt version and linking settings. ``llm`` may be ``None`` only when the index was
    linked without LLM NER.
    """

    def __init__(
        self,
        index: KGIndex,
        embedder: Embedder,
        llm: LLM | None,
        cache_size: int = 4096,
        use_index_links: bool = True,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.llm = llm
        self.config = index_linking_config(index)
        if self.config.use_llm_ner and llm is None:
            raise ValueError(f"{index.path} links questions with LLM NER: the linker needs an LLM")
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str, str], EntityLinks] = OrderedDict()
        self._lock = threading.Lock()
        self._stored: dict[str, EntityLinks] | None = None
        self._use_index_links = use_index_links
        # No completion cache: the links themselves are cached, per question.
        self._client = CachedLLM(llm, cache_size=0) if llm is not None else None

    @property
    def model_id(self) -> str:
        """The id of the weights that answer this linker's NER prompts ("" without LLM NER)."""
        return task_model_id(self.llm, TASK_NER) if self.llm is not None and self.config.use_llm_ner else ""

    def link(
        self, questions: Sequence[str], ledgers: Sequence[CallLedger] | None = None
    ) -> list[EntityLinks]:
        """The links of each question (whitespace-normalized first), in order; an NER call made now
        is recorded (purpose ``entities``) in that question's ledger when ``ledgers`` are given."""
        texts = [normalize_question(q) for q in questions]
        snapshot = str(self.index.manifest.get("snapshot", ""))
        model = self.model_id
        out: list[EntityLinks | None] = []
        with self._lock:
            for text in texts:
                hit = self._cache.get((text, snapshot, model))
                if hit is not None:
                    self._cache.move_to_end((text, snapshot, model))
                out.append(hit)
        stored = self._stored_links()
        for i, text in enumerate(texts):
            if out[i] is None and text in stored:
                out[i] = stored[text]
        missing = list(dict.fromkeys(t for t, links in zip(texts, out, strict=True) if links is None))
        if missing:
            mentions: list[list[str]] = [[] for _ in missing]
            if self.config.use_llm_ner:
                first = {t: i for i, t in reversed(list(enumerate(texts)))}
                given = list(ledgers) if ledgers is not None else [CallLedger() for _ in texts]
                mentions = self._ner(missing, [given[first[t]] for t in missing])
            computed = dict(
                zip(
                    missing,
                    link_mentions(
                        missing,
                        mentions,
                        self.index.entity_names,
                        self._entity_search(),
                        self.embedder,
                        self.config,
                    ),
                    strict=True,
                )
            )
            out = [links if links is not None else computed[t] for t, links in zip(texts, out, strict=True)]
        result = [links for links in out if links is not None]
        if self.cache_size:
            with self._lock:
                for text, links in zip(texts, result, strict=True):
                    self._cache[(text, snapshot, model)] = links
                    self._cache.move_to_end((text, snapshot, model))
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return result

    def _entity_search(self) -> VectorSearch:
        search = self.index.vector_search("entity")
        assert search is not None  # every snapshot has entity vectors
        return search

    def _ner(self, questions: list[str], ledgers: list[CallLedger]) -> list[list[str]]:
        """Grounded NER mentions, one batched call (the prompt and parser of index-time NER)."""
        assert self._client is not None
        student = uses_student_prompt(self._client.llm, TASK_NER)
        specs = [ner_prompt(q, self._client.prompt_style, student=student) for q in questions]
        completions = self._client.complete_each(
            [s.prompt for s in specs], specs[0].params, ledgers, "entities"
        )
        return [
            mentions_from_completion(q, c, s.output_format)
            for q, c, s in zip(questions, completions, specs, strict=True)
        ]

    def _stored_links(self) -> dict[str, EntityLinks]:
        """The index's question links, when made by this same call (else none)."""
        if self._stored is not None:
            return self._stored
        stored: dict[str, EntityLinks] = {}
        manifest = self.index.manifest
        same_call = (
            self._use_index_links
            and self.index.questions is not None
            and (
                not self.config.use_llm_ner
                or (
                    # indexes built before ner_model_id was recorded: their one model's id
                    manifest.get("ner_model_id", manifest.get("llm_model_id")) == self.model_id
                    and manifest.get("prompt_version") == PROMPT_VERSION
                )
            )
            and "link_sources" in self.index.questions.column_names
        )
        if same_call:
            table = self.index.questions
            assert table is not None
            for text, entities, sources in zip(
                table.column("question").to_pylist(),
                table.column("question_entities").to_pylist(),
                table.column("link_sources").to_pylist(),
                strict=True,
            ):
                stored.setdefault(
                    normalize_question(text), EntityLinks(tuple(entities or ()), tuple(sources or ()))
                )
        self._stored = stored
        return stored
