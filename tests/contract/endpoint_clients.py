"""How the tests reach each enterprise endpoint's local wire server: the ``LLM`` options of
``azure-openai``, ``anthropic-bedrock``, ``anthropic-vertex`` and ``gemini-vertex``, with the
contract's ``api_key`` standing for the credential that travels (the Azure key, the AWS
session token, the Google access token)."""

from __future__ import annotations

from typing import Any

from google.oauth2.credentials import Credentials

from pywrapai_graph.testing.contracts.chat_model import SECRET
from pywrapai_graph.testing.wire.bedrock import AwsKeys
from pywrapai_graph.testing.wire.server import WireServer
from tests.secret_forms import AWS_KEY_ID, AWS_SECRET, AWS_SESSION_TOKEN

__all__ = ["API_VERSION", "AWS", "MODELS", "endpoint_options", "token"]

#: the credentials the Bedrock wire verifies signatures with (AWS's documented example pair)
AWS = AwsKeys(AWS_KEY_ID, AWS_SECRET, AWS_SESSION_TOKEN)
API_VERSION = "2024-10-21"

#: provider → the model (Azure: the deployment) the tests call
MODELS = {
    "azure-openai": "gpt-4o-mini",
    "anthropic-bedrock": "anthropic.claude-haiku-4-5-20251001-v1:0",
    "anthropic-vertex": "claude-haiku-4-5@20251001",
    "gemini-vertex": "gemini-2.5-flash",
}


def token(access_token: str | None, **refresh: str) -> Credentials:
    """google-auth user credentials holding ``access_token`` (no network until a refresh)."""
    return Credentials(access_token, **refresh)  # type: ignore[no-untyped-call]


def endpoint_options(provider: str, wire: WireServer, **given: Any) -> dict[str, Any]:
    """``LLM(provider, **options)`` keyword arguments reaching ``wire``; ``api_key`` in
    ``given`` becomes the provider's travelling credential."""
    options: dict[str, Any] = {"timeout": 5.0, "max_retries": 0, **given}
    given_key: str | None = options.pop("api_key", None)
    default = AWS.session_token if provider == "anthropic-bedrock" else SECRET
    secret = given_key or default
    if provider == "azure-openai":
        where: dict[str, Any] = {"azure_endpoint": wire.url, "api_version": API_VERSION}
        if "azure_ad_token_provider" not in options:
            where["api_key"] = secret
        return {**where, **options}
    if provider == "anthropic-bedrock":
        keys = {"aws_access_key": AWS.access_key, "aws_secret_key": AWS.secret_key}
        return {
            "region": "us-east-1",
            "base_url": wire.url,
            **keys,
            "aws_session_token": secret,
            **options,
        }
    gcp = {"project": "acme-prod", "region": "europe-west4", "credentials": token(secret)}
    return {**gcp, "base_url": wire.base_url, **options}
