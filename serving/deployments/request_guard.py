"""The request guard: auth, then body size, before FastAPI reads anything; and the playground's
static files, which are on the open paths (see :mod:`serving.deployments.ingress`'s docstring for
the contract)."""

from __future__ import annotations

import functools
import hmac
import html
import re
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import Response
from ray import serve
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serving.deployments.api_errors import error_response, request_id_of

_CONTENT_LENGTH = re.compile(r"^\s*[0-9]+\s*$")


# -- the request guard: auth, then body size, before FastAPI reads anything ------------------------
# Paths that need no token: the probes and FastAPI's own docs (the ingress passes its app's doc URLs).
PROBE_PATHS = frozenset({"/healthz", "/readyz"})
FASTAPI_DOC_PATHS = frozenset({"/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect"})
# The playground (a GET of exactly these paths) is open too: the page holds no data and asks for the token.
PAGE_FILES = {
    "/": "index.html",
    "/static/playground.js": "playground.js",
    "/static/playground.css": "playground.css",
}
_PAGE_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
# The page loads only its own assets and talks only to this app; no inline script or style.
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _open_path(scope: Scope, open_paths: frozenset[str]) -> bool:
    """Whether the request needs no token: a probe or the docs, or a GET of the playground."""
    path = _route_path(scope)
    return path in open_paths or (scope.get("method") == "GET" and path in PAGE_FILES)


@functools.cache
def _page_file(name: str) -> str:
    """A file of the playground (``serving/static``, shipped as package data), read once."""
    from importlib.resources import files

    return files("serving").joinpath("static", name).read_text(encoding="utf-8")


def page_response(path: str, root_path: str) -> Response:
    name = PAGE_FILES[path]
    text = _page_file(name)
    if name == "index.html":  # its relative URLs resolve under the app's route prefix
        text = text.replace("__ROOT__", html.escape(root_path.rstrip("/"), quote=True))
    media = _PAGE_TYPES[name[name.rfind(".") :]] + "; charset=utf-8"
    return Response(text, media_type=media, headers=_PAGE_HEADERS)


@dataclass(frozen=True)
class GuardPolicy:
    """What :class:`RequestGuard` enforces: the bearer token (None: auth off) and the body limits
    (``max_upload_bytes`` on the document-upload route, ``max_body_bytes`` everywhere else)."""

    token: str | None
    max_body_bytes: int
    max_upload_bytes: int = 0

    def body_limit(self, path: str, method: str) -> int:
        if method == "POST" and self.max_upload_bytes and UPLOAD_PATH.match(path):
            return self.max_upload_bytes
        return self.max_body_bytes


UPLOAD_PATH = re.compile(r"^/v1/indexes/[^/]+/documents/?$")


def bearer_token_ok(headers: Headers, token: str) -> bool:
    """Whether ``Authorization: Bearer <token>`` carries ``token``; compared in constant time, on the
    header's raw bytes (Starlette decodes headers as latin-1, so this round-trips them exactly)."""
    scheme, _, given = headers.get("authorization", "").partition(" ")
    same = hmac.compare_digest(given.strip().encode("latin-1"), token.encode("utf-8"))
    return same and scheme.lower() == "bearer"


def _route_path(scope: Scope) -> str:
    """The path the app routes on: without the ``root_path`` Serve sets for an app's route prefix
    (as Starlette's router strips it)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :] or "/"
    return path


def replica_policy() -> GuardPolicy:
    """The guard policy of the QAIngress replica serving this request (set by its constructor)."""
    policy: GuardPolicy = serve.get_replica_context().servable_object.guard_policy
    return policy


class RequestGuard:
    """Pure ASGI middleware, outermost of the app's own: it answers 401 (auth on, a path not in
    :data:`PROBE_PATHS` or ``open_paths``, no valid bearer token) from the headers alone, then 413 when the body is
    over ``max_body_bytes`` (by ``Content-Length``, else counting the body's chunks as they
    arrive), and only then hands the app the (buffered) body to parse. ``policy`` is called once
    per request."""

    def __init__(
        self,
        app: ASGIApp,
        policy: Callable[[], GuardPolicy],
        open_paths: frozenset[str] = PROBE_PATHS | FASTAPI_DOC_PATHS,
    ) -> None:
        self.app = app
        self.policy = policy
        self.open_paths = PROBE_PATHS | open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = self.policy()
        request = Request(scope)
        if (
            policy.token is not None
            and not _open_path(scope, self.open_paths)
            and not bearer_token_ok(request.headers, policy.token)
        ):
            response = error_response(
                401, "missing or wrong bearer token", request_id_of(request), {"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        limit = policy.body_limit(_route_path(scope), scope.get("method", ""))
        setting = "limits.max_body_bytes" if limit == policy.max_body_bytes else "updates.max_upload_bytes"

        async def too_large() -> None:
            message = f"the request body is larger than {limit} bytes ({setting})"
            await error_response(413, message, request_id_of(request))(scope, receive, send)

        declared = request.headers.get("content-length")
        if declared is not None:
            if not _CONTENT_LENGTH.match(declared):
                await error_response(400, "invalid Content-Length header", request_id_of(request))(
                    scope, receive, send
                )
                return
            if int(declared) > limit:
                await too_large()
                return
        chunks: list[bytes] = []
        size = 0
        while True:  # bounded: at most limit bytes are kept, whatever the sender claims or streams
            message = await receive()
            if message["type"] != "http.request":  # http.disconnect: nobody to answer
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await too_large()
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: Message | None = {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        async def replay() -> Message:
            nonlocal body
            if body is not None:
                message, body = body, None
                return message
            return await receive()  # after the body: the disconnect, when it comes

        await self.app(scope, replay, send)
