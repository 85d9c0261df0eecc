"""``hoprag export gfm-rag INDEX_DIR OUT``: write a KG index in another system's dataset layout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hoprag_cli.common import UserError

FORMATS = ("gfm-rag",)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write an index in GFM-RAG's dataset layout (raw/ + processed/stage1/)",
        description="Write INDEX_DIR as a GFM-RAG dataset directory OUT: raw/documents.json, "
        "raw/{train,test}.json and processed/stage1/{nodes,relations,edges}.csv + {train,test}.json "
        "(`hoprag index --graph OUT/processed/stage1` reads it back).",
    )
    p.add_argument("format", choices=FORMATS, help="target layout")
    p.add_argument("index_dir", type=Path, help="the KG index to export")
    p.add_argument("out", type=Path, help="dataset directory to write (created; files in it are replaced)")
    p.add_argument("--json", action="store_true", help="print what was written as one JSON object")
    p.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace) -> int:
    """Export the index; prints the counts written."""
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError
    from indexing.gfmrag import export_gfm_rag

    try:
        written = export_gfm_rag(KGIndex(args.index_dir), args.out)
    except KGIndexError as exc:
        raise UserError(str(exc)) from exc
    except OSError as exc:  # OUT is a file, not writable, disk full
        raise UserError(f"export gfm-rag: cannot write {args.out}: {exc}") from exc
    if args.json:
        print(json.dumps(written))
    else:
        splits = ", ".join(f"{n} {s}" for s, n in written["questions"].items()) or "no"
        print(
            f"{written['documents']} documents, {written['entities']} entities, {written['edges']} edges, "
            f"{splits} questions written to {args.out} (GFM-RAG layout)"
        )
    return 0
