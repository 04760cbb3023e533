"""Client-side limits through the OpenAI SDK over real HTTP to a wire server: under 200
concurrent calls (threads, then asyncio tasks) from two LLMs and an Embedder sharing one
provider key, the server never sees more requests in flight, nor more requests or tokens in
any 60 s window, than the limits allow. Time is a ManualClock: the windows pass when the
test says so, never by waiting, and nothing here asserts a duration."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from pywrapai import LLM, Embedder
from pywrapai_graph.application.provider_limiter import WINDOW_S, ProviderLimiter
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.domain import Limits, TokenUsage
from pywrapai_graph.errors import (
    ArgumentTypeError,
    ConfigurationError,
    InvalidArgumentError,
    LimitWaitError,
    RateLimitError,
)
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.clock import ManualClock
from pywrapai_graph.testing.wire import AnthropicWire, OpenAIWire
from pywrapai_graph.testing.wire.server import RecordedRequest

CALLS = 200
USAGE = TokenUsage(10, 5)  # what the server reports for every chat: 15 tokens
MAX_TOKENS = 20  # so a chat is estimated at 1 + 20 tokens before it is sent
LIMITS = Limits(requests_per_minute=30, tokens_per_minute=400, max_in_flight=6, max_wait_s=3600)


@dataclass
class Observed:
    """What the server saw: when (on the test's clock) each request arrived, and its tokens."""

    clock: ManualClock
    arrivals: list[tuple[float, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self, request: RecordedRequest) -> ScriptedReply:
        with self.lock:
            self.arrivals.append((self.clock.now(), USAGE.total_tokens))
        return ScriptedReply("ok", usage=USAGE)

    def embedded(self, texts: int) -> None:
        with self.lock:
            self.arrivals.append((self.clock.now(), texts))  # 1 text = 1 estimated token

    def busiest_window(self) -> tuple[int, int]:
        """The most requests, and the most tokens, that arrived in any 60 s window."""
        stamps = sorted(self.arrivals)
        most_requests = most_tokens = 0
        for i, (start, _) in enumerate(stamps):
            inside = [t for at, t in stamps[i:] if at < start + WINDOW_S]
            most_requests = max(most_requests, len(inside))
            most_tokens = max(most_tokens, sum(inside))
        return most_requests, most_tokens


class Wire(OpenAIWire):
    """Counts embedding requests on the test's clock too."""

    observed: Observed

    def render_embeddings(self, body: Any, path: str) -> Any:
        self.observed.embedded(len(body["input"]))
        return super().render_embeddings(body, path)


@pytest.fixture
def setup() -> Iterator[tuple[Wire, ManualClock, ProviderLimiter, Observed]]:
    clock = ManualClock()
    observed = Observed(clock)
    with Wire(responder=observed.reply) as wire:
        wire.observed = observed
        yield wire, clock, ProviderLimiter(LIMITS, clock=clock), observed


def clients(wire: Wire, limiter: ProviderLimiter) -> tuple[LLM, LLM, Embedder]:
    options: dict[str, Any] = {"base_url": wire.base_url, "api_key": "sk-limits", "max_retries": 0}
    first = LLM(provider="openai", model="gpt-4o-mini", limits=limiter, **options)
    second = LLM(provider="openai", model="gpt-4o", limits=limiter, **options)
    embedder = Embedder(provider="openai", limits=limiter, **options)
    return first, second, embedder


def drive(clock: ManualClock, finished: Callable[[], int]) -> int:
    """Advance the clock whenever every caller is either done or asleep on it (so no
    request is on its way: the server stamps each arrival at its admission time); returns
    how many times the windows moved on."""
    moves = 0
    while True:
        clock.wait_until(lambda: finished() + clock.sleepers == CALLS)
        if finished() == CALLS:
            return moves
        clock.advance()
        moves += 1


def check(wire: Wire, limiter: ProviderLimiter, observed: Observed, moves: int) -> None:
    assert len(observed.arrivals) == CALLS
    requests, tokens = observed.busiest_window()
    assert requests <= 30 and tokens <= 400
    assert wire.peak_in_flight_total <= 6
    assert moves >= 5  # 200 calls at <= 30 a minute took at least 6 windows
    assert limiter.stats.admitted == CALLS and limiter.in_flight == 0


def one_call(i: int, llms: tuple[LLM, LLM, Embedder]) -> None:
    if i % 10 == 9:
        llms[2].embed(["a"])
    else:
        (llms[0], llms[1])[i % 2].chat("Hi", max_tokens=MAX_TOKENS)


def test_200_threads_never_exceed_the_limits(
    setup: tuple[Wire, ManualClock, ProviderLimiter, Observed],
) -> None:
    wire, clock, limiter, observed = setup
    llms = clients(wire, limiter)
    done: list[int] = []
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            one_call(i, llms)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(CALLS)]
    for t in threads:
        t.start()
    moves = drive(clock, lambda: len(done))
    for t in threads:
        t.join()
    assert errors == []
    check(wire, limiter, observed, moves)
    for client in llms:
        client.close()


def test_200_tasks_never_exceed_the_limits(
    setup: tuple[Wire, ManualClock, ProviderLimiter, Observed],
) -> None:
    wire, clock, limiter, observed = setup
    llms = clients(wire, limiter)
    done: list[int] = []

    async def one(i: int) -> None:
        try:
            if i % 10 == 9:
                await llms[2].aembed(["a"])
            else:
                await (llms[0], llms[1])[i % 2].achat("Hi", max_tokens=MAX_TOKENS)
        finally:
            done.append(i)

    async def run() -> None:
        try:
            await asyncio.gather(*(one(i) for i in range(CALLS)))
        finally:
            for client in llms:
                await client.aclose()

    moves: list[int] = []
    driver = threading.Thread(target=lambda: moves.append(drive(clock, lambda: len(done))))
    driver.start()
    asyncio.run(run())
    driver.join()
    check(wire, limiter, observed, moves[0])
    for client in llms:
        client.close()


def test_the_in_flight_cap_is_reached_and_never_passed_by_200_threads_and_tasks() -> None:
    """The server holds requests until 8 are open at once: the cap lets exactly 8 through."""
    limiter = ProviderLimiter(Limits(max_in_flight=8))
    with OpenAIWire(responder=lambda request: "ok") as wire:
        llm = LLM(provider="openai", base_url=wire.base_url, api_key="sk-f", limits=limiter)
        wire.hold("chat", until=8)
        threads = [threading.Thread(target=llm.chat, args=("Hi",)) for _ in range(CALLS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert wire.peak_in_flight["chat"] == 8

        async def run() -> None:
            wire.hold("chat", until=8)
            try:
                await asyncio.gather(*(llm.achat("Hi") for _ in range(CALLS)))
            finally:
                await llm.aclose()

        asyncio.run(run())
        llm.close()
        assert wire.peak_in_flight["chat"] == 8
        assert len(list(wire.chat_requests())) == 2 * CALLS
    assert limiter.in_flight == 0 and limiter.stats.peak_in_flight == 8


def test_a_task_waiting_for_its_turn_leaves_the_loop_running() -> None:
    """While one task waits out a full window, another task on the same loop keeps ticking."""
    clock = ManualClock()
    limiter = ProviderLimiter(Limits(requests_per_minute=1), clock=clock)
    ticks = 0
    waiting_ticks: list[int] = []

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    def driver() -> None:
        clock.wait_until(lambda: clock.sleepers == 1)  # the second request is waiting
        start = ticks
        clock.wait_until(lambda: ticks >= start + 100)  # the loop runs meanwhile
        waiting_ticks.append(ticks - start)
        clock.advance()

    async def run() -> None:
        stop = asyncio.Event()
        tick = asyncio.create_task(ticker(stop))
        (await limiter.aacquire()).release()
        thread = threading.Thread(target=driver)
        thread.start()
        (await limiter.aacquire()).release()  # waits for the window to pass
        stop.set()
        await tick
        thread.join()

    asyncio.run(run())
    assert waiting_ticks[0] >= 100
    assert limiter.stats.waited == 1


# ---------------------------------------------------------------------------- refusals


def test_a_wait_longer_than_max_wait_is_a_typed_error_and_sends_nothing() -> None:
    clock = ManualClock()
    limiter = ProviderLimiter(Limits(requests_per_minute=1, max_wait_s=10), clock=clock)
    with OpenAIWire(responder=lambda request: "ok") as wire:
        llm = LLM(
            provider="openai", base_url=wire.base_url, api_key="sk-x", max_retries=0, limits=limiter
        )
        llm.chat("first")
        with pytest.raises(LimitWaitError) as info:
            llm.chat("second")
        llm.close()
        assert isinstance(info.value, RateLimitError)
        assert info.value.retry_after == pytest.approx(WINDOW_S)
        assert "max_wait_s=10" in str(info.value)
        assert len(list(wire.chat_requests())) == 1
    assert limiter.stats.refused == 1


def test_a_request_bigger_than_the_token_budget_is_refused() -> None:
    limiter = ProviderLimiter(Limits(tokens_per_minute=10), clock=ManualClock())
    with pytest.raises(LimitWaitError, match="more than tokens_per_minute=10"):
        limiter.acquire(11)


def test_a_full_in_flight_cap_past_max_wait_is_a_typed_error() -> None:
    limiter = ProviderLimiter(Limits(max_in_flight=1, max_wait_s=0.05))  # the system clock
    held = limiter.acquire()
    with pytest.raises(LimitWaitError, match="1 requests in flight busy"):
        limiter.acquire()

    async def run() -> None:
        with pytest.raises(LimitWaitError):
            await limiter.aacquire()

    asyncio.run(run())
    held.release()
    limiter.acquire().release()  # the slot is free again


def test_a_limited_primary_falls_back_to_the_next_model() -> None:
    clock = ManualClock()
    limiter = ProviderLimiter(Limits(requests_per_minute=1, max_wait_s=1), clock=clock)
    with OpenAIWire(responder=lambda r: "primary") as wire, AnthropicWire() as backup:
        backup.reply("backup")
        llm = LLM(
            provider="openai",
            base_url=wire.base_url,
            api_key="sk-x",
            max_retries=0,
            limits=limiter,
            fallbacks=[{"provider": "anthropic", "base_url": backup.url, "api_key": "sk-ant-x"}],
        )
        assert llm.chat("one").content == "primary"
        second = llm.chat("two")
        llm.close()
        assert (second.content, second.fallback_from[0].error) == ("backup", "LimitWaitError")


# ---------------------------------------------------------------------------- sharing


def test_clients_naming_the_same_provider_and_key_share_one_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "sk-shared-SECRET-1234567890"
    limits = Limits(requests_per_minute=5)
    a = LLM(provider="openai", api_key=key, limits=limits)
    b = LLM(provider="openai", model="gpt-4o", api_key=key, limits={"requests_per_minute": 5})
    e = Embedder(provider="openai", api_key=key, limits=limits)
    other = LLM(provider="openai", api_key=key + "x", limits=limits)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    from_env = LLM(provider="openai", limits=limits)  # the SDK's key: the same identity
    limiter = a.limiter
    assert limiter is not None
    assert b.limiter is limiter and from_env.limiter is limiter and e.limiter is limiter
    assert other.limiter is not limiter
    assert LLM(provider="openai", api_key=key).limiter is None  # no limits given: none
    assert key not in repr(limiter) and key not in limiter.name
    with pytest.raises(ConfigurationError, match="already has limits"):
        LLM(provider="openai", api_key=key, limits=Limits(requests_per_minute=6))
    for client in (a, b, e, other, from_env):
        client.close()


def test_bad_limits_are_typed_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="requests_per_minute"):
        Limits(requests_per_minute=0)
    with pytest.raises(InvalidArgumentError, match="max_wait_s"):
        Limits(max_wait_s=-1)
    with pytest.raises(ConfigurationError, match="unknown field"):
        LLM(provider="openai", api_key="sk-y", limits={"rpm": 5})
    with pytest.raises(ArgumentTypeError, match="limits="):
        LLM(provider="openai", api_key="sk-y", limits=5)  # type: ignore[arg-type]


def test_limits_come_from_the_configuration() -> None:
    config = {
        "llm": {
            "provider": "openai",
            "api_key": "sk-configured",
            "fallbacks": [{"provider": "anthropic", "api_key": "sk-ant-configured"}],
        },
        "embedder": {"provider": "openai", "api_key": "sk-configured"},
        "limits": {
            "openai": {"requests_per_minute": 100, "max_in_flight": 4},
            "anthropic": {"tokens_per_minute": 10_000},
        },
        "store": {"backend": "memory"},
    }
    with build_container(config) as container:
        llm, embedder = container.llm(), container.embedder()
        assert llm is not None and llm.limiter is not None
        assert llm.limiter is embedder.limiter  # one budget for the LLM and the embedder
        assert llm.limiter.limits == Limits(requests_per_minute=100, max_in_flight=4)
    with pytest.raises(ConfigurationError, match="limits"):
        load_settings({"limits": {"openai": {"requests_per_minute": 0}}})


def test_a_stream_holds_its_slot_until_it_ends_or_is_closed() -> None:
    limiter = ProviderLimiter(Limits(max_in_flight=1, tokens_per_minute=1000), clock=ManualClock())
    with OpenAIWire(responder=lambda request: "one two three four") as wire:
        llm = LLM(provider="openai", base_url=wire.base_url, api_key="sk-s", limits=limiter)
        stream = llm.stream("Hi")
        assert limiter.in_flight == 0  # nothing is sent before the first piece is asked for
        next(stream)
        assert limiter.in_flight == 1
        stream.close()
        assert limiter.in_flight == 0
        whole = llm.stream("Hi")
        assert whole.text() == "one two three four"
        assert limiter.in_flight == 0
        llm.close()
    # the closed stream counts for its estimate (1 token of "Hi": no usage had arrived), the
    # finished one for the tokens the server reported
    assert limiter.tokens_in_window == 1 + whole.response.usage.total_tokens
