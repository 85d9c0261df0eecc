"""Deterministic synthetic multi-hop QA benchmark generator.

The generator builds a small invented world (typed entities and relations in several domains), renders
one short Wikipedia-like document per entity, and asks 2-4 hop questions over it. The output uses the
GFM-RAG raw layout::

    OUT/raw/dataset_corpus.json   {title: text}
    OUT/raw/train.json            [question, ...]
    OUT/raw/test.json             [question, ...]
    OUT/raw/world.json            entities, facts and the gold reasoning triples of every question

Every question record has ``id, question, answer, answer_aliases, supporting_facts, type, hops, domain,
supporting_entities``. ``hops`` is the number of supporting documents (2-4), which is also the number of
retrieval hops a reader needs.

Names are invented (syllable-based) so that an LLM extracting triples from the documents cannot lean on
what it memorised about real entities. Each document states only facts that are true in the world, and
the fact ``(a, r, b)`` is always stated in ``a``'s document (for ``encodes`` also in ``b``'s).

Question types:

* ``bridge``: a chain of functional relations followed forwards from a named entity ("In which country
  is the birthplace of the director of X?"), optionally ending in a year attribute ("When was ...
  born?").
* ``comparison``: two entities of the same type compared on a year attribute (answer: one of the two
  names) or on a shared relation object (answer: yes/no); either side may be reached through one hop
  ("the director of X"), giving 2, 3 or 4 supporting documents.
* ``compositional``: a chain whose first step is an inverse lookup ("the drug that treats D") that is
  then composed with further (forward or inverse) steps; every inverse step is unique in the world.

Every step of every question is unambiguous: a forward step needs exactly one fact ``(x, r, *)`` and an
inverse step exactly one fact ``(*, r, x)`` in the whole world, distractors included. Distractor entities
never appear on a reasoning chain and their documents are never supporting documents.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DOMAINS: tuple[str, ...] = ("biomedical", "business", "film")
"""Question domains. Places (countries, cities, universities) form a shared ``general`` pool."""

GENERAL_DOMAIN = "general"
QUESTION_TYPES: tuple[str, ...] = ("bridge", "comparison", "compositional")
MIN_HOPS = 2
MAX_HOPS = 4


# --------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------


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
        default_factory=lambda: list(DOMAINS),
        description=f"Domains that get entities and questions; a non-empty subset of {list(DOMAINS)}.",
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


# --------------------------------------------------------------------------------------------------
# World schema and text templates
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TypeSpec:
    domain: str
    weight: float
    min_core: int
    year_attr: str
    year_range: tuple[int, int]
    noun: str  # used in comparison questions ("Which film was released earlier, ...")
    year_vp: str  # "was released"


# Dict order is the generation order, so it must not change between runs (it never does for a literal).
_TYPES: dict[str, _TypeSpec] = {
    "country": _TypeSpec(
        GENERAL_DOMAIN, 0.6, 2, "independence_year", (1700, 1990), "country", "became independent"
    ),
    "city": _TypeSpec(GENERAL_DOMAIN, 4.0, 2, "founded_year", (900, 1900), "city", "was founded"),
    "university": _TypeSpec(
        GENERAL_DOMAIN, 2.0, 1, "founded_year", (1500, 1990), "university", "was founded"
    ),
    "film": _TypeSpec("film", 7.0, 2, "release_year", (1950, 2023), "film", "was released"),
    "film_person": _TypeSpec("film", 9.0, 3, "birth_year", (1920, 1995), "person", "was born"),
    "company": _TypeSpec("business", 5.0, 2, "founded_year", (1850, 2015), "company", "was founded"),
    "product": _TypeSpec("business", 5.0, 2, "release_year", (1980, 2023), "product", "was released"),
    "business_person": _TypeSpec("business", 5.0, 2, "birth_year", (1930, 1995), "person", "was born"),
    "drug": _TypeSpec("biomedical", 3.5, 2, "approval_year", (1950, 2023), "drug", "was approved"),
    "disease": _TypeSpec(
        "biomedical", 2.5, 2, "described_year", (1800, 2010), "disease", "was first described"
    ),
    "gene": _TypeSpec("biomedical", 2.5, 2, "identified_year", (1970, 2020), "gene", "was identified"),
    "protein": _TypeSpec(
        "biomedical", 2.5, 2, "characterized_year", (1960, 2020), "protein", "was characterized"
    ),
    "organism": _TypeSpec(
        "biomedical", 1.5, 2, "described_year", (1750, 2000), "organism", "was first described"
    ),
    "pharma": _TypeSpec("biomedical", 1.5, 2, "founded_year", (1880, 2015), "company", "was founded"),
}

_PERSON_TYPES = frozenset({"film_person", "business_person"})

_TYPE_SENTENCES: dict[str, tuple[str, ...]] = {
    "country": (
        "{s} is a country that gained independence in {y}.",
        "{s} became an independent country in {y}.",
        "{s} is a country that has been independent since {y}.",
    ),
    "city": (
        "{s} is a city founded in {y}.",
        "The city of {s} was founded in {y}.",
        "{s} is a city that was established in {y}.",
    ),
    "university": (
        "{s} is a university founded in {y}.",
        "{s} is a university established in {y}.",
        "{s} was founded in {y} as a university.",
    ),
    "film": ("{s} is a film released in {y}.", "{s} is a {y} film.", "The film {s} was released in {y}."),
    "film_person": (
        "{s} is {kind} born in {y}.",
        "{s} is {kind} who was born in {y}.",
        "Born in {y}, {s} works as {kind}.",
    ),
    "business_person": (
        "{s} is {kind} born in {y}.",
        "{s} is {kind} who was born in {y}.",
        "Born in {y}, {s} works as {kind}.",
    ),
    "company": (
        "{s} is {kind} company founded in {y}.",
        "{s} was founded in {y} as {kind} company.",
        "Founded in {y}, {s} is {kind} company.",
    ),
    "product": (
        "{s} is {kind} released in {y}.",
        "{s} is {kind} first sold in {y}.",
        "Released in {y}, {s} is {kind}.",
    ),
    "drug": (
        "{s} is {kind} approved in {y}.",
        "{s} is {kind} that was approved in {y}.",
        "Approved in {y}, {s} is {kind}.",
    ),
    "disease": (
        "{s} is a disease first described in {y}.",
        "{s} is a disease that was first described in {y}.",
        "First described in {y}, {s} is a disease.",
    ),
    "gene": (
        "{s} is a gene identified in {y}.",
        "{s} is a gene first identified in {y}.",
        "The gene {s} was identified in {y}.",
    ),
    "protein": (
        "{s} is a protein first characterized in {y}.",
        "{s} is a protein characterized in {y}.",
        "The protein {s} was first characterized in {y}.",
    ),
    "organism": (
        "{s} is {kind} first described in {y}.",
        "{s} is {kind} that was first described in {y}.",
        "First described in {y}, {s} is {kind}.",
    ),
    "pharma": (
        "{s} is a pharmaceutical company founded in {y}.",
        "{s} was founded in {y} as a pharmaceutical company.",
        "Founded in {y}, {s} is a pharmaceutical company.",
    ),
}

_MASS_SENTENCES = (
    "{s} has a mass of {m} kilodaltons.",
    "The mass of {s} is {m} kilodaltons.",
    "{s} weighs {m} kilodaltons.",
)

_YEAR_QUESTIONS: dict[str, tuple[str, ...]] = {
    "country": (
        "When did {x} gain independence?",
        "In what year did {x} become independent?",
        "What is the year of independence of {x}?",
    ),
    "city": ("When was {x} founded?", "In what year was {x} founded?", "What is the founding year of {x}?"),
    "university": (
        "When was {x} founded?",
        "In what year was {x} founded?",
        "What is the founding year of {x}?",
    ),
    "film": ("When was {x} released?", "In what year was {x} released?", "What is the release year of {x}?"),
    "film_person": ("When was {x} born?", "In what year was {x} born?", "What is the birth year of {x}?"),
    "business_person": ("When was {x} born?", "In what year was {x} born?", "What is the birth year of {x}?"),
    "company": (
        "When was {x} founded?",
        "In what year was {x} founded?",
        "What is the founding year of {x}?",
    ),
    "product": (
        "When was {x} released?",
        "In what year was {x} released?",
        "What is the release year of {x}?",
    ),
    "drug": ("When was {x} approved?", "In what year was {x} approved?", "What is the approval year of {x}?"),
    "disease": (
        "When was {x} first described?",
        "In what year was {x} first described?",
        "What is the year of the first description of {x}?",
    ),
    "gene": (
        "When was {x} identified?",
        "In what year was {x} identified?",
        "What is the year of identification of {x}?",
    ),
    "protein": (
        "When was {x} first characterized?",
        "In what year was {x} characterized?",
        "What is the year of the first characterization of {x}?",
    ),
    "organism": (
        "When was {x} first described?",
        "In what year was {x} first described?",
        "What is the year of the first description of {x}?",
    ),
    "pharma": ("When was {x} founded?", "In what year was {x} founded?", "What is the founding year of {x}?"),
}


@dataclass(frozen=True)
class _RelText:
    sentences: tuple[str, ...]  # document sentences, {s} subject and {o} object
    fwd_np: tuple[str, ...]  # noun phrase for the object, {x} describes the subject
    fwd_q: tuple[str, ...]  # question asking for the object
    inv_np: tuple[str, ...] = ()  # noun phrase for the subject, {x} describes the object
    inv_q: tuple[str, ...] = ()
    same_q: tuple[str, ...] = ()  # yes/no "same object" comparison, {a} and {b} describe two subjects
    role: str = ""  # the object's role in comparison questions ("The director of which film ...")
    both_docs: bool = False  # the object's document states the fact too


_RELATIONS: dict[str, _RelText] = {
    "city_in": _RelText(
        sentences=("{s} is located in {o}.", "{s} lies in {o}.", "{s} is a city in {o}."),
        fwd_np=(
            "the country where {x} is located",
            "the country that contains {x}",
            "the country in which {x} lies",
        ),
        fwd_q=(
            "In which country is {x} located?",
            "Which country is home to {x}?",
            "What country contains {x}?",
        ),
    ),
    "capital": _RelText(
        sentences=(
            "The capital of {s} is {o}.",
            "{o} is the capital of {s}.",
            "{o} serves as the capital city of {s}.",
        ),
        fwd_np=(
            "the capital of {x}",
            "the capital city of {x}",
            "the city that serves as the capital of {x}",
        ),
        fwd_q=(
            "What is the capital of {x}?",
            "Which city is the capital of {x}?",
            "What city serves as the capital of {x}?",
        ),
        inv_np=(
            "the country whose capital is {x}",
            "the country with {x} as its capital",
            "the nation governed from {x}",
        ),
        inv_q=(
            "Which country has {x} as its capital?",
            "Of which country is {x} the capital?",
            "Which nation is governed from {x}?",
        ),
    ),
    "university_in": _RelText(
        sentences=("{s} is located in {o}.", "{s} is based in {o}.", "The campus of {s} is in {o}."),
        fwd_np=("the city where {x} is located", "the home city of {x}", "the city that hosts {x}"),
        fwd_q=("In which city is {x} located?", "Where is {x} based?", "Which city hosts {x}?"),
        inv_np=(
            "the university located in {x}",
            "the university based in {x}",
            "the university whose campus is in {x}",
        ),
        inv_q=(
            "Which university is located in {x}?",
            "What university is based in {x}?",
            "Which university has its campus in {x}?",
        ),
    ),
    "born_in": _RelText(
        sentences=("{s} was born in {o}.", "{o} is the birthplace of {s}.", "{s} is a native of {o}."),
        fwd_np=("the birthplace of {x}", "the city where {x} was born", "the hometown of {x}"),
        fwd_q=("Where was {x} born?", "In which city was {x} born?", "What is the birthplace of {x}?"),
        inv_np=("the person born in {x}", "the person who was born in {x}", "the native of {x}"),
        inv_q=("Who was born in {x}?", "Which person was born in {x}?", "Who is a native of {x}?"),
        same_q=(
            "Were {a} and {b} born in the same city?",
            "Do {a} and {b} share the same birthplace?",
            "Is the birthplace of {a} the same as that of {b}?",
        ),
    ),
    "educated_at": _RelText(
        sentences=("{s} studied at {o}.", "{s} graduated from {o}.", "{o} is the alma mater of {s}."),
        fwd_np=("the university attended by {x}", "the alma mater of {x}", "the school where {x} studied"),
        fwd_q=("Which university did {x} attend?", "Where did {x} study?", "What is the alma mater of {x}?"),
        inv_np=("the person who studied at {x}", "the graduate of {x}", "the alumnus of {x}"),
        inv_q=("Who studied at {x}?", "Who graduated from {x}?", "Which person is an alumnus of {x}?"),
        same_q=(
            "Did {a} and {b} attend the same university?",
            "Did {a} and {b} study at the same school?",
            "Do {a} and {b} have the same alma mater?",
        ),
    ),
    "married_to": _RelText(
        sentences=("{s} is married to {o}.", "{s} and {o} are married.", "{o} is the spouse of {s}."),
        fwd_np=("the spouse of {x}", "the person married to {x}", "the partner of {x}"),
        fwd_q=("Who is {x} married to?", "Who is the spouse of {x}?", "To whom is {x} married?"),
    ),
    "directed_by": _RelText(
        sentences=("{s} was directed by {o}.", "{o} directed {s}.", "{o} is the director of {s}."),
        fwd_np=("the director of {x}", "the person who directed {x}", "the filmmaker behind {x}"),
        fwd_q=("Who directed {x}?", "Who is the director of {x}?", "Which filmmaker directed {x}?"),
        inv_np=("the film directed by {x}", "the film that {x} directed", "the movie made by {x}"),
        inv_q=("Which film did {x} direct?", "What film was directed by {x}?", "Which movie did {x} make?"),
        same_q=(
            "Were {a} and {b} directed by the same person?",
            "Do {a} and {b} have the same director?",
            "Did the same filmmaker direct {a} and {b}?",
        ),
        role="director",
    ),
    "written_by": _RelText(
        sentences=(
            "{s} was written by {o}.",
            "{o} wrote the screenplay for {s}.",
            "The screenplay of {s} was written by {o}.",
        ),
        fwd_np=("the screenwriter of {x}", "the writer of {x}", "the person who wrote {x}"),
        fwd_q=("Who wrote {x}?", "Who is the screenwriter of {x}?", "Who wrote the screenplay for {x}?"),
        inv_np=("the film written by {x}", "the film that {x} wrote", "the film scripted by {x}"),
        inv_q=(
            "Which film did {x} write?",
            "What film was written by {x}?",
            "Which film was scripted by {x}?",
        ),
        same_q=(
            "Were {a} and {b} written by the same person?",
            "Do {a} and {b} have the same screenwriter?",
            "Did the same writer write {a} and {b}?",
        ),
        role="screenwriter",
    ),
    "stars": _RelText(
        # Rendered by _stars_sentence because a film may have two stars.
        sentences=("{o} starred in {s}.", "{s} stars {o}.", "{s} features {o} in the {lead}."),
        fwd_np=("the star of {x}", "the lead actor of {x}", "the actor who starred in {x}"),
        fwd_q=("Who starred in {x}?", "Who is the star of {x}?", "Which actor starred in {x}?"),
        inv_np=("the film starring {x}", "the film in which {x} starred", "the film featuring {x}"),
        inv_q=("Which film did {x} star in?", "In which film did {x} star?", "Which film features {x}?"),
    ),
    "founded_by": _RelText(
        sentences=("{s} was founded by {o}.", "{o} founded {s}.", "{o} is the founder of {s}."),
        fwd_np=("the founder of {x}", "the person who founded {x}", "the entrepreneur who started {x}"),
        fwd_q=("Who founded {x}?", "Who is the founder of {x}?", "Who started {x}?"),
        inv_np=("the company founded by {x}", "the company that {x} founded", "the firm started by {x}"),
        inv_q=(
            "Which company did {x} found?",
            "What company was founded by {x}?",
            "Which firm did {x} start?",
        ),
        same_q=(
            "Were {a} and {b} founded by the same person?",
            "Do {a} and {b} have the same founder?",
            "Did the same person found {a} and {b}?",
        ),
        role="founder",
    ),
    "headquartered_in": _RelText(
        sentences=(
            "{s} is headquartered in {o}.",
            "The headquarters of {s} are in {o}.",
            "{s} is based in {o}.",
        ),
        fwd_np=(
            "the city where {x} is headquartered",
            "the headquarters city of {x}",
            "the city where {x} is based",
        ),
        fwd_q=(
            "Where is {x} headquartered?",
            "In which city is {x} based?",
            "Which city hosts the headquarters of {x}?",
        ),
        inv_np=(
            "the company headquartered in {x}",
            "the company based in {x}",
            "the firm with headquarters in {x}",
        ),
        inv_q=(
            "Which company is headquartered in {x}?",
            "What company is based in {x}?",
            "Which firm has its headquarters in {x}?",
        ),
        same_q=(
            "Are {a} and {b} headquartered in the same city?",
            "Are {a} and {b} based in the same city?",
            "Do {a} and {b} have their headquarters in the same city?",
        ),
    ),
    "ceo": _RelText(
        sentences=(
            "{o} is the chief executive of {s}.",
            "{s} is led by chief executive {o}.",
            "{o} serves as the CEO of {s}.",
        ),
        fwd_np=("the chief executive of {x}", "the CEO of {x}", "the person who leads {x}"),
        fwd_q=("Who is the CEO of {x}?", "Who leads {x}?", "Who is the chief executive of {x}?"),
        inv_np=("the company led by {x}", "the company whose CEO is {x}", "the firm run by {x}"),
        inv_q=(
            "Which company does {x} lead?",
            "Of which company is {x} the CEO?",
            "Which firm is run by {x}?",
        ),
        role="chief executive",
    ),
    "acquired_by": _RelText(
        sentences=("{s} was acquired by {o}.", "{o} acquired {s}.", "{o} bought {s}."),
        fwd_np=("the company that acquired {x}", "the acquirer of {x}", "the buyer of {x}"),
        fwd_q=("Which company acquired {x}?", "Who bought {x}?", "What company took over {x}?"),
        inv_np=("the company acquired by {x}", "the company that {x} bought", "the firm taken over by {x}"),
        inv_q=(
            "Which company did {x} acquire?",
            "What company did {x} buy?",
            "Which firm was taken over by {x}?",
        ),
    ),
    "manufactured_by": _RelText(
        sentences=("{s} is manufactured by {o}.", "{o} makes {s}.", "{o} produces {s}."),
        fwd_np=("the manufacturer of {x}", "the company that makes {x}", "the maker of {x}"),
        fwd_q=("Which company manufactures {x}?", "Who makes {x}?", "What company produces {x}?"),
        inv_np=("the product made by {x}", "the product that {x} manufactures", "the item produced by {x}"),
        inv_q=(
            "Which product does {x} make?",
            "What product is manufactured by {x}?",
            "Which item does {x} produce?",
        ),
        same_q=(
            "Are {a} and {b} made by the same company?",
            "Do {a} and {b} have the same manufacturer?",
            "Is the same company the maker of both {a} and {b}?",
        ),
        role="manufacturer",
    ),
    "designed_by": _RelText(
        sentences=("{s} was designed by {o}.", "{o} designed {s}.", "{o} is the designer of {s}."),
        fwd_np=("the designer of {x}", "the person who designed {x}", "the person behind the design of {x}"),
        fwd_q=("Who designed {x}?", "Who is the designer of {x}?", "Which person designed {x}?"),
        inv_np=("the product designed by {x}", "the product that {x} designed", "the device designed by {x}"),
        inv_q=(
            "Which product did {x} design?",
            "What product was designed by {x}?",
            "Which device did {x} design?",
        ),
        same_q=(
            "Were {a} and {b} designed by the same person?",
            "Do {a} and {b} have the same designer?",
            "Did the same person design {a} and {b}?",
        ),
        role="designer",
    ),
    "treats": _RelText(
        sentences=("{s} treats {o}.", "{s} is used to treat {o}.", "{o} is treated with {s}."),
        fwd_np=(
            "the disease treated by {x}",
            "the condition that {x} treats",
            "the illness treated with {x}",
        ),
        fwd_q=(
            "Which disease does {x} treat?",
            "What condition is {x} used to treat?",
            "What illness is treated with {x}?",
        ),
        inv_np=("the drug that treats {x}", "the medication used to treat {x}", "the treatment for {x}"),
        inv_q=(
            "Which drug treats {x}?",
            "What medication is used to treat {x}?",
            "What is the treatment for {x}?",
        ),
        same_q=(
            "Do {a} and {b} treat the same disease?",
            "Are {a} and {b} used against the same disease?",
            "Is the disease treated by {a} the same as the one treated by {b}?",
        ),
    ),
    "targets": _RelText(
        sentences=("{s} targets {o}.", "{s} acts on the protein {o}.", "{o} is the molecular target of {s}."),
        fwd_np=("the protein targeted by {x}", "the molecular target of {x}", "the protein that {x} acts on"),
        fwd_q=(
            "Which protein does {x} target?",
            "What is the molecular target of {x}?",
            "Which protein does {x} act on?",
        ),
        inv_np=("the drug that targets {x}", "the drug acting on {x}", "the medication that targets {x}"),
        inv_q=("Which drug targets {x}?", "What drug acts on {x}?", "Which medication targets {x}?"),
        same_q=(
            "Do {a} and {b} target the same protein?",
            "Do {a} and {b} act on the same protein?",
            "Is the target of {a} the same protein as the target of {b}?",
        ),
        role="target protein",
    ),
    "developed_by": _RelText(
        sentences=("{s} was developed by {o}.", "{o} developed {s}.", "{s} was created by the company {o}."),
        fwd_np=("the developer of {x}", "the company that developed {x}", "the firm behind {x}"),
        fwd_q=("Which company developed {x}?", "Who developed {x}?", "What company created {x}?"),
        inv_np=("the drug developed by {x}", "the drug that {x} developed", "the medication created by {x}"),
        inv_q=(
            "Which drug did {x} develop?",
            "What drug was developed by {x}?",
            "Which medication did {x} create?",
        ),
        same_q=(
            "Were {a} and {b} developed by the same company?",
            "Do {a} and {b} share the same developer?",
            "Did the same company develop {a} and {b}?",
        ),
        role="developer",
    ),
    "associated_with": _RelText(
        sentences=(
            "{s} is associated with the gene {o}.",
            "{o} is linked to {s}.",
            "Mutations in {o} are associated with {s}.",
        ),
        fwd_np=("the gene associated with {x}", "the gene linked to {x}", "the gene implicated in {x}"),
        fwd_q=(
            "Which gene is associated with {x}?",
            "What gene is linked to {x}?",
            "Which gene is implicated in {x}?",
        ),
        inv_np=(
            "the disease associated with {x}",
            "the disease linked to {x}",
            "the condition tied to mutations in {x}",
        ),
        inv_q=(
            "Which disease is associated with {x}?",
            "What disease is linked to {x}?",
            "Which condition is tied to mutations in {x}?",
        ),
        same_q=(
            "Are {a} and {b} associated with the same gene?",
            "Are {a} and {b} linked to the same gene?",
            "Is the gene linked to {a} the same as the gene linked to {b}?",
        ),
        role="associated gene",
    ),
    "caused_by": _RelText(
        sentences=("{s} is caused by {o}.", "{o} causes {s}.", "{o} is the pathogen behind {s}."),
        fwd_np=("the organism that causes {x}", "the cause of {x}", "the pathogen behind {x}"),
        fwd_q=("What organism causes {x}?", "Which pathogen causes {x}?", "What is the cause of {x}?"),
        inv_np=("the disease caused by {x}", "the illness that {x} causes", "the condition triggered by {x}"),
        inv_q=(
            "Which disease does {x} cause?",
            "What illness is caused by {x}?",
            "Which condition is triggered by {x}?",
        ),
        same_q=(
            "Are {a} and {b} caused by the same organism?",
            "Do {a} and {b} have the same cause?",
            "Is the same pathogen behind {a} and {b}?",
        ),
        role="causative organism",
    ),
    "encodes": _RelText(
        sentences=("{s} encodes {o}.", "{o} is encoded by {s}.", "{s} codes for the protein {o}."),
        fwd_np=("the protein encoded by {x}", "the protein that {x} codes for", "the protein product of {x}"),
        fwd_q=(
            "Which protein does {x} encode?",
            "What protein is encoded by {x}?",
            "Which protein does {x} code for?",
        ),
        inv_np=("the gene that encodes {x}", "the gene encoding {x}", "the gene coding for {x}"),
        inv_q=("Which gene encodes {x}?", "What gene codes for {x}?", "Which gene is {x} encoded by?"),
        both_docs=True,
    ),
    "found_in": _RelText(
        sentences=("{s} is found in {o}.", "{s} occurs in {o}.", "{o} carries the gene {s}."),
        fwd_np=(
            "the organism in which {x} is found",
            "the host organism of {x}",
            "the species that carries {x}",
        ),
        fwd_q=(
            "In which organism is {x} found?",
            "Which species carries {x}?",
            "What is the host organism of {x}?",
        ),
        inv_np=("the gene found in {x}", "the gene that {x} carries", "the gene occurring in {x}"),
        inv_q=("Which gene is found in {x}?", "What gene does {x} carry?", "Which gene occurs in {x}?"),
        same_q=(
            "Are {a} and {b} found in the same organism?",
            "Do {a} and {b} occur in the same species?",
            "Is the host organism of {a} the same as that of {b}?",
        ),
        role="host organism",
    ),
    "isolated_in": _RelText(
        sentences=(
            "{s} was first isolated in {o}.",
            "{o} is where {s} was first isolated.",
            "Researchers first isolated {s} in {o}.",
        ),
        fwd_np=(
            "the city where {x} was first isolated",
            "the place where {x} was first isolated",
            "the city in which researchers first isolated {x}",
        ),
        fwd_q=(
            "Where was {x} first isolated?",
            "In which city was {x} first isolated?",
            "In what city did researchers first isolate {x}?",
        ),
        inv_np=(
            "the organism first isolated in {x}",
            "the organism that was first isolated in {x}",
            "the species first isolated in {x}",
        ),
        inv_q=(
            "Which organism was first isolated in {x}?",
            "What organism was first isolated in {x}?",
            "Which species was first isolated in {x}?",
        ),
        same_q=(
            "Were {a} and {b} first isolated in the same city?",
            "Were {a} and {b} both first isolated in one city?",
            "Is the city where {a} was first isolated the same as that of {b}?",
        ),
    ),
}

# Comparison questions reach their compared entity directly or through one of these (start type, relation).
_VIA_EDGES: dict[str, tuple[tuple[str, str], ...]] = {
    "film_person": (("film", "directed_by"), ("film", "written_by")),
    "business_person": (("company", "founded_by"), ("company", "ceo"), ("product", "designed_by")),
    "company": (("product", "manufactured_by"),),
    "pharma": (("drug", "developed_by"),),
    "protein": (("drug", "targets"),),
    "gene": (("disease", "associated_with"),),
    "organism": (("disease", "caused_by"),),
}

# Relations whose objects "same ...?" yes/no comparisons ask about, per compared type.
_SAME_KEYS: dict[str, tuple[str, ...]] = {
    "film_person": ("born_in", "educated_at"),
    "film": ("directed_by", "written_by"),
    "business_person": ("born_in", "educated_at"),
    "company": ("headquartered_in", "founded_by"),
    "product": ("manufactured_by", "designed_by"),
    "drug": ("treats", "targets", "developed_by"),
    "disease": ("associated_with", "caused_by"),
    "gene": ("found_in",),
    "pharma": ("headquartered_in",),
    "organism": ("isolated_in",),
}

_YEAR_CMP_GENERAL = (
    "Which {noun} {vp} {cmp}, {a} or {b}?",
    "{wh} {vp} {cmp}: {a} or {b}?",
    "Between {a} and {b}, which {noun} {vp} {cmp}?",
)
_YEAR_CMP_VIA = (
    "The {role} of which {snoun} {vp} {cmp}, {a} or {b}?",
    "Which {snoun} has a {role} {rel} {vp} {cmp}, {a} or {b}?",
    "Between {a} and {b}, which {snoun} has the {role} {rel} {vp} {cmp}?",
)
_EARLIER = ("earlier", "first")
_LATER = ("later", "more recently")

# --------------------------------------------------------------------------------------------------
# Invented names
# --------------------------------------------------------------------------------------------------

_ONSETS = (
    "b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l", "m", "n",
    "p", "qu", "r", "s", "sh", "st", "t", "th", "tr", "v", "w", "z", "cl", "sk",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "i", "a")
_CODAS = ("n", "r", "l", "s", "m", "x", "nd", "rn", "ll", "ck", "th", "sk", "v", "rt")
_SURNAME_ENDS = ("eck", "ane", "ow", "ley", "ford", "wick", "mont", "er", "sen", "ard", "ell", "ing", "")
_CITY_ENDS = ("", "", "", "ford", "haven", "mar", "dale", "port", "holm", "wick", "stad", "bury")
_COUNTRY_ENDS = ("via", "ria", "land", "esh", "ara", "onia", "adia", "ovia")
_FILM_ADJ = (
    "Salt", "Silent", "Crimson", "Hollow", "Amber", "Quiet", "Broken", "Glass", "Iron", "Paper",
    "Velvet", "Golden", "Last", "Distant", "Northern", "Bitter", "Pale", "Hidden", "Restless", "Burning",
    "Winter", "Copper", "Wandering", "Lonely", "Scarlet", "Silver", "Frozen", "Painted", "Sleeping", "Crooked",
)  # fmt: skip
_FILM_NOUN = (
    "Ledger", "Harbor", "Orchard", "Lantern", "Meridian", "Tide", "Garden", "Compass", "Mirror", "Signal",
    "Archive", "Verdict", "Ferry", "Lighthouse", "Monument", "Cartographer", "Furnace", "Tapestry", "Rookery",
    "Almanac", "Carousel", "Kingdom", "Pilgrim", "Quarry", "Reckoning", "Sparrow", "Threshold", "Voyage",
    "Widow", "Orbit",
)  # fmt: skip
_INDUSTRIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("a technology", ("Systems", "Technologies", "Labs")),
    ("an energy", ("Energy", "Power")),
    ("a retail", ("Stores", "Retail")),
    ("a food", ("Foods", "Kitchens")),
    ("a logistics", ("Logistics", "Freight")),
    ("a software", ("Software", "Digital")),
    ("a manufacturing", ("Industries", "Works")),
    ("an automotive", ("Motors", "Automotive")),
    ("a textile", ("Textiles", "Mills")),
)
_PRODUCT_KINDS = (
    "a smartphone", "a laptop", "a blender", "a drone", "an electric bicycle", "a camera", "a smartwatch",
    "a vacuum cleaner", "a game console", "a coffee machine",
)  # fmt: skip
_PRODUCT_ENDS = ("", "", " Pro", " Mini", " Max", " One", " Air", " 200", " 500", " X")
_DRUG_CLASSES: tuple[tuple[str, str], ...] = (
    ("mab", "a monoclonal antibody"),
    ("zumab", "a monoclonal antibody"),
    ("tinib", "a kinase inhibitor"),
    ("vir", "an antiviral drug"),
    ("cillin", "an antibiotic"),
    ("statin", "a statin"),
    ("olol", "a beta blocker"),
    ("pril", "an ACE inhibitor"),
    ("azole", "an antifungal drug"),
)
_ORGANISM_KINDS = ("a bacterium", "a fungus", "a parasite", "a virus", "an alga")
_FILM_OCCUPATIONS = (("a film director", 3), ("an actor", 5), ("a screenwriter", 2))
_BUSINESS_OCCUPATIONS = ("an entrepreneur", "a business executive", "an engineer", "an investor")
_PHARMA_ENDS = ("Pharma", "Therapeutics", "Biologics", "Biosciences", "Pharmaceuticals")
# Invented names must not collide with well-known real places that the syllable grammar can produce.
_REAL_NAMES = frozenset(
    (
        "roma", "lima", "paris", "london", "berlin", "sofia", "vienna", "madrid", "tokyo", "dallas", "boston",
        "denver", "moscow", "cairo", "delhi", "oslo", "riga", "kiev", "milan", "nice", "bern", "doha", "dubai",
        "malta", "cuba", "peru", "chad", "mali", "iran", "iraq", "india", "china", "japan", "tonga", "samoa",
        "kenya", "ghana", "congo", "gabon", "benin", "nepal", "bolivia", "latvia", "serbia", "libya", "syria",
        "zambia", "gambia", "nigeria", "liberia", "algeria", "tunisia", "austria", "russia", "slovenia",
        "slovakia", "estonia", "armenia", "romania", "croatia", "bulgaria", "albania", "georgia", "finland",
        "iceland", "ireland", "poland", "holland", "thailand", "scotland", "bangladesh", "sweden", "norway",
        "denmark", "greece", "turkey", "spain", "italy", "france", "canada", "mexico", "brazil", "chile",
        "panama", "haiti", "jamaica", "dakota", "texas",
    )
)  # fmt: skip


class _Namer:
    """Draws invented names that are unique (case-insensitively) across the whole world."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def root(self, syllables: int, coda: float = 0.5) -> str:
        r = self.rng
        word = "".join(r.choice(_ONSETS) + r.choice(_VOWELS) for _ in range(syllables))
        if r.random() < coda:
            word += r.choice(_CODAS)
        return word.capitalize()

    @staticmethod
    def join(root: str, suffix: str) -> str:
        # "Codro" + "omin" reads better as "Codromin" than as "Codroomin".
        if suffix[:1] in "aeiouy" and suffix and root[-1:] in "aeiou":
            root = root[:-1]
        return root + suffix

    def unique(self, make: Callable[[], str]) -> str:
        for _ in range(10_000):
            name = make()
            key = name.casefold()
            if key not in self.used and key not in _REAL_NAMES:
                self.used.add(key)
                return name
        raise RuntimeError("could not draw a fresh name; the name space is exhausted")

    def person(self) -> str:
        return self.unique(
            lambda: f"{self.root(2, 0.3)} {self.join(self.root(2, 0.4), self.rng.choice(_SURNAME_ENDS))}"
        )

    def city(self) -> str:
        def make() -> str:
            suffix = self.rng.choice(_CITY_ENDS)
            return self.root(2, 0.0 if suffix else 0.8) + suffix

        return self.unique(make)

    def country(self) -> str:
        return self.unique(lambda: self.join(self.root(2, 0.0), self.rng.choice(_COUNTRY_ENDS)))

    def university(self) -> str:
        def make() -> str:
            root = self.root(2, 0.7)
            pattern = self.rng.randrange(4)
            if pattern == 0:
                return f"{root} College"
            if pattern == 1:
                return f"University of {root}"
            if pattern == 2:
                return f"{root} Institute of Technology"
            return f"{root} University"

        return self.unique(make)

    def film(self) -> str:
        def make() -> str:
            r = self.rng
            pattern = r.randrange(3)
            if pattern == 0:
                return f"The {r.choice(_FILM_ADJ)} {r.choice(_FILM_NOUN)}"
            if pattern == 1:
                return f"The {r.choice(_FILM_NOUN)} of {self.root(2, 0.6)}"
            return f"{self.root(2, 0.6)}'s {r.choice(_FILM_NOUN)}"

        return self.unique(make)

    def company(self, suffixes: tuple[str, ...]) -> str:
        return self.unique(lambda: f"{self.root(2, 0.5)} {self.rng.choice(suffixes)}")

    def product(self) -> str:
        return self.unique(lambda: self.root(2, 0.6) + self.rng.choice(_PRODUCT_ENDS))

    def drug(self, suffix: str) -> str:
        return self.unique(lambda: self.join(self.root(2, 0.0), suffix))

    def disease(self) -> str:
        def make() -> str:
            r = self.rng
            pattern = r.randrange(5)
            if pattern == 0:
                return f"{self.root(2, 0.6)} syndrome"
            if pattern == 1:
                return f"{self.root(2, 0.6)} disease"
            if pattern == 2:
                return f"{self.root(2, 0.6)} fever"
            if pattern == 3:
                return self.root(2, 1.0) + "osis"
            return self.root(2, 1.0) + "itis"

        return self.unique(make)

    def gene(self) -> str:
        # Two syllables plus a coda: short three-letter symbols such as "SOX5" are often real genes.
        return self.unique(lambda: f"{self.root(2, 1.0).upper()}{self.rng.randint(1, 19)}")

    def protein(self) -> str:
        ends = ("in", "ase", "ulin", "omin", "ectin", "orin")
        return self.unique(lambda: self.join(self.root(2, 0.0), self.rng.choice(ends)))

    def organism(self) -> str:
        def make() -> str:
            r = self.rng
            genus = self.join(self.root(2, 0.0), r.choice(("ia", "us", "ella", "omyces", "obacter", "ium")))
            species = self.join(self.root(2, 0.0).lower(), r.choice(("i", "ae", "ensis", "is", "um", "ata")))
            return f"{genus} {species}"

        return self.unique(make)

    def pharma(self) -> str:
        return self.unique(lambda: f"{self.root(2, 0.5)} {self.rng.choice(_PHARMA_ENDS)}")


