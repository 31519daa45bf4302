"""The compose subset the runner starts (gates/services.py), and the service_sync forgeries it defeats."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.services import COMPOSE_FILE, collected_path, compose_text, load_services, parse_services
from skill2env_dagster.gates.static_checks import check_services
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.reasons import InputError, ReasonCode

GOOD = """
services:
  main:
    depends_on: [api]
  api:
    build: .
    command: ["python3", "-I", "/srv/api.py"]
    network_mode: "service:main"
    healthcheck: {test: ["CMD", "python3", "/srv/check.py"], interval: 1s}
    x-skill2env-collect: ["/var/lib/api/journal.jsonl"]
"""


def test_subset_is_parsed():
    [api] = parse_services(GOOD)
    assert api.name == "api" and api.command == ["python3", "-I", "/srv/api.py"]
    assert api.health == ["python3", "/srv/check.py"]
    assert api.collect == ["/var/lib/api/journal.jsonl"]
    assert api.collected_path(api.collect[0]) == "/tests/services/api/journal.jsonl"


def test_generated_compose_round_trips():
    text = compose_text("api", ["srv"], ["check"], ["/var/log/j.jsonl"])
    [api] = parse_services(text)
    assert (api.command, api.health, api.collect) == (["srv"], ["check"], ["/var/log/j.jsonl"])
    assert collected_path("api", "/var/log/j.jsonl") == "/tests/services/api/j.jsonl"


@pytest.mark.parametrize("edit, fragment", [
    (("build: .", "image: 127.0.0.1:5000/other"), "image"),  # another image: not in the subset
    (("build: .", "build: ../elsewhere"), "only `build: .`"),
    (('network_mode: "service:main"', "network_mode: bridge"), "network_mode"),  # a network of its own
    (("x-skill2env-collect: [\"/var/lib/api/journal.jsonl\"]", "x-skill2env-collect: [\"journal.jsonl\"]"),
     "absolute"),
    (("    depends_on: [api]", "    privileged: true"), "`main` is the agent's container"),
    (("    build: .", "    build: .\n    volumes: [\"/:/host\"]"), "volumes"),  # no host mounts
])
def test_anything_outside_the_subset_is_refused(edit, fragment):
    with pytest.raises(InputError) as e:
        parse_services(GOOD.replace(*edit))
    assert e.value.reason is ReasonCode.STATIC_VALIDATION_FAILED and fragment in str(e.value)


def test_static_check_reads_the_compose_file(tmp_path):
    env = tmp_path / "environment"
    env.mkdir()
    assert load_services(env) == [] and check_services(TaskDir(tmp_path), None) == []
    (env / COMPOSE_FILE).write_text(GOOD)
    assert [s.image for s in load_services(env, "img:1")] == ["img:1"]
    (env / COMPOSE_FILE).write_text("services: [1, 2]\n")
    assert check_services(TaskDir(tmp_path), None)
