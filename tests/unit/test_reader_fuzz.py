"""Property tests of the input readers: random truncations, deletions, insertions and type swaps of
the shared sample files never crash a reader, and every item is either read or counted as a
problem (read + problems = items). 4 x 500 generated files (`hypothesis`, no shrinking database)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexing.corpus import CorpusError
from indexing.formats import read_published

REAL = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "real"
EXAMPLES = 500


def _shrunk(item: dict[str, Any]) -> dict[str, Any]:
    """A sample item kept small (its gold paragraphs and a distractor or two, at most 4) so that
    thousands of files read in seconds."""
    out = dict(item)
    gold_titles = {f[0] for f in item.get("supporting_facts", [])}
    for key in ("context", "paragraphs"):
        if isinstance(out.get(key), list):
            gold = [
                p
                for p in out[key]
                if (isinstance(p, dict) and p.get("is_supporting"))
                or (isinstance(p, list) and p[0] in gold_titles)
            ]
            out[key] = (gold + [p for p in out[key] if p not in gold])[: max(4, len(gold))]
    return out


def _base(name: str) -> tuple[str, list[Any]]:
    """(suffix, items) of a small seed file of each layout."""
    if name == "musique":
        lines = (REAL / "musique" / "dev-sample.jsonl").read_text(encoding="utf-8").splitlines()[:3]
        return ".jsonl", [_shrunk(json.loads(line)) for line in lines]
    if name == "gfmrag":
        rows = json.loads((REAL / "2wikimultihopqa" / "2wikimultihopqa_corpus.json").read_text())[:5]
        return ".jsonl", rows
    source = {
        "hotpotqa": "hotpotqa/dev-distractor-sample.json",
        "2wiki": "2wikimultihopqa/dev-context-sample.json",
    }
    items = json.loads((REAL / source[name]).read_text(encoding="utf-8"))[:3]
    return ".json", [_shrunk(item) for item in items]


_SWAPS = st.sampled_from([None, 0, 1.5, "", "x", [], {}, True, [["t", 0]], {"title": 1}])


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value[:6]):
            out += _paths(child, (*prefix, index))
    return out


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _set(value[head], rest, new)
    return copy


@st.composite
def mutated(draw: st.DrawFn, name: str) -> tuple[str, bytes]:
    suffix, items = _base(name)
    items = list(items)
    for _ in range(draw(st.integers(0, 3))):  # type swaps inside the items
        paths = _paths(items)
        path = draw(st.sampled_from(paths))
        items = _set(items, path, draw(_SWAPS))
    if draw(st.booleans()) and items:  # drop or repeat an item
        index = draw(st.integers(0, len(items) - 1))
        items = items[:index] + items[index + 1 :] if draw(st.booleans()) else [*items, items[index]]
    text = "\n".join(json.dumps(i) for i in items) + "\n" if suffix == ".jsonl" else json.dumps(items)
    data = text.encode()
    edit = draw(st.sampled_from(["none", "truncate", "delete", "insert"]))
    if data and edit != "none":
        at = draw(st.integers(0, len(data) - 1))
        if edit == "truncate":
            data = data[:at]
        elif edit == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 40)) :]
        else:
            data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    return suffix, data


def _check(suffix: str, data: bytes, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"input{suffix}"
        path.write_bytes(data)
        try:
            corpus = read_published(path, fmt)  # type: ignore[arg-type]
        except CorpusError:
            return  # a clear error (nothing to index, wrong format, unreadable): never a crash
        read = corpus.read
        questions = sum(len(q) for q in corpus.questions.values())
        assert questions == read.questions
        assert read.documents + read.questions + read.skipped == read.items, read.lines()
        assert corpus.documents, "an empty read must be an error, never a corpus"
        for q in (q for qs in corpus.questions.values() for q in qs):
            titles = {d.title for d in corpus.documents}
            assert set(q["supporting_facts"]) <= titles  # every gold document is in the corpus


_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(
    ("name", "fmt"), [("musique", "auto"), ("hotpotqa", "auto"), ("2wiki", "hotpotqa"), ("gfmrag", "auto")]
)
def test_a_mutated_file_is_read_or_refused_and_every_item_is_accounted_for(name: str, fmt: str) -> None:
    @_SETTINGS
    @given(mutated(name))
    def run(case: tuple[str, bytes]) -> None:
        _check(*case, fmt)

    run()