# --------------------------------------------------------------------------------------------------
# Public result types
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorldEntity:
    """One entity of the synthetic world (one document)."""

    name: str
    type: str
    domain: str
    distractor: bool
    attributes: dict[str, Any]


@dataclass
class SyntheticBenchmark:
    """A generated benchmark: the corpus, the two question splits and the world behind them."""

    config: SyntheticConfig
    corpus: dict[str, str]
    train: list[dict[str, Any]]
    test: list[dict[str, Any]]
    entities: list[WorldEntity] = field(default_factory=list)
    facts: list[tuple[str, str, str]] = field(default_factory=list)
    # Question id -> gold reasoning triples (subject, relation or attribute, object or value).
    reasoning: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# World construction
# --------------------------------------------------------------------------------------------------


def _active_types(domains: Sequence[str]) -> list[str]:
    return [t for t, spec in _TYPES.items() if spec.domain == GENERAL_DOMAIN or spec.domain in domains]


def _num_distractors(num_documents: int, distractor_fraction: float) -> int:
    return int(num_documents * distractor_fraction + 0.5)


def minimum_documents(domains: Sequence[str], distractor_fraction: float = 0.2) -> int:
    """Smallest ``num_documents`` that leaves every active entity type its minimum number of core entities."""
    need = sum(_TYPES[t].min_core for t in _active_types(domains))
    n = need
    while n - _num_distractors(n, distractor_fraction) < need:
        n += 1
    return n


