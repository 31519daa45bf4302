"""DockerResource hands its config to the gates as GateSettings, and works without a running engine."""

from __future__ import annotations

import json

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.resources.docker import DockerResource


def test_settings_carry_the_resource_config():
    res = DockerResource(engine_url="tcp://127.0.0.1:9", approved_registries=["127.0.0.1:5000", "r.local:5000"],
                         concurrency=3, pids_limit=64, memory_mb=256, cpus=0.5, timeout_cap_sec=30)
    s = res.settings()
    assert (s.docker_url, s.concurrency, s.pids_limit, s.memory_mb, s.cpus, s.timeout_cap_sec) == (
        "tcp://127.0.0.1:9", 3, 64, 256, 0.5, 30)
    assert s.approved_registries == ("127.0.0.1:5000", "r.local:5000")


def test_gate_runs_static_checks_before_needing_an_engine(tmp_path):
    (tmp_path / "t").mkdir()
    report = DockerResource(engine_url="tcp://127.0.0.1:9").gate(tmp_path / "t")
    assert report.verdict.value == "rejected"  # an empty folder fails layout before any engine is needed


def test_load_base_images_reads_the_record(tmp_path):
    pins = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "0" * 64}
    (tmp_path / "base-images.json").write_text(json.dumps(pins))
    assert load_base_images(tmp_path) == pins
    assert DockerResource(state_dir=str(tmp_path)).base_images() == pins
