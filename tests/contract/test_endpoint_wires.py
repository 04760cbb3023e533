"""What each enterprise endpoint's SDK puts on the wire, checked by its local server: Azure's
deployment path, ``api-version`` and ``api-key`` or Entra ID bearer token (the provider asked
before every request); Bedrock's ``/model/{id}/invoke`` paths, SigV4 signatures recomputed
with botocore's signer and AWS event-stream framing; Vertex AI's project/location paths and
bearer tokens. Then what they share with the other providers: credential failures as typed
errors without the secret, fallbacks from one platform to another, the GenAI conventions'
provider names on spans, configuration from YAML and the environment."""

from __future__ import annotations

import asyncio
import socket
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pywrapai import LLM, TokenUsage
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition.factories import make_llm
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.errors import (
    AuthenticationError,
    ConfigurationError,
    ProviderError,
)
from pywrapai_graph.observability import configure
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import (
    AnthropicVertexWire,
    AzureOpenAIWire,
    BedrockWire,
    GeminiVertexWire,
)
from pywrapai_graph.testing.wire.bedrock import AwsKeys, event_chunk
from pywrapai_graph.testing.wire.server import WireServer
from tests.contract.endpoint_clients import API_VERSION, AWS, MODELS, endpoint_options, token
from tests.contract.open_clients import opened
from tests.secret_forms import AZURE_OPENAI_KEY

WIRES: dict[str, Callable[[], WireServer]] = {
    "azure-openai": AzureOpenAIWire,
    "anthropic-bedrock": lambda: BedrockWire(keys=AWS),
    "anthropic-vertex": AnthropicVertexWire,
    "gemini-vertex": GeminiVertexWire,
}
CLIENT_SECRET = "GOCSPX-1mVwFTjGIXgs2BC2uHzksQi0HAK"
REFRESH_TOKEN = "1//0refresh-token-not-shaped-4242"


def _llm(provider: str, wire: WireServer, **options: Any) -> LLM:
    model = options.pop("model", MODELS[provider])
    return opened(LLM(provider, model, **endpoint_options(provider, wire, **options)))


def _shown(error: BaseException) -> str:
    """Everything a traceback or log of ``error`` shows, its chain included."""
    return "".join(traceback.format_exception(error))


@pytest.fixture
def azure() -> Iterator[AzureOpenAIWire]:
    with AzureOpenAIWire() as wire:
        yield wire


# ---------------------------------------------------------------------------- Azure OpenAI
def test_azure_sends_the_deployment_path_api_version_and_key(azure: AzureOpenAIWire) -> None:
    azure.reply(ScriptedReply("Hello", usage=TokenUsage(10, 2)), "Streamed hello")
    llm = _llm("azure-openai", azure, api_key=AZURE_OPENAI_KEY, model="prod-gpt4o-mini")
    assert llm.chat("Hi").content == "Hello"
    assert "".join(llm.stream("Hi")) == "Streamed hello"
    for request in azure.requests:
        path = "/openai/deployments/prod-gpt4o-mini/chat/completions"
        assert request.path == f"{path}?api-version={API_VERSION}"
        assert request.headers["api-key"] == AZURE_OPENAI_KEY
        assert "authorization" not in request.headers
    assert azure.requests[1].json["stream"] is True


def test_azure_asks_the_token_provider_before_every_request(azure: AzureOpenAIWire) -> None:
    issued: list[str] = []

    def token() -> str:
        issued.append(f"entra-token-{len(issued)}")
        return issued[-1]

    async def async_token() -> str:
        return token()

    azure.reply("one", "two", "three", "four")
    llm = _llm("azure-openai", azure, azure_ad_token_provider=token)
    llm.chat("Hi")
    "".join(llm.stream("Hi"))
    asyncio.run(llm.achat("Hi"))
    by_async = _llm("azure-openai", azure, azure_ad_token_provider=async_token)
    asyncio.run(by_async.achat("Hi"))
    assert issued == [f"entra-token-{i}" for i in range(4)]
    assert [r.headers["authorization"] for r in azure.requests] == [f"Bearer {t}" for t in issued]
    assert all("api-key" not in r.headers for r in azure.requests)


def test_an_async_token_provider_cannot_serve_the_sync_client(azure: AzureOpenAIWire) -> None:
    async def async_token() -> str:
        return "never"

    llm = _llm("azure-openai", azure, azure_ad_token_provider=async_token)
    with pytest.raises(ConfigurationError, match="async"):
        llm.chat("Hi")
    assert azure.requests == []


