"""A readable rendering of a planner :class:`~hoprag.planner.trace.Answer` (for ``hoprag ask``)."""

from __future__ import annotations

from hoprag.planner.trace import Answer


def format_answer(result: Answer, max_triples: int = 5, max_documents: int = 5) -> str:
    lines = [f"Q: {result.question}", f"A: {result.answer}", ""]
    for i, plan in enumerate(result.plans):
        lines.append(("plan" if i == 0 else f"plan v{i + 1}") + ":")
        lines.extend(f"  {j}. {s}" for j, s in enumerate(plan, start=1))
    for step in result.steps:
        lines.append(f"step {step.index + 1}: {step.query}  ({step.seconds:.2f} s)")
        if step.entities:
            matches = "; ".join(
                f"{m} -> {', '.join(v for v, _, _ in step.matches.get(m, [])) or '(no vertex)'}"
                for m in step.entities
            )
            lines.append(f"  entities ({step.entity_source}): {matches}")
        for clue in step.clues:
            lines.append(f"  clue [{clue.how}]: {clue.query}")
            lines.extend(f"    - {t.text}  ({t.source} {t.score:.3g})" for t in clue.triples[:max_triples])
            if len(clue.triples) > max_triples:
                lines.append(f"    ... {len(clue.triples) - max_triples} more triples")
            lines.extend(f"    * {t.text}  ({t.source} thesis)" for t in clue.theses[:max_triples])
            if clue.answer is not None:
                lines.append(f"    clue answer: {clue.answer or 'unknown'}")
        lines.append(f"  answer: {step.answer or ('found nothing' if step.found_nothing else 'unknown')}")
        lines.extend(f"  cites ({c.kind}): {c.text}" for c in step.citations[:max_triples])
        lines.extend(f"  degraded: {d}" for d in step.degraded)
    if result.documents:
        lines.append(
            "documents: " + "; ".join(f"{d.title} ({d.score:.3g})" for d in result.documents[:max_documents])
        )
    lines.extend(f"note: {n}" for n in result.notes)
    by_purpose = ", ".join(f"{k} {v}" for k, v in sorted(result.calls_by_purpose.items()))
    lines.append(
        f"LLM: {result.llm_calls} calls ({by_purpose}), {result.cache_hits} cached, "
        f"{result.prompt_tokens} prompt + {result.completion_tokens} completion tokens; {result.seconds:.1f} s"
    )
    return "\n".join(lines)
