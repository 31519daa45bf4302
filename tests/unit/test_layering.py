"""Domain packages never import Dagster: they stay usable as plain Python and testable without an instance."""

import pkgutil
import subprocess
import sys

import pytest

import skill2env_dagster

DOMAIN_PACKAGES = ["models", "skillhub", "knowledge", "planning", "llm", "tasks", "gates", "probe", "export",
                   "rollouts"]
# Scripts copied into task images and run there (they read container paths at import): not host modules.
CONTAINER_SIDE = ("skill2env_dagster.tasks.standins.",)


def _modules() -> list[str]:
    names = ["skill2env_dagster.store", "skill2env_dagster.reasons"]
    for pkg in DOMAIN_PACKAGES:
        path = [f"{skill2env_dagster.__path__[0]}/{pkg}"]
        names.append(f"skill2env_dagster.{pkg}")
        names += [m.name for m in pkgutil.walk_packages(path, prefix=f"skill2env_dagster.{pkg}.")
                  if not m.ispkg and not m.name.startswith(CONTAINER_SIDE)]
    return names


def test_domain_modules_do_not_import_dagster():
    code = (
        "import importlib, sys\n"
        f"mods = {_modules()!r}\n"
        "bad = []\n"
        "for m in mods:\n"
        "    importlib.import_module(m)\n"
        "    if 'dagster' in sys.modules:\n"
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
