"""The UI path a user takes, in a real browser: `dagster dev -w workspace.yaml` on a tiny skill hub, the crawl
materialised with a click, one skill's partition materialised, then the asset graph, that partition's
materialisation metadata, and its lineage followed back to `raw_skill_md` (the SKILL.md). Screenshots go to the
test's tmp dir and to var/screenshots/ for humans.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.ops.conftest import REPO
from tests.ops.dagster_dev import DagsterDev, make_home
from tests.support.hub import make_hub, write_sources

pytestmark = [pytest.mark.browser, pytest.mark.dagster]

SKILL = "t__csv-cleaner"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui")
    hub = make_hub(root / "hub")
    sources = write_sources(root / "sources.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}], root / "cache")
    env = {"S2E_SOURCES": str(sources), "S2E_ARTIFACTS_DIR": str(root / "artifacts")}
    dev = DagsterDev(make_home(root / "dagster_home"), env, root / "dagster-dev.log").start()
    dev.stop_automation()  # this test launches its own runs; the change sensor would add more on a busy machine
    try:
        yield dev
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


def _expand_groups(page) -> None:
    """The global graph starts with asset groups collapsed; expand each (its 'unfold_more' control)."""
    for _ in range(20):
        toggles = page.locator('[aria-label="unfold_more"]')
        if toggles.count() == 0:
            return
        toggles.last.click()
        page.wait_for_timeout(1_500)  # let the layout settle before the next toggle moves


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
    for _ in range(tries):
        if page.get_by_text(name, exact=True).count() > 0:
            return
        page.locator('[aria-label="zoom_out"]').first.click()
        page.wait_for_timeout(700)
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


def _new_run_id(server: DagsterDev, before: set[str], timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = [r["runId"] for r in server.runs() if r["runId"] not in before]
        if new:
            return new[0]
        time.sleep(0.5)
    raise TimeoutError("clicking Materialize launched no run")


def test_user_materialises_inspects_and_follows_lineage(server: DagsterDev, page, tmp_path: Path) -> None:
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

    # 3. One skill's partitions (the per-skill job for that partition key), as the Launchpad does.
    run_id = server.launch_job("skill_pipeline", partition=SKILL)
    assert server.wait_run(run_id, timeout=360) == "SUCCESS", server.log_tail()  # creation gates every stage

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
    page.wait_for_timeout(1_000)
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