def test_a_failing_token_provider_is_authentication_error_without_its_secret(
    azure: AzureOpenAIWire,
) -> None:
    leaked = "AADSTS7000215: client secret abc8Q~Xy1zAbCdEfGhIjKlMnOpQrStUvWxYz0123 is invalid"

    def token() -> str:
        raise RuntimeError(leaked)

    with pytest.raises(AuthenticationError, match="azure_ad_token_provider failed") as info:
        _llm("azure-openai", azure, azure_ad_token_provider=token).chat("Hi")
    assert "Xy1zAbCdEf" not in _shown(info.value)
    assert "is invalid" in str(info.value)
    assert azure.requests == []


def test_an_echoed_entra_token_is_masked(azure: AzureOpenAIWire) -> None:
    token = "opaque-entra-token-not-a-jwt-77"
    azure.reply("first").fail(401, f"token {token} expired for Bearer {token}")
    llm = _llm("azure-openai", azure, azure_ad_token_provider=lambda: token)
    llm.chat("Hi")
    with pytest.raises(AuthenticationError) as info:
        llm.chat("Hi")
    assert token not in _shown(info.value)


def test_azure_needs_a_deployment_an_endpoint_and_a_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="deployment"):
        LLM("azure-openai", api_key=AZURE_OPENAI_KEY)
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_ENDPOINT") as info:
        LLM("azure-openai", "gpt-4o", api_key=AZURE_OPENAI_KEY, api_version=API_VERSION)
    assert AZURE_OPENAI_KEY not in _shown(info.value)


# ---------------------------------------------------------------------------- Bedrock
def test_bedrock_signs_every_call_with_sigv4_and_invokes_the_model_path() -> None:
    with BedrockWire(keys=AWS) as wire:
        wire.reply("a", "streamed b", "c", "streamed d")
        llm = _llm("anthropic-bedrock", wire)
        llm.chat("Hi")
        "".join(llm.stream("Hi"))

        async def both() -> None:
            await llm.achat("Hi")
            "".join([t async for t in llm.astream("Hi")])

        asyncio.run(both())
    model = MODELS["anthropic-bedrock"]
    assert [r.path for r in wire.requests] == [
        f"/model/{model}/{op}" for op in ("invoke", "invoke-with-response-stream") * 2
    ]
    assert wire.verified == 4  # each signature recomputed by botocore on the server
    for request in wire.requests:
        credential = request.headers["authorization"].split(", ")[0]
        assert credential.startswith(f"AWS4-HMAC-SHA256 Credential={AWS.access_key}/")
        assert credential.endswith("/us-east-1/bedrock/aws4_request")
        assert request.headers["x-amz-date"].endswith("Z")
        assert request.headers["x-amz-security-token"] == AWS.session_token
        assert "anthropic_version" in request.json  # the SDK's, in the body on Bedrock
        assert "model" not in request.json and "stream" not in request.json


def test_a_bad_signature_is_authentication_error_without_the_keys() -> None:
    with BedrockWire(keys=AWS) as wire:
        wrong = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYWRONGKEY0"
        with pytest.raises(AuthenticationError, match="signature") as info:
            _llm("anthropic-bedrock", wire, aws_secret_key=wrong).chat("Hi")
    assert info.value.status_code == 403
    shown = _shown(info.value)
    assert wrong not in shown and str(AWS.session_token) not in shown
    assert wire.verified == 0


def test_a_bedrock_stream_arrives_frame_by_frame() -> None:
    """Structural: the first text is handed on while the server still has frames to send."""
    with BedrockWire(keys=AWS, pace=0.05) as wire:
        wire.reply(ScriptedReply("one two three four five six", usage=TokenUsage(4, 6)))
        llm = _llm("anthropic-bedrock", wire)
        stream = llm.stream("Count")
        first = next(iter(stream))
        sent_at_first = wire.chunks_sent
        rest = "".join(stream)
    assert first + rest == "one two three four five six"
    assert sent_at_first < wire.chunks_sent
    assert llm.tokens.total_usage == TokenUsage(4, 6)


