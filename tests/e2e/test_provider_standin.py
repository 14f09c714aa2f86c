"""The Chat provider stand-in speaks the real protocols: the official `openai` and `anthropic`
Python SDKs, pointed at it, parse its streams (text, usage, the end) and its errors (401, 429
with Retry-After, 404, 500) as they parse the real services'. No Lomi here.
"""

from __future__ import annotations

import anthropic
import openai
import pytest
from provider_standin import GOOD_KEY, StandIn


@pytest.fixture
def standin():
    s = StandIn()
    yield s
    s.close()


def test_the_openai_sdk_parses_the_standins_stream_and_errors(standin):
    client = openai.OpenAI(base_url=standin.openai_url, api_key=GOOD_KEY, max_retries=0)
    stream = client.chat.completions.create(
        model="echo-model",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, usage, finish = "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text == "Echo: hello there"
    assert finish == "stop"
    assert usage is not None and usage.prompt_tokens == 11 and usage.completion_tokens > 0
    request = standin.seen("/chat/completions")[-1]
    assert request["headers"]["authorization"] == f"Bearer {GOOD_KEY}"
    assert request["body"]["stream"] is True

    bad = openai.OpenAI(base_url=standin.openai_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="echo-model", messages=[{"role": "user", "content": "x"}], stream=True)
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="busy-model", messages=[{"role": "user", "content": "x"}], stream=True)
    assert limited.value.response.headers["retry-after"] == "7"
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="missing-model", messages=[{"role": "user", "content": "x"}], stream=True)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="broken-model", messages=[{"role": "user", "content": "x"}], stream=True)
    # A stream cut mid-way is an error for the SDK too, after the text that arrived.
    got = ""
    with pytest.raises((openai.APIError, Exception)):
        for chunk in client.chat.completions.create(
            model="cut-model", messages=[{"role": "user", "content": "cut me"}], stream=True
        ):
            for choice in chunk.choices:
                got += choice.delta.content or ""
        raise AssertionError("the cut stream ended cleanly")
    assert got and "Echo: cut me".startswith(got), got


def test_the_anthropic_sdk_parses_the_standins_stream_and_errors(standin):
    client = anthropic.Anthropic(base_url=standin.anthropic_url, api_key=GOOD_KEY, max_retries=0)
    with client.messages.stream(
        model="echo-model",
        max_tokens=100,
        system="be brief",
        messages=[{"role": "user", "content": "hello claude"}],
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Echo: hello claude"
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens == 13 and final.usage.output_tokens > 0
    request = standin.seen("/v1/messages")[-1]
    headers = request["headers"]
    assert headers.get("x-api-key") == GOOD_KEY or headers.get("authorization") == f"Bearer {GOOD_KEY}"
    assert request["headers"]["anthropic-version"]

    bad = anthropic.Anthropic(base_url=standin.anthropic_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad.messages.create(model="echo-model", max_tokens=10, messages=[{"role": "user", "content": "x"}], stream=True)
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(model="busy-model", max_tokens=10, messages=[{"role": "user", "content": "x"}], stream=True)
    assert limited.value.response.headers["retry-after"] == "7"
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(model="missing-model", max_tokens=10, messages=[{"role": "user", "content": "x"}], stream=True)
    with pytest.raises(anthropic.InternalServerError):
        client.messages.create(model="broken-model", max_tokens=10, messages=[{"role": "user", "content": "x"}], stream=True)
