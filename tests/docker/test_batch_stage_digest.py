"""The batch stage's digest in a real container equals the host's for a stage with a file, a symlink and a hard
link, and stops matching when a run points the symlink elsewhere (gates/script_batch.py)."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.base_images import ensure_base_images
from skill2env_dagster.gates.container import LABEL
from skill2env_dagster.gates.script_batch import _DIGEST, STAGE, stage_digest
from tests.docker.conftest import RUN_ID
from tests.unit.test_batch_stage_digest import _stage

pytestmark = pytest.mark.docker


@pytest.fixture
def box(docker_client):
    image = ensure_base_images()["minimal"]
    container = docker_client.containers.run(image, ["sleep", "120"], labels={LABEL: RUN_ID}, detach=True,
                                             network_mode="none")
    yield container
    container.remove(force=True)


def _digest_in(box) -> str:
    code, out = box.exec_run(["sh", "-c", f"S={STAGE}; {_DIGEST}"])
    assert code == 0, out
    return out.decode().strip()


def test_the_container_digest_matches_the_host_and_sees_a_retargeted_symlink(box):
    stage = _stage(("file", "tests/test.sh", b"exit 0\n"), ("file", "solution/a.txt", b"x\n"),
                   ("hardlink", "solution/b.txt", "solution/a.txt"), ("symlink", "orig/app/data", "/app/real"))
    assert box.put_archive("/", stage)
    assert _digest_in(box) == f"{stage_digest(stage)}  -"
    code, out = box.exec_run(["sh", "-c", f"ln -sfn /tmp/forged {STAGE}/orig/app/data"])
    assert code == 0, out
    assert _digest_in(box) != f"{stage_digest(stage)}  -"