def test_an_exception_frame_mid_stream_is_a_typed_error() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    frames = [
        event_chunk(start),
        event_chunk(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        ),
        event_chunk(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hel"},
            }
        ),
        BedrockWire.exception_message("throttlingException", "Too many tokens, slow down"),
    ]
    with BedrockWire(keys=AWS) as wire:
        wire.raw(b"".join(frames), content_type="application/vnd.amazon.eventstream")
        stream = _llm("anthropic-bedrock", wire).stream("Hi")
        with pytest.raises(ProviderError, match="slow down"):
            "".join(stream)


def test_a_bedrock_api_key_is_a_bearer_token() -> None:
    with BedrockWire() as wire:
        wire.reply("keyed")
        llm = opened(
            LLM(
                "anthropic-bedrock",
                region="eu-west-1",
                api_key="ABSK-key-0042",
                base_url=wire.url,
                max_retries=0,
            )
        )
        assert llm.chat("Hi").content == "keyed"
    assert wire.requests[0].headers["authorization"] == "Bearer ABSK-key-0042"


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No AWS credentials or region anywhere: no variables, files, or metadata service."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))


@pytest.mark.usefixtures("no_aws")
def test_bedrock_without_credentials_or_region_says_so() -> None:
    with pytest.raises(ConfigurationError, match="AWS_REGION"):
        LLM("anthropic-bedrock")
    with BedrockWire() as wire:
        llm = opened(LLM("anthropic-bedrock", region="us-west-2", base_url=wire.url))
        with pytest.raises(AuthenticationError, match="could not obtain credentials"):
            llm.chat("Hi")
    assert wire.requests == []


# ---------------------------------------------------------------------------- Vertex AI
def test_vertex_claude_paths_token_and_body() -> None:
    with AnthropicVertexWire() as wire:
        wire.reply("a", "streamed b")
        llm = _llm("anthropic-vertex", wire, api_key="ya29.vertex-access-token-0001")
        llm.chat("Hi")
        "".join(llm.stream("Hi"))
    base = "/v1/projects/acme-prod/locations/europe-west4/publishers/anthropic/models"
    model = MODELS["anthropic-vertex"]
    assert [r.path for r in wire.requests] == [
        f"{base}/{model}:rawPredict",
        f"{base}/{model}:streamRawPredict",
    ]
    for request in wire.requests:
        assert request.headers["authorization"] == "Bearer ya29.vertex-access-token-0001"
        assert "anthropic_version" in request.json
        assert "model" not in request.json


def test_gemini_vertex_paths_and_token() -> None:
    with GeminiVertexWire() as wire:
        wire.reply("a", "streamed b")
        llm = _llm("gemini-vertex", wire, api_key="ya29.vertex-access-token-0002")
        llm.chat("Hi")
        "".join(llm.stream("Hi"))
    base = "/v1beta1/projects/acme-prod/locations/europe-west4/publishers/google/models"
    assert [r.path for r in wire.requests] == [
        f"{base}/gemini-2.5-flash:generateContent",
        f"{base}/gemini-2.5-flash:streamGenerateContent?alt=sse",
    ]
    assert {r.headers["authorization"] for r in wire.requests} == {
        "Bearer ya29.vertex-access-token-0002"
    }


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("provider", ["anthropic-vertex", "gemini-vertex"])
def test_a_failed_token_refresh_is_authentication_error_without_secrets(provider: str) -> None:
    credentials = token(
        None,
        refresh_token=REFRESH_TOKEN,
        client_id="client-0042.apps.googleusercontent.com",
        client_secret=CLIENT_SECRET,
        token_uri=f"http://127.0.0.1:{_closed_port()}/token",
    )
    with WIRES[provider]() as wire:
        llm = _llm(provider, wire, credentials=credentials)
        with pytest.raises(AuthenticationError, match="could not obtain credentials") as info:
            llm.chat("Hi")
    shown = _shown(info.value)
    assert CLIENT_SECRET not in shown and REFRESH_TOKEN not in shown
    assert wire.requests == []


# ---------------------------------------------------------------------------- shared
@pytest.mark.parametrize(
    ("first", "second"),
    [("anthropic-bedrock", "anthropic-vertex"), ("azure-openai", "gemini-vertex")],
)
def test_a_failing_platform_falls_back_to_another(first: str, second: str) -> None:
    with WIRES[first]() as failing, WIRES[second]() as answering:
        failing.fail(503, "Service Unavailable")
        answering.reply(ScriptedReply("from the fallback", usage=TokenUsage(8, 3)))
        fallback = {"provider": second, "model": MODELS[second]}
        llm = _llm(first, failing, fallbacks=[{**fallback, **endpoint_options(second, answering)}])
        response = llm.chat("Hi")
    assert (response.content, response.provider) == ("from the fallback", second)
    [failed] = response.fallback_from
    assert (failed.provider, failed.status_code) == (first, 503)
    [record] = llm.tokens.records
    assert record.provider == second and record.cost_usd > 0


