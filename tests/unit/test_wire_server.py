"""The wire servers' test-kit features: a responder computing replies from requests, a
bounded request history, a listen backlog for many clients, and paced streaming."""

from __future__ import annotations

import selectors
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from openai import OpenAI

from pywrapai_graph import LLM
from pywrapai_graph.domain import TokenUsage
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.testing.scripted import ScriptedReply
from pywrapai_graph.testing.wire import AnthropicWire, OpenAIWire, RecordedRequest


def _last_user_text(request: RecordedRequest) -> str:
    return str(request.json["messages"][-1]["content"])


def _echo(request: RecordedRequest) -> ScriptedReply:
    return ScriptedReply("echo: " + _last_user_text(request), usage=TokenUsage(3, 2))


def test_a_responder_answers_each_request_from_its_content() -> None:
    with OpenAIWire(responder=_echo) as wire:
        llm = LLM(provider="openai", api_key="sk-test", base_url=wire.base_url)
        questions = [f"question {i}" for i in range(24)]
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda q: llm.chat(q).content, questions))
        assert answers == [f"echo: {q}" for q in questions]
        assert len(wire.requests) == 24


def test_a_responder_answers_streams_and_queued_replies_come_first() -> None:
    wire = OpenAIWire().respond_with(lambda r: "computed " + _last_user_text(r))
    with wire:
        wire.reply("queued").fail(429, "slow down")
        client = OpenAI(api_key="sk-test", base_url=wire.base_url, max_retries=0)

        def ask(text: str, stream: bool = False) -> str:
            messages: Any = [{"role": "user", "content": text}]
            if not stream:
                reply = client.chat.completions.create(model="m", messages=messages)
                return reply.choices[0].message.content or ""
            events = client.chat.completions.create(model="m", messages=messages, stream=True)
            return "".join(e.choices[0].delta.content or "" for e in events if e.choices)

        assert ask("a") == "queued"
        with pytest.raises(Exception, match="slow down"):
            ask("b")
        assert ask("c") == "computed c"
        assert ask("d", stream=True) == "computed d"
        wire.respond_with(None)
        with pytest.raises(Exception, match="no reply left"):
            ask("e")


def test_a_responder_serves_other_providers_formats() -> None:
    def reply(request: RecordedRequest) -> str:
        return f"{len(request.json['messages'])} message(s)"

    with AnthropicWire(responder=reply) as wire:
        llm = LLM(provider="anthropic", api_key="sk-ant-test", base_url=wire.url)
        assert llm.chat("hi").content == "1 message(s)"
        assert "".join(llm.stream("hi")) == "1 message(s)"


def test_the_request_history_keeps_the_newest_up_to_its_maximum() -> None:
    with OpenAIWire(responder=_echo, max_requests=3) as wire:
        llm = LLM(provider="openai", api_key="sk-test", base_url=wire.base_url)
        for i in range(7):
            llm.chat(f"call {i}")
        assert [_last_user_text(r) for r in wire.requests] == ["call 4", "call 5", "call 6"]
        assert wire.requests_dropped == 4


def test_the_default_history_is_bounded() -> None:
    wire = OpenAIWire()
    assert 1000 <= wire.max_requests < 1_000_000
    with pytest.raises(InvalidArgumentError, match="max_requests"):
        OpenAIWire(max_requests=0)


def _connected(sockets: list[socket.socket], wait: float) -> int:
    """How many of the non-blocking ``sockets`` finish connecting within ``wait`` seconds."""
    done = 0
    deadline = time.monotonic() + wait
    with selectors.DefaultSelector() as selector:  # epoll: the suite's fds pass select's 1024
        for s in sockets:
            selector.register(s, selectors.EVENT_WRITE)
        while done < len(sockets) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.1):
                selector.unregister(key.fileobj)
                ready = key.fileobj
                assert isinstance(ready, socket.socket)
                done += ready.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
    return done


def test_a_hundred_clients_wait_in_the_backlog_while_the_server_accepts_none() -> None:
    """The kernel completes a connection only while the listen queue has room: with the old
    backlog of 5, six of a hundred clients got in and the rest had their SYNs dropped."""
    with OpenAIWire(responder=_echo) as wire:
        sockets = []
        try:
            with wire.accepting_paused():
                for _ in range(100):
                    s = socket.socket()
                    s.setblocking(False)
                    s.connect_ex(("127.0.0.1", wire.port))
                    sockets.append(s)
                assert _connected(sockets, wait=3.0) == 100
            for s in sockets:  # once accepting again, every queued connection is served
                s.setblocking(True)
                s.settimeout(30)
                s.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answers = [s.recv(64) for s in sockets]
        finally:
            for s in sockets:
                s.close()
        assert all(a.startswith(b"HTTP/1.1 404") for a in answers)
    with pytest.raises(InvalidArgumentError, match="backlog"):
        OpenAIWire(backlog=0)


def test_a_paced_stream_sends_its_events_one_at_a_time() -> None:
    text = "one two three four five six"
    with OpenAIWire(pace=1.0) as wire:
        wire.reply(ScriptedReply(text, usage=TokenUsage(4, 6)))
        client = OpenAI(api_key="sk-test", base_url=wire.base_url, max_retries=0)
        events = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True
        )
        first = next(iter(events))
        # the first event is here while the server still holds the others back
        sent_at_first_event = wire.chunks_sent
        rest = "".join(e.choices[0].delta.content or "" for e in events if e.choices)
        total = wire.chunks_sent
    assert first.choices[0].delta.role == "assistant"
    assert rest == text
    assert total >= 5
    assert sent_at_first_event < total


def test_pacing_can_be_set_on_a_running_server_and_applies_to_every_provider() -> None:
    with AnthropicWire() as wire:
        wire.pace(0.5).reply("paced reply here")
        with httpx.stream(
            "POST",
            wire.url + "/v1/messages",
            json={"model": "m", "max_tokens": 10, "stream": True, "messages": []},
        ) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("event: message_start")
            sent_at_first_event = wire.chunks_sent
            names = [line for line in lines if line.startswith("event:")]
        assert names[-1] == "event: message_stop"
        assert sent_at_first_event < wire.chunks_sent
    with pytest.raises(InvalidArgumentError, match="pace"):
        wire.pace(-1)


def test_a_server_that_is_not_started_cannot_pause() -> None:
    with pytest.raises(Exception, match="not started"), OpenAIWire().accepting_paused():
        pass
