"""The ingress's error responses: JSON ``{"error": {"type", "message", "request_id"}}`` with
the status's type name, the request id every response carries, and the kind of a failure (what
the error counters and logs call it). Used by the routes (:mod:`serving.deployments.ingress`)
and the request guard (:mod:`serving.deployments.request_guard`)."""

from __future__ import annotations

import asyncio
import re
import uuid

from fastapi import Request
from fastapi.responses import JSONResponse

_REQUEST_ID = re.compile(r"^[\w.:-]{1,64}$")
ERROR_TYPES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    413: "payload_too_large",
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


def request_id_of(request: Request) -> str:
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


def error_response(
    status: int, message: str, request_id: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    if status < 500:  # 5xx are counted where they arise, with their kind (overloaded, timeout, ...)
        try:
            from serving.metrics import ingress_metrics

            ingress_metrics()["errors"].inc(
                tags={"route": "http", "kind": ERROR_TYPES.get(status, str(status))}
            )
        except Exception:  # outside a Ray worker (no metrics): never let counting fail a response
            pass
    body = {"error": {"type": ERROR_TYPES.get(status, "error"), "message": message, "request_id": request_id}}
    return JSONResponse(body, status_code=status, headers=headers or {})


def error_kind(exc: BaseException) -> str:
    from ray.exceptions import ActorUnavailableError, RayActorError
    from ray.serve.exceptions import BackPressureError

    from hoprag.planner.questions import PlannerInputError
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
