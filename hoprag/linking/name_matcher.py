"""Recognising a known name under spelling variation: :class:`NameMatcher`.

A user rarely types an entity exactly as the knowledge graph (or a generated world) spells it. The
matcher finds the names a mention can refer to, case-, punctuation- and space-insensitively, with
an optional leading "the", initials and dotted abbreviations ("J. R. Smith", "Brado Tech.") and
acronyms ("BIT" for "Brado Institute of Technology"). The reference extractor uses it to find
variant-spelled mentions; the synthetic generator (``synthetic.spelling``) to keep only variants that
still name exactly one entity, writing them with the same tokens (:func:`name_tokens`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_TOKEN = re.compile(r"\w+(?:['’]\w+)*")


@dataclass(frozen=True)
class NameToken:
    """A word of a name or text, with its place and its matching key."""

    start: int
    end: int
    raw: str
    key: str  # casefolded, apostrophes removed
    dotted: bool  # directly followed by a period


def name_tokens(text: str) -> list[NameToken]:
    """The words of ``text`` (apostrophes inside a word kept), in order."""
    out = []
    for m in _TOKEN.finditer(text):
        raw = m.group()
        key = raw.replace("'", "").replace("’", "").casefold()
        out.append(NameToken(m.start(), m.end(), raw, key, text[m.end() : m.end() + 1] == "."))
    return out


def without_leading_the(tokens: Sequence[NameToken]) -> Sequence[NameToken]:
    """The tokens without a leading "the" (when something follows it)."""
    return tokens[1:] if len(tokens) > 1 and tokens[0].key == "the" else tokens


def acronym(tokens: Sequence[NameToken]) -> str:
    """The initials of the capitalised words (three or more), lower-cased; "" otherwise."""
    caps = [t for t in tokens if t.raw[:1].isupper()]
    return "".join(t.key[0] for t in caps) if len(caps) >= 3 else ""


def _abbreviates(mention: Sequence[NameToken], name_keys: Sequence[str]) -> bool:
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
            core = without_leading_the(name_tokens(name))
            if not core:
                continue
            keys = tuple(t.key for t in core)
            self._keys[name] = keys
            self.max_tokens = max(self.max_tokens, len(keys) + 1)  # + a leading "the"
            self._concat.setdefault("".join(keys), set()).add(name)
            if len(keys) >= 2:
                self._by_initials.setdefault(tuple(k[0] for k in keys), []).append((name, keys))
            letters = acronym(core)
            if letters:
                self._acronyms.setdefault(letters, set()).add(name)

    def _match(self, tokens: Sequence[NameToken]) -> set[str]:
        core = without_leading_the(tokens)
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
        return self._match(name_tokens(mention))

    def find(self, text: str) -> list[tuple[int, int, set[str]]]:
        """Non-overlapping spans of ``text`` that refer to some name: ``(start, end, names)``, longest
        (in words) first, then left to right. A span never starts with the article "the" ("the Brado
        Systems" gives "Brado Systems") and ends after an abbreviation's period ("Brado Tech.")."""
        tokens = name_tokens(text)
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
