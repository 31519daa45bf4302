"""The worker host's Celery hooks (resources/worker_host.py) on the host, with the engine calls replaced: the
distributed test runs them for real inside the worker-host containers, where coverage does not see them."""

from __future__ import annotations

import logging

import pytest
from celery.signals import worker_process_init, worker_ready  # type: ignore[import-untyped]

from skill2env_dagster.resources import worker_host
from skill2env_dagster.resources.docker import HOST_LABEL


@pytest.fixture
def engine(monkeypatch):
    """Record which label the hook reaps with; `removed` is what reap_orphans reports."""
    calls: list[tuple[str, str]] = []
    state = {"removed": 0}
    monkeypatch.setattr(worker_host, "client_for", lambda settings: f"client:{settings.run_id}")
    monkeypatch.setattr(worker_host, "reap_orphans",
                        lambda client, label: calls.append((client, label)) or state["removed"])
    return calls, state


def test_without_a_host_label_nothing_is_reaped(monkeypatch, engine):
    monkeypatch.delenv(HOST_LABEL, raising=False)
    assert worker_host.reap_host_orphans() == 0
    assert engine[0] == []


def test_the_hosts_orphans_are_reaped_under_its_label_and_logged(monkeypatch, engine, caplog):
    monkeypatch.setenv(HOST_LABEL, "h1")
    engine[1]["removed"] = 2
    with caplog.at_level(logging.WARNING, logger=worker_host.__name__):
        assert worker_host.reap_host_orphans(sender=None) == 2
    assert engine[0] == [("client:h1", "h1")]
    assert "removed 2 gate containers left by a dead worker process (label h1)" in caplog.text


def test_nothing_to_reap_is_not_logged(monkeypatch, engine, caplog):
    monkeypatch.setenv(HOST_LABEL, "h1")
    with caplog.at_level(logging.WARNING, logger=worker_host.__name__):
        assert worker_host.reap_host_orphans() == 0
    assert engine[0] == [("client:h1", "h1")] and caplog.text == ""


def test_an_engine_that_does_not_answer_never_stops_the_worker(monkeypatch, caplog):
    monkeypatch.setenv(HOST_LABEL, "h1")

    def unreachable(settings):
        raise ConnectionError("engine down")

    monkeypatch.setattr(worker_host, "client_for", unreachable)
    with caplog.at_level(logging.WARNING, logger=worker_host.__name__):
        assert worker_host.reap_host_orphans() == 0
    assert "could not look for orphaned gate containers: engine down" in caplog.text


@pytest.mark.parametrize("signal", [worker_ready, worker_process_init], ids=["worker_ready", "worker_process_init"])
def test_the_hook_runs_when_the_worker_and_each_pool_process_start(signal):
    assert worker_host.reap_host_orphans in [receiver for _, receiver in signal.receivers]
