"""General signals added for generalisation (issue 14): an account implies a live service, placeholder hosts and
installer downloads are not services, an auth link counts only when handed over, code being written is not account
set-up, and strong evidence in a script SKILL.md runs counts like SKILL.md's own. Fixtures written by us."""

from __future__ import annotations

import pytest

from skill2env_dagster.reasons import ReasonCode
from tests.unit.screen_support import codes, screen_text

STEPS = "\n\n## Steps\n1. Run `make report` and check `out/report.csv`.\n2. Compare with `expected.csv`.\n"
ACCOUNT = ReasonCode.NEEDS_EXTERNAL_ACCOUNT
LIVE = ReasonCode.NEEDS_LIVE_SERVICE


def test_an_account_implies_a_live_service_on_the_same_evidence_line():
    text = "# Tide log\n\n## Setup\n\n1. Get your API key from the TideWatch dashboard.\n" + STEPS
    found = screen_text(text)
    acct = next(f for f in found if f.code == ACCOUNT)
    live = next(f for f in found if f.code == LIVE)
    assert (live.file, live.line, live.text) == (acct.file, acct.line, acct.text)
    assert live.rule == f"{acct.rule}@needs_live_service"


def test_no_account_no_implied_live_service():
    assert not codes(screen_text("# Tide log\n\nPlot `tides.csv` with matplotlib.\n" + STEPS)) & {"needs_live_service"}


@pytest.mark.parametrize("line", [
    'curl -s -o /dev/null -w "%{http_code}" https://shop.example.com/health',  # a documentation placeholder
    '{"key": "BASE_URL", "value": "https://api.example.org", "enabled": true},',
    "curl https://board.your-team.workers.dev/api/health",  # the reader's own deployment
    "wget https://apt.toolchain.dev/install-toolchain.sh",  # an installer download is set-up
])
def test_placeholder_hosts_and_installer_downloads_are_not_live_services(line):
    found = screen_text(f"# Ops\n\n```bash\n{line}\n```\n" + STEPS)
    assert not [f for f in found if f.code == LIVE and f.rule in {"live.remote_http_call", "live.api_base_url"}]


def test_a_real_host_in_a_base_url_is_still_evidence():
    found = screen_text('# Ops\n\n```json\n{"key": "BASE_URL", "value": "https://api.tidewatch.io"}\n```\n' + STEPS)
    assert "live.api_base_url" in {f.rule for f in found}


def test_an_auth_link_handed_to_the_user_needs_an_account_an_auth_route_being_written_does_not():
    handed = "# Calendar\n\nOpen the returned authentication link to connect the calendar.\n" + STEPS
    route = "# Server guide\n\n- Covers: auth URL / metadata routes, consent screens\n" + STEPS
    assert ACCOUNT in codes(screen_text(handed))
    assert ACCOUNT not in codes(screen_text(route))


def test_adding_a_credentials_parameter_to_code_is_not_account_setup():
    code = "# Provider\n\n## Setup\n\n1. Add `credentials=[\"api_key\"]` to the Provider constructor.\n" + STEPS
    user = "# Provider\n\n## Setup\n\n1. Create an API key in the TideWatch console and export it.\n" + STEPS
    assert ACCOUNT not in codes(screen_text(code))
    assert ACCOUNT in codes(screen_text(user))


SCRIPT = ('import os\nimport requests\n\n'
          'requests.post("https://api.tidewatch.io/v2/readings",\n'
          '              headers={"Authorization": f"Bearer {os.environ[\'TIDE_TOKEN\']}"}, json={})\n')


def test_strong_evidence_in_a_script_skill_md_runs_counts_like_skill_md():
    runs = "# Tide sync\n\nRun `python3 scripts/push.py readings.csv` after each survey.\n" + STEPS
    found = screen_text(runs, extra={"scripts/push.py": SCRIPT})
    assert {ACCOUNT, LIVE} <= {f.code for f in found}
    assert any(f.file == "scripts/push.py" and f.code == ACCOUNT for f in found)


def test_a_script_skill_md_never_names_or_weak_evidence_does_not_decide_alone():
    silent = "# Tide sync\n\nSummarise `readings.csv` by week.\n" + STEPS
    assert ACCOUNT not in codes(screen_text(silent, extra={"scripts/push.py": SCRIPT}))
    weak = "import os\n\ntoken = os.environ.get(\"TIDE_TOKEN\")\n"  # reading an optional token is one weak signal
    runs = "# Tide sync\n\nRun `python3 scripts/push.py readings.csv`.\n" + STEPS
    assert ACCOUNT not in codes(screen_text(runs, extra={"scripts/push.py": weak}))
