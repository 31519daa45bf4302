"""Domain packages never import Dagster: they stay usable as plain Python and testable without an instance.

The rule is written once, as the `domain-without-dagster` import-linter contract in pyproject.toml (checked
statically by scripts/lint.sh, lazy imports included). This test reads that contract and checks what a static
graph cannot see: that importing every domain module does not pull Dagster in through a third-party library.
"""

import pkgutil
import subprocess
import sys
import tomllib

import pytest

import skill2env_dagster
from skill2env_dagster.versions import DOMAIN

PACKAGE = skill2env_dagster.__name__
# Scripts copied into task images and run there (they read container paths at import): not host modules.
CONTAINER_SIDE = (f"{PACKAGE}.tasks.standins.",)


def _contract(repo_root, contract_id: str) -> dict:
    config = tomllib.loads((repo_root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return next(c for c in config["contracts"] if c["id"] == contract_id)


def _modules(sources: list[str]) -> list[str]:
    names = []
    for name in sources:
        names.append(name)
        mod = __import__(name, fromlist=["_"])
        if hasattr(mod, "__path__"):
            names += [m.name for m in pkgutil.walk_packages(mod.__path__, prefix=f"{name}.")
                      if not m.ispkg and not m.name.startswith(CONTAINER_SIDE)]
    return names


def test_the_dagster_free_domain_is_the_code_versioned_domain(repo_root):
    """versions.DOMAIN (whose code decides artifact content) and the contract's list are one set of modules."""
    sources = _contract(repo_root, "domain-without-dagster")["source_modules"]
    assert sorted(sources) == sorted(f"{PACKAGE}.{d}" for d in DOMAIN)


def test_domain_modules_do_not_import_dagster(repo_root):
    contract = _contract(repo_root, "domain-without-dagster")
    forbidden = contract["forbidden_modules"]
    code = (
        "import importlib, sys\n"
        f"mods = {_modules(contract['source_modules'])!r}\n"
        f"forbidden = {forbidden!r}\n"
        "bad = []\n"
        "for m in mods:\n"
        "    importlib.import_module(m)\n"
        "    if any(f in sys.modules for f in forbidden):\n"
        "        bad.append(m); break\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"first module pulling in dagster: {out.stdout}"


@pytest.mark.dagster
def test_dagster_definitions_validate_cli(repo_root, tmp_path):
    exe = repo_root / ".venv" / "bin" / "dagster"
    if not exe.exists():
        exe = "dagster"
    env = {"PATH": f"{repo_root / '.venv' / 'bin'}:/usr/bin:/bin", "DAGSTER_HOME": str(tmp_path),
           "S2E_ARTIFACTS_DIR": str(tmp_path / "artifacts")}
    out = subprocess.run([str(exe), "definitions", "validate", "-w", "workspace.yaml"], cwd=repo_root, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Validation successful" in out.stderr + out.stdout
