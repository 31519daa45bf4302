"""Shared fixtures: where the shared corpus is, and whether a Docker engine is usable."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "skillhub"
# Fixtures that reach a host component, and the marker of that component's tier: a test that uses one is in that
# tier whatever its module says, so `scripts/test.sh --fast` (which deselects those markers) never starts one.
HOST_FIXTURES = {"docker_client": "docker", "make_task": "docker", "docker_engine": "docker", "run_image": "docker",
                 "chromium": "browser", "postgres_url": "postgres"}
HOST_MARKERS = ("docker", "postgres", "browser", "harbor")


SHARED_SCOPES = ("module", "package", "class")
# The longest scheduling units of a full run (benchmarks/suite_timeline.py on a timeline of it), started first in
# this order and the rest after them in file order (scripts/test.sh turns off pytest-xdist's own order, biggest
# group first): a long unit handed out last would keep one worker busy while the other sits idle. Only the order
# depends on this list, never a result.
LONG_FIRST = ("tests/ops/test_ui_browser.py", "tests/ops/test_distributed.py", "tests/docker/test_task_demo.py",
              "tests/ops/test_scale_out.py", "tests/docker/test_creator_replay.py", "tests/docker/test_run.py",
              "tests/docker/test_engine_restart.py", "tests/docker/test_task_pipeline.py",
              "tests/unit/test_harbor_acceptance.py",
              "tests/docker/test_llm_endpoint_e2e.py", "tests/unit/test_task_generator.py",
              "tests/unit/test_screen_corpus.py", "tests/unit/test_planning_offline.py")


def _long_first(item: pytest.Item) -> int:
    path = item.nodeid.split("::")[0]
    return LONG_FIRST.index(path) if path in LONG_FIRST else len(LONG_FIRST)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker and before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in HOST_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        # scripts/test.sh hands tests to its workers one by one (`--dist loadgroup`); the tests sharing a module-
        # or class-scoped fixture (built tasks, a dagster dev server) stay on one worker, so it is made once.
        info = getattr(item, "_fixtureinfo", None)
        shared = sorted({d.baseid for defs in (info.name2fixturedefs.values() if info else ()) for d in defs
                         if d.scope in SHARED_SCOPES})
        if shared and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(name="+".join(shared) or item.nodeid.split("::")[0]))
    items.sort(key=_long_first)  # stable: file order within each rank, so every worker collects the same order


LOST_GROUPS = pytest.StashKey[str]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under `--dist loadgroup` (a worker has `config.option.loadgroup`) pytest-xdist sends the tests of one group
    to one worker by a suffix it writes into each test's id; with a pytest that ignores that write (9.2 with xdist
    3.8, pytest-xdist#1386) the groups are silently split and every worker builds the module fixtures again. Such a
    run fails every grouped test with the reason (a worker cannot stop the run with a readable message)."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [i for i in session.items
            if i.get_closest_marker("xdist_group") is not None and "@" not in i.nodeid.rsplit("]", 1)[-1]]
    if lost:
        session.config.stash[LOST_GROUPS] = (
            f"--dist loadgroup lost its groups ({len(lost)} tests): pytest {pytest.__version__} and this "
            "pytest-xdist do not work together (each worker would build the module fixtures again); see pyproject.toml")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A grouped test of a run whose groups were lost fails here (above). The fast tier sets S2E_FAST_TIER=1 and
    deselects the host markers; a host test selected anyway (a path named on the command line with its own `-m`)
    fails here rather than starting an engine, a browser or a database."""
    lost = item.config.stash.get(LOST_GROUPS, None)
    if lost is not None and item.get_closest_marker("xdist_group") is not None:
        pytest.fail(lost, pytrace=False)
    if os.environ.get("S2E_FAST_TIER") == "1":
        host = [m for m in HOST_MARKERS if item.get_closest_marker(m) is not None]
        if host:
            pytest.fail(f"the fast tier runs no {'/'.join(host)} test (run it with bash scripts/test.sh)",
                        pytrace=False)


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


# Where each test ran, when and at what CPU cost (S2E_TEST_TIMELINE=<file>: one line per test - worker, start, stop,
# nodeid, CPU seconds of the worker and of its children - appended by the process that ran it). It shows each
# worker's idle tail and which groups bound the suite's wall time; benchmarks/suite_timeline.py reads it. Off unless
# set.
_TIMELINE = os.environ.get("S2E_TEST_TIMELINE")


def _cpu_since(before: os.times_result) -> tuple[float, float]:
    """CPU seconds since `before`: this process's, and its waited-for children's (a `skill2env run`, a `dagster
    dev`); the engine's and the containers' are not in either."""
    now = os.times()
    return (now.user + now.system - before.user - before.system,
            now.children_user + now.children_system - before.children_user - before.children_system)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    start, cpu = time.time(), os.times()
    yield
    if _TIMELINE:
        own, children = _cpu_since(cpu)
        line = (f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}\t{start:.3f}\t{time.time():.3f}\t{item.nodeid}"
                f"\t{own:.2f}\t{children:.2f}\n")
        with open(_TIMELINE, "a", encoding="utf-8") as f:  # one short append per line: lines never interleave
            f.write(line)
