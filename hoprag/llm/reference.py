"""A reference (oracle) extractor for synthetic benchmarks: OpenIE and NER answered from the world.

The synthetic generator writes the facts behind its documents to ``raw/world.json``. This backend
implements the :class:`~hoprag.llm.base.LLM` protocol for the indexing prompts and answers them
from those facts, as a perfect extractor would:

* OpenIE (``Passage: ...`` / ``Triples:``): every world fact whose subject and object are both
  mentioned in one sentence of the passage, plus an entity's year attribute and kind when a sentence
  mentioning it states them, as ``(subject | relation | object)`` lines. A mention is a name, or a
  pronoun (he/she/it/they) that resolves: exactly one entity named before it in the passage takes
  that pronoun (the world's ``pronoun`` attributes; the generator only writes pronouns that resolve
  so). (A sentence naming two entities that hold several relations yields all of them, e.g. a city
  "located in" a country also gives that country's "capital" fact: true facts, slightly more than the
  sentence says.)
* NER (``Question: ...`` / ``Entities:``): the world entity names that occur in the question, then
  the mentions that name a world entity in another spelling (``hoprag generate`` respells the topic
  entity of a fraction of its questions: "brado tranford", "B. Tranford", "the Brado Systems"), as
  written in the question, the way a real NER model answers (a mention grounded in the question
  text, not the KG's spelling: linking it is the indexing's job). Variants are recognised by
  :class:`~hoprag.linking.name_matcher.NameMatcher` (case, punctuation, initials and dotted
  abbreviations, acronyms, a leading "the").

Its use is to measure retrievers apart from extraction quality (an index built with it has the KG
a strong extractor would build). It reads nothing but the prompt and the world file, so it never
sees questions' answers or supporting documents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from hoprag.config import StrictModel
from hoprag.extraction.prompts import last_block
from hoprag.linking.name_matcher import NameMatcher
from hoprag.llm.base import (
    BackendSpec,
    Completion,
    GenerationParams,
    Prompt,
    PromptStyle,
    truncate_at_stop,
)


class ReferenceLLMConfig(StrictModel):
    """Where the world of the synthetic benchmark is."""

    world: Path = Field(description="The benchmark's raw/world.json (written by `hoprag generate`).")


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PRONOUN = re.compile(r"(?<!\w)(he|she|it|they)(?!\w)", re.IGNORECASE)


def reference_model_id(config: ReferenceLLMConfig) -> str:
    """The backend's ``model_id`` (part of extraction-cache keys): benchmark folder and file name."""
    world = Path(config.world)
    return f"reference:{world.parent.parent.name}/{world.name}"


def _mention_spans(text: str, names: Sequence[str]) -> list[tuple[str, tuple[int, int]]]:
    """Names occurring in ``text`` as whole words with their spans, longest name first, without
    occurrences inside longer ones."""
    found: list[tuple[str, tuple[int, int]]] = []
    for name in sorted(names, key=len, reverse=True):
        if name not in text:  # cheap test first: one regex per world name is slow on big worlds
            continue
        for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text):
            span = (m.start(), m.end())
            if not any(a <= span[0] and span[1] <= b for _, (a, b) in found):
                found.append((name, span))
    return found


def _mentions(text: str, names: Sequence[str]) -> list[str]:
    """Names occurring in ``text`` as whole words, longest first, without names inside longer ones."""
    return list(dict.fromkeys(name for name, _ in _mention_spans(text, names)))


def _question_mentions(question: str, names: Sequence[str], matcher: NameMatcher) -> list[str]:
    """NER over a question: the exact names (as :func:`_mentions`), then variant-spelled mentions as
    written. A variant span that contains exact names ("B. Tranford" around the city "Tranford")
    replaces them; one that overlaps an exact name only in part is left out."""
    exact = _mention_spans(question, names)
    variants: list[tuple[int, int]] = []
    for start, end, _ in matcher.find(question):
        overlapping = [(a, b) for _, (a, b) in exact if a < end and start < b]
        if all(start <= a and b <= end for a, b in overlapping) and (start, end) not in overlapping:
            variants.append((start, end))  # else an exact name covers it, or part of it
    kept = [n for n, (a, b) in exact if not any(s <= a and b <= e for s, e in variants)]
    found = list(dict.fromkeys(kept))
    for start, end in sorted(variants):
        mention = question[start:end]
        if mention not in found:
            found.append(mention)
    return found


