from __future__ import annotations

import os
from pathlib import Path

import pytest

from pywrapai_graph import PromptRegistry
from pywrapai_graph.errors import UnsafePromptNameError


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    d = tmp_path / "system_prompts_registry"
    d.mkdir()
    (d / "support-agent-v1.txt").write_text("\n  You are a support agent.  \n\n")
    (d / "support-agent-v2.txt").write_text("You are v2.")
    (d / "finance-bot-v1.txt").write_text("You are finance.")
    return d


def test_load_strips_and_list_is_sorted(prompts: Path) -> None:
    registry = PromptRegistry(prompts_dir=str(prompts))
    assert registry.load("support-agent-v1.txt") == "You are a support agent."
    assert registry.list_files() == [
        "finance-bot-v1.txt",
        "support-agent-v1.txt",
        "support-agent-v2.txt",
    ]


def test_missing_file_lists_available(prompts: Path) -> None:
    registry = PromptRegistry(prompts)
    with pytest.raises(FileNotFoundError, match=r"support-agent-v9\.txt.*finance-bot-v1\.txt"):
        registry.load("support-agent-v9.txt")


def test_missing_directory(tmp_path: Path) -> None:
    registry = PromptRegistry(tmp_path / "nope")
    assert registry.list_files() == []
    with pytest.raises(FileNotFoundError, match="does not exist"):
        registry.load("a.txt")


@pytest.mark.parametrize(
    "name",
    ["../secret.txt", "..", "/etc/passwd", "sub/a.txt", "..\\secret.txt", "a\x00.txt", "", "  "],
)
def test_unsafe_names_are_refused(prompts: Path, name: str) -> None:
    with pytest.raises(UnsafePromptNameError):
        PromptRegistry(prompts).load(name)


def test_symlink_pointing_outside_is_refused_without_echoing_content(
    prompts: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-TOKEN")
    os.symlink(secret, prompts / "evil-v1.txt")
    registry = PromptRegistry(prompts)
    with pytest.raises(UnsafePromptNameError, match="outside") as info:
        registry.load("evil-v1.txt")
    assert "TOP-SECRET" not in str(info.value)
    assert "evil-v1.txt" not in registry.list_files()


def test_symlink_inside_directory_is_fine(prompts: Path) -> None:
    os.symlink(prompts / "support-agent-v2.txt", prompts / "support-agent-latest.txt")
    assert PromptRegistry(prompts).load("support-agent-latest.txt") == "You are v2."


def test_unsafe_error_is_a_value_error(prompts: Path) -> None:
    with pytest.raises(ValueError):
        PromptRegistry(prompts).load("../x")


def test_binary_file_is_refused_cleanly(prompts: Path) -> None:
    (prompts / "bin-v1.txt").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="UTF-8"):
        PromptRegistry(prompts).load("bin-v1.txt")
