"""Celery hooks of a worker host (deploy/celery/worker-host.sh lists this module in the worker's `imports`).

A pool process killed mid-gate (kill -9, OOM) leaves its gate containers running `sleep infinity` forever: their
watchdogs died with it. When the host's worker starts, and whenever Celery starts a pool process (it replaces a
killed one), the containers under the host's label whose owner process on this host is dead are removed
(gates.container.reap_orphans); a run's DockerResource does the same before its steps.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery.signals import worker_process_init, worker_ready  # type: ignore[import-untyped]  # celery ships no types

from skill2env_dagster.gates.container import client_for, reap_orphans
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.resources.docker import HOST_LABEL

log = logging.getLogger(__name__)


def reap_host_orphans(**_: Any) -> int:
    """Remove this host's orphaned gate containers; never fails the worker (an engine that does not answer is
    logged: the next start or run tries again)."""
    label = os.environ.get(HOST_LABEL)
    if not label:
        return 0
    try:
        removed = reap_orphans(client_for(GateSettings(run_id=label)), label)
    except Exception as e:  # a hook must not stop the worker from serving runs
        log.warning("could not look for orphaned gate containers: %s", e)
        return 0
    if removed:
        log.warning("removed %d gate containers left by a dead worker process (label %s)", removed, label)
    return removed


worker_ready.connect(reap_host_orphans, weak=False)
worker_process_init.connect(reap_host_orphans, weak=False)
