"""A user's session in `dagster dev -w workspace.yaml` (model endpoint: the loopback fake, prompts from a copy of
the package's), in a real browser and from the command line, on a tiny skill hub:

- the UI path: the crawl materialised with a click, one skill's partition materialised, then the asset graph, that
  partition's materialisation metadata, and its lineage followed back to `raw_skill_md` (the SKILL.md).
  Screenshots go to the test's tmp dir and to var/screenshots/ for humans;
- then a backfill after a prompt change: edit a template in the prompts copy, reload the code location, see through
  GraphQL (`staleStatusByPartition`) that exactly the partitions of the assets rendering it are STALE, run
  `skill2env ops backfill-stale` as docs/operations.md tells users, and check those partitions were refreshed
  while the crawl and the snapshots were not re-run.

One test: both halves need the same server with one skill's whole chain materialised (its gates run in the
engine), which is most of the time either half takes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.cli.ops import StalePartition, stale_partitions
from skill2env_dagster.definitions import build_defs
from skill2env_dagster.llm.prompts import PACKAGE_PROMPTS
from skill2env_dagster.planning.llm_planner import PLAN_TEMPLATE
from tests.ops.conftest import ONE_TASK, REPO
from tests.ops.dagster_dev import DagsterDev, make_home
from tests.support.fake_openai import FakeOpenAI
from tests.support.hub import make_hub, write_sources
from tests.support.random_replies import schema_name
from tests.support.scripted_creator import creator_reply
from tests.unit.test_planning_llm import canned_plan

# The per-skill run gates in the engine; the whole session takes longer than the default per-test limit.
pytestmark = [pytest.mark.browser, pytest.mark.dagster, pytest.mark.docker, pytest.mark.timeout(1200)]

SKILL = "t__csv-cleaner"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


PROMPT_ASSETS = ("workflow_plans",)  # the assets whose code_version hashes PLAN_TEMPLATE
UNTOUCHED = ("skillhub_snapshot",)


def _counts(home: Path, assets: tuple[str, ...]) -> dict[tuple[str, str], int]:
    """Materialisations per (asset, partition), read from the instance the server writes to."""
    counts: dict[tuple[str, str], int] = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for asset in assets:
            for rec in instance.fetch_materializations(dg.AssetKey(asset), limit=1000).records:
                key = (asset, rec.partition_key or "")
                counts[key] = counts.get(key, 0) + 1
    return counts


def _downstream_of(assets: tuple[str, ...]) -> tuple[str, ...]:
    """Assets below the prompt's assets in this code location's graph (they grow as the pipeline grows)."""
    graph = build_defs().resolve_asset_graph()
    below = dg.AssetSelection.assets(*assets).downstream().resolve(graph)
    return tuple(sorted(k.to_user_string() for k in below if k.to_user_string() not in assets))


def _crawl_count(home: Path) -> int:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return len(instance.fetch_materializations(dg.AssetKey("skillhub_crawl"), limit=100).records)


def _model(body: dict) -> str | dict:
    """A model that has no objection as the screen's second opinion, answers the planner with a canned plan and
    the creator agent with a scripted task."""
    if body.get("tools"):
        return creator_reply(body)
    if schema_name(body) == "OpinionReply":
        return json.dumps({"reasons": [], "not_needed": [], "summary": "no blocking reason"})
    return canned_plan(body) if schema_name(body) == "PlanReply" else "{}"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """The server, and the prompts folder it renders from."""
    root = tmp_path_factory.mktemp("ui")
    hub = make_hub(root / "hub")
    sources = write_sources(root / "sources.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}], root / "cache")
    prompts = root / "prompts"
    shutil.copytree(PACKAGE_PROMPTS, prompts)
    with FakeOpenAI(_model) as fake:
        env = {"S2E_SOURCES": str(sources), "S2E_ARTIFACTS_DIR": str(root / "artifacts"),
               "S2E_PROMPTS_DIR": str(prompts), "S2E_LLM_BASE_URL": fake.base_url, "S2E_LLM_MODEL": "fake-model",
               "S2E_LLM_CACHE_DIR": str(root / "llm-cache")}
        dev = DagsterDev(make_home(root / "dagster_home"), env, root / "dagster-dev.log").start()
        dev.stop_automation()  # only the runs this test launches may materialise anything
        try:
            yield dev, prompts
        finally:
            dev.stop()


@pytest.fixture(scope="module")
def page(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1920, "height": 1200})
        finally:
            browser.close()


def _shot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    human = REPO / "var" / "screenshots"
    human.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, human / path.name)
    return path


def _dismiss_welcome(page) -> None:
    """First visit may show a 'Join the Dagster community' dialog; it covers the graph (on a loaded machine it can
    take several seconds to appear)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):  # the dialog was not shown this time
        page.get_by_role("button", name="Skip").click(timeout=10_000)


