"""Rule behaviours that over-fired on wording the rules were not tuned on (issue 14, seventh round), each found on
the tune half (rule support, and the earlier rule books replayed on later rounds' tune entries:
benchmarks/screening_set/rule_support.py) and fixed by context rather than by wording: a file name is no host, a
network range no device, software wiring no hardware, a product's own name no context for itself, a macOS command
with a Linux alternative one platform among several. Every fixture is written by us."""

from __future__ import annotations

import pytest

from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.screen.rules import load_rule_book
from tests.unit.screen_support import rules, screen_text

HARDWARE = ReasonCode.NEEDS_HARDWARE
OS = ReasonCode.OS_OR_GUI_SPECIFIC
TOOL = {"name": "notes-sync", "description": "Sync notes between folders.", "license": "MIT"}


# ------------------------------------------------------------------------------------------------ hardware
@pytest.mark.parametrize("line", [
    "cp .env.example .env.local",
    "nano ~/.config/sandbox/myapp.local",
    'GIT_CONFIG_GLOBAL="/home/dev/.gitconfig.local"',
    "push \"route 192.168.4.0 255.255.255.0\"",
    "allowed_networks: 10.20.0.0/16",
])
def test_a_file_name_or_a_network_range_is_no_lan_device(line):
    assert _rule("hw.device_network").rx.search(line) is None


@pytest.mark.parametrize("line", [
    "ssh pi@garden-cam.local",
    "curl http://hallway-panel.local:8080/api/state",
    "wake --mac AA:BB:CC:DD:EE:01 --ip 192.168.7.41 --mask 255.255.255.0",
])
def test_a_lan_host_or_address_is_still_a_device(line):
    assert _rule("hw.device_network").rx.search(line)


def _rule(rule_id: str):
    return next(r for r in load_rule_book().rules if r.rule.id == rule_id)


def test_wiring_up_software_is_no_device_work():
    skill = ("# Feature prototyping\n\nMock the page with fake data before wiring real routes.\n"
             "Then end with the wiring plan and wire up the state store.\n")
    found = screen_text(skill + "\n- Wire the sensor to GPIO 4 on the board.\n", frontmatter=TOOL)
    hits = [f for f in found if f.rule == "hw.device_work"]
    assert all("sensor" in f.text for f in hits)


def test_a_printer_of_a_code_analyser_is_no_printer():
    """The family's own word is no context for itself; a print job is."""
    printers = next(f for f in load_rule_book().vocabulary if f.family.id == "printers_nas")
    assert printers.body_near is not None
    assert printers.body_near.search("Use the inheritance printer to visualise the contract graph.") is None
    assert printers.body_near.search("Send the PDF to the office printer as a duplex print job.")


# ---------------------------------------------------------------------------------------------- os / gui
CLIPBOARD = """# Share snippet

Format the snippet, then copy it to the clipboard:

```bash
snippet fmt notes.md | pbcopy          # macOS
snippet fmt notes.md | xclip -sel clip # Linux
```
"""

SERVICE = """# Nightly digest

Run the digest every night as a background job.

- macOS: `launchctl load ~/Library/LaunchAgents/dev.digest.plist`
- Linux: `systemctl --user enable --now digest.timer`
"""


@pytest.mark.parametrize("skill_md", [CLIPBOARD, SERVICE])
def test_a_macos_command_with_a_linux_alternative_is_one_platform_among_several(skill_md):
    assert OS not in {f.code for f in screen_text(skill_md, frontmatter=TOOL)}


def test_a_single_macos_utility_does_not_decide_alone():
    skill = "# Digest\n\nBuild the digest with `digest build`, then `digest show | pbcopy` to paste it.\n"
    assert OS not in {f.code for f in screen_text(skill, frontmatter=TOOL)}


def test_avoiding_applescript_is_no_applescript():
    skill = "# Calendar export\n\nReads the exported .ics files directly, without AppleScript dialogs.\n"
    assert OS not in {f.code for f in screen_text(skill, frontmatter=TOOL)}


def test_macos_only_automation_still_counts():
    skill = ("# Window tidy\n\nArranges the user's desktop windows.\n\n```bash\n"
             "osascript -e 'tell application \"Finder\" to set bounds of window 1 to {0, 0, 800, 600}'\n```\n")
    assert OS in {f.code for f in screen_text(skill, frontmatter=TOOL)}