def _largest_remainder(total: int, weights: dict[str, float]) -> dict[str, int]:
    wsum = sum(weights.values())
    if total <= 0 or wsum <= 0:
        return dict.fromkeys(weights, 0)
    exact = {k: total * w / wsum for k, w in weights.items()}
    counts = {k: int(v) for k, v in exact.items()}
    left = total - sum(counts.values())
    # Ties broken by the fixed type order, so the split is deterministic.
    order = sorted(weights, key=lambda k: (-(exact[k] - counts[k]), list(weights).index(k)))
    for k in order[:left]:
        counts[k] += 1
    return counts


def _type_counts(config: SyntheticConfig) -> tuple[dict[str, int], dict[str, int]]:
    types = _active_types(config.domains)
    # Places are shared by all domains, so their share shrinks when fewer domains are active.
    scale = len(config.domains) / len(DOMAINS)
    weights = {t: _TYPES[t].weight * (scale if _TYPES[t].domain == GENERAL_DOMAIN else 1.0) for t in types}
    distractors = _num_distractors(config.num_documents, config.distractor_fraction)
    core_total = config.num_documents - distractors
    core = {t: _TYPES[t].min_core for t in types}
    extra = _largest_remainder(core_total - sum(core.values()), weights)
    core = {t: core[t] + extra[t] for t in types}
    dist = _largest_remainder(distractors, weights)
    # Every country needs a capital in its own pool (core or distractor), so never more countries than cities.
    for counts in (core, dist):
        if counts["country"] > counts["city"]:
            moved = counts["country"] - counts["city"]
            moved = (moved + 1) // 2
            counts["country"] -= moved
            counts["city"] += moved
    return core, dist


