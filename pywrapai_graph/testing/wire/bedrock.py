"""Amazon Bedrock's runtime API for Anthropic models, written from its public API reference.

* ``POST /model/{model-id}/invoke``: the Messages API body without ``model`` (it is in the
  path) and with an ``anthropic_version``; the Messages reply.
* ``POST /model/{model-id}/invoke-with-response-stream``: the reply as an AWS event stream
  (``application/vnd.amazon.eventstream``): binary messages of a prelude (total length,
  headers length, the prelude's CRC32), headers (``:event-type: chunk``,
  ``:message-type: event``), a JSON payload ``{"bytes": <base64 of one Messages stream
  event>}`` and the message's CRC32. An ``exception`` message reports a failure mid-stream.
* Requests are signed with SigV4 (``Authorization: AWS4-HMAC-SHA256
  Credential=<key id>/<date>/<region>/bedrock/aws4_request, SignedHeaders=..., Signature=...``
  and ``X-Amz-Date``), or carry a Bedrock API key as ``Authorization: Bearer``. Errors are
  ``{"message": ...}`` with an ``x-amzn-ErrorType`` header.

The Messages bodies and events are :class:`~pywrapai_graph.testing.wire.AnthropicWire`'s.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from dataclasses import dataclass
from typing import Any

from pywrapai_graph.testing.scripted import ScriptedReply
from pywrapai_graph.testing.wire.providers import AnthropicWire
from pywrapai_graph.testing.wire.server import RecordedRequest, WireResponse

__all__ = ["AwsKeys", "BedrockWire", "event_chunk", "event_stream_message"]

_PATH = re.compile(r"^/model/(?P<model>[^/?]+)/(?P<op>invoke|invoke-with-response-stream)$")
_SIGV4 = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)
_ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


@dataclass(frozen=True, slots=True)
class AwsKeys:
    """The credentials the server checks signatures with (as an AWS account would)."""

    access_key: str
    secret_key: str
    session_token: str | None = None


def _string_header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        struct.pack("!B", len(raw_name))
        + raw_name
        + struct.pack("!BH", 7, len(raw_value))  # 7: a string value
        + raw_value
    )


def event_stream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude, its CRC32, headers, payload, message CRC32."""
    head = b"".join(_string_header(k, v) for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack("!II", total, len(head))
    prelude += struct.pack("!I", binascii.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack("!I", binascii.crc32(body))


def event_chunk(event: dict[str, Any]) -> bytes:
    payload = {"bytes": base64.b64encode(json.dumps(event).encode()).decode(), "p": "abcd"}
    headers = {":event-type": "chunk", ":content-type": "application/json"}
    return event_stream_message({**headers, ":message-type": "event"}, json.dumps(payload).encode())


class BedrockWire(AnthropicWire):
    """``/model/{id}/invoke`` and ``/invoke-with-response-stream`` of bedrock-runtime.

    Every request must be signed (SigV4 for the ``bedrock`` service) or carry a bearer API
    key, else 403. With ``keys``, each signature is recomputed with botocore's signer from
    the request the server received (method, path, signed headers, body) and a mismatch is
    a 403 ``InvalidSignatureException``; :attr:`verified` counts the signatures that
    matched.

    Args:
        keys: the credentials to verify signatures with (None: check their form only).
        **options: as for :class:`~pywrapai_graph.testing.wire.WireServer`.
    """

    def __init__(self, *, keys: AwsKeys | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.keys = keys
        #: the requests whose SigV4 signature matched the one recomputed here
        self.verified = 0

    def route(self, method: str, path: str) -> str | None:
        return "chat" if method == "POST" and _PATH.match(path) else None

    def wants_stream(self, path: str, body: Any) -> bool:
        return path.endswith("/invoke-with-response-stream")

    def refuse(self, request: RecordedRequest, raw: bytes) -> WireResponse | None:
        refusal = self._refusal(request.method, request.path, request.headers, raw)
        if refusal is None:
            return None
        status, kind, message = refusal
        headers = {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/"}
        return WireResponse(status, self.render_error(status, message), headers=headers)

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> WireResponse:
        response = super().respond(method, path, headers, raw)
        if response.status >= 400 and "x-amzn-ErrorType" not in response.headers:
            kind = _ERROR_TYPES.get(response.status, "InternalServerException")
            response.headers["x-amzn-ErrorType"] = f"{kind}:http://internal.amazon.com/coral/"
        return response

    def _refusal(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, str, str] | None:
        """(status, error type, message) when the request's authentication is not valid."""
        auth = headers.get("authorization", "")
        if auth.startswith("Bearer ") and len(auth) > len("Bearer "):
            return None
        m = _SIGV4.match(auth)
        if m is None or "x-amz-date" not in headers:
            return 403, "MissingAuthenticationTokenException", "Missing Authentication Token"
        if m["service"] != "bedrock":
            return 403, "InvalidSignatureException", f"wrong service {m['service']!r}"
        return None if self.keys is None else self._mismatch(method, path, headers, raw, m)

    def _mismatch(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, m: re.Match[str]
    ) -> tuple[int, str, str] | None:
        """The refusal of a signature that does not verify with :attr:`keys`."""
        assert self.keys is not None
        known = (self.keys.access_key, self.keys.session_token)
        if (m["key"], headers.get("x-amz-security-token")) != known:
            return 403, "UnrecognizedClientException", "The security token is not valid."
        if self._signature(method, path, headers, raw, m) != m["signature"]:
            return 403, "InvalidSignatureException", "The request signature does not match."
        with self._lock:
            self.verified += 1
        return None

    def _signature(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, m: re.Match[str]
    ) -> str:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        assert self.keys is not None
        signed = {name: headers.get(name, "") for name in m["signed"].split(";")}
        url = f"http://{headers.get('host', '')}{path}"
        request = AWSRequest(method=method, url=url, headers=signed, data=raw)
        request.context["timestamp"] = headers["x-amz-date"]
        keys = self.keys
        signer = SigV4Auth(
            Credentials(keys.access_key, keys.secret_key, keys.session_token),
            m["service"],
            m["region"],
        )
        canonical = signer.canonical_request(request)
        return str(signer.signature(signer.string_to_sign(request, canonical), request))

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        if not stream:
            return super().render_chat(reply, body, False)
        whole = json.loads(super().render_chat(reply, body, False).body)
        head = {k: whole[k] for k in ("id", "type", "role", "model", "stop_reason")}
        events = self.stream_events(reply, {**head, "stop_sequence": None})
        u = reply.usage
        events[-1]["amazon-bedrock-invocationMetrics"] = {
            "inputTokenCount": u.input_tokens,
            "outputTokenCount": u.output_tokens,
            "invocationLatency": 1,
            "firstByteLatency": 1,
        }
        return WireResponse(
            content_type="application/vnd.amazon.eventstream",
            chunks=[event_chunk(e) for e in events],
        )

    def render_error(self, status: int, message: str) -> bytes:
        return json.dumps({"message": message}).encode()

    @staticmethod
    def exception_message(kind: str, message: str) -> bytes:
        """An event-stream ``exception`` message (e.g. ``throttlingException``), as Bedrock
        sends when a stream fails after it started."""
        headers = {
            ":exception-type": kind,
            ":content-type": "application/json",
            ":message-type": "exception",
        }
        return event_stream_message(headers, json.dumps({"message": message}).encode())
