"""Images and documents in messages: each provider's official SDK over real HTTP to its local
wire server sends the exact content parts of that provider's format; what a provider cannot
take is refused before any request; the parts reach the cache key, the trace (summarised)
and the estimate of a stream whose usage never arrived."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pywrapai import LLM, TokenUsage
from pywrapai_graph import DocumentPart, ImagePart, LRUResponseCache, Message, Role, TextPart
from pywrapai_graph.adapters.llm._media import anthropic_tokens, gemini_tokens, openai_tokens
from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.application.input_tokens import generic_media_tokens
from pywrapai_graph.domain import Part
from pywrapai_graph.errors import IncompleteStreamError, UnsupportedContentError
from pywrapai_graph.observability import configure
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import SECRET
from pywrapai_graph.testing.media import gif_bytes, pdf_bytes, png_bytes
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireServer
from tests.contract.open_clients import opened

PNG = png_bytes(2, 1)
PDF = pdf_bytes(2)
URL = "https://example.com/cat.png"
B64_PNG = base64.b64encode(PNG).decode()
B64_PDF = base64.b64encode(PDF).decode()
# The Gemini SDK sends bytes URL-safe base64-encoded (the API takes both alphabets).
GEMINI_PDF = base64.urlsafe_b64encode(PDF).decode()

WIRES: dict[str, Callable[[], WireServer]] = {
    "openai": OpenAIWire,
    "anthropic": AnthropicWire,
    "gemini": GeminiWire,
    "ollama": OllamaWire,
}


def _llm(name: str, wire: WireServer, **options: Any) -> LLM:
    options.update(timeout=5.0, max_retries=0)
    options["base_url"] = wire.base_url if name == "openai" else wire.url
    if name != "ollama":
        options["api_key"] = SECRET
    return opened(LLM(provider=name, **options))


@pytest.fixture
def wire(request: pytest.FixtureRequest) -> Iterator[WireServer]:
    with WIRES[request.param]() as server:
        yield server


def _asked(parts: Sequence[Part]) -> Message:
    return Message(Role.USER, "What is this?", parts=parts)


def _sent(wire: WireServer) -> Any:
    [request] = list(wire.chat_requests())
    body = request.json
    return body.get("messages") or body.get("contents")


MIXED: list[Part] = [
    ImagePart.from_bytes(PNG),
    TextPart("and this:"),
    DocumentPart.from_bytes(PDF, "a.pdf"),
]

EXPECTED_MIXED = {
    "openai": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
                {"type": "text", "text": "and this:"},
                {
                    "type": "file",
                    "file": {
                        "filename": "a.pdf",
                        "file_data": f"data:application/pdf;base64,{B64_PDF}",
                    },
                },
            ],
        }
    ],
    "anthropic": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG},
                },
                {"type": "text", "text": "and this:"},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PDF},
                    "title": "a.pdf",
                },
            ],
        }
    ],
    "gemini": [
        {
            "role": "user",
            "parts": [
                {"text": "What is this?"},
                {"inlineData": {"data": B64_PNG, "mime_type": "image/png"}},
                {"text": "and this:"},
                {"inlineData": {"data": GEMINI_PDF, "mime_type": "application/pdf"}},
            ],
        }
    ],
}


def _call(llm: LLM, entry: str, messages: list[Message]) -> str:
    if entry == "chat":
        return llm.chat(messages).content
    if entry == "stream":
        return llm.stream(messages).text()

    async def run() -> str:
        try:
            if entry == "achat":
                return (await llm.achat(messages)).content
            return await llm.astream(messages).text()
        finally:
            await llm.aclose()

    return asyncio.run(run())


@pytest.mark.parametrize("entry", ["chat", "achat", "stream", "astream"])
@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"], indirect=True)
def test_text_image_and_pdf_parts_in_the_providers_format(wire: WireServer, entry: str) -> None:
    name = next(k for k, v in WIRES.items() if isinstance(wire, v))  # type: ignore[arg-type]
    wire.reply("a cat")
    llm = _llm(name, wire)
    assert _call(llm, entry, [_asked(MIXED)]) == "a cat"
    assert _sent(wire) == EXPECTED_MIXED[name]


@pytest.mark.parametrize("wire", ["openai", "anthropic"], indirect=True)
def test_an_image_url_is_sent_as_a_url(wire: WireServer) -> None:
    name = "openai" if isinstance(wire, OpenAIWire) else "anthropic"
    wire.reply("a cat")
    _llm(name, wire).chat([_asked([ImagePart.from_url(URL)])])
    [message] = _sent(wire)
    if name == "openai":
        assert message["content"][1] == {"type": "image_url", "image_url": {"url": URL}}
    else:
        assert message["content"][1] == {"type": "image", "source": {"type": "url", "url": URL}}


@pytest.mark.parametrize("wire", ["ollama"], indirect=True)
def test_ollama_sends_images_beside_the_joined_text(wire: WireServer) -> None:
    wire.reply("a cat")
    message = _asked([ImagePart.from_bytes(PNG), TextPart("Be brief.")])
    _llm("ollama", wire).chat([message])
    assert _sent(wire) == [
        {"role": "user", "content": "What is this?\n\nBe brief.", "images": [B64_PNG]}
    ]


REFUSED = [
    ("gemini", ImagePart.from_url(URL), "fetches no image URLs"),
    ("gemini", ImagePart.from_bytes(gif_bytes()), "takes images of"),
    ("ollama", DocumentPart.from_bytes(PDF), "takes no documents"),
    ("ollama", ImagePart.from_url(URL), "fetches no image URLs"),
    # 4 MB of bytes are 5.3 MB of base64: over Anthropic's 5 MB
    ("anthropic", ImagePart.from_bytes(png_bytes(16, 12) + b"\0" * (4 * 2**20)), "5 MB base64"),
    ("anthropic", ImagePart.from_bytes(png_bytes(8001, 1)), "8000 px a side"),
]


@pytest.mark.parametrize(("name", "part", "why"), REFUSED)
@pytest.mark.parametrize("entry", ["chat", "stream"])
def test_a_part_the_provider_cannot_take_is_refused_before_any_request(
    name: str, part: ImagePart | DocumentPart, why: str, entry: str
) -> None:
    with WIRES[name]() as wire:
        llm = _llm(name, wire)
        send = llm.chat if entry == "chat" else llm.stream
        with pytest.raises(UnsupportedContentError, match=why) as caught:
            send([_asked([part])])
        assert not list(wire.chat_requests())
        assert "messages[0]" in str(caught.value)
        assert not llm.tokens.records


def _crafted_png(width: int, height: int) -> bytes:
    """The 33-byte attack: a PNG signature and an IHDR chunk claiming any size, no pixels."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    ihdr = b"IHDR" + header
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))


