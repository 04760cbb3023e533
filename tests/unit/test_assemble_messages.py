from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pywrapai_graph import AssembleMessages, Message, Role

roles = st.sampled_from(list(Role))
texts = st.text(max_size=20)
messages = st.builds(Message, roles, texts)


def test_order_is_system_history_current() -> None:
    history = [Message(Role.USER, "My name is Alice."), Message(Role.ASSISTANT, "Hello Alice!")]
    out = AssembleMessages("You are helpful.", versioning=True)("What's my name?", history)
    assert [(m.role, m.content) for m in out] == [
        (Role.SYSTEM, "You are helpful."),
        (Role.USER, "My name is Alice."),
        (Role.ASSISTANT, "Hello Alice!"),
        (Role.USER, "What's my name?"),
    ]


def test_without_versioning_no_system_prompt_is_added() -> None:
    out = AssembleMessages(None, versioning=False)("hi", [Message(Role.USER, "before")])
    assert [m.content for m in out] == ["before", "hi"]


def test_leading_system_message_in_input_is_replaced_when_versioning() -> None:
    out = AssembleMessages("loaded", versioning=True)(
        [Message(Role.SYSTEM, "caller's"), Message(Role.USER, "q")]
    )
    assert [(m.role, m.content) for m in out] == [(Role.SYSTEM, "loaded"), (Role.USER, "q")]


def test_leading_system_message_kept_when_versioning_is_off() -> None:
    out = AssembleMessages(None, versioning=False)(
        [Message(Role.SYSTEM, "caller's"), Message(Role.USER, "q")]
    )
    assert out[0] == Message(Role.SYSTEM, "caller's")


def test_rejects_empty_input_and_foreign_objects() -> None:
    assemble = AssembleMessages(None, versioning=False)
    with pytest.raises(ValueError, match="empty"):
        assemble([])
    with pytest.raises(TypeError, match=r"input\[0\]"):
        assemble([{"role": "user", "content": "x"}])  # type: ignore[list-item]


def test_versioning_without_prompt_text_is_a_bug() -> None:
    with pytest.raises(ValueError, match="no system prompt"):
        AssembleMessages(None, versioning=True)


def test_inputs_are_not_mutated() -> None:
    history = [Message(Role.SYSTEM, "old"), Message(Role.USER, "a")]
    snapshot = list(history)
    AssembleMessages("new", versioning=True)("b", history)
    assert history == snapshot


@given(history=st.lists(messages, max_size=8), current=st.lists(messages, min_size=1, max_size=4))
def test_property_versioned_assembly(history: list[Message], current: list[Message]) -> None:
    out = AssembleMessages("SYS", versioning=True)(current, history)
    # exactly one system prompt from us, at position 0
    assert out[0] == Message(Role.SYSTEM, "SYS")
    kept_history = history[1:] if history and history[0].role is Role.SYSTEM else history
    kept_current = current[1:] if current[0].role is Role.SYSTEM else current
    assert out == [out[0], *kept_history, *kept_current]


@given(history=st.lists(messages, max_size=8), current=st.lists(messages, min_size=1, max_size=4))
def test_property_unversioned_assembly_is_concatenation(
    history: list[Message], current: list[Message]
) -> None:
    assert AssembleMessages(None, versioning=False)(current, history) == history + current


@given(text=texts, history=st.lists(messages, max_size=6))
def test_property_text_input_is_last_user_message(text: str, history: list[Message]) -> None:
    out = AssembleMessages("S", versioning=True)(text, history)
    assert out[-1] == Message(Role.USER, text)
    assert (
        len(out) == 1 + len(history) - (1 if history and history[0].role is Role.SYSTEM else 0) + 1
    )
