"""What the skill's own program needs, the skill needs: its declared entry point (package.json `main`/`bin`) or the
only program at its root weighs like SKILL.md, as scripts SKILL.md names by path do (screen/engine.py
`_entry_programs`). Paid tools whose SKILL.md shows only a command keep their key and subscription check there."""

from __future__ import annotations

import json

from tests.unit.screen_support import codes, screen_text

SKILL_MD = "# Recipe scaler\n\nScale a recipe to a number of servings.\n\n```bash\n/skill recipe-scaler 6\n```\n"
PAID_JS = ("const key = process.env.PANTRYCLOUD_API_KEY;\n"
           "async function run(args) {\n"
           "  const res = await fetch('https://api.pantrycloud.io/v2/scale', {\n"
           "    headers: { Authorization: `Bearer ${key}` }, method: 'POST', body: JSON.stringify(args) });\n"
           "  return res.json();\n}\nmodule.exports = { run };\n")
LOCAL_JS = "function scale(recipe, n) {\n  return recipe.map(i => ({ ...i, qty: i.qty * n }));\n}\n"
CREDENTIAL_CODES = {"needs_external_account", "needs_live_service"}


def test_the_declared_entry_point_decides_like_skill_md():
    manifest = json.dumps({"name": "recipe-scaler", "main": "./lib/app.js"})
    found = codes(screen_text(SKILL_MD, {"package.json": manifest, "lib/app.js": PAID_JS}))
    assert found >= CREDENTIAL_CODES


def test_a_bin_entry_counts_and_an_undeclared_helper_does_not():
    manifest = json.dumps({"name": "recipe-scaler", "bin": {"recipe-scaler": "cli.js"}})
    assert codes(screen_text(SKILL_MD, {"package.json": manifest, "cli.js": PAID_JS})) >= CREDENTIAL_CODES
    helper_only = {"package.json": manifest, "cli.js": LOCAL_JS, "sync.js": PAID_JS}
    assert not CREDENTIAL_CODES & codes(screen_text(SKILL_MD, helper_only))


def test_the_only_program_at_the_root_is_the_skills_program():
    assert codes(screen_text(SKILL_MD, {"index.js": PAID_JS})) >= CREDENTIAL_CODES


def test_with_several_root_programs_and_no_manifest_none_is_the_entry():
    assert not CREDENTIAL_CODES & codes(screen_text(SKILL_MD, {"index.js": LOCAL_JS, "sync.js": PAID_JS}))


def test_an_install_script_is_set_up_not_the_program():
    installer = "curl -H \"Authorization: Bearer $PANTRYCLOUD_API_KEY\" https://api.pantrycloud.io/v2/register\n"
    assert not CREDENTIAL_CODES & codes(screen_text(SKILL_MD, {"install.sh": installer}))


def test_a_broken_manifest_falls_back_to_the_root_program():
    assert codes(screen_text(SKILL_MD, {"package.json": "{not json", "index.js": PAID_JS})) >= CREDENTIAL_CODES


GATED_JS = ("const plans = require('./plans');\n"
            "async function checkSubscription(user) {\n"
            "  const r = await fetch('https://api.tollgate.io/subscriptions/verify', { method: 'POST' });\n"
            "  return r.json();\n}\n"
            "async function run(user, args) {\n"
            "  if (!(await checkSubscription(user)).active) throw new Error('subscribe first');\n"
            "  return plans.scale(args);\n}\n")


def test_a_program_that_checks_a_paid_subscription_needs_that_account():
    found = screen_text(SKILL_MD, {"index.js": GATED_JS})
    assert {"acct.paid_plan_check"} <= {f.rule for f in found}
    assert codes(found) >= CREDENTIAL_CODES


def test_a_skill_that_builds_subscription_billing_is_not_gated_by_it():
    teach = "---\nname: saas-billing\ndescription: Add subscription billing to a SaaS app.\n---\n# Billing\n"
    found = screen_text(teach, {"index.js": GATED_JS},
                        frontmatter={"name": "saas-billing", "description": "Add subscription billing to a SaaS app."})
    assert "acct.paid_plan_check" not in {f.rule for f in found}


def test_a_software_licence_check_is_no_paid_plan():
    checker = "def validate_license(spdx_id):\n    return spdx_id in KNOWN\n"
    found = screen_text(SKILL_MD, {"check.py": checker})
    assert not CREDENTIAL_CODES & codes(found)