CRAFTED = [(2**32 - 1, 2**32 - 1), (2**31 - 1, 1), (20_000, 20_000), (0, 480)]


@pytest.mark.parametrize("name", sorted(WIRES))
@pytest.mark.parametrize("size", CRAFTED)
def test_an_image_claiming_impossible_dimensions_is_refused_before_any_request(
    name: str, size: tuple[int, int]
) -> None:
    crafted = _crafted_png(*size)
    assert len(crafted) == 33
    part = ImagePart.from_bytes(crafted)
    assert part.size == size
    with WIRES[name]() as wire:
        llm = _llm(name, wire)
        for send in (llm.chat, llm.stream):
            with pytest.raises(UnsupportedContentError, match="damaged or crafted") as caught:
                send([_asked([part])])
            assert f"{size[0]} x {size[1]} pixels" in str(caught.value)
        assert not list(wire.chat_requests())
        assert not llm.tokens.records


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_the_largest_image_a_provider_takes_has_a_bounded_estimate(name: str) -> None:
    # 13,000 x 13,000 claims 169 MP, under the ceiling: the providers scale it down, and so
    # does the estimate (OpenAI: 2048 x 2048, then 768 x 768: 4 tiles; Gemini: 3072 x 3072,
    # 16 tiles)
    image = ImagePart.from_bytes(_crafted_png(13_000, 13_000))
    with WIRES[name]() as wire:
        wire.cut(ScriptedReply("Alpha beta gamma delta", usage=TokenUsage(30, 7)), KEEP[name])
        llm = _llm(name, wire)
        with pytest.raises(IncompleteStreamError):
            llm.stream([_asked([image])]).text()
    [record] = llm.tokens.records
    image_tokens = {"openai": 85 + 170 * 4, "gemini": 16 * 258}[name]
    assert record.usage.input_tokens == estimate_tokens(["What is this?"]) + image_tokens


