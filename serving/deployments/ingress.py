"""The FastAPI ingress: ``POST /v1/qa``, ``POST /v1/chat/completions``, ``GET /v1/models``,
``GET /v1/indexes``, ``POST /v1/indexes/{name}/documents``, ``DELETE /v1/indexes/{name}/documents/{title}``,
``GET /v1/indexes/{name}/documents/{title}``, ``GET /v1/jobs/{id}``, ``GET /healthz``, ``GET /readyz``
(OpenAPI docs at ``/docs``), and the playground page at ``/`` (its assets at ``/static/...``).

Requests pick a served index by name (``"index"`` in the body; chat also ``model: "hoprag:<name>"``);
each index has its own QA deployment. Document updates are queued with the IndexJobs deployment.

Every request passes :class:`RequestGuard` (pure ASGI middleware, outside FastAPI's routing)
before any of its body is read: first the bearer token, when auth is on, on every path but the
open ones (``/healthz``, ``/readyz``, the OpenAPI docs, and a GET of the playground page and its
two assets: the page asks for the token and sends it with its API calls), compared in constant
time; then the body size (``limits.max_body_bytes``): a larger ``Content-Length`` is refused at
once, and a chunked body is counted as it arrives; the body reaches FastAPI (and its parsing) only
once it is known to be small enough. The chat route also bounds the number of messages and each message's
length (``limits``).

Errors are JSON ``{"error": {"type", "message", "request_id"}}``: 400 malformed JSON or a
question the pipeline refuses, 401 missing/wrong bearer token (when auth is on; answered before
the body is read, whatever the body), 413 a body over ``limits.max_body_bytes``
(``payload_too_large``), 422 invalid fields (including too many chat messages or too long a
message), 503 overloaded (queue full), not ready, or a backend replica died mid-request (all with
``Retry-After``), 504 past the request timeout,
500 anything else. Every response carries ``X-Request-ID`` (the caller's, or one Serve made), and
the body's ``request_id`` is the same id.

``/readyz`` tells anyone only ``ready`` (200) or ``loading`` / ``failed`` (503, ``Retry-After``);
why a load failed (the exception) is logged, and returned (``error.detail``) only to a caller with
the bearer token, or to anyone when auth is off.

No ``from __future__ import annotations`` here: FastAPI reads the handlers' annotations at
route registration, and Serve's ingress wrapper cannot resolve string annotations.
"""

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from ray import serve
from sse_starlette import EventSourceResponse

from hoprag import __version__
from hoprag.llm.openai_schemas import ChatCompletionResponse
from serving.deployments.api_errors import ERROR_TYPES, APIError, error_kind, error_response, request_id_of
from serving.deployments.request_guard import (
    PAGE_FILES,
    GuardPolicy,
    RequestGuard,
    bearer_token_ok,
    page_response,
    replica_policy,
)
from serving.schemas import (
    ChatCompletionRequest,
    DocumentText,
    ErrorResponse,
    IndexInfo,
    IndexList,
    JobStatus,
    NotReadyResponse,
    QARequest,
    QAResponse,
    ReadyResponse,
)
from serving.settings import QAAppSettings, RequestLimits
from serving.streaming import ChatChunks, error_event, sse

logger = logging.getLogger("ray.serve")

api = FastAPI(
    title="hoprag QA",
    version=__version__,
    description="Multi-hop question answering over a knowledge graph: single-shot GLM-RAG (`retrieve`) "
    "or the PAI-2 search planner (`plan`).",
)


@api.exception_handler(RequestValidationError)
async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "the request body is not valid JSON", request_id_of(request))
    parts = [
        f"{'.'.join(str(x) for x in e.get('loc', ()) if x != 'body') or 'body'}: {e.get('msg')}"
        for e in errors
    ]
    return error_response(422, "; ".join(parts), request_id_of(request))


@api.exception_handler(APIError)
async def _api_error(request: Request, exc: APIError) -> JSONResponse:
    return error_response(exc.status, exc.message, request_id_of(request), exc.headers)