UNFOLD = '[aria-label="unfold_more"]'


def _expand_groups(page) -> None:
    """The global graph starts with asset groups collapsed; expand each (its 'unfold_more' control; an opened group
    may show controls of its own). After a click, wait until that control is gone (the graph's own state);
    Playwright clicks the next one only once it stands still, so a layout still moving is waited for, not guessed."""
    for _ in range(20):
        if page.locator(UNFOLD).count() == 0:
            return
        toggle = page.locator(UNFOLD).last.element_handle()
        toggle.click()
        toggle.wait_for_element_state("hidden", timeout=60_000)  # the group opened (its control is replaced)


DOWNSTREAM_FIRST = (
    "gate_reports", "task_bundles", "axis_samples", "workflow_plans", "skill_knowledge", "skillhub_snapshot",
)


def _deepest_asset(server: DagsterDev) -> str:
    """The task side grows over time; show the most downstream per-skill asset this code location defines."""
    nodes = server.gql("{ assetNodes { assetKey { path } } }")["assetNodes"]
    names = {"/".join(n["assetKey"]["path"]) for n in nodes}
    return next(a for a in DOWNSTREAM_FIRST if a in names)


def _zoom_until_rendered(page, name: str, tries: int = 10) -> None:
    """The graph renders only nodes inside the viewport: zoom out until `name` is drawn; when zooming out stops
    short of it (a wide graph), use the graph's "Jump to…" box, as a user would."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(tries):
        with contextlib.suppress(PlaywrightTimeout):  # not drawn at this zoom: zoom out further
            page.get_by_text(name, exact=True).first.wait_for(state="attached", timeout=2_000)
            return
        page.locator('[aria-label="zoom_out"]').first.click()
    jump = page.get_by_placeholder("Jump to…")
    if page.get_by_text(name, exact=True).count() == 0 and jump.count() > 0:
        jump.fill(name)
        page.wait_for_timeout(800)
        page.keyboard.press("Enter")
        page.wait_for_timeout(1_500)
    page.get_by_text(name, exact=True).first.wait_for(timeout=30_000)


def _upstream_link(page, current: str) -> str:
    """The next asset up the per-skill chain that the current asset page links to."""
    order = [*DOWNSTREAM_FIRST, "raw_skill_md"]
    candidates = order[order.index(current) + 1:] if current in order else ["raw_skill_md"]
    page.get_by_text("Upstream assets").first.wait_for(timeout=60_000)
    for name in ["raw_skill_md", *candidates]:
        if page.locator(f'a[href*="/assets/{name}"]').count() > 0 and name != current:
            return name
    raise AssertionError(f"{current}: no upstream link among {candidates}")


def _new_run_id(server: DagsterDev, before: set[str], timeout: float = 300.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = [r["runId"] for r in server.runs() if r["runId"] not in before]
        if new:
            return new[0]
        time.sleep(0.5)
    raise TimeoutError("clicking Materialize launched no run")


def test_user_materialises_inspects_follows_lineage_then_backfills_a_prompt_edit(session, page, tmp_path: Path) -> None:
    server, prompts = session
    # 1. The whole asset graph.
    page.goto(f"{server.url}/asset-groups", wait_until="networkidle")
    _dismiss_welcome(page)
    _expand_groups(page)
    # The graph grows (the rollout group sits to the right): zoom out until each node is drawn.
    for name in ("raw_skill_md", "skillhub_crawl", "skillhub_snapshot", "workflow_plans", _deepest_asset(server)):
        _zoom_until_rendered(page, name)
    _shot(page, tmp_path, "01-asset-graph")

    # 2. Materialise the crawl with a click on its asset page.
    before = {r["runId"] for r in server.runs()}
    page.goto(f"{server.url}/assets/skillhub_crawl", wait_until="networkidle")
    page.locator("button").filter(has_text=re.compile(r"^Materialize$")).first.click()
    crawl_run = _new_run_id(server, before)
    assert server.wait_run(crawl_run) == "SUCCESS", server.log_tail()

    # 3. One skill's partitions (the per-skill job for that partition key), as the Launchpad does: one task candidate
    #    is all the walk needs (the default, 8, built and gated four here: a minute of the engine's time).
    run_id = server.launch_job("skill_pipeline", partition=SKILL, run_config=ONE_TASK)
    assert server.wait_run(run_id) == "SUCCESS", server.log_tail()  # creation gates every stage

    # 4. That partition's materialisation metadata, on the most downstream per-skill asset there is.
    asset = _deepest_asset(server)
    page.goto(f"{server.url}/assets/{asset}?view=partitions&partition={SKILL}", wait_until="networkidle")
    page.get_by_text("Latest materialization").first.wait_for(timeout=60_000)
    page.get_by_text("Metadata", exact=True).first.wait_for(timeout=30_000)
    page.get_by_text(run_id[:8]).first.wait_for(timeout=30_000)  # materialised by the run launched above
    _shot(page, tmp_path, "02-partition-metadata")

    # 5. Lineage: the upstream graph at full depth reaches raw_skill_md; then walk up link by link and open the
    #    observation of this skill's SKILL.md.
    page.goto(f"{server.url}/assets/{asset}?view=lineage&lineageScope=upstream", wait_until="networkidle")
    page.get_by_role("button", name="All", exact=True).click()
    _zoom_until_rendered(page, "raw_skill_md")
    _shot(page, tmp_path, "03-lineage-upstream")
    # Follow the chain on foot: each asset's Overview lists its upstream assets as links; click one step up
    # at a time until raw_skill_md (the graph's own nodes may sit under the side navigation when zoomed out).
    page.goto(f"{server.url}/assets/{asset}", wait_until="networkidle")
    chain = [asset]
    while chain[-1] != "raw_skill_md" and len(chain) < 8:
        nxt = _upstream_link(page, chain[-1])
        page.locator(f'a[href*="/assets/{nxt}"]').first.click()
        page.wait_for_url(f"**/assets/{nxt}**", timeout=30_000)
        chain.append(nxt)
    assert chain[-1] == "raw_skill_md", chain
    page.get_by_text("Events", exact=True).first.click()
    page.get_by_text(SKILL, exact=True).first.click()
    page.get_by_text("csv-cleaner/SKILL.md").first.wait_for(timeout=60_000)
    page.get_by_text("bundle_digest", exact=True).first.wait_for(timeout=10_000)
    _shot(page, tmp_path, "04-raw-skill-md")

    for name in ("01-asset-graph", "02-partition-metadata", "03-lineage-upstream", "04-raw-skill-md"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000

    # 6. A prompt edit, then the backfill of exactly what it stales. One skill got its whole per-skill chain; the
    #    other two stay at their crawl, so their partitions are MISSING, not STALE, and must not be in the backfill.
    skills = [SKILL]
    assert stale_partitions(server.url) == []  # everything fresh after the first materialisation
    downstream = _downstream_of(PROMPT_ASSETS)
    before = _counts(server.home, PROMPT_ASSETS + downstream + UNTOUCHED)
    crawls = _crawl_count(server.home)

    template = prompts / PLAN_TEMPLATE
    template.write_text(template.read_text() + "\nPrefer workflows whose result a script can check exactly.\n")
    assert stale_partitions(server.url) == []  # not before the code location is reloaded

    env = {**os.environ, "S2E_DAGSTER_URL": server.url}
    dry = subprocess.run([str(REPO / ".venv" / "bin" / "skill2env"), "ops", "backfill-stale", "--reload",
                          "--dry-run"], env=env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    stale = {StalePartition(**s) for s in json.loads(dry.stdout)["stale"]}
    assert stale == {StalePartition(a, k) for a in PROMPT_ASSETS for k in skills}

    run = subprocess.run([str(REPO / ".venv" / "bin" / "skill2env"), "ops", "backfill-stale", "--wait",
                          "--timeout", "600"], env=env, capture_output=True, text=True, timeout=660)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{server.log_tail()}"
    out = json.loads(run.stdout)
    assert out["status"] in ("COMPLETED", "COMPLETED_SUCCESS")
    assert {StalePartition(**s) for s in out["stale"]} == stale

    # The backfill re-ran exactly the stale partitions: plans once more; snapshots, crawl and the assets below
    # the plans not at all (those now report STALE themselves: `--rounds N` follows the chain).
    after = _counts(server.home, PROMPT_ASSETS + downstream + UNTOUCHED)
    for asset, key in before:
        assert after[(asset, key)] == before[(asset, key)] + (asset in PROMPT_ASSETS), (asset, key, before, after)
    assert _crawl_count(server.home) == crawls
    remaining = stale_partitions(server.url)
    assert not {s for s in remaining if s.asset in PROMPT_ASSETS + UNTOUCHED}
    assert {s.asset for s in remaining} <= set(downstream)