@pytest.mark.parametrize("provider", list(WIRES))
def test_a_transient_failure_is_retried_and_signed_again(provider: str) -> None:
    with WIRES[provider]() as wire:
        wire.fail(503, "Service Unavailable", headers={"retry-after-ms": "10"}).reply("again")
        assert _llm(provider, wire, max_retries=1).chat("Hi").content == "again"
    first, second = wire.requests
    assert first.path == second.path and first.json == second.json
    credential = {"authorization", "api-key"}
    assert credential & set(first.headers) == credential & set(second.headers) != set()
    if isinstance(wire, BedrockWire):
        assert wire.verified == 2  # the retry is signed anew, and its signature is valid


@pytest.mark.parametrize(
    ("provider", "system"),
    [
        ("azure-openai", "azure.ai.openai"),
        ("anthropic-bedrock", "aws.bedrock"),
        ("anthropic-vertex", "gcp.vertex_ai"),
        ("gemini-vertex", "gcp.vertex_ai"),
    ],
)
def test_spans_name_the_platform_as_the_genai_conventions_do(provider: str, system: str) -> None:
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    configure(tracer_provider=tracing)
    try:
        with WIRES[provider]() as wire:
            wire.reply("traced")
            _llm(provider, wire).chat("Hi")
    finally:
        configure()
    [span] = [
        s for s in spans.get_finished_spans() if "gen_ai.provider.name" in (s.attributes or {})
    ]
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == system
    assert attributes["gen_ai.request.model"] == MODELS[provider]


def test_azure_from_yaml_with_its_key_from_the_sdk_variable(
    azure: AzureOpenAIWire, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "pywrapai.yaml"
    config.write_text(
        "llm:\n  provider: azure-openai\n  model: prod-gpt4o-mini\n"
        f"  azure_endpoint: {azure.url}\n  api_version: '{API_VERSION}'\n  max_retries: 0\n"
        "limits:\n  azure-openai: {max_in_flight: 2}\n"
    )
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_OPENAI_KEY)
    llm = make_llm(load_settings(config), TokenTracker(), ())
    assert llm is not None
    opened(llm)
    azure.reply("configured")
    assert llm.chat("Hi").content == "configured"
    assert llm.limiter is not None and llm.limiter.limits.max_in_flight == 2
    assert azure.requests[0].headers["api-key"] == AZURE_OPENAI_KEY
    assert AZURE_OPENAI_KEY not in repr(llm)


def test_bedrock_from_the_environment_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    with BedrockWire(keys=AwsKeys(AWS.access_key, AWS.secret_key)) as wire:
        for name, value in {
            "PYWRAPAI_LLM__PROVIDER": "anthropic-bedrock",
            "PYWRAPAI_LLM__REGION": "eu-central-1",
            "PYWRAPAI_LLM__BASE_URL": wire.url,
            "AWS_ACCESS_KEY_ID": AWS.access_key,
            "AWS_SECRET_ACCESS_KEY": AWS.secret_key,
        }.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
        llm = make_llm(load_settings(), TokenTracker(), ())
        assert llm is not None
        opened(llm)
        wire.reply("from the chain")
        assert llm.chat("Hi").content == "from the chain"
    assert wire.verified == 1
    assert "/eu-central-1/bedrock/aws4_request" in wire.requests[0].headers["authorization"]


def test_an_endpoint_setting_of_another_provider_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="project: read by provider"):
        load_settings({"llm": {"provider": "anthropic-bedrock", "project": "acme"}})
    with pytest.raises(ConfigurationError, match="not api_key"):
        load_settings({"llm": {"provider": "gemini-vertex", "api_key": "AIza-not-here"}})
    fallback = {"provider": "openai", "azure_endpoint": "https://acme.openai.azure.com"}
    with pytest.raises(ConfigurationError, match="azure_endpoint: read by provider"):
        load_settings({"llm": {"provider": "openai", "fallbacks": [fallback]}})
