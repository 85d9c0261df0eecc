"""The per-question evaluation step as a Ray Data callable class (system loaded once per actor).

The same code paths as serving: retrievers through :func:`hoprag.retrieval.loading.load_retriever`,
single-shot GLM-RAG through :class:`hoprag.qa.RetrieveThenAnswer`, PAI-2 through
:class:`hoprag.planner.Planner`. Any failure of one question becomes that row's ``error``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from evaluation.metrics import entity_recall, exact_match, f1_score, recall_at_k

TOP_DOCS = 10
TOP_ENTITIES = 20
DISTANCE_CUTOFF = 10  # hops, as GLM-RAG's analysis
MAX_BFS_ENTITIES = 200_000


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

        self.system = SystemSpec.model_validate(system)
        self.ks = ks
        self.index, embedder = load_index_and_embedder(index_dir)
        self.embedder = embedder
        self.retriever = None
        self.qa: Any = None
        self.judge_llm: Any = None
        spec = self.system
        if spec.retriever:
            from hoprag.retrieval.loading import load_retriever

            self.retriever = load_retriever(spec.retriever, self.index, embedder)
        if spec.kind == "qa":
            from hoprag.llm.factory import build_llm
            from hoprag.planner.knowledge import KnowledgeGraphView

            llm_config = LLMBackendConfig.model_validate(llm)
            llm_backend = build_llm(llm_config)
            if judge and judge.get("enabled"):
                from evaluation.judge import JudgeConfig

                judge_config = JudgeConfig.model_validate(judge)
                # One model in memory when the judge is the answering LLM.
                self.judge_llm = (
                    llm_backend if judge_config.llm == llm_config else build_llm(judge_config.llm)
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

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        rows = [json.loads(r) for r in batch["row"]]
        out = [self._one(r) for r in rows]
        return {"result": [json.dumps(r) for r in out]}

    def _one(self, row: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        record: dict[str, Any] = {"id": row["id"], "error": None}
        try:
            titles: list[str] | None = None
            entities: list[str] = []
            answer: str | None = None
            spec = self.system
            if spec.kind == "retrieval":
                from hoprag.retrieval.base import RetrievalQuery

                result = self.retriever.retrieve(  # type: ignore[union-attr]
                    [RetrievalQuery(row["question"], tuple(row.get("question_entities") or ()))], TOP_DOCS
                )[0]
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
            record["analysis"] = self._analysis(row, entities)
            if self.judge_llm is not None and answer is not None:
                from evaluation.judge import judge

                golds = [row.get("answer") or "", *(row.get("answer_aliases") or [])]
                verdict = judge(self.judge_llm, [(row["question"], golds, answer)])[0]
                if verdict is None:
                    record["judge_invalid"] = True  # neither yes nor no: counted, not guessed
                else:
                    record["metrics"]["judge"] = verdict
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"[:500]
            record["metrics"] = {}
        record["seconds"] = round(time.perf_counter() - started, 4)
        return record

    def _analysis(self, row: dict[str, Any], retrieved: list[str]) -> dict[str, float | int | None]:
        """GLM-RAG section 6 / appendix: entity-level distance of the question (max over reachable
        supporting entities of the hops from the nearest question entity, undirected KG, cutoff
        10) and, for retrievers that score entities, the mean hop distance and mean semantic
        similarity (question vs entity name, the index's embedder) of the top retrieved entities."""
        seeds = [
            i for i in (self.index.entity_id(e) for e in row.get("question_entities") or []) if i is not None
        ]
        out: dict[str, float | int | None] = {"entity_distance": None}
        if not seeds:
            return out
        dist = self.index.k_hop(seeds, DISTANCE_CUTOFF, max_entities=MAX_BFS_ENTITIES)
        gold = [
            i
            for i in (self.index.entity_id(e) for e in row.get("supporting_entities") or [])
            if i is not None
        ]
        reachable = [dist[g] for g in gold if g in dist and g not in seeds]
        out["entity_distance"] = max(reachable) if reachable else None
        ids = [i for i in (self.index.entity_id(e) for e in retrieved[:TOP_ENTITIES]) if i is not None]
        if ids:
            hops = [dist[i] for i in ids if i in dist]
            out["retrieved_hop_distance"] = round(sum(hops) / len(hops), 4) if hops else None
            q = self.embedder.encode([row["question"]])[0]
            sims = [float(self.index.entity_embeddings[i] @ q) for i in ids]
            out["retrieved_similarity"] = round(sum(sims) / len(sims), 4)
        return out

    def _no_context(self, question: str) -> tuple[str, dict[str, int]]:
        from hoprag.planner import prompts as P
        from hoprag.planner.llm_calls import CallLedger
        from hoprag.planner.parsing import parse_answer

        ledger = CallLedger()
        spec = P.final_answer_prompt(question, [], self.qa.prompt_style)
        completion = self.qa.complete([spec.prompt], spec.params, ledger, "answer")[0]
        parsed = parse_answer(completion.text) if completion.ok else None
        answer = parsed.value if parsed is not None and parsed.ok and parsed.value else ""
        if answer and P.copied_from_examples(spec.prompt, answer):
            answer = ""
        return answer, {
            "llm_calls": ledger.calls,
            "prompt_tokens": ledger.prompt_tokens,
            "completion_tokens": ledger.completion_tokens,
        }
