"""Benchmark configuration: domains, question types, hop limits and the validated ``SyntheticConfig``."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hoprag.config import StrictModel

from .phrasing import check_held_out_templates
from .schema import _TYPES, _active_types

DOMAINS: tuple[str, ...] = ("biomedical", "business", "film", "music", "sports")
"""Question domains. Places (countries, cities, universities) form a shared ``general`` pool."""

DEFAULT_DOMAINS: tuple[str, ...] = ("biomedical", "business", "film")
"""The domains a benchmark has unless it names its own. ``music`` and ``sports`` are opt-in: they
came later, and a default that grew would change every benchmark generated with the defaults."""

QUESTION_TYPES: tuple[str, ...] = ("bridge", "comparison", "compositional")
MIN_HOPS = 2
MAX_HOPS = 4


def _num_distractors(num_documents: int, distractor_fraction: float) -> int:
    return int(num_documents * distractor_fraction + 0.5)


def minimum_documents(domains: Sequence[str], distractor_fraction: float = 0.2) -> int:
    """Smallest ``num_documents`` that leaves every active entity type its minimum number of core entities."""
    need = sum(_TYPES[t].min_core for t in _active_types(domains))
    n = need
    while n - _num_distractors(n, distractor_fraction) < need:
        n += 1
    return n


class PhrasingConfig(StrictModel):
    """How documents word their facts (``synthetic/phrasing.py`` has the templates)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pronoun_probability: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Chance that a sentence about the document's entity after its intro names it by pronoun "
            "(he/she/they for people, it otherwise) instead of by name. Only where the pronoun is "
            "unambiguous: no other entity taking the same pronoun is mentioned earlier in the document."
        ),
    )
    two_fact_probability: float = Field(
        default=0.35,
        ge=0.0,
        le=1.0,
        description=(
            "Chance that a fact is stated together with a second one in one sentence: two verb phrases "
            "conjoined ('... was born in X and studied at Y') or one as a relative clause ('..., who was "
            "born in X, studied at Y'), or a modifier phrase hosted by another fact ('Originally from X, "
            "she studied at Y')."
        ),
    )
    filler_sentence_probability: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "Chance, for each of max_filler_sentences slots, that a document gets a distractor sentence: "
            "generic text fitting the entity's type that states no fact of the world."
        ),
    )
    max_filler_sentences: int = Field(
        default=2, ge=0, le=4, description="Most distractor (filler) sentences per document."
    )
    held_out_templates: list[str] = Field(
        default_factory=list,
        description=(
            "Template ids (RELATION/K, e.g. 'born_in/2'; world.json lists them all) used only in "
            "test-side documents: the supporting documents of test questions that support no training "
            "question. Every other document (train supporting documents, distractors, the rest) never "
            "uses them; test-side documents use them for every relation that has one."
        ),
    )
    held_out_template_fraction: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description=(
            "Also hold out max(1, round(fraction * n)) of each relation's n templates when > 0 (always "
            "leaving it a standalone template). The choice depends on the fraction only, not on the seed, "
            "so benchmarks of different seeds hold out the same templates."
        ),
    )

    @field_validator("held_out_templates")
    @classmethod
    def _known_templates(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"duplicate template id in {value}")
        check_held_out_templates(value)
        return value


class SyntheticConfig(BaseModel):
    """Parameters of a synthetic benchmark; the same config always yields byte-identical files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = Field(
        default=0, description="Seed of every random choice (names, facts, phrasing, questions)."
    )
    num_documents: int = Field(
        default=1000,
        gt=0,
        description=(
            "Exact number of documents (= entities), distractors included. round(num_documents * "
            "distractor_fraction) of them are distractors; the rest is split over entity types by fixed "
            "weights (largest remainder), with a small minimum per type."
        ),
    )
    num_train_questions: int = Field(default=200, ge=0, description="Number of training questions.")
    num_test_questions: int = Field(default=100, ge=0, description="Number of test questions.")
    domains: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DOMAINS),
        description=(
            f"Domains that get entities and questions; a non-empty subset of {list(DOMAINS)} "
            f"(default {list(DEFAULT_DOMAINS)})."
        ),
    )
    held_out_domains: list[str] = Field(
        default_factory=list,
        description="Domains whose questions go only to the test split (train never sees them).",
    )
    distractor_fraction: float = Field(
        default=0.2,
        ge=0.0,
        le=0.9,
        description="Fraction of documents about distractor entities that never take part in a question.",
    )
    min_hops: int = Field(default=2, ge=MIN_HOPS, le=MAX_HOPS, description="Fewest supporting documents.")
    max_hops: int = Field(default=4, ge=MIN_HOPS, le=MAX_HOPS, description="Most supporting documents.")
    variant_spelling_fraction: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description=(
            "Fraction of each split's questions (round(fraction * n), chosen by a seeded RNG of their own) "
            "whose mention of the topic entity is respelled: case, punctuation, abbreviation or a 'the' "
            "prefix (see synthetic/spelling.py). Each question records the kind applied in "
            "its 'spelling' field ('exact' when unchanged); answers and supporting facts never change, "
            "and the other questions are the same as with 0."
        ),
    )

    phrasing: PhrasingConfig = Field(
        default_factory=PhrasingConfig,
        description="Document phrasing: pronouns, two-fact and filler sentences, held-out templates.",
    )

    @field_validator("domains", "held_out_domains")
    @classmethod
    def _known_domains(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(DOMAINS))
        if unknown:
            raise ValueError(f"unknown domain(s) {unknown}; choose from {list(DOMAINS)}")
        if len(set(value)) != len(value):
            raise ValueError(f"duplicate domain in {value}")
        # Canonical order, so that the order the user lists domains in does not change the output.
        return [d for d in DOMAINS if d in value]

    @model_validator(mode="after")
    def _consistent(self) -> SyntheticConfig:
        if not self.domains:
            raise ValueError("domains must not be empty")
        outside = [d for d in self.held_out_domains if d not in self.domains]
        if outside:
            raise ValueError(f"held_out_domains {outside} are not in domains {self.domains}")
        if self.num_train_questions > 0 and set(self.held_out_domains) == set(self.domains):
            raise ValueError("every domain is held out, so no domain is left for the training questions")
        if self.min_hops > self.max_hops:
            raise ValueError(f"min_hops ({self.min_hops}) is greater than max_hops ({self.max_hops})")
        needed = minimum_documents(self.domains, self.distractor_fraction)
        if self.num_documents < needed:
            raise ValueError(
                f"num_documents={self.num_documents} is too small for domains {self.domains} with "
                f"distractor_fraction={self.distractor_fraction}; need at least {needed}"
            )
        return self