_FORMULAS = {
    "generic": (generic_media_tokens, 2048 * 2048 // 750),
    "openai": (openai_tokens, 85 + 170 * 8),  # 2048 x 768: 4 x 2 tiles
    "anthropic": (anthropic_tokens, math.ceil(1568 * 1568 / 750)),
    "gemini": (gemini_tokens, 16 * 258),
}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_no_header_makes_an_image_estimate_absurd(width: int, height: int) -> None:
    part = ImagePart.from_bytes(_crafted_png(width, height))
    for formula, most in _FORMULAS.values():
        assert 0 <= formula(part) <= most


def test_gemini_refuses_more_than_20_mb_inline() -> None:
    big = DocumentPart.from_bytes(PDF + b"\0" * (11 * 2**20))
    with GeminiWire() as wire:
        with pytest.raises(UnsupportedContentError, match="at most 20 MB"):
            _llm("gemini", wire).chat([_asked([big, big])])
        assert not list(wire.chat_requests())


def test_the_response_cache_tells_images_apart() -> None:
    cache = LRUResponseCache()
    with OpenAIWire() as wire:
        wire.reply("black", "wide")
        llm = _llm("openai", wire, cache=cache)
        first = llm.chat([_asked([ImagePart.from_bytes(png_bytes(2, 1))])])
        again = llm.chat([_asked([ImagePart.from_bytes(png_bytes(2, 1))])])
        other = llm.chat([_asked([ImagePart.from_bytes(png_bytes(3, 1))])])
        assert (first.content, again.cached, other.content) == ("black", True, "wide")
        assert len(list(wire.chat_requests())) == 2  # the same image again came from the cache


def _traced_input(capture: bool) -> str | None:
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    configure(tracer_provider=tracing, capture_content=capture)
    try:
        with OpenAIWire() as wire:
            wire.reply("a cat")
            signed = URL.replace("://", "://reader:pw-s3cr3t@") + "?sig=s3cr3t#token=s3cr3t"
            parts = [ImagePart.from_bytes(PNG), ImagePart.from_url(signed)]
            _llm("openai", wire).chat([_asked(parts)])
    finally:
        configure()
    [span] = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    value = (span.attributes or {}).get("gen_ai.input.messages")
    return None if value is None else str(value)


def test_traces_carry_no_content_by_default() -> None:
    assert _traced_input(capture=False) is None


def test_traces_summarise_binary_parts_and_drop_url_credentials_queries_fragments() -> None:
    raw = _traced_input(capture=True)
    assert raw is not None
    assert B64_PNG not in raw and "s3cr3t" not in raw
    [message] = json.loads(raw)
    assert message["parts"][0]["type"] == "blob"
    assert message["parts"][0]["bytes"] == len(PNG)
    assert message["parts"][1] == {"type": "uri", "modality": "image", "uri": URL}


# A 1024 x 768 image: OpenAI 85 + 170 x 4 tiles (scaled to 1024 x 768: 2 x 2); Gemini 2 x 1
# tiles of 258. (Anthropic reports its input usage before the first text: nothing to guess.)
ESTIMATES = {"openai": 765, "gemini": 516}
KEEP = {"openai": 2, "gemini": 1}  # chunks up to the first text piece


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_a_cut_stream_estimates_images_with_the_providers_formula(name: str) -> None:
    image = ImagePart.from_bytes(png_bytes(1024, 768))
    with WIRES[name]() as wire:
        wire.cut(ScriptedReply("Alpha beta gamma delta", usage=TokenUsage(30, 7)), KEEP[name])
        llm = _llm(name, wire)
        with pytest.raises(IncompleteStreamError):
            llm.stream([_asked([image])]).text()
    [record] = llm.tokens.records
    assert record.estimated
    assert record.usage.input_tokens == estimate_tokens(["What is this?"]) + ESTIMATES[name]


def test_a_fallback_stream_is_estimated_with_the_fallbacks_formula() -> None:
    image = ImagePart.from_bytes(png_bytes(1024, 768))
    with OpenAIWire() as primary, GeminiWire() as backup:
        primary.fail(429, "slow down")
        backup.cut(ScriptedReply("Alpha beta gamma delta", usage=TokenUsage(30, 7)), KEEP["gemini"])
        fallback = {"provider": "gemini", "api_key": SECRET, "base_url": backup.url}
        llm = _llm("openai", primary, fallbacks=[{**fallback, "max_retries": 0}])
        with pytest.raises(IncompleteStreamError):
            llm.stream([_asked([image])]).text()
    [record] = llm.tokens.records
    assert (record.provider, record.estimated) == ("gemini", True)
    assert record.usage.input_tokens == estimate_tokens(["What is this?"]) + ESTIMATES["gemini"]


def test_message_parts_are_validated() -> None:
    with pytest.raises(ValueError, match="only a USER message"):
        Message(Role.ASSISTANT, "x", parts=[ImagePart.from_bytes(PNG)])
    with pytest.raises(ValueError, match="not a PNG, JPEG, GIF or WebP"):
        ImagePart.from_bytes(b"hello")
    with pytest.raises(ValueError, match="the bytes are 'image/png'"):
        ImagePart.from_bytes(PNG, "image/jpeg")
    with pytest.raises(ValueError, match="http"):
        ImagePart.from_url("file:///etc/passwd")
    with pytest.raises(ValueError, match="PDF bytes"):
        DocumentPart.from_bytes(b"plain text")
    with pytest.raises(TypeError, match="TextPart, ImagePart or DocumentPart"):
        Message(Role.USER, "x", parts=["text"])  # type: ignore[list-item]
    assert ImagePart.from_bytes(png_bytes(640, 480)).size == (640, 480)
    assert ImagePart.from_bytes(gif_bytes(7, 3)).size == (7, 3)
    assert DocumentPart.from_bytes(pdf_bytes(3)).pages == 3
    assert B64_PNG not in repr(_asked([ImagePart.from_bytes(PNG)]))
