"""File analyses behind code versions are cached on disk by content: the same answers, faster starts."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster import versions


def _fresh(path: Path) -> versions._Analysis:
    versions._analysis.cache_clear()
    return versions._analysis(path, path.stat().st_mtime_ns)


def test_cached_analysis_equals_a_fresh_one_and_damage_or_edits_recompute(tmp_path, monkeypatch):
    monkeypatch.setenv("S2E_CODE_CACHE", str(tmp_path / "cache"))
    module = tmp_path / "mod.py"
    module.write_text('"""doc"""\nfrom skill2env_dagster.hashing import sha256_bytes\nfrom . import sibling\n'
                      "import skill2env_dagster.reasons\nX = sha256_bytes(b'')\n")
    first = _fresh(module)
    entries = list((tmp_path / "cache").glob("*.json"))
    assert len(entries) == 1
    assert first.imports == (("skill2env_dagster.hashing", 0, ("sha256_bytes",)), ("", 1, ("sibling",)),
                             ("skill2env_dagster.reasons", 0, ()))
    assert _fresh(module) == first  # read back from disk

    entries[0].write_text("{damaged")
    assert _fresh(module) == first

    module.write_text(module.read_text().replace('"""doc"""', '"""other doc"""'))  # docstrings change nothing
    assert _fresh(module).digest == first.digest
    module.write_text(module.read_text() + "Y = 1\n")
    assert _fresh(module).digest != first.digest
    assert len(list((tmp_path / "cache").glob("*.json"))) == 3


def test_an_unwritable_cache_only_costs_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("S2E_CODE_CACHE", str(blocker / "cache"))  # below a file: cannot be created
    module = tmp_path / "mod.py"
    module.write_text("A = 1\n")
    assert _fresh(module).digest
