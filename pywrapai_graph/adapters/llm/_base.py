"""What every SDK chat adapter shares: its name, default model, clients and their closing."""

from __future__ import annotations

from typing import Any, ClassVar

from pywrapai_graph.ports import ChatModel

__all__ = ["SDKChatModel"]


class SDKChatModel(ChatModel):
    """Base of the provider adapters; subclasses set ``provider_name`` and the clients."""

    provider_name: ClassVar[str]
    _model: str
    _client: Any
    _aclient: Any

    @property
    def provider(self) -> str:
        return self.provider_name

    @property
    def default_model(self) -> str:
        return self._model

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        await self._aclient.close()

    def __repr__(self) -> str:  # no key, no URL: only what identifies the model
        return f"{type(self).__name__}(model={self._model!r})"
