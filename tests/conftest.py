"""Shared fixtures: where the shared corpus is, and whether a Docker engine is usable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "skillhub"


def _shared_dir() -> Path:
    return Path(os.environ.get("S2E_SHARED_DIR", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    skills = _shared_dir() / "corpus" / "skills"
    if not skills.is_dir():
        pytest.skip(f"shared corpus not found at {skills} (a fresh clone without ../shared): corpus tests skipped")
    return skills


@pytest.fixture(scope="session")
def corpus_manifest() -> list[dict]:
    import json

    path = _shared_dir() / "corpus" / "manifest.json"
    if not path.is_file():
        pytest.skip(f"shared corpus manifest not found at {path}")
    return json.loads(path.read_text())


@pytest.fixture(autouse=True)
def _fresh_endpoint_memory():
    """What the LLM client learned about an endpoint lives for the process; every test starts without it (a fake
    server's port may be reused by the next test's server)."""
    from skill2env_dagster.llm.endpoint import forget_endpoints

    forget_endpoints()
    yield
    forget_endpoints()
