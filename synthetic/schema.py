"""Static world schema: entity type specs and the question templates (the relations' question and
noun-phrase texts: ``relation_texts.py``; the document sentence templates: ``phrasing.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GENERAL_DOMAIN = "general"
"""Domain of the places (countries, cities, universities) shared by every question domain."""


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
    # Opt-in domains (not in DEFAULT_DOMAINS): more relation vocabularies to train a graph retriever on,
    # so that what it learns is not tied to two domains' relations.
    "band": _TypeSpec("music", 4.0, 2, "formed_year", (1955, 2020), "band", "was formed"),
    "musician": _TypeSpec("music", 6.0, 3, "birth_year", (1935, 2000), "person", "was born"),
    "album": _TypeSpec("music", 6.0, 2, "release_year", (1960, 2023), "album", "was released"),
    "record_label": _TypeSpec("music", 2.0, 2, "founded_year", (1900, 2015), "record label", "was founded"),
    "club": _TypeSpec("sports", 4.0, 2, "founded_year", (1860, 2010), "club", "was founded"),
    "athlete": _TypeSpec("sports", 7.0, 3, "birth_year", (1950, 2004), "person", "was born"),
    "coach": _TypeSpec("sports", 2.5, 2, "birth_year", (1940, 1990), "person", "was born"),
    "stadium": _TypeSpec("sports", 2.5, 2, "opened_year", (1880, 2020), "stadium", "was opened"),
}

_PERSON_TYPES = frozenset({"film_person", "business_person", "musician", "athlete", "coach"})

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
    "band": ("When was {x} formed?", "In what year was {x} formed?", "What year did {x} get together?"),
    "musician": ("When was {x} born?", "In what year was {x} born?", "What is the birth year of {x}?"),
    "album": ("When was {x} released?", "In what year did {x} come out?", "What is the release year of {x}?"),
    "record_label": (
        "When was {x} founded?",
        "In what year was {x} established?",
        "What is the founding year of {x}?",
    ),
    "club": (
        "When was {x} founded?",
        "In what year was {x} established?",
        "What is the founding year of {x}?",
    ),
    "athlete": ("When was {x} born?", "In what year was {x} born?", "What is the birth year of {x}?"),
    "coach": ("When was {x} born?", "In what year was {x} born?", "What is the birth year of {x}?"),
    "stadium": ("When was {x} opened?", "In what year did {x} open?", "What is the opening year of {x}?"),
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
    "band": (("album", "recorded_by"),),
    "musician": (("album", "produced_by"),),
    "record_label": (("band", "signed_to"),),
    "coach": (("club", "coached_by"),),
    "stadium": (("club", "home_ground"),),
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
    "band": ("formed_in", "signed_to"),
    "musician": ("born_in", "member_of"),
    "album": ("recorded_by", "produced_by"),
    "record_label": ("headquartered_in",),
    "club": ("home_ground", "coached_by"),
    "athlete": ("born_in", "plays_for"),
    "coach": ("born_in", "educated_at"),
    "stadium": ("stadium_in",),
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


def _active_types(domains: Sequence[str]) -> list[str]:
    return [t for t, spec in _TYPES.items() if spec.domain == GENERAL_DOMAIN or spec.domain in domains]
