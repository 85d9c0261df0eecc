"""PAI-2: answer a question by planning search steps and walking the KG for each.

Per question: optional preprocessing (denoise, enhance, decompose), a plan of search steps, and for
each step: entities → matched KG vertices → clue queries → knowledge from the configured
traversals → filtered triples → the step's answer; after a step, the plan is updated (answerability
check and plan enhancement) and the search stops early once the question can be answered.

Two call patterns share this loop (see :mod:`hoprag.planner.prompts`): the paper's (one call per
sub-task) and hoprag's (merged prompts, dictionary entity matches, literal clue queries, updates
only when a later step waits for an earlier answer). Both batch and cache through
:class:`~hoprag.planner.llm_calls.CachedLLM` unless configured off.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Literal, TypeVar

from hoprag.extraction.parsing import parse_entity_list
from hoprag.extraction.prompts import ner_prompt
from hoprag.llm.base import (
    LLM,
    TASK_ANSWER,
    TASK_NER,
    TASK_PLAN,
    TASK_UPDATE,
    PromptSpec,
    PromptStyle,
    uses_student_prompt,
)
from hoprag.planner import prompts as P
from hoprag.planner.answer_type import answer_kind, fit_answer
from hoprag.planner.citations import final_supported
from hoprag.planner.config import PlannerConfig
from hoprag.planner.enhance import fill_placeholders
from hoprag.planner.evidence import StepEvidence
from hoprag.planner.knowledge import KnowledgeGraphView, VertexMatch
from hoprag.planner.llm_calls import CachedLLM, CallLedger
from hoprag.planner.parsing import (
    Parsed,
    parse_answer,
    parse_completions,
    parse_rewritten,
    parse_steps,
    parse_update,
    parse_yes_no,
)
from hoprag.planner.questions import NOT_ENOUGH_INFO, PlannerInputError, check_question, normalize
from hoprag.planner.trace import Answer, ClueTrace, DocumentEvidence, StepTrace
from hoprag.planner.traversal.base import ClueQuery, Knowledge, Traversal, merge_knowledge
from hoprag.planner.traversal.build import build_traversals
from hoprag.retrieval.base import Retriever
from hoprag.text import dictionary_mentions

if TYPE_CHECKING:
    from hoprag.qa.events import EventSink

T = TypeVar("T")


class Planner:
    """PAI-2 over one KG index; thread-safe (per-question state lives in the call)."""

    def __init__(
        self,
        kg: KnowledgeGraphView,
        llm: LLM,
        config: PlannerConfig | None = None,
        retriever: Retriever | None = None,
        traversals: Sequence[Traversal] | None = None,
    ) -> None:
        self.kg = kg
        self.config = config or PlannerConfig()
        self.client = CachedLLM(llm, cache_size=self.config.cache_size, batch=self.config.batch_calls)
        self.traversals = (
            list(traversals) if traversals is not None else build_traversals(kg, self.config, retriever)
        )
        self._lookup = {n: i for i, n in enumerate(kg.index.entity_names)}
        self.evidence = StepEvidence(kg, self.config)

    # -- public ------------------------------------------------------------------------------
    @property
    def mode(self) -> Literal["plan"]:
        return "plan"

    def answer_batch(self, questions: Sequence[str], top_k: int | None = None) -> list[Answer | Exception]:
        """Each question in turn (a plan's calls depend on earlier answers); a refused question has
        its :class:`PlannerInputError` in its place."""
        out: list[Answer | Exception] = []
        for question in questions:
            try:
                out.append(self.answer(question, top_k))
            except PlannerInputError as exc:
                out.append(exc)
        return out

    def answer(self, question: str, top_k: int | None = None, events: EventSink | None = None) -> Answer:
        """Answer one question (evidence documents cut to ``top_k``); never raises on LLM or
        retrieval trouble (see ``Answer.notes``). With ``events``, each stage is reported as it
        finishes and the final answer call is streamed (:mod:`hoprag.qa.events`); the answer is
        the same."""
        question = self._validate(question)
        started = time.perf_counter()
        ledger = CallLedger()
        notes: list[str] = []
        asked = question
        for flag, mode in ((self.config.denoise, "denoise"), (self.config.enhance_question, "enhance")):
            if flag:
                rewritten = self._ask(
                    P.rewrite_question_prompt(asked, mode, self.style),
                    ledger,
                    f"{mode}_question",
                    parse_rewritten,
                )
                if rewritten is not None:
                    asked = rewritten
                else:
                    notes.append(f"{mode}_question: unusable output, question kept")
        sub_questions = [asked]
        if self.config.decompose:
            parts = self._ask(P.decompose_prompt(asked, self.style), ledger, "decompose", parse_steps)
            if parts:
                sub_questions = parts
            else:
                notes.append("decompose: unusable output, question kept whole")
        steps: list[StepTrace] = []
        plans: list[list[str]] = []
        sub_answers: list[tuple[str, str]] = []
        single = len(sub_questions) == 1  # else the aggregate call is the one to stream
        for sub in sub_questions:
            answer = self._search(sub, ledger, steps, plans, notes, events if single else None, events)
            sub_answers.append((sub, answer))
        if len(sub_answers) == 1:
            final = sub_answers[0][1]
        else:
            spec = P.final_answer_prompt(asked, sub_answers, self.style)
            final = self._ask_final(spec, ledger, "aggregate", events, asked, notes)
        triples, documents = self.evidence.collect(steps)
        if top_k is not None:
            documents = documents[:top_k]
        if events is not None:
            events.finish(final or NOT_ENOUGH_INFO)
        return Answer(
            question=question,
            answer=final or NOT_ENOUGH_INFO,
            not_enough_info=not final,
            steps=steps,
            plans=plans,
            documents=documents,
            triples=triples,
            seconds=time.perf_counter() - started,
            **ledger.answer_fields(),
            notes=notes,
            sub_answers=sub_answers if len(sub_answers) > 1 else [],
        )

    @property
    def style(self) -> PromptStyle:
        return self.client.prompt_style

    # -- the loop ----------------------------------------------------------------------------
    def _search(
        self,
        question: str,
        ledger: CallLedger,
        steps: list[StepTrace],
        plans: list[list[str]],
        notes: list[str],
        stream_to: EventSink | None = None,
        events: EventSink | None = None,
    ) -> str:
        """The step loop for one (sub-)question; returns its answer ('' when not enough info).
        Stages go to ``events``; the final answer call streams to ``stream_to``."""
        cfg = self.config
        first_step = len(steps)
        llm = self.client.llm
        plan = self._ask(
            P.plan_prompt(question, self.style, student=uses_student_prompt(llm, TASK_PLAN)),
            ledger,
            "plan",
            parse_steps,
        )
        if not plan:
            notes.append("plan: unusable output, the question is the only step")
            plan = [question]
        elif len(plan) == 1 and normalize(plan[0]) != normalize(question):
            # A one-step plan has nothing to split: its step can only restate the question, and a
            # small model's restatement drifts ("the narrator of X" became "the director of X").
            notes.append(f"plan: one step ({plan[0]!r}); the question itself is searched")
            plan = [question]
        plans.append(list(plan))
        if events is not None:
            events.stage("plan", question=question, plan=list(plan))
        found: list[tuple[str, str]] = []
        chained: set[int] = set()  # plan positions whose placeholders an earlier answer filled
        done, step_cost = 0, 2  # the most a step cost: the price of the next (max_llm_calls)
        while done < len(plan) and done < cfg.max_steps:
            if not ledger.affords(step_cost, cfg.max_llm_calls):
                notes.append(
                    f"stopped at max_llm_calls={cfg.max_llm_calls} with {len(plan) - done} steps left"
                )
                break
            before = ledger.calls
            step = self._run_step(len(steps), plan[done], ledger, events)
            step_cost = max(step_cost if done else 0, ledger.calls - before, 1)
            steps.append(step)
            found.append((step.query, step.answer or P.UNKNOWN))
            done += 1
            remaining = plan[done:]
            if cfg.fill_placeholders and any(P.PLACEHOLDER.search(r) for r in remaining):
                filled = fill_placeholders(remaining, found)
                if not filled.unresolved:
                    # Plan enhancement by substitution: no update call needed to rewrite the steps.
                    chained.update(
                        done + i
                        for i, (a, b) in enumerate(zip(remaining, filled.steps, strict=True))
                        if a != b
                    )
                    if filled.steps != list(remaining):  # else the placeholders wait for later steps
                        plan = plan[:done] + filled.steps
                        plans.append(list(plan))
                        if events is not None:
                            events.stage(
                                "update", step=step.index, final_answer=None, plan=list(filled.steps)
                            )
                    if filled.not_found:
                        step.degraded.append(
                            "enhance: found nothing for "
                            + ", ".join(f"[{p}]" for p in filled.not_found)
                            + "; later steps search for the description"
                        )
                    continue
            if (
                not remaining
                and (done - 1) in chained
                and step.citations
                and answer_kind(question) != "yes_no"
            ):
                # The last step of a chain asks what the question asks with the earlier answers filled
                # in: its cited answer is the answer (an update or final call would only restate it,
                # and a small model restating an answer often loses it).
                return step.answer
            if (
                cfg.merged_prompts
                and step.answer
                and len(plan) == 1
                and normalize(plan[0]) == normalize(question)
            ):
                # The plan is the question itself (unsplittable, or an unusable plan): its one step's
                # answer is the answer. An update and a final-answer call would only restate it, and
                # a small model restating it often loses it (answers with a name from the question).
                return step.answer
            if cfg.merged_prompts:
                if (
                    remaining
                    and cfg.skip_needless_updates
                    and not any(P.PLACEHOLDER.search(s) for s in remaining)
                ):
                    continue
                if not ledger.affords(1, cfg.max_llm_calls):
                    notes.append(f"stopped at max_llm_calls={cfg.max_llm_calls} before an update")
                    break
                update = self._ask(
                    P.update_prompt(
                        question,
                        found,
                        remaining,
                        self.style,
                        student=uses_student_prompt(llm, TASK_UPDATE),
                    ),
                    ledger,
                    "update",
                    parse_update,
                    step,
                )
                if events is not None:
                    events.stage(
                        "update",
                        step=step.index,
                        final_answer=update.final_answer if update is not None else None,
                        plan=list(update.remaining) if update is not None and update.remaining else None,
                    )
                if update is None:
                    step.degraded.append("update: plan kept")
                    continue
                if update.final_answer:
                    final, problem = fit_answer(question, update.final_answer)
                    if final and self._supported_final(final, question, steps[first_step:], step.degraded):
                        return final
                    if final:
                        problem = "the search does not stand behind it"
                    step.degraded.append(f"update: {problem}; the final answer is asked from the findings")
                    break
                if update.remaining is not None and update.remaining != remaining:
                    plan = plan[:done] + update.remaining
                    plans.append(list(plan))
            else:
                if remaining:
                    new = self._ask(
                        P.enhance_prompt(question, found, remaining, self.style),
                        ledger,
                        "enhance",
                        parse_steps,
                        step,
                    )
                    if new is None:
                        step.degraded.append("enhance: plan kept")
                    elif new != remaining:
                        plan = plan[:done] + new
                        plans.append(list(plan))
                answerable = self._ask(
                    P.answerable_prompt(question, found, self.style), ledger, "answerable", parse_yes_no, step
                )
                if events is not None:
                    events.stage(
                        "update", step=step.index, answerable=bool(answerable), plan=list(plan[done:])
                    )
                if answerable:
                    break
        else:
            if done < len(plan):
                notes.append(f"stopped after max_steps={cfg.max_steps} with {len(plan) - done} steps left")
        spec = self._final_prompt(question, found, steps[first_step:])
        final = self._ask_final(spec, ledger, "final_answer", stream_to, question, notes)
        final = self._supported_final(final, question, steps[first_step:], notes)
        searched = any(normalize(s.query) == normalize(question) for s in steps[first_step:])
        if (
            final
            or not cfg.question_fallback
            or searched
            or not ledger.affords(step_cost, cfg.max_llm_calls, 0)
        ):
            return final
        # The plan's steps did not reach an answer: search the question whole, as retrieve mode does.
        step = self._run_step(len(steps), question, ledger, events)
        steps.append(step)
        plans.append([*plan, question])
        notes.append(
            "question_fallback: the plan found no answer; the question itself was searched"
            + ("" if step.answer else " and found nothing")
        )
        return step.answer

    def _supported_final(
        self, final: str, question: str, steps: Sequence[StepTrace], notes: list[str]
    ) -> str:
        """``final`` when the search stands behind it (:func:`final_supported`), else no answer, with
        a note. Yes/no answers compare what the steps found and are kept."""
        if not final or not self.config.require_citations or answer_kind(question) == "yes_no":
            return final
        problem = final_supported(final, question, steps)
        if problem is None:
            return final
        notes.append(f"final_answer: {final!r} {problem}; not answered")
        return ""

    def _final_prompt(
        self, question: str, found: Sequence[tuple[str, str]], steps: Sequence[StepTrace]
    ) -> PromptSpec:
        """The final-answer prompt over the step findings; for a yes/no question, the answer prompt
        over every step's facts and documents instead. A yes/no answer is a comparison of facts the
        steps found (two objects equal or not), which the findings' "question -> answer" lines do
        not set side by side; the final-answer prompt's examples all answer with a name, and a
        small model answered yes/no questions with one. The answer prompt is the one retrieve mode
        and the distilled student answer comparisons with."""
        if answer_kind(question) != "yes_no":
            return P.final_answer_prompt(question, found, self.style)
        clues = [c for s in steps for c in s.clues]
        facts = self.evidence.facts(clues)
        return P.answer_prompt(
            question,
            facts,
            self.style,
            self.evidence.document_texts(clues),
            student=uses_student_prompt(self.client.llm, TASK_ANSWER),
        )

    def _run_step(
        self, index: int, query: str, ledger: CallLedger, events: EventSink | None = None
    ) -> StepTrace:
        cfg = self.config
        started = time.perf_counter()
        step = StepTrace(index=index, query=query)
        # a. entities
        mentions = dictionary_mentions(query, self._lookup) if cfg.dictionary_entities else []
        step.entity_source = "dictionary"
        if not mentions:
            step.entity_source = "llm"
            spec = ner_prompt(query, self.style, student=uses_student_prompt(self.client.llm, TASK_NER))
            completion = self.client.complete([spec.prompt], spec.params, ledger, "entities")[0]
            if completion.ok:
                mentions, _ = parse_entity_list(completion.text, query, spec.output_format)
            else:
                step.degraded.append(f"entities: {completion.error}")
        step.entities = list(dict.fromkeys(m for m in mentions if m.strip()))
        # b. vertices
        matched: dict[str, list[VertexMatch]] = {}
        if step.entities:
            vectors = self.kg.embed(step.entities)
            m = cfg.matching
            for mention, vec in zip(step.entities, vectors, strict=True):
                hits = self.kg.match_vertices(
                    mention,
                    m.vertices_per_entity,
                    weights=(m.dense_weight, m.bm25_weight),
                    min_similarity=m.min_similarity,
                    mention_vector=vec,
                )
                if hits:
                    matched[mention] = hits
                step.matches[mention] = [(h.name, round(h.score, 4), h.exact) for h in hits]
                for h in hits:  # named like the question linkers: how each candidate seed was found
                    exact = "dictionary" if step.entity_source == "dictionary" else "llm_exact"
                    step.seed_sources.setdefault(h.name, exact if h.exact else "llm_nearest")
        if not matched:
            step.degraded.append(
                "no entity matched a KG vertex: clue query is the step itself, without seeds"
            )
        if events is not None:
            events.stage(
                "seeds",
                step=index,
                query=query,
                entities=list(step.entities),
                entity_source=step.entity_source,
                seeds=dict(step.seed_sources),
            )
        # c. clue queries
        clues = self._clue_queries(query, matched, ledger, step)
        # d. knowledge per clue query, filtered
        vectors = self.kg.embed([c.query for c in clues])
        per_clue: list[Knowledge] = []
        for clue, vec in zip(clues, vectors, strict=True):
            seeds = tuple(i for name in clue.seeds if (i := self.kg.index.entity_id(name)) is not None)
            cq = ClueQuery(clue.query, vec, seeds)
            knowledge = merge_knowledge([self._traverse(t, cq) for t in self.traversals])
            clue.notes.extend(knowledge.notes)
            clue.triples = self.evidence.triples(cq, knowledge)
            clue.theses = self.evidence.theses(knowledge)
            clue.documents = [
                DocumentEvidence(d.doc_id, d.title, round(d.score, 6)) for d in knowledge.documents
            ]
            per_clue.append(knowledge)
        step.clues = clues
        if events is not None:
            from hoprag.qa.events import documents_payload, triples_payload

            evidence, docs = self.evidence.collect([step])
            events.stage(
                "triples",
                step=index,
                clue_queries=[c.query for c in clues],
                triples=triples_payload(evidence),
                theses=list(dict.fromkeys(t.text for c in clues for t in c.theses)),
                documents=documents_payload(docs),
            )
        # e. the step's answer, from the evidence shown, and the evidence that states it
        student = uses_student_prompt(self.client.llm, TASK_ANSWER)
        evidence = self.evidence.citable(clues)
        if not evidence:
            step.found_nothing = True
            step.degraded.append("step_answer: the traversals found nothing for this step; no answer asked")
            answer = None
        elif cfg.merged_prompts:
            spec = P.answer_prompt(
                query,
                self.evidence.facts(clues),
                self.style,
                self.evidence.document_texts(clues),
                student=student,
            )
            answer = self._ask(spec, ledger, "step_answer", parse_answer, step)
        else:
            specs = [
                P.answer_prompt(
                    c.query,
                    self.evidence.facts([c]),
                    self.style,
                    self.evidence.document_texts([c]),
                    student=student,
                )
                for c in clues
            ]
            outs = self._ask_many(specs, ledger, "clue_answer", parse_answer, step)
            for c, a in zip(clues, outs, strict=True):
                c.answer = a if a is not None else ""
            pairs = [(c.query, c.answer or P.UNKNOWN) for c in clues]
            answer = self._ask(
                P.summary_prompt(query, pairs, self.style), ledger, "step_summary", parse_answer, step
            )
        step.answer, problem = fit_answer(query, answer or "")
        if problem:
            step.degraded.append(f"step_answer: {problem}")
        self.evidence.cite(step, evidence)
        step.seconds = time.perf_counter() - started
        if events is not None:
            events.stage(
                "step_answer",
                step=index,
                query=query,
                answer=step.answer,
                found_nothing=step.found_nothing,
                citations=[asdict(c) for c in step.citations],
            )
        return step

    def _clue_queries(
        self, query: str, matched: dict[str, list[VertexMatch]], ledger: CallLedger, step: StepTrace
    ) -> list[ClueTrace]:
        if not matched:
            return [ClueTrace(query=query, seeds=[], how="step")]
        mentions = list(matched)
        combos = list(
            itertools.islice(itertools.product(*(matched[m] for m in mentions)), self.config.max_clue_queries)
        )
        out: list[ClueTrace] = []
        need_llm: list[tuple[int, list[tuple[str, str]]]] = []
        for combo in combos:
            seeds = [v.name for v in combo]
            pairs = [(m, self.kg.entity_text(v.entity_id)) for m, v in zip(mentions, combo, strict=True)]
            literal = all(v.exact or m.lower() in query.lower() for m, v in zip(mentions, combo, strict=True))
            if self.config.literal_clue_queries and literal:
                text = query
                for m, name in pairs:
                    if normalize(m) != normalize(name):
                        text = re.sub(re.escape(m), name, text, flags=re.IGNORECASE)
                out.append(ClueTrace(query=text, seeds=seeds, how="literal"))
            else:
                out.append(ClueTrace(query=query, seeds=seeds, how="llm"))
                need_llm.append((len(out) - 1, pairs))
        if need_llm:
            specs = [P.clue_query_prompt(query, pairs, self.style) for _, pairs in need_llm]
            rewritten = self._ask_many(specs, ledger, "clue_query", parse_rewritten, step)
            for (i, _), text in zip(need_llm, rewritten, strict=True):
                if text:
                    out[i].query = text
        unique: dict[tuple[str, tuple[str, ...]], ClueTrace] = {}
        for c in out:
            unique.setdefault((c.query, tuple(c.seeds)), c)
        return list(unique.values())

    @staticmethod
    def _traverse(traversal: Traversal, query: ClueQuery) -> Knowledge:
        """One traversal's findings; a failing traversal (e.g. a remote retriever that died) is a note."""
        try:
            return traversal.retrieve(query)
        except Exception as exc:
            return Knowledge(notes=[f"{traversal.name}: failed ({type(exc).__name__})"])

    # -- LLM helpers -------------------------------------------------------------------------
    def _ask(self, spec: PromptSpec, ledger: CallLedger, purpose: str, parser, step: StepTrace | None = None):
        return self._ask_many([spec], ledger, purpose, parser, step)[0]

    def _ask_final(
        self,
        spec: PromptSpec,
        ledger: CallLedger,
        purpose: str,
        stream_to: EventSink | None,
        question: str,
        notes: list[str],
    ) -> str:
        """The final answer to ``question`` ("" when none): one call, streamed to ``stream_to`` (as
        generated) when given; an answer of the wrong kind is none, with the reason in ``notes``."""
        if stream_to is None:
            answer = self._ask(spec, ledger, purpose, parse_answer)
        else:
            completion = self.client.complete_streamed(
                spec.prompt, spec.params, ledger, purpose, stream_to.answer_stream(question), stream_to.cancel
            )
            answer = parse_completions([spec], [completion], purpose, parse_answer)[0]
        final, problem = fit_answer(question, answer or "")
        if problem:
            notes.append(f"{purpose}: {problem}")
        return final

    def _ask_many(
        self,
        specs: Sequence[PromptSpec],
        ledger: CallLedger,
        purpose: str,
        parser: Callable[[str], Parsed[T]],
        step: StepTrace | None = None,
    ) -> list[T | None]:
        """Parsed values (``None`` where the call failed or its output was unusable, with a recorded reason)."""
        if not specs:
            return []
        completions = self.client.complete([s.prompt for s in specs], specs[0].params, ledger, purpose)
        return parse_completions(specs, completions, purpose, parser, step)

    def _validate(self, question: str) -> str:
        return check_question(question, self.config.max_question_chars)
