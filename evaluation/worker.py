"""The per-question evaluation step as a Ray Data callable class (system loaded once per actor).

The same code paths as serving: retrievers through :func:`hoprag.retrieval.loading.load_retriever`,
single-shot GLM-RAG through :class:`hoprag.qa.RetrieveThenAnswer`, PAI-2 through
:class:`hoprag.planner.Planner`. Any failure of one question becomes that row's ``error``.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from evaluation.metrics import entity_recall, exact_match, f1_score, recall_at_k
from evaluation.questions import entity_distance, question_seeds, seed_distances

if TYPE_CHECKING:
    from evaluation.config import SystemSpec
    from hoprag.embedding import Embedder
    from hoprag.kg.index import KGIndex
    from hoprag.retrieval.base import Retriever

TOP_DOCS = 10
TOP_ENTITIES = 20
# The planner's answer prompts show each step's own triples; the judge sees the answer's first 30.
PLAN_CONTEXT_TRIPLES = 30


def score_row(
    row: dict[str, Any], titles: list[str] | None, entities: list[str], answer: str | None, ks: list[int]
) -> dict[str, float]:
    """The metrics one question earns: recall@k and entity recall where gold exists, EM/F1 for answers."""
    metrics: dict[str, float] = {}
    gold_docs = list(row.get("supporting_docs") or [])
    if titles is not None and gold_docs:
        for k in ks:
            metrics[f"recall@{k}"] = recall_at_k(titles, gold_docs, k)
    gold_entities = list(row.get("supporting_entities") or [])
    if entities and gold_entities:
        metrics[f"entity_recall@{TOP_ENTITIES}"] = entity_recall(entities, gold_entities, TOP_ENTITIES)
    if answer is not None:
        golds = [row.get("answer") or "", *(row.get("answer_aliases") or [])]
        if any(golds):
            metrics["em"] = exact_match(answer, golds)
            metrics["f1"] = f1_score(answer, golds)
    return metrics


class EvalWorker:
    """``map_batches`` callable: questions in, per-question results out."""

    def __init__(
        self,
        index_dir: str,
        system: dict[str, Any],
        llm: dict[str, Any],
        planner: dict[str, Any],
        ks: list[int],
        judge: dict[str, Any] | None = None,
    ) -> None:
        from evaluation.config import SystemSpec
        from hoprag.llm.factory import LLMBackendConfig
        from hoprag.planner.app import load_index_and_embedder
        from hoprag.planner.config import PlannerConfig

        spec = SystemSpec.model_validate(system)
        index, embedder = load_index_and_embedder(index_dir)
        retriever = None
        if spec.retriever:
            from hoprag.retrieval.loading import load_retriever

            retriever = load_retriever(spec.retriever, index, embedder)
        self._bind(spec, index, embedder, retriever, ks)
        if spec.kind == "qa":
            from hoprag.llm.factory import build_llm
            from hoprag.planner.knowledge import KnowledgeGraphView

            llm_config = LLMBackendConfig.model_validate(llm)
            llm_backend = build_llm(llm_config)
            if judge:
                from evaluation.judge import JudgeConfig

                self.judge_config = JudgeConfig.model_validate(judge)
                if self.judge_config.any:
                    # One model in memory when the judge is the answering LLM.
                    self.judge_llm = (
                        llm_backend
                        if self.judge_config.llm == llm_config
                        else build_llm(self.judge_config.llm)
                    )
            kg = KnowledgeGraphView(self.index, embedder)
            planner_config = PlannerConfig.model_validate(planner)
            if spec.pipeline == "plan":
                from hoprag.planner.planner import Planner

                self.qa = Planner(kg, llm_backend, planner_config, retriever=self.retriever)
            elif spec.pipeline == "rag":
                from hoprag.qa import RetrieveThenAnswer

                self.qa = RetrieveThenAnswer(kg, self.retriever, llm_backend)  # type: ignore[arg-type]
            else:
                from hoprag.planner.llm_calls import CachedLLM

                self.qa = CachedLLM(llm_backend)

    @classmethod
    def for_retriever(
        cls,
        index: KGIndex,
        retriever: Retriever,
        ks: list[int],
        embedder: Embedder | None = None,
        analysis: bool = True,
    ) -> EvalWorker:
        """A retrieval-system worker over already loaded components (``hoprag eval retrieval``);
        without ``embedder`` the semantic-similarity analysis is left out, with ``analysis=False``
        all of section 6 (no graph search per question)."""
        from evaluation.config import SystemSpec

        worker = cls.__new__(cls)
        spec = SystemSpec(name="retriever", kind="retrieval", retriever=retriever.name)
        worker._bind(spec, index, embedder, retriever, ks)
        worker.analysis = analysis
        return worker

    def _bind(
        self,
        system: SystemSpec,
        index: KGIndex,
        embedder: Embedder | None,
        retriever: Retriever | None,
        ks: list[int],
    ) -> None:
        self.system = system
        self.index = index
        self.embedder = embedder
        self.retriever = retriever
        self.ks = ks
        self.qa: Any = None
        self.judge_llm: Any = None
        self.judge_config: Any = None
        self.analysis = True

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        rows = [json.loads(r) for r in batch["row"]]
        return {"result": [json.dumps(r) for r in self.evaluate(rows)]}

    def evaluate(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One result record per question (failures become that question's ``error``)."""
        retrieved: list[Any] = [None] * len(rows)
        if self.system.kind == "retrieval":
            try:  # one batched call (GLM forward passes batch); on failure each question alone
                retrieved = list(self._retrieve(rows))
            except Exception:
                retrieved = [None] * len(rows)
        return [self._one(row, result) for row, result in zip(rows, retrieved, strict=True)]

    def _retrieve(self, rows: list[dict[str, Any]]) -> list[Any]:
        from hoprag.retrieval.base import RetrievalQuery

        queries = [RetrievalQuery(r["question"], tuple(r.get("question_entities") or ())) for r in rows]
        return self.retriever.retrieve(queries, TOP_DOCS)  # type: ignore[union-attr]

    def _one(self, row: dict[str, Any], retrieved: Any = None) -> dict[str, Any]:
        started = time.perf_counter()
        record: dict[str, Any] = {"id": row["id"], "error": None}
        try:
            titles: list[str] | None = None
            entities: list[str] = []
            answer: str | None = None
            context: str | None = None  # what the answering LLM was shown (judged for relevance)
            spec = self.system
            if spec.kind == "retrieval":
                result = retrieved if retrieved is not None else self._retrieve([row])[0]
                titles = [d.title for d in result.documents]
                entities = [name for name, _ in result.entities[:TOP_ENTITIES]]
                record["notes"] = result.notes
            elif spec.pipeline == "no_context":
                answer, cost = self._no_context(row["question"])
                record.update(cost)
            else:
                a = (
                    self.qa.answer(row["question"], top_k=TOP_DOCS)
                    if spec.pipeline == "rag"
                    else self.qa.answer(row["question"])
                )
                answer = "" if a.not_enough_info else a.answer
                titles = [d.title for d in a.documents[:TOP_DOCS]]
                if self.judge_llm is not None:
                    context = self._context(a)
                record.update(
                    {
                        "llm_calls": a.llm_calls,
                        "prompt_tokens": a.prompt_tokens,
                        "completion_tokens": a.completion_tokens,
                    }
                )
            record["answer"] = answer
            record["documents"] = titles
            record["metrics"] = score_row(row, titles, entities, answer, self.ks)
            if self.analysis:
                record["analysis"] = self._analysis(row, entities)
            if self.judge_llm is not None and answer is not None:
                self._judge(record, row, answer, context)
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"[:500]
            record["metrics"] = {}
        record["seconds"] = round(time.perf_counter() - started, 4)
        return record

    def _judge(self, record: dict[str, Any], row: dict[str, Any], answer: str, context: str | None) -> None:
        """Add the enabled judge metrics; an unreadable judge output is listed, never guessed."""
        from evaluation import judge as J

        config, question = self.judge_config, row["question"]
        scores: dict[str, float | None] = {}
        if config.enabled:
            golds = [row.get("answer") or "", *(row.get("answer_aliases") or [])]
            scores["judge"] = J.judge(self.judge_llm, [(question, golds, answer)])[0]
        if context is not None and config.context_relevance:
            scores["context_relevance"] = J.context_relevance(self.judge_llm, question, context)
        if context is not None and config.faithfulness and answer.strip():
            scores["faithfulness"] = J.faithfulness(self.judge_llm, question, answer, context)
        record["judge_prompts"] = config.prompt_versions()  # a resumed run re-judges on a change
        record["metrics"].update({k: v for k, v in scores.items() if v is not None})
        invalid = [k for k, v in scores.items() if v is None]
        if invalid:
            record["invalid_judgements"] = invalid

    def _context(self, answer: Any) -> str:
        """The retrieved context an answer was built from, shaped like the pipeline's answer prompt
        (single-shot: its triples and document openings; plan: the first triples and, if the planner
        puts documents into its prompts, their openings), cut to the judge's context budget."""
        qa = self.qa
        if self.system.pipeline == "rag":
            triples, documents, chars = qa.max_triples, qa.context_documents, qa.max_document_chars
        else:
            triples = PLAN_CONTEXT_TRIPLES
            documents, chars = qa.config.context_documents, qa.config.max_document_chars
        texts = self.index.documents.column("text")
        lines = [t.text for t in answer.triples[:triples]]
        lines += [f"{d.title}: {texts[d.doc_id].as_py()[:chars]}" for d in answer.documents[:documents]]
        return "\n".join(lines)[: self.judge_config.max_context_chars]

    def _analysis(self, row: dict[str, Any], retrieved: list[str]) -> dict[str, float | int | None]:
        """GLM-RAG section 6 from one graph search per question: the question's entity-level distance
        (:func:`evaluation.questions.entity_distance`) and, for retrievers that score entities, the
        mean hop distance from the question entities (undirected KG, cutoff 10) and the mean semantic
        similarity (question vs entity name, the index's embedder) of the top retrieved entities."""
        out: dict[str, float | int | None] = {"entity_distance": None}
        seeds = question_seeds(self.index, row)
        if not seeds:
            return out
        dist = seed_distances(self.index, seeds)
        out["entity_distance"] = entity_distance(self.index, row, dist)
        ids = [i for i in (self.index.entity_id(e) for e in retrieved[:TOP_ENTITIES]) if i is not None]
        if not ids:
            return out
        hops = [dist[i] for i in ids if i in dist]
        out["retrieved_hop_distance"] = round(sum(hops) / len(hops), 4) if hops else None
        if self.embedder is not None:
            q = self.embedder.encode([row["question"]])[0]
            sims = [float(self.index.entity_embeddings[i] @ q) for i in ids]
            out["retrieved_similarity"] = round(sum(sims) / len(sims), 4)
        return out

    def _no_context(self, question: str) -> tuple[str, dict[str, int]]:
        from hoprag.planner import prompts as P
        from hoprag.planner.llm_calls import CallLedger
        from hoprag.qa import answer_from_completion

        ledger = CallLedger()
        spec = P.final_answer_prompt(question, [], self.qa.prompt_style)
        completion = self.qa.complete([spec.prompt], spec.params, ledger, "answer")[0]
        answer, _ = answer_from_completion(spec.prompt, completion)
        return answer, {
            "llm_calls": ledger.calls,
            "prompt_tokens": ledger.prompt_tokens,
            "completion_tokens": ledger.completion_tokens,
        }
