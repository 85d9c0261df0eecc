"""The distractor setting: each question ranks only its own candidate documents.

HotpotQA's distractor setting (and MuSiQue's and 2WikiMultihopQA's files, which give every
question its own 10 or 20 paragraphs) asks a retriever to find the supporting paragraphs among the
question's candidates, not among every paragraph of the pool. One index can serve both settings:
it pools the paragraphs, and the index keeps each question's candidates (``candidate_docs``).
:class:`CandidateRetriever` wraps any retriever: the inner one ranks the whole index, the wrapper
keeps the question's candidates in that order and puts candidates the inner ranking left out
(a GLM ranks only documents that reach its subgraph) last, in the order the benchmark gave them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult, Retriever


class CandidateRetriever:
    """``inner`` restricted to each question's candidate documents (module docstring).

    ``candidates`` maps a question's text to its candidates' ``(doc_id, title)`` pairs; a question
    without an entry (or with none) ranks the whole index, as in the pooled setting."""

    def __init__(
        self,
        inner: Retriever,
        candidates: Mapping[str, Sequence[tuple[int, str]]],
        num_documents: int,
    ) -> None:
        self.inner = inner
        self.candidates = {_key(q): list(c) for q, c in candidates.items() if c}
        self.num_documents = num_documents

    @property
    def name(self) -> str:
        return f"{self.inner.name}@candidates"

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        """The inner ranking of the whole index, cut to each question's candidates, then top ``k``."""
        results = self.inner.retrieve(queries, self.num_documents)
        for query, result in zip(queries, results, strict=True):
            own = self.candidates.get(_key(query.question))
            if own is None:
                result.documents = result.documents[:k]
                continue
            allowed = {doc_id for doc_id, _ in own}
            ranked = [d for d in result.documents if d.doc_id in allowed]
            seen = {d.doc_id for d in ranked}
            lowest = min((d.score for d in ranked), default=0.0)
            ranked += [RankedDocument(doc_id, title, lowest) for doc_id, title in own if doc_id not in seen]
            result.documents = ranked[:k]
        return results


def candidate_retriever(
    inner: Retriever, questions: Iterable[Mapping[str, Any]], titles: Sequence[str]
) -> CandidateRetriever:
    """:class:`CandidateRetriever` for processed questions (rows with ``question`` and
    ``candidate_docs`` titles) over an index whose document titles are ``titles`` (by doc id).
    Raises ``ValueError`` when no question has candidates in the index."""
    doc_of = {title: doc_id for doc_id, title in enumerate(titles)}
    candidates = {
        str(q["question"]): [(doc_of[t], t) for t in q.get("candidate_docs") or [] if t in doc_of]
        for q in questions
    }
    if not any(candidates.values()):
        raise ValueError(
            "no question has candidate documents: the distractor setting needs an index built from a "
            "published benchmark file that gives each question its paragraphs (HotpotQA, 2WikiMultihopQA "
            "with context, MuSiQue) by this version of hoprag index"
        )
    return CandidateRetriever(inner, candidates, len(titles))


def _key(question: str) -> str:
    """Questions are matched whitespace-normalized, as every QA mode reads them."""
    return " ".join(question.split())
