"""A small HTTP client for the QA route, with the retry policy production callers should use:
retry connection failures, 503 (overloaded / not ready; honouring ``Retry-After``, in seconds or as
an HTTP date, up to ``max_retry_after_s``) and 502/504, with exponential backoff; never retry 4xx."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from hoprag.http_headers import retry_after_seconds

RETRYABLE = {502, 503, 504}


class QAClientError(RuntimeError):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class QAClient:
    base_url: str
    token: str | None = None
    timeout_s: float = 180.0
    retries: int = 3
    backoff_s: float = 0.5
    max_retry_after_s: float = 30.0  # a server asking for a longer wait gets this much, then a retry
    retried: int = 0  # how many retries this client needed so far

    def ask(
        self, question: str, mode: str = "retrieve", top_k: int = 5, trace: bool = False
    ) -> dict[str, Any]:
        body = {"question": question, "mode": mode, "top_k": top_k, "return_trace": trace}
        return self._post("/v1/qa", body)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        url = self.base_url.rstrip("/") + path
        delay = self.backoff_s
        for attempt in range(self.retries + 1):
            try:
                r = httpx.post(url, json=body, headers=headers, timeout=self.timeout_s)
            except httpx.TransportError as exc:
                if attempt == self.retries:
                    raise QAClientError(f"{url}: {exc}") from exc
                self.retried += 1
                time.sleep(delay)
                delay *= 2
                continue
            if r.status_code == 200:
                return r.json()
            if r.status_code in RETRYABLE and attempt < self.retries:
                self.retried += 1
                asked = retry_after_seconds(r.headers.get("retry-after")) or 0.0
                time.sleep(max(delay, min(asked, self.max_retry_after_s)))
                delay *= 2
                continue
            try:
                message = r.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = r.text[:200]
            raise QAClientError(f"HTTP {r.status_code}: {message}", r.status_code)
        raise QAClientError(f"{url}: retries exhausted")
