"""The FastAPI ingress: ``POST /v1/qa``, ``POST /v1/chat/completions``, ``GET /v1/models``,
``GET /healthz``, ``GET /readyz`` (OpenAPI docs at ``/docs``).

Errors are JSON ``{"error": {"type", "message", "request_id"}}``: 400 malformed JSON or a
question the pipeline refuses, 401 missing/wrong bearer token (when auth is on), 422 invalid
fields, 503 overloaded (queue full), not ready, or a backend replica died mid-request (all with
``Retry-After``), 504 past the request timeout,
500 anything else. Every response carries ``X-Request-ID`` (the caller's, or one Serve made), and
the body's ``request_id`` is the same id.

No ``from __future__ import annotations`` here: FastAPI reads the handlers' annotations at
route registration, and Serve's ingress wrapper cannot resolve string annotations.
"""

import asyncio
import logging
import os
import re
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from ray import serve

from hoprag import __version__
from serving.schemas import (
    ChatCompletionRequest,
    ChatCompletionResponse,
    ErrorResponse,
    QARequest,
    QAResponse,
)
from serving.settings import QAAppSettings

logger = logging.getLogger("ray.serve")

api = FastAPI(
    title="hoprag QA",
    version=__version__,
    description="Multi-hop question answering over a knowledge graph: single-shot GLM-RAG (`retrieve`) "
    "or the PAI-2 search planner (`plan`).",
)

_REQUEST_ID = re.compile(r"^[\w.:-]{1,64}$")
_ERRORS = {
    400: "bad_request",
    401: "unauthorized",
    422: "invalid_request",
    500: "internal_error",
    503: "unavailable",
    504: "timeout",
}


class APIError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def _request_id(request: Request) -> str:
    """Serve's id of this request (the caller's X-Request-ID, or one Serve made; Serve echoes it in
    the response headers and tags its logs with it); a new one outside Serve."""
    try:
        from ray.serve.context import _get_serve_request_context

        request_id = _get_serve_request_context().request_id
    except Exception:  # outside a Serve replica
        request_id = ""
    if request_id:
        return request_id
    given = request.headers.get("x-request-id", "")
    return given if _REQUEST_ID.match(given) else uuid.uuid4().hex


def _error(status: int, message: str, request_id: str, headers: dict[str, str] | None = None) -> JSONResponse:
    if status < 500:  # 5xx are counted where they arise, with their kind (overloaded, timeout, ...)
        try:
            from serving.metrics import ingress_metrics

            ingress_metrics()["errors"].inc(tags={"route": "http", "kind": _ERRORS.get(status, str(status))})
        except Exception:  # outside a Ray worker (no metrics): never let counting fail a response
            pass
    body = {"error": {"type": _ERRORS.get(status, "error"), "message": message, "request_id": request_id}}
    return JSONResponse(body, status_code=status, headers=headers or {})


@api.exception_handler(RequestValidationError)
async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return _error(400, "the request body is not valid JSON", _request_id(request))
    parts = [
        f"{'.'.join(str(x) for x in e.get('loc', ()) if x != 'body') or 'body'}: {e.get('msg')}"
        for e in errors
    ]
    return _error(422, "; ".join(parts), _request_id(request))


@api.exception_handler(APIError)
async def _api_error(request: Request, exc: APIError) -> JSONResponse:
    return _error(exc.status, exc.message, _request_id(request), exc.headers)


def _error_kind(exc: BaseException) -> str:
    from ray.exceptions import ActorUnavailableError, RayActorError
    from ray.serve.exceptions import BackPressureError

    from hoprag.planner.planner import PlannerInputError
    from serving.deployments.qa import NotReadyError

    if isinstance(exc, BackPressureError):
        return "overloaded"
    if isinstance(exc, NotReadyError):
        return "not_ready"
    if isinstance(exc, PlannerInputError):
        return "bad_question"
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, RayActorError | ActorUnavailableError):
        return "replica_failed"
    return "internal"


def _last_user_text(body: ChatCompletionRequest) -> str:
    for message in reversed(body.messages):
        if message.role != "user":
            continue
        if isinstance(message.content, str):
            return message.content.strip()
        if isinstance(message.content, list):
            return " ".join(p.get("text", "") for p in message.content if p.get("type") == "text").strip()
    return ""


