"""Gate containers of a process killed with -9 (a worker killed mid-gate) are removed by the next run on that host
(DockerResource.setup_for_execution -> reap_orphans); a live process's containers and other labels are left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import dagster as dg
import pytest

from skill2env_dagster.gates import container as ctr
from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.resources.docker import DockerResource

pytestmark = pytest.mark.docker

_CHILD = """
import sys, time
from skill2env_dagster.gates import container as ctr
from skill2env_dagster.gates.settings import GateSettings
s = GateSettings(run_id=sys.argv[1])
box = ctr.hardened(ctr.client_for(s), s, sys.argv[2], {}, entrypoint=["sleep", "infinity"], command=[],
                   network_mode="none")
box.start()
print(box.id, flush=True)
time.sleep(600)
"""


def _ours(client, label: str) -> set[str]:
    return {c.id for c in client.containers.list(all=True, sparse=True, filters={"label": f"{ctr.LABEL}={label}"})}


def test_a_killed_workers_containers_are_reaped_and_no_others(docker_client):
    label = f"pytest-orphans-{uuid.uuid4().hex[:8]}"
    image = load_base_images()["minimal"]
    child = subprocess.Popen([sys.executable, "-c", _CHILD, label, image], stdout=subprocess.PIPE, text=True)
    try:
        orphan = child.stdout.readline().strip()
        assert orphan, "the child started no container"
        live = ctr.hardened(docker_client, GateSettings(run_id=label), image, {}, entrypoint=["sleep", "infinity"],
                            command=[], network_mode="none")
        live.start()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
        assert _ours(docker_client, label) == {orphan, live.id}  # nothing stops a dead owner's container
        resource = DockerResource(run_label=label)
        resource.setup_for_execution(dg.build_init_resource_context())  # the hook a run calls before its steps
        assert _ours(docker_client, label) == {live.id}
        assert ctr.reap_orphans(docker_client, label) == 0
    finally:
        child.kill()
        for cid in _ours(docker_client, label):
            docker_client.api.remove_container(cid, force=True)
