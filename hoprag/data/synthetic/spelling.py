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

:class:`NameMatcher` is the other side: it finds the world entities a mention can refer to under the
same families of variation (case-, punctuation- and space-insensitive, optional leading "the",
initials and dotted abbreviations, acronyms). The generator uses it to keep only variants that still
refer to exactly one entity; the reference extractor uses it to find variant-spelled mentions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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

_TOKEN = re.compile(r"\w+(?:['’]\w+)*")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class _Token:
    start: int
    end: int
    raw: str
    key: str  # casefolded, apostrophes removed
    dotted: bool  # directly followed by a period


def _tokens(text: str) -> list[_Token]:
    out = []
    for m in _TOKEN.finditer(text):
        raw = m.group()
        key = raw.replace("'", "").replace("’", "").casefold()
        out.append(_Token(m.start(), m.end(), raw, key, text[m.end() : m.end() + 1] == "."))
    return out


def _core(tokens: Sequence[_Token]) -> Sequence[_Token]:
    """The tokens without a leading "the" (when something follows it)."""
    return tokens[1:] if len(tokens) > 1 and tokens[0].key == "the" else tokens


def _acronym(tokens: Sequence[_Token]) -> str:
    caps = [t for t in tokens if t.raw[:1].isupper()]
    return "".join(t.key[0] for t in caps) if len(caps) >= 3 else ""


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
        acronym = _acronym(_tokens(name))
        if acronym:
            out.append(acronym.upper())
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


# -- matching ------------------------------------------------------------------------------------


def _abbreviates(mention: Sequence[_Token], name_keys: Sequence[str]) -> bool:
    """Whether ``mention`` is ``name_keys`` with some words shortened to initials or dotted prefixes."""
    full = short = 0
    for tok, key in zip(mention, name_keys, strict=True):
        if tok.key == key:
            full += 1
        elif (
            tok.raw[:1].isupper()
            and (tok.dotted or len(tok.key) == 1)
            and len(tok.key) < len(key)
            and key.startswith(tok.key)
        ):
            short += 1
        else:
            return False
    return short > 0 and full > 0


class NameMatcher:
    """Finds which of a fixed set of names a mention can refer to, under spelling variation."""

    def __init__(self, names: Iterable[str]) -> None:
        self._concat: dict[str, set[str]] = {}
        self._by_initials: dict[tuple[str, ...], list[tuple[str, tuple[str, ...]]]] = {}
        self._acronyms: dict[str, set[str]] = {}
        self._keys: dict[str, tuple[str, ...]] = {}
        self.max_tokens = 1
        for name in names:
            core = _core(_tokens(name))
            if not core:
                continue
            keys = tuple(t.key for t in core)
            self._keys[name] = keys
            self.max_tokens = max(self.max_tokens, len(keys) + 1)  # + a leading "the"
            self._concat.setdefault("".join(keys), set()).add(name)
            if len(keys) >= 2:
                self._by_initials.setdefault(tuple(k[0] for k in keys), []).append((name, keys))
            acronym = _acronym(core)
            if acronym:
                self._acronyms.setdefault(acronym, set()).add(name)

    def _match(self, tokens: Sequence[_Token]) -> set[str]:
        core = _core(tokens)
        if not core:
            return set()
        keys = [t.key for t in core]
        found = set(self._concat.get("".join(keys), ()))
        if len(core) == 1 and core[0].raw.isalpha() and core[0].raw.isupper() and len(core[0].raw) >= 3:
            found |= self._acronyms.get(core[0].key, set())
        if len(core) >= 2:
            for name, name_keys in self._by_initials.get(tuple(k[0] for k in keys), ()):
                if len(name_keys) == len(keys) and _abbreviates(core, name_keys):
                    found.add(name)
        return found

    def resolve(self, mention: str) -> set[str]:
        """The names ``mention`` (the whole string) can refer to; empty when none."""
        return self._match(_tokens(mention))

    def find(self, text: str) -> list[tuple[int, int, set[str]]]:
        """Non-overlapping spans of ``text`` that refer to some name: ``(start, end, names)``, longest
        (in words) first, then left to right. A span never starts with the article "the" ("the Brado
        Systems" gives "Brado Systems") and ends after an abbreviation's period ("Brado Tech.")."""
        tokens = _tokens(text)
        taken = [False] * len(tokens)
        out: list[tuple[int, int, set[str]]] = []
        for n in range(min(self.max_tokens, len(tokens)), 0, -1):
            for i in range(len(tokens) - n + 1):
                if any(taken[i : i + n]) or (n > 1 and tokens[i].key == "the"):
                    continue
                span = tokens[i : i + n]
                names = self._match(span)
                if not names:
                    continue
                last = span[-1]
                end = last.end
                if last.dotted and all(self._keys[nm][-1] != last.key for nm in names):
                    end += 1  # "Brado Tech." keeps its period
                out.append((span[0].start, end, names))
                for j in range(i, i + n):
                    taken[j] = True
        return out
