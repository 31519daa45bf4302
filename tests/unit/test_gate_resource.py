"""DockerResource takes its gate settings from GateSettings (declared once), and works without a running engine."""

from __future__ import annotations

import json

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.resources.docker import DockerResource, GateConfig


def test_resource_defaults_are_the_domain_defaults():
    ours = DockerResource().settings().model_dump(exclude={"run_id"})
    assert ours == GateSettings().model_dump(exclude={"run_id"})
    assert set(GateConfig.model_fields) == set(GateSettings.model_fields) - {"run_id"}


def test_settings_carry_the_resource_config():
    res = DockerResource(gates=GateConfig(docker_url="tcp://127.0.0.1:9",
                                          approved_registries=["127.0.0.1:5000", "r.local:5000"],
                                          concurrency=3, pids_limit=64, memory_mb=256, cpus=0.5, timeout_cap_sec=30,
                                          shortcut_threshold=0.4, mutation_testing=False))
    s = res.settings()
    assert (s.docker_url, s.concurrency, s.pids_limit, s.memory_mb, s.cpus, s.timeout_cap_sec) == (
        "tcp://127.0.0.1:9", 3, 64, 256, 0.5, 30)
    assert s.approved_registries == ("127.0.0.1:5000", "r.local:5000")
    assert (s.shortcut_threshold, s.mutation_testing) == (0.4, False)


def test_resource_config_keeps_the_domain_bounds():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        GateConfig(concurrency=65)
    with pytest.raises(ValidationError):
        GateConfig(shortcut_threshold=1.5)


def test_gate_runs_static_checks_before_needing_an_engine(tmp_path):
    (tmp_path / "t").mkdir()
    report = DockerResource(gates=GateConfig(docker_url="tcp://127.0.0.1:9")).gate(tmp_path / "t")
    assert report.verdict.value == "rejected"  # an empty folder fails layout before any engine is needed


def test_load_base_images_reads_the_record(tmp_path):
    pins = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "0" * 64}
    (tmp_path / "base-images.json").write_text(json.dumps(pins))
    assert load_base_images(tmp_path) == pins
    assert DockerResource(state_dir=str(tmp_path)).base_images() == pins
