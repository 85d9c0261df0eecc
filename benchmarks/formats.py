"""``hoprag bench formats``: reading a HotpotQA-sized published file in bounded memory.

HotpotQA's train file is 90,447 questions, ~550 MB of JSON. No copy of it is in the repository (and
none may be fetched at run time), so the benchmark writes one of the same shape and size from the
sample in ``benchmarks/data/real/hotpotqa/`` (each item's paragraph titles and texts made unique per
copy, so the pool grows as a real train file's does) and reads it twice, each in a fresh process:

* ``read_published`` (hoprag's reader: ``ijson`` item by item, paragraphs pooled as they come);
* ``json.load`` of the whole file, the baseline a hand-written reader starts from (parsing only: it
  does not even build the pool);
* ``dry-run``: ``hoprag index --corpus FILE --dry-run --json``, the whole check a user runs before a
  build (read, validate, pool, count passages and LLM calls; no model).

Reported per reader: seconds, peak RSS (``ru_maxrss`` of the child), questions kept (items),
paragraphs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness import publish

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE = REPO_ROOT / "benchmarks" / "data" / "real" / "hotpotqa" / "dev-distractor-sample.json"

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
path, how = Path(sys.argv[1]), sys.argv[2]
started = time.perf_counter()
if how == "read_published":
    from indexing.formats import read_published
    corpus = read_published(path, "hotpotqa")
    items, paragraphs = sum(len(q) for q in corpus.questions.values()), len(corpus.documents)
elif how == "dry-run":
    import contextlib, io
    from hoprag_cli import main
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["index", "--corpus", str(path), "--dry-run", "--json"]) == 0
    plan = json.loads(printed.getvalue().strip().splitlines()[-1])
    items, paragraphs = plan["questions"], plan["documents"]
else:
    with path.open() as f:
        data = json.load(f)
    items, paragraphs = len(data), sum(len(item["context"]) for item in data)
seconds = time.perf_counter() - started
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"reader": how, "seconds": round(seconds, 1), "peak_rss_mib": round(peak_mib),
                  "items": items, "paragraphs": paragraphs}))
"""


def write_train_sized_file(path: Path, items: int) -> int:
    """A HotpotQA-schema JSON list of ``items`` questions cycled from the sample, each copy's titles
    suffixed with its number (supporting facts follow); returns the file's size in bytes."""
    sample = json.loads(SAMPLE.read_text())
    with path.open("w") as out:
        out.write("[")
        for n in range(items):
            item = sample[n % len(sample)]
            suffix = f" #{n}"
            copy = {
                **item,
                "_id": f"{item['_id']}-{n}",
                "context": [
                    [title + suffix, [s + suffix for s in sentences]] for title, sentences in item["context"]
                ],
                "supporting_facts": [[title + suffix, sid] for title, sid in item["supporting_facts"]],
            }
            out.write(("," if n else "") + json.dumps(copy))
        out.write("]")
    return path.stat().st_size


def measure_reader(path: Path, how: str) -> dict[str, Any]:
    """One reader over ``path`` in a fresh Python process (its own peak RSS)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), how],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{how} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(report: dict[str, Any]) -> Iterable[str]:
    yield f"file: {report['items']:,} items, {report['file_mib']:,} MiB (written in {report['write_s']} s)"
    for row in report["readers"]:
        yield (
            f"  {row['reader']:<15} {row['seconds']:>7.1f} s  peak RSS {row['peak_rss_mib']:>6,} MiB  "
            f"items {row['items']:,}  paragraphs {row['paragraphs']:,}"
        )


def run_formats_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench formats``."""
    with tempfile.TemporaryDirectory(prefix="hoprag-bench-formats-") as tmp:
        path = Path(tmp) / "hotpot_train_sized.json"
        started = time.perf_counter()
        size = write_train_sized_file(path, args.items)
        result: dict[str, Any] = {
            "items": args.items,
            "file_mib": round(size / 2**20),
            "write_s": round(time.perf_counter() - started, 1),
            "readers": [measure_reader(path, how) for how in args.readers],
        }
    publish("formats", result, args, table=_table)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--items", type=int, default=90_447, help="questions in the written file (HotpotQA train: 90,447)"
    )
    p.add_argument(
        "--readers",
        nargs="+",
        choices=["read_published", "dry-run", "json.load"],
        default=["read_published", "dry-run", "json.load"],
        help="which readers to measure, in this order",
    )
    p.add_argument("--json", action="store_true", help="one line of JSON")