@serve.deployment(name="QAIngress")
@serve.ingress(api)
class QAIngress:
    def __init__(self, qa_handle: Any, settings: QAAppSettings) -> None:
        self._qa = qa_handle
        self._timeout_s = settings.request_timeout_s
        env = settings.auth.token_env
        self._token = os.environ.get(env, "") if env else None
        if env and not self._token:
            raise RuntimeError(f"auth is on (auth.token_env={env!r}) but ${env} is empty or unset")

    # -- helpers -----------------------------------------------------------------------------
    def _authorize(self, request: Request) -> None:
        if self._token is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or token != self._token:
            raise APIError(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})

    async def _answer(
        self, question: str, mode: str, top_k: int, request_id: str, route: str
    ) -> dict[str, Any]:
        from serving.metrics import ingress_metrics

        m = ingress_metrics()
        m["requests"].inc(tags={"route": route, "mode": mode})
        started = time.perf_counter()
        response = self._qa.answer.remote(question, mode, top_k)
        try:
            result = await asyncio.wait_for(response, timeout=self._timeout_s)
        except BaseException as exc:
            if isinstance(exc, asyncio.TimeoutError | TimeoutError):
                response.cancel()
            kind = _error_kind(exc)
            m["errors"].inc(tags={"route": route, "kind": kind})
            logger.warning("request %s failed (%s): %s", request_id, kind, exc)
            if kind == "overloaded":
                raise APIError(
                    503, "overloaded: too many requests queued, retry later", {"Retry-After": "1"}
                ) from exc
            if kind == "replica_failed":
                raise APIError(
                    503, "a backend replica failed; Serve is replacing it, retry", {"Retry-After": "1"}
                ) from exc
            if kind == "not_ready":
                raise APIError(
                    503, "not ready: the index and models are still loading", {"Retry-After": "5"}
                ) from exc
            if kind == "bad_question":
                raise APIError(400, str(getattr(exc, "cause", None) or exc).splitlines()[-1]) from exc
            if kind == "timeout":
                raise APIError(504, f"no answer within {self._timeout_s:g} s") from exc
            raise APIError(500, f"internal error (request {request_id})") from exc
        total = time.perf_counter() - started
        m["latency"].observe(total, tags={"stage": "total", "mode": mode})
        m["latency"].observe(result["seconds"], tags={"stage": "pipeline", "mode": mode})
        m["latency"].observe(result["llm_seconds"], tags={"stage": "llm", "mode": mode})
        result["timings"] = {
            "total": round(total, 4),
            "pipeline": round(result["seconds"], 4),
            "llm": round(result["llm_seconds"], 4),
            "retrieval_and_search": round(max(result["seconds"] - result["llm_seconds"], 0.0), 4),
            "queue_and_transport": round(max(total - result["seconds"], 0.0), 4),
        }
        logger.info(
            "request %s answered in %.3f s (%s, %d LLM calls)", request_id, total, mode, result["llm_calls"]
        )
        return result

    # -- routes ------------------------------------------------------------------------------
    @api.get("/healthz", summary="Liveness: the ingress answers")
    async def healthz(self) -> dict[str, str]:
        return {"status": "ok"}

    @api.get(
        "/readyz", summary="Readiness: index and models loaded", responses={503: {"model": ErrorResponse}}
    )
    async def readyz(self, request: Request) -> dict[str, str]:
        try:
            status = await asyncio.wait_for(self._qa.load_status.remote(), timeout=5)
        except BaseException as exc:
            status = f"QA deployment unreachable ({type(exc).__name__})"
        if status != "ready":
            raise APIError(503, f"not ready: {status}", {"Retry-After": "5"})
        return {"status": "ready"}

    @api.post(
        "/v1/qa",
        response_model=QAResponse,
        summary="Answer a question",
        responses={code: {"model": ErrorResponse} for code in (400, 401, 422, 500, 503, 504)},
    )
    async def qa(self, body: QARequest, request: Request) -> JSONResponse:
        request_id = _request_id(request)
        self._authorize(request)
        result = await self._answer(body.question, body.mode, body.top_k, request_id, "qa")
        response = QAResponse(
            request_id=request_id,
            mode=body.mode,
            answer=result["answer"],
            not_enough_info=result["not_enough_info"],
            documents=result["documents"][: body.top_k],
            triples=result["triples"],
            llm_calls=result["llm_calls"],
            prompt_tokens=result["prompt_tokens"],
            completion_tokens=result["completion_tokens"],
            timings=result["timings"],
            trace=result if body.return_trace else None,
        )
        return JSONResponse(response.model_dump(mode="json"))

    @api.get("/v1/models", summary="OpenAI-compatible model list")
    async def models(self, request: Request) -> dict[str, Any]:
        self._authorize(request)
        data = [{"id": m, "object": "model", "owned_by": "hoprag"} for m in ("hoprag", "hoprag-plan")]
        return {"object": "list", "data": data}

    @api.post(
        "/v1/chat/completions",
        response_model=ChatCompletionResponse,
        summary="OpenAI-compatible: answers the last user message through the QA pipeline",
        responses={code: {"model": ErrorResponse} for code in (400, 401, 422, 503, 504)},
    )
    async def chat(self, body: ChatCompletionRequest, request: Request) -> JSONResponse:
        request_id = _request_id(request)
        self._authorize(request)
        if body.stream:
            raise APIError(400, "streaming is not supported; send stream=false")
        question = _last_user_text(body)
        if not question:
            raise APIError(400, "no user message with text content")
        mode = "plan" if body.model.endswith("plan") else "retrieve"
        result = await self._answer(question, mode, 5, request_id, "chat")
        response = ChatCompletionResponse(
            id=f"chatcmpl-{request_id}",
            created=int(time.time()),
            model=body.model,
            choices=[
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": result["answer"]},
                    "finish_reason": "stop",
                }
            ],
            usage={
                "prompt_tokens": result["prompt_tokens"],
                "completion_tokens": result["completion_tokens"],
                "total_tokens": result["prompt_tokens"] + result["completion_tokens"],
            },
        )
        return JSONResponse(response.model_dump(mode="json"))
