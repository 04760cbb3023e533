"""HistoryWindow: the oldest turns go first, whole; the system prompt and the current turn
stay; a tool call is never parted from its result."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pywrapai_graph import HistoryWindow
from pywrapai_graph.application.history_window import estimate_message_tokens
from pywrapai_graph.domain import Message, Role, ToolCall, ToolResult
from pywrapai_graph.errors import ContextWindowError, InvalidArgumentError

SYSTEM = Message(Role.SYSTEM, "You are terse.")


def _tokens(m: Message) -> int:
    """A count a test can add up by hand: one token per character, at least one."""
    return max(1, len(m.content))


@st.composite
def turns(draw: st.DrawFn, index: int, open_calls: bool) -> tuple[list[Message], list[Message]]:
    """One turn: a user message, rounds of tool calls each followed by its results, maybe
    an answer. With ``open_calls`` the turn's last round is a call whose results are the
    second list (the current message); otherwise that list is empty."""
    text = st.text("abc", min_size=0, max_size=40)
    turn = [Message(Role.USER, "u" + draw(text))]
    results: list[Message] = []
    for r in range(draw(st.integers(0, 2)) + open_calls):
        ids = [f"t{index}r{r}c{c}" for c in range(draw(st.integers(1, 3)))]
        calls = [ToolCall(i, "f", {}) for i in ids]
        turn.append(Message(Role.ASSISTANT, draw(text), tool_calls=calls))
        results = [Message(Role.TOOL, draw(text), tool_result=ToolResult(i, "f", "")) for i in ids]
        turn += results
    if open_calls:
        return turn[: len(turn) - len(results)], results
    if draw(st.booleans()):
        turn.append(Message(Role.ASSISTANT, "a" + draw(text)))
    return turn, []


@st.composite
def requests(draw: st.DrawFn) -> tuple[list[Message], list[Message], list[Message], int]:
    """(head, history, current, max_tokens) of a conversation's request."""
    head = [SYSTEM] if draw(st.booleans()) else []
    n = draw(st.integers(0, 6))
    history = [m for i in range(n) for m in draw(turns(i, open_calls=False))[0]]
    if draw(st.booleans()):  # the current message brings the results of a turn's tool calls
        past, current = draw(turns(n, open_calls=True))
        history += past
    else:
        current = [Message(Role.USER, "now" + draw(st.text("xyz", max_size=30)))]
    total = sum(_tokens(m) for m in head + history + current)
    return head, history, current, draw(st.integers(1, total + 5))


def _calls_and_results_together(kept: list[Message], every: list[Message]) -> None:
    called = {c.id for m in kept for c in m.tool_calls or ()}
    answered = {m.tool_result.tool_call_id for m in kept if m.tool_result}
    answered_anywhere = {m.tool_result.tool_call_id for m in every if m.tool_result}
    assert answered <= called, "a tool result was kept without its call"
    assert called & answered_anywhere <= answered, "a tool call was kept without its result"


@given(requests())
def test_the_window_keeps_whole_turns_newest_first(
    request: tuple[list[Message], list[Message], list[Message], int],
) -> None:
    head, history, current, budget = request
    window = HistoryWindow(budget, count=_tokens)
    messages = head + history + current
    # the current turn starts at the last user message when the current one is not a user's
    starts = [i for i, m in enumerate(history) if m.role is Role.USER or i == 0]
    latest = len(history) if current[0].role is Role.USER else max(starts, default=0)
    fits = [
        s
        for s in [*starts, len(history)]
        if s <= latest and sum(map(_tokens, head + history[s:] + current)) <= budget
    ]
    if not fits:
        with pytest.raises(ContextWindowError, match="current turn"):
            window.fit(messages, len(current))
        return
    kept = window.fit(messages, len(current))
    assert kept == head + history[min(fits) :] + current  # the longest suffix that fits
    assert sum(map(_tokens, kept)) <= budget
    _calls_and_results_together(kept, messages)


def test_the_current_message_alone_over_the_window_is_a_typed_error() -> None:
    window = HistoryWindow(10, count=_tokens)
    with pytest.raises(ContextWindowError, match="need 21 tokens, more than the window's 10"):
        window.fit([Message(Role.USER, "old"), Message(Role.USER, "x" * 21)], 1)
    with pytest.raises(InvalidArgumentError):
        HistoryWindow(0)


def test_the_estimate_counts_text_media_and_tool_calls() -> None:
    call = ToolCall("c1", "lookup", {"query": "x" * 40})
    plain = estimate_message_tokens(Message(Role.ASSISTANT, "y" * 40))
    assert plain == 4 + 10
    assert estimate_message_tokens(Message(Role.ASSISTANT, "y" * 40, tool_calls=[call])) > plain
