"""Rule changes after the tenth labelling round (issue 14), each a reviewer's principle found on that round's tune-half
errors (read after its unseen figures were recorded) and tested both ways on text written by us."""

from __future__ import annotations

import pytest

from skill2env_dagster.reasons import ReasonCode
from tests.unit.screen_support import rules, screen_text

ACCT = ReasonCode.NEEDS_EXTERNAL_ACCOUNT
STEPS = "\n\n## Steps\n1. Run `make report` and check `out/report.csv`.\n2. Compare with `expected.csv`.\n"


def _acct_rules(text: str, name: str = "t", description: str = "d") -> set[str]:
    return rules(screen_text(text, frontmatter={"name": name, "description": description, "license": "MIT"}), ACCT)


# ------------------------------------------------------------- a wallet signature is the user's login to a service
@pytest.mark.parametrize(("line", "account"), [
    ("Posting requires a wallet signature of the challenge the server returns.", True),
    ("The agent must sign each challenge with the user's Ordinals wallet before it can vote.", True),
    ("This skill assumes you can sign Keplr wallet messages (base64) and make HTTP requests.", True),
    # verifying signatures in code, or an optional signature, is not
    ("The handler must verify the wallet signature before it stores the vote.", False),
    ("Optionally, sign the challenge with your wallet to show a verified badge.", False),
    ("Implement wallet signature checks in the `auth.ts` middleware.", False),
])
def test_signing_with_the_users_wallet_is_an_account(line, account):
    text = f"# Tide board\n\nVote on proposals of the Tide board.\n\n{line}\n" + STEPS
    assert ("acct.wallet_signature" in _acct_rules(text)) is account


def test_a_guide_that_warns_about_wallet_signatures_is_not_asking_for_one():
    text = ("# Drainer watch\n\nRed flags in dApps.\n\n- A site that asks for a wallet signature of an opaque "
            "message may be a drainer.\n" + STEPS)
    assert "acct.wallet_signature" not in _acct_rules(text, "drainer-guard", "Detects wallet drainer pages")


# --------------------------------------- a key added only when a call that works without one is refused (Chinese)
@pytest.mark.parametrize("line", [
    "- 该接口可以先直接调用；如果请求被要求认证，再补上 API Key。",
    "- 天气接口面向公开访问，若返回结果被要求授权，再申请密钥。",
])
def test_a_key_needed_only_if_a_direct_call_is_refused_is_conditional(line):
    text = f"# 潮汐查询\n\n查询潮汐时间。\n\n## 鉴权\n\n{line}\n" + STEPS
    assert "acct.required_credential_cjk" not in _acct_rules(text)


def test_a_key_required_before_use_is_still_a_requirement():
    text = "# 潮汐查询\n\n查询潮汐时间。\n\n## 鉴权\n\n- 使用前需要 API Key，请先在控制台申请。\n" + STEPS
    assert "acct.required_credential_cjk" in _acct_rules(text)


# ------------------------------------ a config FILE is not "configure", and detecting keys asks for none (Chinese)
@pytest.mark.parametrize("line", [
    "- 用正则检测配置文件中的真实密钥（云厂商、代码托管平台等）",
    "- 检测 .env 与设置页面中残留的 API Key",
])
def test_a_secret_scanner_line_under_a_config_heading_asks_for_no_key(line):
    text = f"# 本地体检\n\n检查本机安全。\n\n## 配置检查\n\n{line}\n" + STEPS
    assert "acct.setup_credential" not in _acct_rules(text)


@pytest.mark.parametrize("line", [
    "- 在配置文件中填入你的 API Key",
    "- 配置 App ID 和 AppSecret 后再运行",
])
def test_a_setup_step_that_asks_for_a_key_still_fires(line):
    text = f"# 潮汐推送\n\n推送潮汐提醒。\n\n## 配置\n\n{line}\n" + STEPS
    assert "acct.setup_credential" in _acct_rules(text)
