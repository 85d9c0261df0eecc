"""Reading a document upload (``POST /v1/indexes/{name}/documents``): JSON or JSONL.

Accepted bodies: a JSON list of ``{"title", "text"}`` objects, a JSON object ``{"documents": [...]}``,
or JSONL (``Content-Type: application/jsonl``, ``application/x-ndjson`` or
``application/jsonlines``): one object per line, blank lines skipped. Every problem is reported at
once, each with where it is (``documents.3.text``, ``line 4``), so a 10,000-line upload is fixed in
one round trip.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from serving.schemas import DocumentIn, DocumentUpload

JSONL_TYPES = frozenset(
    {"application/jsonl", "application/x-ndjson", "application/jsonlines", "application/x-jsonlines"}
)
MAX_REPORTED_PROBLEMS = 20


class UploadError(ValueError):
    """An upload that cannot be accepted; ``status`` is the HTTP status to answer (400 or 422)."""

    def __init__(self, status: int, problems: list[str]) -> None:
        shown = problems[:MAX_REPORTED_PROBLEMS]
        more = len(problems) - len(shown)
        super().__init__("; ".join(shown) + (f"; and {more} more" if more > 0 else ""))
        self.status = status


def _problems(exc: ValidationError, prefix: str) -> list[str]:
    return [
        f"{'.'.join([prefix, *(str(x) for x in e.get('loc', ()))]).strip('.') or 'body'}: {e.get('msg')}"
        for e in exc.errors()
    ]


def parse_upload(
    body: bytes, content_type: str, max_documents: int, max_document_chars: int
) -> list[DocumentIn]:
    """The documents of an upload, or :class:`UploadError` (400: not JSON / JSONL; 422: invalid
    documents, too many, a text over ``max_document_chars``, a title given twice)."""
    media = content_type.split(";", 1)[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UploadError(400, [f"the body is not UTF-8 ({exc.reason} at byte {exc.start})"]) from exc
    documents: list[DocumentIn] = []
    problems: list[str] = []
    if media in JSONL_TYPES:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        for n, line in lines:
            try:
                documents.append(DocumentIn.model_validate_json(line))
            except ValidationError as exc:
                kinds = {e.get("type") for e in exc.errors()}
                if "json_invalid" in kinds:
                    problems.append(f"line {n}: not a JSON object")
                else:
                    problems += _problems(exc, f"line {n}")
    else:
        try:
            parsed: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UploadError(
                400,
                [
                    f"the body is not valid JSON ({exc.msg}, line {exc.lineno}); send a JSON list of "
                    '{"title", "text"} objects, {"documents": [...]}, or JSONL with Content-Type: application/jsonl'
                ],
            ) from exc
        try:
            upload = DocumentUpload.model_validate(
                {"documents": parsed} if isinstance(parsed, list) else parsed
            )
            documents = upload.documents
        except ValidationError as exc:
            problems += _problems(exc, "")
    if problems:
        raise UploadError(422, problems)
    if not documents:
        raise UploadError(422, ["the upload holds no documents"])
    if len(documents) > max_documents:
        raise UploadError(
            422,
            [f"at most {max_documents} documents per upload (got {len(documents)}; updates.max_documents)"],
        )
    for i, doc in enumerate(documents):
        if len(doc.text) > max_document_chars:
            problems.append(
                f"documents.{i}.text: at most {max_document_chars} characters (got {len(doc.text)}; "
                "updates.max_document_chars)"
            )
    seen: dict[str, int] = {}
    for i, doc in enumerate(documents):
        if doc.title in seen:
            problems.append(f"documents.{i}.title: {doc.title!r} is also documents.{seen[doc.title]}.title")
        seen.setdefault(doc.title, i)
    if problems:
        raise UploadError(422, problems)
    return documents
