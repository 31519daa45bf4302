"""Where the sources config is found: an installed package has no config folder, so the default is relative to
the project folder the user runs in, and a missing file says how to point at one."""

from pathlib import Path

import pytest

from skill2env_dagster.reasons import InputError, ReasonCode
from skill2env_dagster.skillhub.config import load_sources_config


def test_default_is_the_working_directory_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "hub").mkdir()
    (tmp_path / "config" / "sources.yaml").write_text("sources:\n  - {name: mine, kind: dir, path: ../hub}\n")
    monkeypatch.delenv("S2E_SOURCES", raising=False)
    monkeypatch.chdir(tmp_path)
    config = load_sources_config()
    assert [s.name for s in config.sources] == ["mine"]
    assert Path(config.sources[0].path or "") == (tmp_path / "hub").resolve()


def test_missing_default_names_the_way_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("S2E_SOURCES", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as err:
        load_sources_config()
    assert err.value.reason is ReasonCode.SOURCE_UNAVAILABLE
    assert "S2E_SOURCES" in str(err.value) and str(tmp_path) in str(err.value)
