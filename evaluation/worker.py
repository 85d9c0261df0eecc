"""The per-question evaluation step as a Ray Data callable class (system loaded once per actor).

The systems come from :mod:`hoprag.qa.builder`, the builder the Serve QA deployment and
``hoprag ask`` use: a retrieval system is the retrieval half of the ``retrieve`` mode (query-time
entity linking on the question text, then the retriever), a ``rag`` system is the ``retrieve``
mode, ``plan`` the planner, ``no_context`` the LLM alone. Any failure of one question becomes
that row's ``error``.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from evaluation.metrics import entity_recall, exact_match, f1_score, recall_at_k, step_recall
from evaluation.questions import entity_distance, question_seeds, seed_distances

if TYPE_CHECKING:
    from evaluation.config import SystemSpec
    from hoprag.kg.index import KGIndex
    from hoprag.qa.config import QASettings
    from hoprag.qa.system import QASystem

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


def score_steps(
    row: dict[str, Any], steps: list[dict[str, str]], shown: list[str] | None = None
) -> dict[str, float]:
    """``step_recall`` of a plan-mode answer where the question has a gold decomposition
    (``meta.decomposition``: MuSiQue's); nothing otherwise. With ``shown`` (the texts of the
    triples, theses and passages the step-answer prompts showed), also ``step_evidence_recall``:
    the same gold intermediate answers found in what the steps were shown. Side by side they split
    a lost hop into "the search never reached it" and "the LLM was shown it and did not answer it"."""
    gold = (row.get("meta") or {}).get("decomposition")
    if not gold:
        return {}
    texts = [text for step in steps for text in (step["query"], step["answer"])]
    recall = step_recall(row["question"], gold, texts)
    if recall is None:
        return {}
    out = {"step_recall": recall}
    evidence = None if shown is None else step_recall(row["question"], gold, shown)
    if evidence is not None:
        out["step_evidence_recall"] = evidence
    return out


PIPELINE_MODES = {"rag": "retrieve", "plan": "plan", "no_context": "no_context"}


class EvalWorker:
    """``map_batches`` callable: questions in, per-question results out."""

    def __init__(
        self,
        index_dir: str,
        system: dict[str, Any],
        qa: dict[str, Any],
        ks: list[int],
        judge: dict[str, Any] | None = None,
    ) -> None:
        from evaluation.config import SystemSpec
        from hoprag.llm.factory import LazyLLM
        from hoprag.qa.builder import assemble_qa_system, load_components
        from hoprag.qa.config import QASettings

        spec = SystemSpec.model_validate(system)
        settings = QASettings.model_validate(qa)
        llm = LazyLLM(settings.llm)  # a retrieval system loads it only for a question without stored links
        components = load_components(index_dir, settings, spec.retriever, llm)
        mode = "retrieve" if spec.kind == "retrieval" else PIPELINE_MODES[str(spec.pipeline)]
        self._bind(spec, assemble_qa_system(components, settings, mode), settings, ks)
        if spec.kind == "qa" and judge:
            from evaluation.judge import JudgeConfig
            from hoprag.llm.factory import build_llm

            self.judge_config = JudgeConfig.model_validate(judge)
            if self.judge_config.any:
                # One model in memory when the judge is the answering LLM.
                self.judge_llm = (
                    llm if self.judge_config.llm == settings.llm else build_llm(self.judge_config.llm)
                )

    @classmethod
    def for_qa_system(
        cls, qa: QASystem, settings: QASettings, ks: list[int], analysis: bool = True
    ) -> EvalWorker:
        """A retrieval-system worker over an already built ``retrieve``-mode system (``hoprag eval
        retrieval``); with ``analysis=False`` GLM-RAG section 6 is left out (no graph search)."""
        from evaluation.config import SystemSpec

        retriever = getattr(qa, "retriever", None)
        spec = SystemSpec(
            name="retriever", kind="retrieval", retriever=getattr(retriever, "name", "retriever")
        )
        worker = cls.__new__(cls)
        worker._bind(spec, qa, settings, ks)
        worker.analysis = analysis
        return worker

    def _bind(self, system: SystemSpec, qa: QASystem, settings: QASettings, ks: list[int]) -> None:
        self.system = system
        self.qa: Any = qa
        self.settings = settings
        kg = getattr(qa, "kg", None)
        self.index: KGIndex = kg.index if kg is not None else None  # type: ignore[assignment]
        self.embedder = kg.embedder if kg is not None else None
        self.ks = ks
        self.judge_llm: Any = None
        self.judge_config: Any = None
        self.analysis = True

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        rows = [json.loads(r) for r in batch["row"]]
        return {"result": [json.dumps(r) for r in self.evaluate(rows)]}

    def evaluate(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One result record per question (failures become that question's ``error``)."""
        started = time.perf_counter()
        outcomes: list[Any] = [None] * len(rows)
        try:  # one batched call (linking, GLM forward passes, LLM calls batch); on failure one by one
            if self.system.kind == "retrieval":
                outcomes = list(self.qa.retrieve([r["question"] for r in rows], TOP_DOCS))
            else:
                outcomes = self.qa.answer_batch([r["question"] for r in rows], top_k=TOP_DOCS)
        except Exception:
            outcomes = [None] * len(rows)
        share = (time.perf_counter() - started) / max(1, len(rows))
        return [self._one(row, outcome, share) for row, outcome in zip(rows, outcomes, strict=True)]

    def _alone(self, row: dict[str, Any]) -> Any:
        if self.system.kind == "retrieval":
            return self.qa.retrieve([row["question"]], TOP_DOCS)[0]
        return self.qa.answer(row["question"], top_k=TOP_DOCS)

    def _one(self, row: dict[str, Any], outcome: Any = None, batch_seconds: float = 0.0) -> dict[str, Any]:
        started = time.perf_counter()
        record: dict[str, Any] = {"id": row["id"], "error": None}
        try:
            if isinstance(outcome, Exception):
                raise outcome
            result = outcome if outcome is not None else self._alone(row)
            titles: list[str] | None = None
            entities: list[str] = []
            answer: str | None = None
            context: str | None = None  # what the answering LLM was shown (judged for relevance)
            shown: list[str] | None = None  # what the plan's step-answer prompts showed
            if self.system.kind == "retrieval":
                titles = [d.title for d in result.result.documents]
                entities = [name for name, _ in result.result.entities[:TOP_ENTITIES]]
                record["notes"] = result.result.notes
                record["question_entities"] = list(result.links.entities)
                record["link_sources"] = list(result.links.sources)
            else:
                answer = "" if result.not_enough_info else result.answer
                if self.system.pipeline != "no_context":
                    titles = [d.title for d in result.documents[:TOP_DOCS]]
                if self.judge_llm is not None and self.system.pipeline != "no_context":
                    context = self._context(result)
                record.update(
                    {
                        "llm_calls": result.llm_calls,
                        "prompt_tokens": result.prompt_tokens,
                        "completion_tokens": result.completion_tokens,
                    }
                )
                if self.system.pipeline == "rag":
                    seeds = result.steps[0].seed_sources if result.steps else {}
                    record["question_entities"] = list(seeds)
                    record["link_sources"] = list(seeds.values())
                if self.system.pipeline == "plan":
                    record["steps"] = [{"query": s.query, "answer": s.answer} for s in result.steps]
                    shown = self._shown(result)
            record["answer"] = answer
            record["documents"] = titles
            record["metrics"] = score_row(row, titles, entities, answer, self.ks)
            if "steps" in record:
                record["metrics"].update(score_steps(row, record["steps"], shown))
            if self.analysis:
                linked = {
                    **row,
                    "question_entities": record.get("question_entities", row.get("question_entities")),
                }
                record["analysis"] = self._analysis(linked, entities)
            if self.judge_llm is not None and answer is not None:
                self._judge(record, row, answer, context)
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"[:500]
            record["metrics"] = {}
        record["seconds"] = round(time.perf_counter() - started + batch_seconds, 4)
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

    def _shown(self, answer: Any) -> list[str] | None:
        """The texts every step-answer prompt of a plan-mode answer showed (its triples, theses and
        passages); ``None`` for a system that does not say (not the planner)."""
        evidence = getattr(self.qa, "evidence", None)
        if evidence is None:
            return None
        return [c.text for step in answer.steps for c in evidence.citable(step.clues)]

    def _context(self, answer: Any) -> str:
        """The retrieved context an answer was built from, shaped like the pipeline's answer prompt
        (single-shot: its triples and document openings; plan: the first triples and, if the planner
        puts documents into its prompts, their openings), cut to the judge's context budget."""
        if self.system.pipeline == "rag":
            r = self.settings.retrieve
            triples, documents, chars = r.max_triples, r.context_documents, r.max_document_chars
        else:
            p = self.settings.planner
            triples, documents, chars = PLAN_CONTEXT_TRIPLES, p.context_documents, p.max_document_chars
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