def test_macos_only_option_in_a_per_platform_list_is_not_the_skill():
    skill = ("# Secrets loader\n\nLoads the local `.env` file into the shell.\n\n"
             "- `--keychain` (macOS only): read the values from the login keychain\n"
             "- `--secret-tool` (Linux only): read them from the Secret Service\n")
    assert "os.only_statement" not in rules(screen_text(skill, frontmatter=TOOL), OS)


# ------------------------------------------------------------------------------------------ accounts
ACCOUNT = ReasonCode.NEEDS_EXTERNAL_ACCOUNT
AUDIT = {"name": "config-audit", "description": "Audit the agent's config file for insecure settings.",
         "license": "MIT"}

AUDIT_REPORT = """# Config audit

Reads `config.json` and reports each insecure setting with a fix.

## Report template

```markdown
### Finding: key stored in plain text
**Fix:**
```bash
export ACME_API_KEY="sk-xxxx"
```
"""


def test_a_credential_in_an_audit_skills_fix_suggestion_is_a_sample():
    assert ACCOUNT not in {f.code for f in screen_text(AUDIT_REPORT, frontmatter=AUDIT)}


def test_the_same_credential_in_a_product_skill_is_still_its_key():
    skill = AUDIT_REPORT.replace("# Config audit", "# Acme reports")
    found = screen_text(skill, frontmatter={"name": "acme-reports", "description": "Acme sales reports.",
                                            "license": "MIT"})
    assert ACCOUNT in {f.code for f in found}


def test_a_scanner_that_needs_a_key_still_needs_it():
    skill = ("# Hash lookup\n\n## Setup\n\nGet an API key from your hashscope.io account and set it:\n\n"
             "```bash\nexport HASHSCOPE_API_KEY=...\n```\n")
    found = screen_text(skill, frontmatter={"name": "hash-scanner", "description": "Scan file hashes.",
                                            "license": "MIT"})
    assert ACCOUNT in {f.code for f in found}


GATEWAY_TOKEN = """# Gateway hardening

## Fix 2: gateway auth

Set `gateway.auth.mode` to `"token"` and set a token if none exists yet:
```json
{ "gateway": { "auth": { "mode": "token", "token": "<GENERATED>" } } }
```
Make the token with:
```bash
openssl rand -hex 24
```
"""


def test_a_token_made_on_the_spot_by_a_local_generator_is_no_account():
    found = screen_text(GATEWAY_TOKEN, frontmatter={"name": "gateway-hardening", "description": "Harden the "
                                                    "local gateway config.", "license": "MIT"})
    assert ACCOUNT not in {f.code for f in found}


@pytest.mark.parametrize("host", ["http://localhost:3456/api/v1/tasks", "https://warehouse.example.com/ingest"])
def test_an_auth_header_for_the_users_own_or_a_placeholder_server_is_no_third_party_account(host):
    skill = (f"# Pipelines\n\nA step of the sample pipeline:\n\n```yaml\ncommand: |\n  curl -X POST {host} \\\n"
             "    -H \"Authorization: Bearer $PIPE_TOKEN\" -d @out.json\n```\n\n## Remote feed\n\n"
             "Report sizes to the team with `digest --send-to <url>`; set `export DIGEST_API_KEY=<key>`.\n")
    found = screen_text(skill, frontmatter=TOOL)
    assert "acct.auth_header" not in rules(found, ACCOUNT)


def test_an_auth_header_for_a_vendor_api_still_counts():
    skill = ("# Pipelines\n\n```bash\ncurl -X POST https://api.acmecloud.io/v2/ingest \\\n"
             "  -H \"Authorization: Bearer $ACME_TOKEN\" -d @out.json\n```\n")
    assert "acct.auth_header" in rules(screen_text(skill, frontmatter=TOOL), ACCOUNT)


# ------------------------------------------------------------------------------------------ live service
@pytest.mark.parametrize("line", [
    "echo | openssl s_client -connect mysite.com:443 -servername mysite.com",
    "dig @8.8.8.8 example.com",
    "nslookup google.com",
])
def test_a_probe_of_a_placeholder_or_a_well_known_host_names_no_target(line):
    assert _rule("live.remote_host_probe").rx.search(line) is None


def test_a_probe_of_a_named_host_is_still_live():
    assert _rule("live.remote_host_probe").rx.search("dig +short mx status.acmecloud.io")


