"""Document phrasing: the sentence templates of every relation (with stable ids), pronoun agreement,
and the words that name each relation (intros and filler sentences: :mod:`.fillers`).

A relation fact ``(s, r, o)`` is stated with one of ``r``'s *phrases*. Each phrase has an id
``"{relation}/{k}"`` (``k`` its position in the relation's tuple: append new phrases, never reorder or
remove, so ids stay stable across versions) and one of four syntactic kinds:

* ``vp``: a verb phrase said of the subject ("was born in {o}"). Alone it is the sentence "{s} was
  born in {o}."; it can also be conjoined with a second one ("{s} was born in {o1} and studied at
  {o2}."), turned into a relative clause ("{s}, who was born in {o1}, studied at {o2}.") and its
  subject can be a pronoun ("She was born in {o}.").
* ``clause``: a whole sentence in any word order ("{o} is the birthplace of {s}.", "At {o}, {s}
  earned a degree.", "{o} is the city where {s} was born.").
* ``apposition``: a modifier set off after the subject ("{s}, a native of {o}, {host}.").
* ``fronted``: a fronted adverbial or participial phrase ("Originally from {o}, {s} {host}.").

The two modifier kinds need a *host*: the verb phrase of another fact (a sentence stating two facts),
the document's intro ("{s}, a native of {o}, is an actor born in 1980.") or a filler verb phrase that
states no fact ("Originally from {o}, she has given few interviews."). Every phrase avoids the words
he/she/it/they, so a pronoun in a document always stands for an entity.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

VP = "vp"
CLAUSE = "clause"
APPOSITION = "apposition"
FRONTED = "fronted"
PHRASE_KINDS = (VP, CLAUSE, APPOSITION, FRONTED)
MODIFIER_KINDS = frozenset({APPOSITION, FRONTED})
STANDALONE_KINDS = frozenset({VP, CLAUSE})


@dataclass(frozen=True)
class Phrase:
    """One way of stating a relation fact: ``{s}`` subject, ``{o}`` object, ``{lead}`` (``stars`` only)."""

    kind: str
    text: str

    def __post_init__(self) -> None:
        assert self.kind in PHRASE_KINDS, self.kind


def _vp(text: str) -> Phrase:
    return Phrase(VP, text)


def _clause(text: str) -> Phrase:
    return Phrase(CLAUSE, text)


def _appos(text: str) -> Phrase:
    return Phrase(APPOSITION, text)


def _fronted(text: str) -> Phrase:
    return Phrase(FRONTED, text)


# Person-subject verb phrases start with a verb that agrees with singular "they" through _PLURAL_VERBS
# or with a past-tense verb (tests/unit/test_synthetic.py checks this).
PHRASES: dict[str, tuple[Phrase, ...]] = {
    "city_in": (
        _vp("is located in {o}"),
        _vp("lies in {o}"),
        _clause("{o} is the country in which {s} lies."),
        _appos("a city in {o}"),
        _fronted("Situated in {o}"),
    ),
    "capital": (
        _vp("has {o} as its capital"),
        _clause("{o} is the capital of {s}."),
        _clause("The capital of {s} is {o}."),
        _appos("whose capital is {o}"),
        _fronted("With {o} as its capital"),
        _clause("{o} serves as the capital city of {s}."),
    ),
    "university_in": (
        _vp("is located in {o}"),
        _vp("is based in {o}"),
        _clause("The campus of {s} is in {o}."),
        _appos("based in {o}"),
        _fronted("Set in the city of {o}"),
    ),
    "born_in": (
        _vp("was born in {o}"),
        _vp("hails from {o}"),
        _clause("{o} is the birthplace of {s}."),
        _clause("{o} is the city where {s} was born."),
        _appos("a native of {o}"),
        _fronted("Originally from {o}"),
    ),
    "educated_at": (
        _vp("studied at {o}"),
        _vp("graduated from {o}"),
        _clause("{o} is the alma mater of {s}."),
        _appos("a graduate of {o}"),
        _fronted("After studying at {o}"),
        _clause("At {o}, {s} earned a degree."),
    ),
    "married_to": (
        _vp("is married to {o}"),
        _clause("{s} and {o} are married."),
        _clause("{o} is the spouse of {s}."),
        _appos("the spouse of {o}"),
        _fronted("Married to {o}"),
    ),
    "directed_by": (
        _vp("was directed by {o}"),
        _clause("{o} directed {s}."),
        _clause("{o} is the director of {s}."),
        _appos("a film directed by {o}"),
        _fronted("Directed by {o}"),
        _clause("Among the films directed by {o} is {s}."),
    ),
    "written_by": (
        _vp("was written by {o}"),
        _clause("{o} wrote the screenplay for {s}."),
        _clause("The screenplay of {s} was written by {o}."),
        _appos("written by {o}"),
        _fronted("Based on a screenplay by {o}"),
        _vp("has a screenplay by {o}"),
    ),
    # {o} may be two coordinated names ("A and B"), so these never need verb agreement with it.
    "stars": (
        _clause("{o} starred in {s}."),
        _vp("stars {o}"),
        _vp("features {o} in the {lead}"),
        _appos("starring {o}"),
        _fronted("With {o} in the {lead}"),
        _clause("The {lead} in {s} went to {o}."),
    ),
    "founded_by": (
        _vp("was founded by {o}"),
        _clause("{o} founded {s}."),
        _clause("{o} is the founder of {s}."),
        _appos("the firm started by {o}"),
        _fronted("Started by {o}"),
        _vp("has {o} as its founder"),
    ),
    "headquartered_in": (
        _vp("is headquartered in {o}"),
        _clause("The headquarters of {s} are in {o}."),
        _vp("has its head office in {o}"),
        _appos("based in {o}"),
        _fronted("Headquartered in {o}"),
        _clause("{o} is home to the headquarters of {s}."),
    ),
    "ceo": (
        _clause("{o} is the chief executive of {s}."),
        _vp("is led by chief executive {o}"),
        _clause("{o} serves as the CEO of {s}."),
        _appos("led by chief executive {o}"),
        _fronted("Under chief executive {o}"),
        _vp("has {o} as its chief executive"),
    ),
    "acquired_by": (
        _vp("was acquired by {o}"),
        _clause("{o} acquired {s}."),
        _clause("{o} bought {s}."),
        _appos("now part of {o}"),
        _fronted("Following its acquisition by {o}"),
        _vp("became part of {o} through an acquisition"),
    ),
    "manufactured_by": (
        _vp("is manufactured by {o}"),
        _clause("{o} makes {s}."),
        _clause("{o} produces {s}."),
        _appos("made by {o}"),
        _fronted("Manufactured by {o}"),
        _vp("is made in the factories of {o}"),
    ),
    "designed_by": (
        _vp("was designed by {o}"),
        _clause("{o} designed {s}."),
        _clause("{o} is the designer of {s}."),
        _appos("a design of {o}"),
        _fronted("Designed by {o}"),
    ),
    "treats": (
        _vp("treats {o}"),
        _vp("is used to treat {o}"),
        _clause("{o} is treated with {s}."),
        _appos("a treatment for {o}"),
        _fronted("Used against {o}"),
        _clause("Patients with {o} receive {s}."),
    ),
    "targets": (
        _vp("targets {o}"),
        _vp("acts on the protein {o}"),
        _clause("{o} is the molecular target of {s}."),
        _appos("which acts on {o}"),
        _fronted("By binding {o}"),
    ),
    "developed_by": (
        _vp("was developed by {o}"),
        _clause("{o} developed {s}."),
        _vp("was created by the company {o}"),
        _appos("a product of {o}"),
        _fronted("Developed at {o}"),
        _clause("The developer of {s} is {o}."),
    ),
    "associated_with": (
        _vp("is associated with the gene {o}"),
        _clause("{o} is linked to {s}."),
        _clause("Mutations in {o} are associated with {s}."),
        _appos("which is linked to the gene {o}"),
        _fronted("Linked to mutations in {o}"),
    ),
    "caused_by": (
        _vp("is caused by {o}"),
        _clause("{o} causes {s}."),
        _clause("{o} is the pathogen behind {s}."),
        _appos("an infection caused by {o}"),
        _fronted("Caused by {o}"),
    ),
    "encodes": (
        _vp("encodes {o}"),
        _clause("{o} is encoded by {s}."),
        _vp("codes for the protein {o}"),
        _appos("which encodes {o}"),
        _fronted("Coding for {o}"),
        _clause("The protein {o} is the product of {s}."),
    ),
    "found_in": (
        _vp("is found in {o}"),
        _vp("occurs in {o}"),
        _clause("{o} carries the gene {s}."),
        _appos("a gene of {o}"),
        _fronted("Found in {o}"),
    ),
    "isolated_in": (
        _vp("was first isolated in {o}"),
        _clause("{o} is where {s} was first isolated."),
        _clause("Researchers first isolated {s} in {o}."),
        _appos("first isolated in {o}"),
        _fronted("First isolated in {o}"),
    ),
    "member_of": (
        _vp("is a member of {o}"),
        _vp("joined the band {o}"),
        _clause("{o} counts {s} among its members."),
        _appos("a member of {o}"),
        _fronted("As a member of {o}"),
        _clause("Among the members of {o} is {s}."),
    ),
    "recorded_by": (
        _vp("was recorded by {o}"),
        _clause("{o} recorded {s}."),
        _clause("{s} is an album by {o}."),
        _appos("an album by {o}"),
        _fronted("Recorded by {o}"),
        _vp("is a record of the band {o}"),
    ),
    "produced_by": (
        _vp("was produced by {o}"),
        _clause("{o} produced {s}."),
        _clause("The producer of {s} was {o}."),
        _appos("produced by {o}"),
        _fronted("With {o} as its producer"),
    ),
    "signed_to": (
        _vp("is signed to {o}"),
        _vp("releases its records on {o}"),
        _clause("{o} is the record label of {s}."),
        _appos("a band on the label {o}"),
        _fronted("Signed to {o}"),
    ),
    "formed_in": (
        _vp("was formed in {o}"),
        _vp("got together in {o}"),
        _clause("{o} is the city where {s} was formed."),
        _appos("a band from {o}"),
        _fronted("Formed in {o}"),
    ),
    "plays_for": (
        _vp("plays for {o}"),
        _vp("is under contract with {o}"),
        _clause("{o} fields {s} in its first team."),
        _appos("a player of {o}"),
        _fronted("Playing for {o}"),
        _clause("{s} is a regular in the squad of {o}."),
    ),
    "coached_by": (
        _vp("is coached by {o}"),
        _clause("{o} coaches {s}."),
        _clause("{o} is the head coach of {s}."),
        _appos("managed by {o}"),
        _fronted("Under head coach {o}"),
        _vp("has {o} as its manager"),
    ),
    "home_ground": (
        _vp("plays its home games at {o}"),
        _clause("{o} is the home ground of {s}."),
        _vp("is based at {o}"),
        _appos("whose ground is {o}"),
        _fronted("Playing its home games at {o}"),
    ),
    "stadium_in": (
        _vp("stands in {o}"),
        _vp("is situated in {o}"),
        _clause("{o} is the city that is home to {s}."),
        _appos("a stadium in {o}"),
        _fronted("Located in {o}"),
    ),
}

TEMPLATES: dict[str, tuple[str, Phrase]] = {
    f"{rel}/{k}": (rel, phrase) for rel, phrases in PHRASES.items() for k, phrase in enumerate(phrases)
}
"""Every relation phrase by its stable id ``"{relation}/{k}"``: ``(relation, phrase)``."""


def template_ids(relation: str) -> list[str]:
    return [f"{relation}/{k}" for k in range(len(PHRASES[relation]))]


def held_out_template_ids(explicit: list[str], fraction: float) -> list[str]:
    """The held-out template ids: ``explicit`` plus, per relation, max(1, round(fraction × n)) of its
    ``n`` templates when ``fraction`` > 0 (fewer if that would leave the relation without a standalone
    ``vp`` or ``clause`` template for documents that must not use them).

    The fraction's choice is drawn by an RNG seeded with the relation's name only, not the benchmark
    seed: every benchmark generated with the same fraction holds out the same templates, so a model
    trained on one benchmark's documents can be evaluated on another's held-out ones. Sorted by id.
    """
    held = set(explicit)
    if fraction > 0:
        for rel in PHRASES:
            ids = template_ids(rel)
            want = min(len(ids) - 1, max(1, int(fraction * len(ids) + 0.5)))
            order = ids[:]
            random.Random(f"hoprag-synthetic:held-out-templates:{rel}").shuffle(order)
            chosen = [i for i in ids if i in held]
            for tid in order:
                if len(chosen) >= want:
                    break
                if tid in chosen:
                    continue
                if _standalone_left(rel, {*chosen, tid}):
                    chosen.append(tid)
            held.update(chosen)
    return sorted(held, key=_id_order)


def _id_order(tid: str) -> tuple[int, int]:
    rel, _, k = tid.partition("/")
    return list(PHRASES).index(rel), int(k)


def _standalone_left(relation: str, held: set[str]) -> bool:
    """Whether ``relation`` keeps a ``vp`` or ``clause`` template outside ``held``."""
    return any(
        tid not in held and PHRASES[relation][k].kind in STANDALONE_KINDS
        for k, tid in enumerate(template_ids(relation))
    )


def check_held_out_templates(ids: list[str]) -> None:
    """``ValueError`` for an unknown id or a relation left without a standalone template."""
    unknown = sorted(set(ids) - set(TEMPLATES))
    if unknown:
        raise ValueError(
            f"unknown template id(s) {unknown}; ids are RELATION/K, e.g. born_in/2 "
            f"(relations: {', '.join(PHRASES)})"
        )
    held = set(ids)
    starved = [rel for rel in PHRASES if not _standalone_left(rel, held)]
    if starved:
        raise ValueError(
            f"held_out_templates leaves no vp or clause template for {starved}: documents outside "
            "the test side could not state those relations"
        )


# -- pronouns and agreement ----------------------------------------------------------------------

PERSON_PRONOUNS: tuple[tuple[str, float], ...] = (("she", 0.45), ("he", 0.45), ("they", 0.1))
"""Pronouns of people (drawn per person); every other entity is "it"."""
PRONOUNS = ("he", "she", "it", "they")

# The first verb of a verb phrase as singular "they" needs it ("they are", "they hail").
_PLURAL_VERBS = {"is": "are", "was": "were", "has": "have", "hails": "hail", "plays": "play"}


def agree(vp: str, pronoun: str | None) -> str:
    """``vp`` with its first verb made plural when the subject is the pronoun "they"."""
    if pronoun != "they":
        return vp
    first, sep, rest = vp.partition(" ")
    return _PLURAL_VERBS.get(first, first) + sep + rest


def plural_verb_ok(vp: str) -> bool:
    """Whether ``vp`` agrees with "they" after :func:`agree`: its first verb is in the table or past tense."""
    first = vp.split(" ", 1)[0]
    return first in _PLURAL_VERBS or first.endswith("ed") or first in {"became", "grew", "went", "wrote"}


# -- relation wordings (for scoring extractions) -----------------------------------------------------

_STOP_WORDS = frozenset(
    [
        "the",
        "a",
        "an",
        "in",
        "of",
        "to",
        "by",
        "at",
        "on",
        "with",
        "for",
        "and",
        "is",
        "are",
        "was",
        "its",
        "as",
        "from",
        "which",
        "whose",
        "who",
    ]
)


def relation_wordings() -> dict[str, list[str]]:
    """How the documents word each relation and attribute, slots removed and normalized: the relation's
    name as words ("born in"), then each template's wording ("is the birthplace of", "a native of"),
    leaving out wordings of nothing but stop words ("with in the"). Attributes: the year attributes'
    names and verb ("birth year", "was born in"), "is a"/"works as" for ``kind``, "mass"/"has a mass of"/
    "weighs" for ``mass_kda``. ``hoprag bench extract`` compares extracted relations with these.
    """
    import re

    from hoprag.text import normalize_entity

    from .schema import _TYPES

    def words(text: str) -> str:
        return normalize_entity(re.sub(r"\{[so]\}", " ", text.replace("{lead}", "lead role")))

    out: dict[str, list[str]] = {}
    for rel, phrases in PHRASES.items():
        found = [rel.replace("_", " ")]
        for p in phrases:
            w = words(p.text)
            if w not in found and any(x not in _STOP_WORDS for x in w.split()):
                found.append(w)
        out[rel] = found
    for spec in _TYPES.values():
        out.setdefault(spec.year_attr, [spec.year_attr.replace("_", " ")])
        verb = f"{spec.year_vp} in"
        if verb not in out[spec.year_attr]:
            out[spec.year_attr].append(verb)
    out["kind"] = ["is a", "works as"]
    out["mass_kda"] = ["mass", "has a mass of", "weighs"]
    return out
