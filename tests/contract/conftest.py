from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.open_clients import OPENED


@pytest.fixture(autouse=True)
def close_opened_clients() -> Iterator[None]:
    """Close the clients a test registered with ``open_clients.opened`` (their sockets)."""
    yield
    while OPENED:
        OPENED.pop().close()