class _World:
    """Entities as parallel lists plus per-entity outgoing/incoming fact lists (ids, not names)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.types: list[str] = []
        self.core: list[bool] = []
        self.years: list[int] = []
        self.kind: list[str] = []  # occupation / industry / product kind / drug class / organism kind
        self.mass: list[int] = []
        self.out: list[list[tuple[str, int]]] = []
        self.inn: list[list[tuple[str, int]]] = []
        self.facts: list[tuple[int, str, int]] = []
        self.by_type: dict[str, list[int]] = {}
        self.core_by_type: dict[str, list[int]] = {}

    def add_entity(self, name: str, etype: str, core: bool, year: int, kind: str = "", mass: int = 0) -> int:
        eid = len(self.names)
        self.names.append(name)
        self.types.append(etype)
        self.core.append(core)
        self.years.append(year)
        self.kind.append(kind)
        self.mass.append(mass)
        self.out.append([])
        self.inn.append([])
        self.by_type.setdefault(etype, []).append(eid)
        if core:
            self.core_by_type.setdefault(etype, []).append(eid)
        return eid

    def add_fact(self, s: int, rel: str, o: int) -> None:
        self.facts.append((s, rel, o))
        self.out[s].append((rel, o))
        self.inn[o].append((rel, s))

    def pool(self, etype: str, for_entity: int) -> list[int]:
        # Core entities only point at core entities, so questions (built from core) never leave the core.
        return self.core_by_type.get(etype, []) if self.core[for_entity] else self.by_type.get(etype, [])

    def domain(self, eid: int) -> str:
        return _TYPES[self.types[eid]].domain

    def forward(self, eid: int, rel: str) -> list[int]:
        return [o for r, o in self.out[eid] if r == rel]

    def inverse(self, eid: int, rel: str) -> list[int]:
        return [s for r, s in self.inn[eid] if r == rel]


def _make_entities(config: SyntheticConfig, world: _World) -> None:
    rng = random.Random(f"hoprag-synthetic:{config.seed}:entities")
    namer = _Namer(rng)
    core_counts, dist_counts = _type_counts(config)
    for etype in _active_types(config.domains):
        spec = _TYPES[etype]
        for i in range(core_counts[etype] + dist_counts[etype]):
            core = i < core_counts[etype]
            year = rng.randint(*spec.year_range)
            kind = ""
            mass = 0
            if etype == "film_person":
                # The first core people cover every occupation so that every film can find a director.
                if core and i < len(_FILM_OCCUPATIONS):
                    kind = _FILM_OCCUPATIONS[i][0]
                else:
                    kind = rng.choices([o for o, _ in _FILM_OCCUPATIONS], [w for _, w in _FILM_OCCUPATIONS])[
                        0
                    ]
                name = namer.person()
            elif etype == "business_person":
                kind = rng.choice(_BUSINESS_OCCUPATIONS)
                name = namer.person()
            elif etype == "city":
                name = namer.city()
            elif etype == "country":
                name = namer.country()
            elif etype == "university":
                name = namer.university()
            elif etype == "film":
                name = namer.film()
            elif etype == "company":
                kind, suffixes = rng.choice(_INDUSTRIES)
                name = namer.company(suffixes)
            elif etype == "product":
                kind = rng.choice(_PRODUCT_KINDS)
                name = namer.product()
            elif etype == "drug":
                suffix, kind = rng.choice(_DRUG_CLASSES)
                name = namer.drug(suffix)
            elif etype == "disease":
                name = namer.disease()
            elif etype == "gene":
                name = namer.gene()
            elif etype == "protein":
                mass = rng.randint(12, 480)
                name = namer.protein()
            elif etype == "organism":
                kind = rng.choice(_ORGANISM_KINDS)
                name = namer.organism()
            elif etype == "pharma":
                name = namer.pharma()
            else:  # pragma: no cover - guarded by the type table
                raise AssertionError(etype)
            world.add_entity(name, etype, core, year, kind, mass)


def _make_facts(config: SyntheticConfig, world: _World) -> None:
    rng = random.Random(f"hoprag-synthetic:{config.seed}:facts")
    by_type = world.by_type
    core_by = world.core_by_type

    def pick(etype: str, subject: int, exclude: int = -1) -> int | None:
        pool = world.pool(etype, subject)
        if not pool:
            return None
        for _ in range(8):
            choice = pool[rng.randrange(len(pool))]
            if choice != exclude and choice != subject:
                return choice
        return None

    # Geography: the first city of each country (in its own pool) is its capital.
    capitals: dict[int, int] = {}
    for core in (True, False):
        countries = [c for c in by_type.get("country", []) if world.core[c] == core]
        cities = [c for c in by_type.get("city", []) if world.core[c] == core]
        shuffled = countries[:]
        rng.shuffle(shuffled)
        for i, city in enumerate(cities):
            if i < len(shuffled):
                country = shuffled[i]
                capitals[country] = city
            else:
                country_pool = core_by["country"] if core else by_type["country"]
                country = country_pool[rng.randrange(len(country_pool))]
            world.add_fact(city, "city_in", country)
    for country in by_type.get("country", []):
        if country in capitals:
            world.add_fact(country, "capital", capitals[country])
    for uni in by_type.get("university", []):
        city = pick("city", uni)
        if city is not None:
            world.add_fact(uni, "university_in", city)

    if "film" in config.domains:
        people = by_type["film_person"]
        occupation_pools: dict[tuple[bool, str], list[int]] = {}
        for p in people:
            occupation_pools.setdefault((True, world.kind[p]), [])
            occupation_pools.setdefault((False, world.kind[p]), [])
            if world.core[p]:
                occupation_pools[(True, world.kind[p])].append(p)
            occupation_pools[(False, world.kind[p])].append(p)

        def pick_role(film: int, occupation: str, exclude: int = -1) -> int | None:
            pool = occupation_pools.get((world.core[film], occupation), [])
            if not pool:
                return None
            for _ in range(8):
                choice = pool[rng.randrange(len(pool))]
                if choice != exclude:
                    return choice
            return None

        for p in people:
            city = pick("city", p)
            if city is not None:
                world.add_fact(p, "born_in", city)
            if rng.random() < 0.6:
                uni = pick("university", p)
                if uni is not None:
                    world.add_fact(p, "educated_at", uni)
        for core in (True, False):
            pool = [p for p in people if world.core[p] == core]
            rng.shuffle(pool)
            pairs = int(len(pool) * 0.3) // 2
            for i in range(pairs):
                a, b = pool[2 * i], pool[2 * i + 1]
                world.add_fact(a, "married_to", b)
                world.add_fact(b, "married_to", a)
        for film in by_type["film"]:
            director = pick_role(film, "a film director")
            if director is not None:
                world.add_fact(film, "directed_by", director)
            if rng.random() < 0.6:
                writer = pick_role(film, "a screenwriter")
                if writer is not None:
                    world.add_fact(film, "written_by", writer)
            first = pick_role(film, "an actor")
            if first is not None:
                world.add_fact(film, "stars", first)
                if rng.random() < 0.4:
                    second = pick_role(film, "an actor", exclude=first)
                    if second is not None:
                        world.add_fact(film, "stars", second)

    if "business" in config.domains:
        for p in by_type["business_person"]:
            city = pick("city", p)
            if city is not None:
                world.add_fact(p, "born_in", city)
            if rng.random() < 0.6:
                uni = pick("university", p)
                if uni is not None:
                    world.add_fact(p, "educated_at", uni)
        companies = by_type["company"]
        for idx, company in enumerate(companies):
            founder = pick("business_person", company)
            if founder is not None:
                world.add_fact(company, "founded_by", founder)
            city = pick("city", company)
            if city is not None:
                world.add_fact(company, "headquartered_in", city)
            if rng.random() < 0.5:
                ceo = pick("business_person", company, exclude=founder if founder is not None else -1)
                if ceo is not None:
                    world.add_fact(company, "ceo", ceo)
            # Acquirers always come earlier in the list, so acquisitions never form a cycle.
            if idx > 0 and rng.random() < 0.25:
                earlier = [
                    c for c in companies[max(0, idx - 50) : idx] if world.core[c] or not world.core[company]
                ]
                if earlier:
                    world.add_fact(company, "acquired_by", earlier[rng.randrange(len(earlier))])
        for product in by_type["product"]:
            maker = pick("company", product)
            if maker is not None:
                world.add_fact(product, "manufactured_by", maker)
            if rng.random() < 0.5:
                designer = pick("business_person", product)
                if designer is not None:
                    world.add_fact(product, "designed_by", designer)

    if "biomedical" in config.domains:
        for org in by_type["organism"]:
            city = pick("city", org)
            if city is not None:
                world.add_fact(org, "isolated_in", city)
        for pharma in by_type["pharma"]:
            city = pick("city", pharma)
            if city is not None:
                world.add_fact(pharma, "headquartered_in", city)
        # Genes and proteins pair up one-to-one inside each pool, as real gene products mostly do.
        for core in (True, False):
            genes = [g for g in by_type["gene"] if world.core[g] == core]
            proteins = [p for p in by_type["protein"] if world.core[p] == core]
            rng.shuffle(proteins)
            for gene, protein in zip(genes, proteins, strict=False):
                world.add_fact(gene, "encodes", protein)
        for gene in by_type["gene"]:
            org = pick("organism", gene)
            if org is not None:
                world.add_fact(gene, "found_in", org)
        for disease in by_type["disease"]:
            gene = pick("gene", disease)
            if gene is not None:
                world.add_fact(disease, "associated_with", gene)
            if rng.random() < 0.4:
                org = pick("organism", disease)
                if org is not None:
                    world.add_fact(disease, "caused_by", org)
        for drug in by_type["drug"]:
            for rel, target_type in (
                ("treats", "disease"),
                ("targets", "protein"),
                ("developed_by", "pharma"),
            ):
                target = pick(target_type, drug)
                if target is not None:
                    world.add_fact(drug, rel, target)


def _render_documents(config: SyntheticConfig, world: _World) -> dict[str, str]:
    rng = random.Random(f"hoprag-synthetic:{config.seed}:documents")
    names = world.names
    corpus: dict[str, str] = {}
    for eid, name in enumerate(names):
        etype = world.types[eid]
        sentences = [
            rng.choice(_TYPE_SENTENCES[etype]).format(s=name, y=world.years[eid], kind=world.kind[eid])
        ]
        if etype == "protein":
            sentences.append(rng.choice(_MASS_SENTENCES).format(s=name, m=world.mass[eid]))
        stars: list[int] = []
        for rel, obj in world.out[eid]:
            if rel == "stars":
                stars.append(obj)
                continue
            sentences.append(rng.choice(_RELATIONS[rel].sentences).format(s=name, o=names[obj]))
        if stars:
            template = rng.choice(_RELATIONS["stars"].sentences)
            lead = "lead role" if len(stars) == 1 else "lead roles"
            sentences.append(template.format(s=name, o=" and ".join(names[o] for o in stars), lead=lead))
        for rel, subj in world.inn[eid]:
            if _RELATIONS[rel].both_docs:
                sentences.append(rng.choice(_RELATIONS[rel].sentences).format(s=names[subj], o=name))
        corpus[name] = " ".join(sentences)
    return corpus


# --------------------------------------------------------------------------------------------------
# Questions
# --------------------------------------------------------------------------------------------------


@dataclass
class _Question:
    question: str
    answer: str
    qtype: str
    domain: str
    docs: list[int]
    entities: list[int]
    reasoning: list[tuple[str, str, str]]
    signature: tuple[Any, ...]


def _ucfirst(text: str) -> str:
    return text[:1].upper() + text[1:]


def _pick_template(rng: random.Random, templates: Sequence[str], nested: bool) -> str:
    """A random template; for a nested description only one that ends with it, when there is one.

    "the protein encoded by the gene linked to X" stays readable, while "the protein that the gene linked
    to X codes for" buries the verb after a long description, so long descriptions go last.
    """
    if nested:
        tail = [t for t in templates if t.endswith(("{x}", "{x}?"))]
        if tail:
            return rng.choice(tail)
    return rng.choice(templates)


def _aliases(answer: str) -> list[str]:
    # Film titles are often cited without their leading article.
    if answer.startswith("The ") and len(answer) > 4:
        return [answer[4:]]
    return []


class _QuestionMaker:
    def __init__(self, config: SyntheticConfig, world: _World) -> None:
        self.config = config
        self.world = world
        self.rng = random.Random(f"hoprag-synthetic:{config.seed}:questions")
        self.seen: set[tuple[Any, ...]] = set()
        self.seen_text: set[str] = set()
        self.domain_types: dict[str, list[str]] = {
            d: [
                t
                for t in _active_types(config.domains)
                if _TYPES[t].domain == d and world.core_by_type.get(t)
            ]
            for d in config.domains
        }
        # Compositional chains start with an inverse step; starting only where one exists keeps the
        # rejection rate low (films, for example, are never the object of a relation).
        self.inverse_starts: dict[str, list[int]] = {}
        for d in config.domains:
            self.inverse_starts[d] = [
                e
                for t in self.domain_types[d]
                for e in world.core_by_type[t]
                if self._moves(e, d, {e}, inverse=True)
            ]
        # Yes/no comparisons alternate their gold answer; "yes" is harder to find and would be rarer.
        self.yes_no = {"yes": 0, "no": 0}

    # -- chains ----------------------------------------------------------------------------------

    def _allowed(self, eid: int, domain: str, visited: set[int]) -> bool:
        w = self.world
        return w.core[eid] and eid not in visited and w.domain(eid) in (domain, GENERAL_DOMAIN)

    def _moves(self, cur: int, domain: str, visited: set[int], inverse: bool) -> list[tuple[str, bool, int]]:
        w = self.world
        moves: list[tuple[str, bool, int]] = []
        if inverse:
            counts: dict[str, list[int]] = {}
            for rel, subj in w.inn[cur]:
                counts.setdefault(rel, []).append(subj)
            for rel, subjects in counts.items():
                if (
                    len(subjects) == 1
                    and _RELATIONS[rel].inv_np
                    and self._allowed(subjects[0], domain, visited)
                ):
                    moves.append((rel, True, subjects[0]))
        else:
            counts = {}
            for rel, obj in w.out[cur]:
                counts.setdefault(rel, []).append(obj)
            for rel, objects in counts.items():
                if len(objects) == 1 and self._allowed(objects[0], domain, visited):
                    moves.append((rel, False, objects[0]))
        return moves

    def _chain(self, domain: str, hops: int, compositional: bool) -> _Question | None:
        w = self.world
        rng = self.rng
        types = self.domain_types[domain]
        if compositional:
            start_pool = self.inverse_starts[domain]
        elif types:
            start_pool = w.core_by_type[types[rng.randrange(len(types))]]
        else:
            start_pool = []
        if not start_pool:
            return None
        start = start_pool[rng.randrange(len(start_pool))]
        attr_final = rng.random() < 0.25
        visited = {start}
        cur = start
        docs: list[int] = []
        steps: list[tuple[str, bool, int, int]] = []  # relation, inverse?, from, to
        for _ in range(hops + 3):
            if attr_final and steps and len(docs) + (cur not in docs) == hops:
                break
            if not attr_final and steps and len(docs) == hops:
                break
            if len(docs) > hops:
                return None
            want_inverse = compositional and (not steps or rng.random() < 0.3)
            moves = self._moves(cur, domain, visited, inverse=want_inverse)
            if not moves and compositional and steps:
                moves = self._moves(cur, domain, visited, inverse=not want_inverse)
            if not moves:
                return None
            # Favour steps that stay inside the domain; otherwise most long chains end in geography.
            weights = [1.0 if w.domain(m[2]) == GENERAL_DOMAIN else 3.0 for m in moves]
            rel, inv, nxt = rng.choices(moves, weights)[0]
            # The document that states the fact: the subject's, or the current one if it states it too.
            subj = nxt if inv else cur
            doc = cur if (inv and _RELATIONS[rel].both_docs) else subj
            if doc not in docs:
                docs.append(doc)
            steps.append((rel, inv, cur, nxt))
            visited.add(nxt)
            cur = nxt
        else:
            return None
        if attr_final and cur not in docs:
            docs.append(cur)
        if len(docs) != hops:
            return None

        names = w.names
        desc = names[start]
        reasoning: list[tuple[str, str, str]] = []
        for k, (rel, inv, frm, to) in enumerate(steps):
            text = _RELATIONS[rel]
            last = k == len(steps) - 1 and not attr_final
            if inv:
                templates = text.inv_q if last else text.inv_np
                reasoning.append((names[to], rel, names[frm]))
            else:
                templates = text.fwd_q if last else text.fwd_np
                reasoning.append((names[frm], rel, names[to]))
            desc = _pick_template(rng, templates, nested=k > 0).format(x=desc)
        if attr_final:
            etype = w.types[cur]
            desc = _pick_template(rng, _YEAR_QUESTIONS[etype], nested=True).format(x=desc)
            answer = str(w.years[cur])
            reasoning.append((names[cur], _TYPES[etype].year_attr, answer))
        else:
            answer = names[cur]
        entities = [start] + [to for _, _, _, to in steps]
        signature = ("chain", start, tuple((r, i, t) for r, i, _, t in steps), attr_final)
        qtype = "compositional" if compositional else "bridge"
        return _Question(_ucfirst(desc), answer, qtype, domain, docs, entities, reasoning, signature)

    # -- comparisons -----------------------------------------------------------------------------

    def _side(self, target_type: str, via: tuple[str, str] | None) -> tuple[int | None, int] | None:
        w = self.world
        rng = self.rng
        if via is None:
            pool = w.core_by_type.get(target_type, [])
            return (None, pool[rng.randrange(len(pool))]) if pool else None
        start_type, rel = via
        pool = w.core_by_type.get(start_type, [])
        if not pool:
            return None
        start = pool[rng.randrange(len(pool))]
        targets = w.forward(start, rel)
        if len(targets) != 1 or not w.core[targets[0]]:
            return None
        return start, targets[0]

    def _comparison(self, domain: str, hops: int) -> _Question | None:
        w = self.world
        rng = self.rng
        names = w.names
        n_via = hops - 2
        candidates = [
            t
            for t in self.domain_types[domain]
            if n_via == 0 or any(w.core_by_type.get(s) for s, _ in _VIA_EDGES.get(t, ()))
        ]
        if not candidates:
            return None
        target_type = candidates[rng.randrange(len(candidates))]
        vias = [v for v in _VIA_EDGES.get(target_type, ()) if w.core_by_type.get(v[0])]
        via_a = vias[rng.randrange(len(vias))] if n_via == 2 else None
        via_b = vias[rng.randrange(len(vias))] if n_via >= 1 else None
        same_keys = _SAME_KEYS.get(target_type, ())
        same = bool(same_keys) and rng.random() < 0.5
        side_a = self._side(target_type, via_a)
        if side_a is None:
            return None
        start_a, target_a = side_a
        key = same_keys[rng.randrange(len(same_keys))] if same else ""
        obj_a = obj_b = -1
        yes = False
        if same:
            objects = w.forward(target_a, key)
            if len(objects) != 1:
                return None
            obj_a = objects[0]
            yes = self.yes_no["yes"] <= self.yes_no["no"]
        side_b: tuple[int | None, int] | None
        if same and yes:
            siblings = [
                t for t in w.inverse(obj_a, key) if t != target_a and w.core[t] and w.types[t] == target_type
            ]
            if not siblings:
                return None
            target_b = siblings[rng.randrange(len(siblings))]
            if via_b is None:
                side_b = (None, target_b)
            else:
                starts = [s for s in w.inverse(target_b, via_b[1]) if w.core[s] and w.types[s] == via_b[0]]
                side_b = (starts[rng.randrange(len(starts))], target_b) if starts else None
        else:
            side_b = self._side(target_type, via_b)
        if side_b is None:
            return None
        start_b, target_b = side_b
        chain_entities = [e for e in (start_a, target_a, start_b, target_b) if e is not None]
        if len(set(chain_entities)) != len(chain_entities):
            return None
        if same:
            objects = w.forward(target_b, key)
            if len(objects) != 1:
                return None
            obj_b = objects[0]
            if (obj_a == obj_b) != yes:
                return None

        def describe(start: int | None, target: int, via: tuple[str, str] | None) -> str:
            if start is None or via is None:
                return names[target]
            return rng.choice(_RELATIONS[via[1]].fwd_np).format(x=names[start])

        reasoning: list[tuple[str, str, str]] = []
        docs: list[int] = []
        for start, target, via in ((start_a, target_a, via_a), (start_b, target_b, via_b)):
            if start is not None and via is not None:
                docs.append(start)
                reasoning.append((names[start], via[1], names[target]))
            docs.append(target)
        spec = _TYPES[target_type]
        if same:
            reasoning.append((names[target_a], key, names[obj_a]))
            reasoning.append((names[target_b], key, names[obj_b]))
            desc_a = describe(start_a, target_a, via_a)
            desc_b = describe(start_b, target_b, via_b)
            question = rng.choice(_RELATIONS[key].same_q).format(a=desc_a, b=desc_b)
            answer = "yes" if yes else "no"
            entities = [*chain_entities, obj_a] + ([obj_b] if obj_b != obj_a else [])
            signature: tuple[Any, ...] = (
                "same",
                key,
                tuple(sorted([(start_a, target_a), (start_b, target_b)], key=str)),
            )
        else:
            year_a, year_b = w.years[target_a], w.years[target_b]
            if year_a == year_b:
                return None
            reasoning.append((names[target_a], spec.year_attr, str(year_a)))
            reasoning.append((names[target_b], spec.year_attr, str(year_b)))
            earlier = rng.random() < 0.5
            a_wins = (year_a < year_b) == earlier
            cmp = rng.choice(_EARLIER if earlier else _LATER)
            if n_via == 2 and start_a is not None and start_b is not None and via_a is not None:
                start_type = _TYPES[w.types[start_a]]
                template = rng.choice(_YEAR_CMP_VIA)
                question = template.format(
                    role=_RELATIONS[via_a[1]].role,
                    snoun=start_type.noun,
                    vp=spec.year_vp,
                    cmp=cmp,
                    rel="who" if target_type in _PERSON_TYPES else "that",
                    a=names[start_a],
                    b=names[start_b],
                )
                answer = names[start_a] if a_wins else names[start_b]
            else:
                template = rng.choice(_YEAR_CMP_GENERAL)
                question = template.format(
                    noun=spec.noun,
                    vp=spec.year_vp,
                    cmp=cmp,
                    wh="Who" if target_type in _PERSON_TYPES else "Which one",
                    a=describe(start_a, target_a, via_a),
                    b=describe(start_b, target_b, via_b),
                )
                answer = names[target_a] if a_wins else names[target_b]
            entities = chain_entities
            signature = ("year", tuple(sorted([(start_a, target_a), (start_b, target_b)], key=str)))
        return _Question(
            _ucfirst(question), answer, "comparison", domain, docs, entities, reasoning, signature
        )

    # -- driver ----------------------------------------------------------------------------------

    def _one(self, domain: str, qtype: str, hops: int) -> _Question | None:
        if qtype == "comparison":
            return self._comparison(domain, hops)
        return self._chain(domain, hops, compositional=qtype == "compositional")

    def _try(self, domain: str, qtype: str, attempts: int) -> _Question | None:
        hop_values = list(range(self.config.min_hops, self.config.max_hops + 1))
        self.rng.shuffle(hop_values)
        for hops in hop_values:
            for _ in range(attempts):
                q = self._one(domain, qtype, hops)
                if q is None or q.signature in self.seen or q.question in self.seen_text:
                    continue
                self.seen.add(q.signature)
                self.seen_text.add(q.question)
                if q.answer in self.yes_no and q.qtype == "comparison":
                    self.yes_no[q.answer] += 1
                return q
        return None

    def split(self, count: int, domains: Sequence[str]) -> list[_Question]:
        """``count`` distinct questions, cycling through every (domain, type) pair in a shuffled order."""
        combos = [(d, t) for d in domains for t in QUESTION_TYPES]
        # A combination is given up after several failed rounds in a row, not after one unlucky round.
        failures = dict.fromkeys(combos, 0)
        exhausted: set[tuple[str, str]] = set()
        out: list[_Question] = []
        order: list[tuple[str, str]] = []
        while len(out) < count:
            if not order:
                order = [c for c in combos if c not in exhausted]
                if not order:
                    raise ValueError(
                        f"could only build {len(out)} of {count} distinct questions over domains {list(domains)}; "
                        "raise num_documents or ask for fewer questions"
                    )
                self.rng.shuffle(order)
            combo = order.pop()
            q = self._try(*combo, attempts=40)
            if q is None:
                failures[combo] += 1
                if failures[combo] >= 3:
                    exhausted.add(combo)
            else:
                failures[combo] = 0
                out.append(q)
        return out


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def _record(q: _Question, qid: str, names: list[str]) -> dict[str, Any]:
    return {
        "id": qid,
        "question": q.question,
        "answer": q.answer,
        "answer_aliases": _aliases(q.answer),
        "supporting_facts": [names[d] for d in q.docs],
        "type": q.qtype,
        "hops": len(q.docs),
        "domain": q.domain,
        "supporting_entities": [names[e] for e in q.entities],
    }


def generate(config: SyntheticConfig) -> SyntheticBenchmark:
    """Build the world, its documents and the train/test questions described by ``config``.

    Raises ``ValueError`` when the world is too small to hold the requested number of distinct questions.
    """
    world = _World()
    _make_entities(config, world)
    _make_facts(config, world)
    corpus = _render_documents(config, world)

    maker = _QuestionMaker(config, world)
    train_domains = [d for d in config.domains if d not in config.held_out_domains]
    splits: dict[str, list[dict[str, Any]]] = {"train": [], "test": []}
    reasoning: dict[str, list[tuple[str, str, str]]] = {}
    for split, count, domains in (
        ("train", config.num_train_questions, train_domains),
        ("test", config.num_test_questions, config.domains),
    ):
        for i, q in enumerate(maker.split(count, domains)):
            qid = f"syn{config.seed}-{split}-{i:06d}"
            splits[split].append(_record(q, qid, world.names))
            reasoning[qid] = q.reasoning

    names = world.names
    entities = []
    for eid, name in enumerate(names):
        etype = world.types[eid]
        attributes: dict[str, Any] = {_TYPES[etype].year_attr: world.years[eid]}
        if world.kind[eid]:
            attributes["kind"] = world.kind[eid].split(" ", 1)[1]
        if etype == "protein":
            attributes["mass_kda"] = world.mass[eid]
        entities.append(WorldEntity(name, etype, world.domain(eid), not world.core[eid], attributes))
    facts = [(names[s], r, names[o]) for s, r, o in world.facts]
    return SyntheticBenchmark(config, corpus, splits["train"], splits["test"], entities, facts, reasoning)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file private (0600); benchmark files are meant to be shared and shipped.
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_benchmark(config: SyntheticConfig, out_dir: Path) -> SyntheticBenchmark:
    """Generate the benchmark and write ``out_dir/raw/{dataset_corpus,train,test,world}.json`` atomically."""
    bench = generate(config)
    raw = Path(out_dir) / "raw"
    world = {
        "config": config.model_dump(mode="json"),
        "entities": [
            {
                "name": e.name,
                "type": e.type,
                "domain": e.domain,
                "distractor": e.distractor,
                "attributes": e.attributes,
            }
            for e in bench.entities
        ],
        "facts": [list(f) for f in bench.facts],
        "reasoning": {qid: [list(t) for t in triples] for qid, triples in bench.reasoning.items()},
    }
    _atomic_write(raw / "dataset_corpus.json", _dumps(bench.corpus))
    _atomic_write(raw / "train.json", _dumps(bench.train))
    _atomic_write(raw / "test.json", _dumps(bench.test))
    _atomic_write(raw / "world.json", _dumps(world))
    return bench


SAMPLE_CONFIG = SyntheticConfig(seed=7, num_documents=60, num_train_questions=60, num_test_questions=20)
"""The config of the corpus shipped in ``hoprag/data/sample`` (small enough for a 270M LLM on CPU)."""

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
"""Benchmark directory of the shipped sample; its files are in ``SAMPLE_DIR / "raw"``."""