class ReferenceExtractorLLM:
    """Answers hoprag's OpenIE and NER prompts from a synthetic world (completion style)."""

    def __init__(self, config: ReferenceLLMConfig) -> None:
        path = Path(config.world)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no world.json (generate the benchmark with `hoprag generate`)")
        world = json.loads(path.read_text(encoding="utf-8"))
        self._path = path
        self._config = config
        self._names: list[str] = [e["name"] for e in world["entities"]]
        self._matcher = NameMatcher(self._names)
        self._facts_by_subject: dict[str, list[tuple[str, str, str]]] = {}
        for s, r, o in world["facts"]:
            self._facts_by_subject.setdefault(s, []).append((s, r.replace("_", " "), o))
        self._attributes: dict[str, list[tuple[str, str]]] = {}
        # Worlds written before documents used pronouns have none: no pronoun resolves then.
        self._pronouns: dict[str, str] = {
            e["name"]: e["attributes"]["pronoun"] for e in world["entities"] if "pronoun" in e["attributes"]
        }
        for e in world["entities"]:
            pairs = []
            for key, value in e["attributes"].items():
                if key == "kind":
                    pairs.append(("is a", str(value)))
                elif key.endswith("_year"):
                    pairs.append((key.replace("_", " "), str(value)))
            self._attributes[e["name"]] = pairs

    @property
    def model_id(self) -> str:
        return reference_model_id(self._config)

    @property
    def prompt_style(self) -> PromptStyle:
        return "completion"

    def _resolved_pronouns(self, passage: str) -> list[tuple[str, int]]:
        """``(entity, position)`` of each pronoun in ``passage`` that exactly one entity named before it
        takes."""
        if not self._pronouns:
            return []
        spans = _mention_spans(passage, self._names)
        out = []
        for m in _PRONOUN.finditer(passage):
            word = m.group(1).lower()
            before = {name for name, (_, end) in spans if end <= m.start()}
            candidates = [name for name in before if self._pronouns.get(name) == word]
            if len(candidates) == 1:
                out.append((candidates[0], m.start()))
        return out

    def triples(self, passage: str) -> list[tuple[str, str, str]]:
        """The world's facts that ``passage`` states: both ends mentioned in one of its sentences."""
        out: list[tuple[str, str, str]] = []
        resolved = self._resolved_pronouns(passage)
        start = 0
        for sentence in _SENTENCE_END.split(passage):
            start = passage.index(sentence, start)
            end = start + len(sentence)
            named = _mentions(sentence, self._names)
            named += [n for n, pos in resolved if start <= pos < end and n not in named]
            start = end
            present = set(named)
            for s in named:
                out.extend(f for f in self._facts_by_subject.get(s, []) if f[2] in present)
                out.extend((s, rel, value) for rel, value in self._attributes.get(s, []) if value in sentence)
        return list(dict.fromkeys(out))

    def _answer(self, prompt: str) -> str:
        if prompt.rstrip().endswith("Triples:"):
            passage = last_block(prompt, "Passage:", "\nTriples:") or ""
            return "\n".join(f"({s} | {r} | {o})" for s, r, o in self.triples(passage)) + "\n\n"
        if prompt.rstrip().endswith("Entities:"):
            question = last_block(prompt, "Question:", "\nEntities:") or ""
            return "; ".join(_question_mentions(question, self._names, self._matcher)) + "\n"
        return ""

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        out = []
        for p in prompts:
            if not isinstance(p, str):
                out.append(
                    Completion(
                        text="", finish_reason="error", error="reference backend takes completion prompts"
                    )
                )
                continue
            text, _ = truncate_at_stop(self._answer(p), params.stop)
            out.append(
                Completion(text=text, prompt_tokens=len(p.split()), completion_tokens=len(text.split()))
            )
        return out


BACKEND = BackendSpec(
    name="reference",
    config_type=ReferenceLLMConfig,
    constructor=ReferenceExtractorLLM,
    model_id=reference_model_id,
    needs="world: PATH/raw/world.json",
)