ORDERS_API = """# Orders API

Scaffold the service and its routes:

- `GET /orders/{id}` returns one order
- `POST /orders` creates one

Run it with `uvicorn app:app` and try `curl http://localhost:8000/orders/1`.
"""


def test_the_endpoints_of_an_api_the_skill_builds_are_not_a_service_it_calls():
    builder = {"name": "orders-api", "description": "Build a REST API for orders with FastAPI.", "license": "MIT"}
    assert ReasonCode.NEEDS_LIVE_SERVICE not in {f.code for f in screen_text(ORDERS_API, frontmatter=builder)}


def test_the_same_endpoints_in_a_client_skill_are_a_service_it_calls():
    client = {"name": "orders-client", "description": "Look up orders in the shop's order service.",
              "license": "MIT"}
    assert ReasonCode.NEEDS_LIVE_SERVICE in {f.code for f in screen_text(ORDERS_API, frontmatter=client)}


def test_the_ios_half_of_a_cross_platform_mobile_workflow_is_no_macos_requirement():
    skill = ("# Mobile smoke test\n\nBoot a device and install the build:\n\n```bash\n"
             "xcrun simctl boot 'iPhone 15'      # iOS\nadb install app-debug.apk         # Android\n```\n")
    assert OS not in {f.code for f in screen_text(skill, frontmatter=TOOL)}


def test_an_ios_only_build_still_needs_macos():
    skill = "# iOS build\n\n```bash\nxcodebuild -scheme App -sdk iphonesimulator build\n```\n"
    assert OS in {f.code for f in screen_text(skill, frontmatter=TOOL)}


@pytest.mark.parametrize("line", [
    "| `index_mode` | no | `prefer` | controls Serena MCP usage for symbol lookups |",
    "**MCP tools (local environment):** the tracker's own server must be running",
])
def test_a_local_mcp_server_is_no_product_account(line):
    assert _mcp_hit(line) is False


def test_a_products_mcp_server_is_still_account_evidence():
    assert _mcp_hit("Look up open cards through the Acmeboard MCP server.") is True


def _mcp_hit(line: str) -> bool:
    rule = _rule("acct.mcp_dependency")
    return bool(rule.rx.search(line)) and not (rule.unless is not None and rule.unless.search(line))


@pytest.mark.parametrize("line", [
    "10.1.2.3 [04/Feb/2025:09:12:44 +0000] POST /api/orders 502 0.31s",
    "upstream: GET /api/orders HTTP/1.1 502 (timeout)",
    "2025-02-04T09:12:44Z INFO GET /api/orders 200 12ms",
])
def test_a_request_in_a_log_sample_is_data_not_a_call(line):
    rule = _rule("live.http_endpoints")
    assert rule.rx.search(line) and rule.unless is not None and rule.unless.search(line)


def test_a_documented_endpoint_is_still_one():
    rule = _rule("live.http_endpoints")
    line = "- `GET /v2/orders/{id}` returns one order"
    assert rule.rx.search(line) and not (rule.unless is not None and rule.unless.search(line))


# ------------------------------------------------------------------------------------------ vocabulary
PREVIEW = """# Product preview checklist

Ask which systems are in use: the storefront, e.g. Shopify, and any app that stores custom fields.
Then check the preview against the API token scopes listed in `scopes.md` and the account settings page.
Log in to the merchant dashboard to compare the two.
"""


def test_a_product_named_as_an_example_is_no_vocabulary_evidence():
    found = screen_text(PREVIEW, frontmatter=TOOL)
    assert not any(f.rule.startswith("vocab.saas") for f in found)
    assert ACCOUNT not in {f.code for f in found}


def test_the_same_product_named_as_the_tool_is_evidence():
    skill = PREVIEW.replace("the storefront, e.g. Shopify,", "the Shopify storefront")
    assert "vocab.saas.body" in rules(screen_text(skill, frontmatter=TOOL), ACCOUNT)


@pytest.mark.parametrize("line, physical", [
    ("agent-browser mouse down left         # Press button", False),
    ("Press the Submit button on the signup page.", False),
    ("Hold the pairing button on the hub for 10 seconds until the LED blinks.", True),
])
def test_a_button_on_a_screen_is_no_device(line, physical):
    rule = _rule("hw.physical_action")
    hit = bool(rule.rx.search(line)) and not (rule.unless is not None and rule.unless.search(line))
    assert hit is physical
