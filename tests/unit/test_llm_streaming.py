"""Streaming generation: the stop-sequence cut, the fallback, the OpenAI protocol both ways
(client and loopback server, real HTTP on 127.0.0.1), cancellation, and the answer-text stream."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from hoprag.llm.base import Completion, GenerationParams, truncate_at_stop
from hoprag.llm.openai_compat import OpenAICompatibleConfig, OpenAICompatibleLLM
from hoprag.llm.openai_server import OpenAIProtocolServer
from hoprag.llm.streaming import CancelToken, StopSequenceFilter, collect, stream_completion
from hoprag.planner.llm_calls import CachedLLM, CallLedger
from hoprag.planner.parsing import answer_text_so_far, parse_answer
from tests.support.openai_sdk import mock_http_client, sdk_http
from tests.support.planner_llm import Rule, ScriptedPlannerLLM
from tests.support.streaming_llm import StreamingWrapper

pytestmark = pytest.mark.timeout(60)

ANSWER_PROMPT = "Facts:\nx\nQuestion: Who?\nAnswer:"


def test_the_stop_filter_releases_exactly_the_cut_text_and_never_part_of_a_stop() -> None:
    rng = random.Random(0)
    alphabet = "ab\nS"
    for _ in range(2000):
        stops = tuple("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3))) for _ in range(2))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        expected, _ = truncate_at_stop(text, stops)
        cut = StopSequenceFilter(stops)
        released, i = "", 0
        while i < len(text):
            n = rng.randint(1, 3)
            released += cut.feed(text[i : i + n])
            i += n
            # What is out is final: a prefix of the cut text of everything fed so far, and of the end.
            assert truncate_at_stop(text[:i], stops)[0].startswith(released)
            assert expected.startswith(released), (text, stops, released)
        released += cut.flush()
        assert released == expected == cut.text, (text, stops)


def test_the_stop_filter_holds_back_a_possible_stop_prefix() -> None:
    cut = StopSequenceFilter(["\n\nQ"])
    assert cut.feed("Carl Boese\n") == "Carl Boese"  # "\n" may start the stop sequence
    assert cut.feed("\n") == ""
    assert cut.feed("Q: next") == "" and cut.stopped and cut.text == "Carl Boese"


def test_a_backend_without_streaming_gives_one_delta_with_the_whole_completion() -> None:
    llm = ScriptedPlannerLLM([Rule("answer", "Carl Boese")])
    deltas, completion = collect(stream_completion(llm, ANSWER_PROMPT, GenerationParams()))
    assert deltas == ["Carl Boese"] and completion.text == "Carl Boese" and completion.completion_tokens == 2


def _client(base_url: str, style: str, http_client: Any = None) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(
        OpenAICompatibleConfig(
            base_url=base_url,
            model="m",
            prompt_style=style,  # type: ignore[arg-type]
            api_key_env="HOPRAG_TEST_NO_SUCH_KEY",
            timeout_s=5,
            max_retries=1,
        ),
        http_client=http_client,
    )


@pytest.mark.parametrize("style", ["completion", "chat"])
def test_openai_streaming_joins_to_the_completion_generate_gives(style: str) -> None:
    reply = "Carl Boese, a German director\n\nQuestion: more"
    scripted = ScriptedPlannerLLM([Rule("answer", reply), Rule("other", reply)])  # chat: "other"
    llm = StreamingWrapper(scripted)
    with OpenAIProtocolServer(llm) as server, _client(server.base_url, style) as client:
        params = GenerationParams(max_new_tokens=20, stop=("\n\nQuestion",))
        deltas, streamed = collect(client.stream(ANSWER_PROMPT, params))
        generated = client.generate([ANSWER_PROMPT], params)[0]
    assert len(deltas) >= 4  # word by word, over real HTTP
    assert "".join(deltas) == streamed.text == generated.text == "Carl Boese, a German director"
    assert streamed.prompt_tokens == generated.prompt_tokens > 0
    assert streamed.completion_tokens == generated.completion_tokens > 0
    assert streamed.finish_reason == "stop" and llm.streams[0].finished


def test_the_official_openai_client_streams_from_the_loopback_server() -> None:
    import openai

    llm = StreamingWrapper(ScriptedPlannerLLM([Rule("other", "Carl Boese directed it")], default="x"))
    with OpenAIProtocolServer(llm) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="none", timeout=10)
        chunks = list(
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "Who?"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content.startswith("Carl Boese") and chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_closing_the_client_stream_stops_the_generation_behind_the_server() -> None:
    llm = StreamingWrapper(ScriptedPlannerLLM([Rule("answer", "Carl")]), delay_s=0.02, extra_words=500)
    with OpenAIProtocolServer(llm) as server, _client(server.base_url, "completion") as client:
        stream = client.stream(ANSWER_PROMPT, GenerationParams(max_new_tokens=600))
        assert next(stream) == "Carl"
        stream.close()
        deadline = time.time() + 10
        while time.time() < deadline and not llm.streams[0].stopped_early:
            time.sleep(0.05)
    record = llm.streams[0]
    assert record.stopped_early and not record.finished and record.deltas < 100, record


def test_a_cancel_token_stops_a_stream_blocked_waiting_for_the_next_token() -> None:
    llm = StreamingWrapper(ScriptedPlannerLLM([Rule("answer", "Carl")]), delay_s=0.5, extra_words=100)
    with OpenAIProtocolServer(llm) as server, _client(server.base_url, "completion") as client:
        token = CancelToken()
        stream = client.stream(ANSWER_PROMPT, GenerationParams(max_new_tokens=200), token)
        assert next(stream) == "Carl"
        started = time.perf_counter()
        token.cancel()  # from another thread in real use; the read in progress is interrupted
        rest = list(stream)
        assert time.perf_counter() - started < 0.45
        assert isinstance(rest[-1], Completion) and rest[-1].error == "cancelled"


def test_a_server_that_cannot_stream_gets_an_ordinary_request() -> None:
    http = sdk_http()

    def handler(request: Any) -> Any:
        import json

        body = json.loads(request.content)
        if body.get("stream"):
            return http.Response(400, json={"error": {"message": "no streaming"}})
        return http.Response(200, json={"choices": [{"text": "Carl Boese", "finish_reason": "stop"}]})

    client = _client("http://test/v1", "completion", http_client=mock_http_client(handler))
    deltas, completion = collect(client.stream(ANSWER_PROMPT, GenerationParams()))
    assert deltas == ["Carl Boese"] and completion.ok and completion.text == "Carl Boese"


def test_a_streamed_call_records_and_caches_like_a_plain_one() -> None:
    llm = StreamingWrapper(ScriptedPlannerLLM([Rule("answer", "Carl Boese")]))
    plain, streamed = CachedLLM(llm), CachedLLM(llm)
    params = GenerationParams(stop=("\n",))
    ledger_plain, ledger_streamed = CallLedger(), CallLedger()
    expected = plain.complete([ANSWER_PROMPT], params, ledger_plain, "answer")[0]
    texts: list[str] = []
    got = streamed.complete_streamed(ANSWER_PROMPT, params, ledger_streamed, "answer", texts.append)
    assert got == expected and "".join(texts) == "Carl Boese" and len(texts) == 2
    assert ledger_streamed.answer_fields() | {"llm_seconds": 0} == ledger_plain.answer_fields() | {
        "llm_seconds": 0
    }
    again: list[str] = []
    hit = streamed.complete_streamed(ANSWER_PROMPT, params, ledger_streamed, "answer", again.append)
    assert hit == expected and again == ["Carl Boese"] and ledger_streamed.records[-1].cache_hits == 1


@pytest.mark.parametrize(
    "output",
    [
        " Carl Boese\nmore",
        'Answer: "Carl Boese."',
        "Final answer: Dr. No.",
        "not enough info",
        "No",
        "Norway",
        "  Answers vary",
        "“Berlin”",
        "x" * 300,
        "Unknown",
    ],
)
def test_the_settled_answer_text_grows_into_a_prefix_of_the_parsed_answer(output: str) -> None:
    parsed = parse_answer(output)
    answer = parsed.value if parsed.ok and parsed.value else ""
    previous = ""
    for end in range(len(output) + 1):
        settled = answer_text_so_far(output[:end])
        assert settled.startswith(previous), (output[:end], settled, previous)
        previous = settled
    if answer:
        assert answer.startswith(previous), (answer, previous)
    elif len(output) <= 200:
        assert previous == ""
