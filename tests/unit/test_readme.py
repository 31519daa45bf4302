"""The README stays true to the code: every reason code is documented, every CLI command is listed."""

from skill2env_dagster.cli import COMMAND_MODULES
from skill2env_dagster.reasons import INFRA_CODES, ReasonCode


def test_every_reason_code_is_in_the_readme(repo_root):
    readme = (repo_root / "README.md").read_text()
    missing = [c.value for c in ReasonCode if f"`{c.value}`" not in readme]
    assert missing == []
    for code in INFRA_CODES:
        assert f"`{code.value}`†" in readme, code


def test_every_command_is_in_the_readme(repo_root):
    readme = (repo_root / "README.md").read_text()
    for name in COMMAND_MODULES:
        assert f"skill2env {name.replace('_', '-')}" in readme, name
