"""Variant spellings of entity names, and a matcher that recognises a name under them.

A real user rarely types an entity exactly as the knowledge graph spells it. The generator rewrites
the topic entity's mention in a configurable fraction of questions with one of four generic surface
transformations (:data:`SPELLING_KINDS`):

* ``case``: all lower case, all upper case, Title Case or Sentence case ("brado tranford").
* ``punctuation``: periods, apostrophes and hyphens dropped ("Brado's Ledger" → "Brados Ledger",
  "Jean-Luc" → "Jean Luc"), or hyphens added between letters and digits ("KLARN5" → "KLARN-5") or
  inside a two-word name ("Brado Tranford" → "Brado-Tranford").
* ``abbreviation``: initials for the leading words of person names and binomial species names
  ("John Ronald Smith" → "J. R. Smith", "Bradia ensis" → "B. ensis"), an acronym for organisations
  of three or more capitalised words ("Brado Institute of Technology" → "BIT"), or standard
  abbreviations of organisation words ("Brado Technologies" → "Brado Tech.").
* ``the_prefix``: a leading "The" removed ("The Silent Ledger" → "Silent Ledger") or "the" added
  before an organisation ("the Brado Systems").

:class:`~hoprag.linking.name_matcher.NameMatcher` (in the core, re-exported here) is the other side: it finds the world entities a mention can refer to under the
same families of variation (case-, punctuation- and space-insensitive, optional leading "the",
initials and dotted abbreviations, acronyms). The generator uses it to keep only variants that still
refer to exactly one entity; the reference extractor uses it to find variant-spelled mentions.
"""

from __future__ import annotations

import re

from hoprag.linking.name_matcher import NameMatcher, acronym, name_tokens

_SPACES = re.compile(r"\s+")

SPELLING_KINDS: tuple[str, ...] = ("case", "punctuation", "abbreviation", "the_prefix")
"""Variant kinds, in the order a question's kind is drawn from."""

EXACT = "exact"
"""The ``spelling`` of a question that names its topic entity exactly as the world does."""

# Entity types whose leading words are shortened to initials ("J. R. Smith", "E. coli").
INITIALS_TYPES = frozenset({"film_person", "business_person", "organism"})
# Entity types that are organisations: acronyms, abbreviated words and "the" prefixes are natural.
ORGANISATION_TYPES = frozenset({"company", "pharma", "university"})

# Standard English abbreviations of organisation words; each is a prefix of the word plus a period,
# so that a reader (and :class:`NameMatcher`) can expand it.
_WORD_ABBREVIATIONS = {
    "Company": "Co.",
    "Corporation": "Corp.",
    "Incorporated": "Inc.",
    "Industries": "Ind.",
    "Institute": "Inst.",
    "Pharmaceuticals": "Pharm.",
    "Systems": "Sys.",
    "Technologies": "Tech.",
    "Technology": "Tech.",
    "University": "Univ.",
}

# -- variants ------------------------------------------------------------------------------------


def _case_variants(name: str) -> list[str]:
    words = name.split(" ")
    return [
        name.lower(),
        name.upper(),
        " ".join(w[:1].upper() + w[1:] for w in words),  # Title Case (first letters only)
        name[:1].upper() + name[1:].lower(),  # Sentence case
    ]


def _punctuation_variants(name: str) -> list[str]:
    out = [_SPACES.sub(" ", re.sub(r"[.'’]", "", name).replace("-", " ")).strip()]
    out.append(re.sub(r"(?<=[A-Za-z]) ?(?=\d)", "-", name))  # "KLARN5" → "KLARN-5", "Brado 500" → "Brado-500"
    words = name.split(" ")
    if len(words) == 2 and all(w[:1].isupper() and w.isalnum() for w in words):
        out.append("-".join(words))  # "Brado Tranford" → "Brado-Tranford"
    return out


def _abbreviation_variants(name: str, etype: str) -> list[str]:
    words = name.split(" ")
    out = []
    if etype in INITIALS_TYPES and len(words) >= 2 and all(w.isalpha() for w in words[:-1]):
        out.append(" ".join([*(w[0].upper() + "." for w in words[:-1]), words[-1]]))
    if etype in ORGANISATION_TYPES:
        letters = acronym(name_tokens(name))
        if letters:
            out.append(letters.upper())
        shortened = [_WORD_ABBREVIATIONS.get(w, w) for w in words]
        if shortened != words:
            out.append(" ".join(shortened))
    return out


def _the_prefix_variants(name: str, etype: str) -> list[str]:
    if name.startswith(("The ", "the ")) and len(name) > 4:
        return [name[4:]]
    if etype in ORGANISATION_TYPES:
        return [f"the {name}"]
    return []


def spelling_variants(name: str, etype: str) -> dict[str, list[str]]:
    """Candidate variant spellings of ``name`` (an entity of type ``etype``) per kind.

    Every candidate differs from ``name``; a kind with no candidate is absent. Candidates are not
    checked for ambiguity here (see :meth:`NameMatcher.resolve`).
    """
    candidates = {
        "case": _case_variants(name),
        "punctuation": _punctuation_variants(name),
        "abbreviation": _abbreviation_variants(name, etype),
        "the_prefix": _the_prefix_variants(name, etype),
    }
    out: dict[str, list[str]] = {}
    for kind in SPELLING_KINDS:
        kept = [v for v in dict.fromkeys(candidates[kind]) if v and v != name]
        if kept:
            out[kind] = kept
    return out


__all__ = ["EXACT", "SPELLING_KINDS", "NameMatcher", "spelling_variants"]
