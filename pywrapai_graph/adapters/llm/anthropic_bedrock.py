"""Claude on Amazon Bedrock through the official ``anthropic`` SDK (``AnthropicBedrock``).

The Messages API's request and reply bodies, so the Anthropic adapter's translation is reused
whole; what differs is the client: ``POST /model/{model-id}/invoke`` (and
``/invoke-with-response-stream``, an AWS event stream), signed with SigV4 from the AWS
credential chain, or a Bedrock API key as a bearer token.
"""

from __future__ import annotations

from typing import Any

from pywrapai_graph.adapters._provider_payload import drop_none
from pywrapai_graph.adapters.llm._anthropic_cache import PromptCache
from pywrapai_graph.adapters.llm._platforms import PlatformChatModel
from pywrapai_graph.adapters.llm.anthropic import DEFAULT_MAX_TOKENS, AnthropicChatModel
from pywrapai_graph.errors import MissingExtraError

try:
    import anthropic
    import boto3  # noqa: F401  # the SDK signs requests with it, at call time
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("anthropic[bedrock]", "bedrock") from exc

__all__ = ["AnthropicBedrockChatModel"]

DEFAULT_MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"


class AnthropicBedrockChatModel(PlatformChatModel, AnthropicChatModel):
    """Claude on Amazon Bedrock, through ``anthropic.AnthropicBedrock`` /
    ``AsyncAnthropicBedrock``.

    Credentials come from the AWS chain as with boto3 (``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, the shared files, an
    instance or task role), or explicitly; ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``, or the
    profile's region) names the region. ``AWS_BEARER_TOKEN_BEDROCK`` (or ``api_key=``) is a
    Bedrock API key instead of SigV4.

    Args:
        model: a Bedrock model id or inference profile, e.g.
            ``anthropic.claude-haiku-4-5-20251001-v1:0`` or
            ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``.
        region: the AWS region, e.g. ``us-east-1``.
        aws_access_key, aws_secret_key, aws_session_token, aws_profile: explicit credentials
            (never shown in reprs, logs or errors).
        api_key: a Bedrock API key (instead of AWS credentials).
        base_url: another endpoint than ``https://bedrock-runtime.{region}.amazonaws.com``
            (a VPC endpoint).
        timeout, max_retries, default_max_tokens, prompt_cache: as for Anthropic.

    Raises:
        MissingExtraError: the ``bedrock`` extra (boto3) is not installed.
        ConfigurationError: no region can be found, or both an API key and AWS credentials.
    """

    provider_name = "anthropic-bedrock"
    _credential_failures = (BotoCoreError, ClientError)
    native_auto = False  # structured output: the forced tool unless mode="native"

    def __init__(
        self,
        model: str | None = None,
        *,
        region: str | None = None,
        aws_access_key: str | None = None,
        aws_secret_key: str | None = None,
        aws_session_token: str | None = None,
        aws_profile: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        prompt_cache: PromptCache = "auto",
    ) -> None:
        self._aws = drop_none(
            aws_region=region,
            aws_access_key=aws_access_key,
            aws_secret_key=aws_secret_key,
            aws_session_token=aws_session_token,
            aws_profile=aws_profile,
        )
        super().__init__(
            model or DEFAULT_MODEL,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_max_tokens=default_max_tokens,
            prompt_cache=prompt_cache,
        )

    def _connect(self, options: dict[str, Any]) -> None:
        self._platform_clients(  # no region; a key and AWS credentials both given
            anthropic.AnthropicBedrock,
            anthropic.AsyncAnthropicBedrock,
            {**options, **self._aws},
            "set AWS_REGION or pass region=, and either AWS credentials or api_key=",
        )
        # what travels on the wire: the session token (X-Amz-Security-Token) or the key
        self._secret = self._aws.get("aws_session_token") or getattr(self._client, "api_key", None)

    def _secrets(self) -> list[str | None]:
        keys = ("aws_secret_key", "aws_session_token", "aws_access_key")
        return [self._aws.get(k) for k in keys] + [getattr(self, "_secret", None)]
