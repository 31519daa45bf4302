"""The strict task.toml model: Harbor's names, unknown keys rejected, timeouts required, round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from skill2env_dagster.models.task_toml import TaskToml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
MINIMAL = '[agent]\ntimeout_sec = 10\n[verifier]\ntimeout_sec = 5\n'


@pytest.mark.parametrize("name", ["good_minimal", "good_python"])
def test_fixture_round_trips(name):
    config = TaskToml.from_toml((FIXTURES / name / "task.toml").read_text())
    assert TaskToml.from_toml(config.to_toml()) == config
    assert config.schema_version == "1.4"


def test_metadata_pins_round_trip():
    config = TaskToml.from_toml(MINIMAL).with_metadata(base_image_pins={"r/a:b": "sha256:" + "0" * 64})
    again = TaskToml.from_toml(config.to_toml())
    assert again.metadata["base_image_pins"] == {"r/a:b": "sha256:" + "0" * 64}


@pytest.mark.parametrize(
    "text",
    [
        MINIMAL.replace("[verifier]", "[verifer]"),  # typo'd table: Harbor would silently accept it
        MINIMAL + "timeout = 3\n",  # unknown key inside [verifier]
        MINIMAL + "[environment]\nmemory = '1G'\n",  # deprecated key Harbor migrates, we reject
        "[agent]\ntimeout_sec = 10\n",  # verifier timeout missing
        "[verifier]\ntimeout_sec = 10\n",  # agent timeout missing (Harbor: unlimited)
        MINIMAL.replace("10", "0"),
        MINIMAL.replace("10", "inf"),
        'schema_version = "1.3"\n' + MINIMAL,
        '[task]\nname = "no-slash"\n' + MINIMAL,
        MINIMAL + '[environment]\nnetwork_mode = "internet"\n',
        MINIMAL + '[environment]\nallowed_hosts = ["a.example"]\n',  # only with allowlist
        MINIMAL + "[[steps]]\nname = 'x'\n",  # multi-step tasks are not gated
        MINIMAL + "[metadata]\ntoolchain_writes = '/usr/local/bin/x'\n",  # a list, not a string
        MINIMAL + "[metadata]\ntoolchain_writes = ['usr/local/bin/x']\n",  # absolute paths only
        MINIMAL + "[metadata]\ntoolchain_writes = ['/**']\n",  # no blanket pass
    ],
)
def test_invalid_configs_are_rejected(text):
    with pytest.raises(ValidationError):
        TaskToml.from_toml(text)


def test_declared_toolchain_writes_round_trip():
    config = TaskToml.from_toml(MINIMAL + "[metadata]\ntoolchain_writes = ['/usr/local/bin/mytool']\n")
    assert config.toolchain_writes == ["/usr/local/bin/mytool"]
    assert TaskToml.from_toml(config.to_toml()).toolchain_writes == ["/usr/local/bin/mytool"]
    assert TaskToml.from_toml(MINIMAL).toolchain_writes == []


def test_bad_toml_syntax_is_a_value_error():
    with pytest.raises(ValueError):
        TaskToml.from_toml("[agent\n")
