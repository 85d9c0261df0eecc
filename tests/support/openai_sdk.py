"""The HTTP library under the installed ``openai`` SDK (``httpx`` in 1.x/2.x, ``httpx2`` later), for
tests that give the SDK a mock transport (``http_client=mock_http_client(handler)``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any


def sdk_http() -> ModuleType:
    import openai

    base = next(c for c in openai.DefaultHttpxClient.__mro__ if c.__module__.startswith("httpx"))
    return importlib.import_module(base.__module__.split(".")[0])


def mock_http_client(handler: Callable[[Any], Any]) -> Any:
    """An SDK-compatible HTTP client whose requests ``handler`` answers (request -> response)."""
    http = sdk_http()
    return http.Client(transport=http.MockTransport(handler))