async def _qa_body(body: QARequest, request_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """The ``/v1/qa`` response body (also the ``answer`` event of a streamed answer). The evidence
    graph's layout (tens of ms at 50 triples) runs in a worker thread, off the ingress's event loop."""
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
    out = response.model_dump(mode="json")
    if body.evidence_graph:
        from serving.evidence_graph import evidence_graph

        graph = await asyncio.to_thread(evidence_graph, result)
        out["evidence_graph"] = graph.to_dict()
    return out


def _last_user_text(body: ChatCompletionRequest) -> str:
    for message in reversed(body.messages):
        if message.role == "user" and message.content is not None:
            return message.text().strip()
    return ""


def _check_chat_limits(body: ChatCompletionRequest, limits: RequestLimits) -> None:
    """422 for more messages than ``limits.max_chat_messages`` or a message's content longer than
    ``limits.max_message_chars`` (its text parts together)."""
    if len(body.messages) > limits.max_chat_messages:
        raise APIError(
            422,
            f"messages: at most {limits.max_chat_messages} messages per request "
            f"(got {len(body.messages)}; limits.max_chat_messages)",
        )
    for i, message in enumerate(body.messages):
        chars = len(message.text())
        if chars > limits.max_message_chars:
            raise APIError(
                422,
                f"messages.{i}.content: at most {limits.max_message_chars} characters per message "
                f"(got {chars}; limits.max_message_chars)",
            )


# Registered before @serve.ingress below, which freezes a copy of the app for the replicas.
api.add_middleware(
    RequestGuard,
    policy=replica_policy,
    open_paths=frozenset(
        url
        for url in (api.openapi_url, api.docs_url, api.redoc_url, api.swagger_ui_oauth2_redirect_url)
        if url
    ),
)


@serve.deployment(name="QAIngress")
@serve.ingress(api)
class QAIngress:
    def __init__(self, qa_handles: dict[str, Any], jobs_handle: Any, settings: QAAppSettings) -> None:
        self._qa_handles = qa_handles
        self._jobs = jobs_handle
        self._default_index = settings.default_index_name
        self._updates = settings.updates
        self._timeout_s = settings.request_timeout_s
        self._limits = settings.limits
        env = settings.auth.token_env
        self._token = os.environ.get(env, "") if env else None
        if env and not self._token:
            raise RuntimeError(f"auth is on (auth.token_env={env!r}) but ${env} is empty or unset")
        # Read by RequestGuard (through the replica context) on every request.
        self.guard_policy = GuardPolicy(
            token=self._token,
            max_body_bytes=settings.limits.max_body_bytes,
            max_upload_bytes=settings.updates.max_upload_bytes if settings.updates.enabled else 0,
        )
        self._logged_not_ready: tuple[str, str] | None = None

    # -- helpers -----------------------------------------------------------------------------
    def _authenticated(self, request: Request) -> bool:
        """Whether the caller may see internals (auth off, or a valid bearer token). Routes other
        than the open ones never run unauthenticated: RequestGuard answers 401 first."""
        return self._token is None or bearer_token_ok(request.headers, self._token)

    def _qa(self, index: str | None) -> Any:
        """The QA deployment of ``index`` (None: the default one); 404 naming the served indexes."""
        name = index or self._default_index
        handle = self._qa_handles.get(name)
        if handle is None:
            served = ", ".join(sorted(self._qa_handles))
            raise APIError(404, f"unknown index {name!r}; served indexes: {served} (GET /v1/indexes)")
        return handle

    async def _answer(
        self, question: str, mode: str, top_k: int, request_id: str, route: str, index: str | None = None
    ) -> dict[str, Any]:
        from serving.metrics import ingress_metrics

        qa = self._qa(index)
        m = ingress_metrics()
        m["requests"].inc(tags={"route": route, "mode": mode})
        started = time.perf_counter()
        response = qa.answer.remote(question, mode, top_k)
        try:
            result = await asyncio.wait_for(response, timeout=self._timeout_s)
        except BaseException as exc:
            if isinstance(exc, asyncio.TimeoutError | TimeoutError):
                response.cancel()
            raise self._failure(exc, request_id, route) from exc
        return self._finish(result, started, mode, request_id)

    def _failure(self, exc: BaseException, request_id: str, route: str) -> APIError:
        """The HTTP error for a failed QA call (counted and logged)."""
        from serving.metrics import ingress_metrics

        kind = error_kind(exc)
        ingress_metrics()["errors"].inc(tags={"route": route, "kind": kind})
        logger.warning("request %s failed (%s): %s", request_id, kind, exc)
        if kind == "overloaded":
            return APIError(503, "overloaded: too many requests queued, retry later", {"Retry-After": "1"})
        if kind == "replica_failed":
            return APIError(
                503, "a backend replica failed; Serve is replacing it, retry", {"Retry-After": "1"}
            )
        if kind == "not_ready":
            return APIError(503, "not ready: the index and models are still loading", {"Retry-After": "5"})
        if kind == "bad_question":
            return APIError(400, str(getattr(exc, "cause", None) or exc).splitlines()[-1])
        if kind == "timeout":
            return APIError(504, f"no answer within {self._timeout_s:g} s")
        return APIError(500, f"internal error (request {request_id})")

    def _finish(self, result: dict[str, Any], started: float, mode: str, request_id: str) -> dict[str, Any]:
        """The QA result with its timings (and the latency metrics observed)."""
        from serving.metrics import ingress_metrics

        m = ingress_metrics()
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

    async def _open_stream(
        self, question: str, mode: str, top_k: int, request_id: str, route: str, index: str | None
    ) -> tuple[Any, dict[str, Any], float]:
        """Start a streamed answer and wait for its first event, so that what can be known before
        the first byte (overloaded, not ready, a refused question) is an ordinary HTTP error."""
        from serving.metrics import ingress_metrics

        qa = self._qa(index)
        ingress_metrics()["requests"].inc(tags={"route": route, "mode": mode})
        started = time.perf_counter()
        events = qa.options(stream=True).answer_stream.remote(question, mode, top_k, request_id)
        try:
            first = await asyncio.wait_for(events.__anext__(), timeout=self._timeout_s)
        except BaseException as exc:
            events.cancel()
            raise self._failure(exc, request_id, route) from exc
        return events, first, started

    async def _events(
        self, events: Any, first: dict[str, Any], started: float, request_id: str, route: str
    ) -> AsyncIterator[dict[str, Any]]:
        """The QA stream's events, each within what is left of ``request_timeout_s``; a failure is
        an ``error`` item (``{"event": "error", "data": APIError}``). Cancels the QA call when the
        consumer stops early (the client went away)."""
        item: dict[str, Any] | None = first
        try:
            while item is not None:
                yield item
                left = self._timeout_s - (time.perf_counter() - started)
                try:
                    item = await asyncio.wait_for(events.__anext__(), timeout=max(left, 0.001))
                except StopAsyncIteration:
                    item = None
        except Exception as exc:
            yield {"event": "error", "data": self._failure(exc, request_id, route)}
        finally:
            events.cancel()  # no-op once finished; else the pipeline and the LLM stop

    async def _qa_stream(self, body: QARequest, request_id: str) -> EventSourceResponse:
        events, first, started = await self._open_stream(
            body.question, body.mode, body.top_k, request_id, "qa", body.index
        )

        async def sse_events() -> AsyncIterator[dict[str, str]]:
            async for item in self._events(events, first, started, request_id, "qa"):
                kind, data = item["event"], item["data"]
                if kind == "result":
                    result = self._finish(data, started, body.mode, request_id)
                    yield sse("answer", await _qa_body(body, request_id, result))
                elif kind == "error":
                    yield error_event(ERROR_TYPES.get(data.status, "error"), data.message, request_id)
                else:
                    yield sse(kind, data)

        return EventSourceResponse(sse_events(), headers={"Cache-Control": "no-cache"})

    async def _chat_stream(
        self, body: ChatCompletionRequest, question: str, mode: str, request_id: str, index: str | None
    ) -> EventSourceResponse:
        events, first, started = await self._open_stream(question, mode, 5, request_id, "chat", index)
        chunks = ChatChunks(f"chatcmpl-{request_id}", int(time.time()), body.model)
        usage = body.stream_options is not None and body.stream_options.include_usage

        async def sse_events() -> AsyncIterator[dict[str, str]]:
            yield chunks.role()
            async for item in self._events(events, first, started, request_id, "chat"):
                kind, data = item["event"], item["data"]
                if kind == "token":
                    yield chunks.content(data["text"])
                elif kind == "result":
                    result = self._finish(data, started, mode, request_id)
                    yield chunks.stop()
                    if usage:
                        yield chunks.usage(result["prompt_tokens"], result["completion_tokens"])
                elif kind == "error":
                    yield chunks.error(ERROR_TYPES.get(data.status, "error"), data.message, request_id)
            yield chunks.done()

        return EventSourceResponse(sse_events(), headers={"Cache-Control": "no-cache"})

    # -- routes ------------------------------------------------------------------------------
    @api.get("/", include_in_schema=False)
    async def playground(self, request: Request) -> Response:
        return page_response("/", str(request.scope.get("root_path", "")))

    @api.get("/static/{name}", include_in_schema=False)
    async def playground_asset(self, name: str) -> Response:
        if f"/static/{name}" not in PAGE_FILES:
            raise APIError(404, f"no asset {name!r}")
        return page_response(f"/static/{name}", "")

    @api.get("/healthz", summary="Liveness: the ingress answers")
    async def healthz(self) -> dict[str, str]:
        return {"status": "ok"}

    @api.get(
        "/readyz",
        response_model=ReadyResponse,
        summary="Readiness: index and models loaded",
        description="200 `ready`, else 503 `loading` or `failed` with Retry-After. Why it failed "
        "(`error.detail`) is returned only with a valid bearer token (or with auth off).",
        responses={503: {"model": NotReadyResponse}},
    )
    async def readyz(self, request: Request) -> JSONResponse:
        statuses = await asyncio.gather(*(self._load_status(name) for name in self._qa_handles))
        several = len(statuses) > 1
        # Ready when every index is; otherwise the worst state (failed before loading) speaks.
        not_ready = sorted(
            (s for s in statuses if not s[1].startswith("ready")), key=lambda s: not s[1].startswith("failed")
        )
        status = "ready"
        if not_ready:
            name, status = not_ready[0]
            if several:
                state, _, detail = status.partition(": ")
                status = f"{state}: index {name!r}" + (f": {detail}" if detail else "")
        state, _, detail = str(status).partition(": ")
        if state == "ready":
            return JSONResponse({"status": "ready"})
        if state not in ("loading", "failed"):
            state, detail = "failed", str(status)
        if (state, detail) != self._logged_not_ready:  # once per change, not once per probe
            self._logged_not_ready = (state, detail)
            log = logger.warning if state == "failed" else logger.info
            log("readyz: not ready (%s)%s", state, f": {detail}" if detail else "")
        error: dict[str, Any] = {
            "type": ERROR_TYPES[503],
            "message": f"not ready: {state}",
            "request_id": request_id_of(request),
        }
        if detail and self._authenticated(request):
            error["detail"] = detail
        return JSONResponse({"status": state, "error": error}, status_code=503, headers={"Retry-After": "5"})

    async def _load_status(self, name: str) -> tuple[str, str]:
        try:
            status = await asyncio.wait_for(self._qa_handles[name].load_status.remote(), timeout=5)
        except TimeoutError:  # asyncio's is the builtin since 3.11
            status = "loading: the QA deployment did not answer within 5 s (starting, or busy)"
        except Exception as exc:
            status = f"failed: the QA deployment is unreachable: {exc!r}"
        return name, str(status)

    @api.post(
        "/v1/qa",
        response_model=QAResponse,
        summary="Answer a question",
        responses={code: {"model": ErrorResponse} for code in (400, 401, 404, 413, 422, 500, 503, 504)},
    )
    async def qa(self, body: QARequest, request: Request) -> JSONResponse | EventSourceResponse:
        request_id = request_id_of(request)
        if body.stream:
            return await self._qa_stream(body, request_id)
        result = await self._answer(body.question, body.mode, body.top_k, request_id, "qa", body.index)
        return JSONResponse(await _qa_body(body, request_id, result))

    @api.get("/v1/models", summary="OpenAI-compatible model list")
    async def models(self) -> dict[str, Any]:
        names = ["hoprag", "hoprag-plan"]
        if len(self._qa_handles) > 1:  # 'hoprag' alone answers from the default index
            names += [f"{mode}:{index}" for index in self._qa_handles for mode in ("hoprag", "hoprag-plan")]
        data = [{"id": m, "object": "model", "owned_by": "hoprag"} for m in names]
        return {"object": "list", "data": data}

    @api.post(
        "/v1/chat/completions",
        response_model=ChatCompletionResponse,
        summary="OpenAI-compatible: answers the last user message through the QA pipeline",
        responses={code: {"model": ErrorResponse} for code in (400, 401, 404, 413, 422, 500, 503, 504)},
    )
    async def chat(self, body: ChatCompletionRequest, request: Request) -> JSONResponse | EventSourceResponse:
        request_id = request_id_of(request)
        _check_chat_limits(body, self._limits)
        question = _last_user_text(body)
        if not question:
            raise APIError(400, "no user message with text content")
        model, _, model_index = body.model.partition(":")
        mode = "plan" if model.endswith("plan") else "retrieve"
        index = body.index or model_index or None
        if body.stream:
            return await self._chat_stream(body, question, mode, request_id, index)
        result = await self._answer(question, mode, 5, request_id, "chat", index)
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

    # -- indexes and document updates ------------------------------------------------------------
    @api.get(
        "/v1/indexes",
        response_model=IndexList,
        summary="The served indexes: snapshot, sizes, and the memory of their replicas",
    )
    async def indexes(self) -> JSONResponse:
        infos = await asyncio.gather(*(self._describe(name) for name in self._qa_handles))
        listing = IndexList(default=self._default_index, indexes=list(infos))
        return JSONResponse(listing.model_dump(mode="json"))

    async def _describe(self, name: str) -> IndexInfo:
        try:
            info = await asyncio.wait_for(self._qa_handles[name].describe.remote(), timeout=10)
        except Exception as exc:
            logger.warning("index %s: describe failed: %r", name, exc)
            info = {"name": name, "status": "unreachable", "retriever": "", "snapshot": None}
        return IndexInfo.model_validate({**info, "name": name, "default": name == self._default_index})

    def _check_updates_allowed(self, index: str) -> None:
        if not self._updates.enabled:
            raise APIError(403, "document updates are turned off (updates.enabled: false)")
        if self._token is None and not self._updates.allow_without_auth:
            raise APIError(
                403,
                "document updates need auth (auth.token_env) so that not anyone can rewrite the index; "
                "or set updates.allow_without_auth: true",
            )
        self._qa(index)  # 404 for an unknown index

    async def _jobs_call(self, method: str, *args: Any) -> Any:
        from serving.deployments.index_jobs import TooManyJobsError, UnknownDocumentError

        try:
            return await asyncio.wait_for(getattr(self._jobs, method).remote(*args), timeout=60)
        except UnknownDocumentError as exc:
            raise APIError(404, f"the index has no document titled {exc.args[0]!r}") from exc
        except TooManyJobsError as exc:
            raise APIError(503, str(exc), {"Retry-After": "30"}) from exc
        except TimeoutError as exc:
            raise APIError(
                503, "the job service did not answer in time; retry", {"Retry-After": "5"}
            ) from exc
        except OSError as exc:  # e.g. a read-only index volume: say so to the (authenticated) caller
            logger.warning("job service: %r", exc)
            raise APIError(500, f"the job service cannot store the update: {exc.strerror or exc}") from exc

    @api.post(
        "/v1/indexes/{name}/documents",
        response_model=JobStatus,
        status_code=202,
        summary="Add documents (a known title is replaced): runs the index update as a background job",
        description='Body: a JSON list of `{title, text}`, `{"documents": [...]}`, or JSONL '
        "(`Content-Type: application/jsonl`). Answers 202 with the job; its status is at "
        "`GET /v1/jobs/{job_id}`. The served snapshot changes only when the job succeeds.",
        responses={code: {"model": ErrorResponse} for code in (400, 401, 403, 404, 413, 422, 503)},
    )
    async def add_documents(self, name: str, request: Request) -> JSONResponse:
        from serving.uploads import UploadError, parse_upload

        self._check_updates_allowed(name)
        try:
            documents = parse_upload(
                await request.body(),
                request.headers.get("content-type", "application/json"),
                self._updates.max_documents,
                self._updates.max_document_chars,
            )
        except UploadError as exc:
            raise APIError(exc.status, str(exc)) from exc
        job = await self._jobs_call("submit_add", name, [d.model_dump() for d in documents])
        logger.info("job %s: add %d documents to %s", job["job_id"], len(documents), name)
        return self._job_response(job, 202)

    @api.get(
        "/v1/indexes/{name}/documents/{title:path}",
        response_model=DocumentText,
        summary="A document's text (URL-encode the title), from the snapshot being served",
        responses={code: {"model": ErrorResponse} for code in (401, 404, 503)},
    )
    async def document(self, name: str, title: str, request: Request) -> JSONResponse:
        qa = self._qa(name)
        try:
            found = await asyncio.wait_for(qa.document.remote(title), timeout=self._timeout_s)
        except Exception as exc:
            raise self._failure(exc, request_id_of(request), "document") from exc
        if found is None:
            raise APIError(404, f"the index has no document titled {title!r}")
        return JSONResponse(DocumentText.model_validate({**found, "index": name}).model_dump(mode="json"))

    @api.delete(
        "/v1/indexes/{name}/documents/{title:path}",
        response_model=JobStatus,
        status_code=202,
        summary="Remove a document (URL-encode the title): runs the index update as a background job",
        responses={code: {"model": ErrorResponse} for code in (401, 403, 404, 503)},
    )
    async def delete_document(self, name: str, title: str) -> JSONResponse:
        self._check_updates_allowed(name)
        job = await self._jobs_call("submit_delete", name, title)
        logger.info("job %s: delete %r from %s", job["job_id"], title, name)
        return self._job_response(job, 202)

    @api.get(
        "/v1/jobs/{job_id}",
        response_model=JobStatus,
        summary="A document update job: queued, running, succeeded (with its snapshot and whether it is live) or failed",
        responses={code: {"model": ErrorResponse} for code in (401, 404)},
    )
    async def job(self, job_id: str) -> JSONResponse:
        index = await self._jobs_call("index_of", job_id)
        if index is None:
            raise APIError(404, f"no job {job_id!r} (finished jobs are kept: updates.keep_jobs)")
        try:
            serving = await asyncio.wait_for(self._qa_handles[index].snapshot.remote(), timeout=5)
        except Exception:  # the status is still worth answering
            serving = None
        return self._job_response(await self._jobs_call("status", job_id, serving), 200)

    @staticmethod
    def _job_response(job: dict[str, Any], status: int) -> JSONResponse:
        body = JobStatus.model_validate(job).model_dump(mode="json")
        return JSONResponse(body, status_code=status, headers={"Location": f"/v1/jobs/{job['job_id']}"})
