"""The learned second opinion on the account/live-service verdict (screen/learned.py): the crawl's TF-IDF matches
scikit-learn's, the combination rules (adds only, never clears the rules' verdict; never touches a malicious skill;
every verdict keeps an evidence line that names a remote host, URL, account or auth term), the shipped weights on
skills written by us, the bundled examples' verdicts unchanged when it is on, and the weights' hash in the crawl's
code version. Every fixture text is written by us."""

from __future__ import annotations

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from skill2env_dagster.artifacts import SKILLHUB_SCOPE
from skill2env_dagster.models.skill import Finding
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.screen.learned import (
    ANCHOR,
    RULE_ADD,
    LearnedModel,
    document,
    load_model,
    revise,
)

LIVE, ACCOUNT = ReasonCode.NEEDS_LIVE_SERVICE, ReasonCode.NEEDS_EXTERNAL_ACCOUNT
TEXTS = [
    "Set STRIPE_API_KEY and call the payments API with your token.",
    "Convert the local CSV file to JSON with pandas; no network needed.",
    "Log in with `gh auth login`, then open a pull request on GitHub.",
    "Parse the Markdown table in notes.md and sort it by date.",
]


def _tiny(threshold: float) -> LearnedModel:
    """A hand-made model: 'api key' and 'token' push toward needs, 'local' and 'csv' toward local."""
    return LearnedModel({"token_pattern": r"(?u)\b\w[\w.-]*\w\b|\b\w\b", "ngram_range": [1, 2],
                         "terms": ["api key", "token", "local", "csv"], "idf": [1.0, 1.0, 1.0, 1.0],
                         "coef": [2.0, 1.5, -2.0, -1.0], "intercept": 0.0, "threshold": threshold})


def _finding(code: ReasonCode, rule: str) -> Finding:
    return Finding(code=code, rule=rule, file="SKILL.md", line=3, text="evidence")


def test_features_match_scikit_learn() -> None:
    model = load_model()
    vec = TfidfVectorizer(ngram_range=tuple(model.ngrams), sublinear_tf=True, token_pattern=model.token.pattern,
                          min_df=1).fit(TEXTS)
    ours = LearnedModel({"token_pattern": model.token.pattern, "ngram_range": list(model.ngrams),
                         "terms": vec.get_feature_names_out().tolist(), "idf": vec.idf_.tolist(),
                         "coef": [0.0] * len(vec.idf_), "intercept": 0.0, "threshold": 0.5})
    for text in TEXTS:
        want = vec.transform([text]).toarray()[0]
        got = ours._features(text)
        assert all(abs(got.get(j, 0.0) - w) < 1e-12 for j, w in enumerate(want)), text


@pytest.mark.parametrize("rules", [
    ["acct.setup_credential", "acct.setup_credential@needs_live_service"],  # a stated credential requirement
    ["vocab.messaging.body"],  # softer evidence: a product family named in the body
    ["req.secret_env"],  # a frontmatter requirement
])
def test_never_clears_a_rule_verdict(rules: list[str]) -> None:
    """Even when the classifier is sure the skill is local (p 0.11): clearing stated credential requirements
    cost the shared corpus 7 of its 21 credential tags, and clearing softer evidence lost more account/live skills
    than eligible ones it freed on the tune half (benchmarks/screening_set/README.md > Learned second opinion)."""
    found = [_finding(ACCOUNT if "@" not in r else LIVE, r) for r in rules] + [_finding(ReasonCode.NEEDS_HARDWARE,
                                                                                         "hw.device")]
    body = "Read the local CSV file.\nWrite the summary."
    assert _tiny(0.5).probability("local csv local csv") < 0.15
    assert revise(found, "local csv local csv", body, "---\nname: x\n---\n" + body, "SKILL.md", _tiny(0.5)) == found


def test_never_touches_a_malicious_skill() -> None:
    found = [_finding(ReasonCode.MALICIOUS, "mal.lure_shape"), _finding(LIVE, "live.remote_http_call")]
    assert revise(found, "local csv", "local csv only", "local csv only", "SKILL.md", _tiny(0.5)) == found
    mal = [_finding(ReasonCode.MALICIOUS, "mal.lure_shape")]
    assert revise(mal, "api key token", "Set the api key token", "", "SKILL.md", _tiny(0.5)) == mal


def test_adds_live_service_only_with_a_supporting_line() -> None:
    skill_md = "# Pay\nExport the API key token before you start.\n"
    out = revise([], "api key token", "# Pay\nExport the API key token before you start.", skill_md, "SKILL.md",
                 _tiny(0.5))
    (added,) = out
    assert added.code == LIVE and added.rule == RULE_ADD and added.line == 2
    assert "Export the API key token" in added.text
    # confident, but no line of the body pushes toward 'needs' (the name alone does): no verdict without evidence
    assert revise([], "api key token", "Sort the table by date, then print it.", "", "SKILL.md", _tiny(0.5)) == []
    # confident, and a line pushes toward 'needs', but it names no remote host, URL, account or auth term: a
    # score, not evidence (LLM "token" counts are local)
    body = "Count the token totals per request in the log."
    assert _tiny(0.5).margin(body) > 0
    assert revise([], "api key token", body, body, "SKILL.md", _tiny(0.5)) == []


@pytest.mark.parametrize(("line", "names_remote"), [
    ("Top failing endpoint: `/api/checkout` with 4 errors.", False),  # a path in an example log line
    ("AP credits are negative amounts on account `2100`.", False),  # a ledger account
    ("Monitor token usage per session.", False),  # LLM tokens
    ("Run scripts/report.py and update README.md.", False),  # file names, not domains
    ("Post to http://localhost:8080/api/items first.", False),  # a local service
    ("Call https://status.example.com/v1/health.", False),  # a placeholder host
    ("curl -s https://api.weathervendor.io/v1/today", True),
    ("Fetch the feed from news.vendor.com every hour.", True),
    ("Export STRIPE_API_KEY before the first call.", True),
    ("Connect your Notion account, then pick a page.", True),
    ("Complete the OAuth flow in the browser.", True),
])
def test_evidence_anchor(line: str, names_remote: bool) -> None:
    assert bool(ANCHOR.search(line)) is names_remote


def test_no_change_when_it_agrees() -> None:
    found = [_finding(LIVE, "live.remote_http_call")]
    assert revise(found, "api key token", "api key token here", "", "SKILL.md", _tiny(0.5)) == found
    assert revise([], "local csv", "local csv here", "", "SKILL.md", _tiny(0.5)) == []


@pytest.mark.parametrize(("body", "needs"), [
    ("## Setup\nGet an API key from your Stripe dashboard and export STRIPE_API_KEY.\n\n## Usage\n"
     "Call the Stripe API to list this month's charges and refund the disputed ones.", True),
    ("## Steps\n1. Read `data/orders.csv` with pandas.\n2. Group rows by region and sum the totals.\n"
     "3. Write `report.md` with a table of the five largest regions.", False),
])
def test_shipped_weights_on_our_own_examples(body: str, needs: bool) -> None:
    doc = document("example", "An example skill written for this test.", {"name": "example"}, ["SKILL.md"], body)
    assert (load_model().probability(doc) >= load_model().threshold) is needs


def test_weights_are_part_of_the_crawl_code_version() -> None:
    assert "screening_learned.json" in SKILLHUB_SCOPE.data


def test_respects_the_stand_in_waiver() -> None:
    found = [_finding(ReasonCode.STANDIN_POSSIBLE, "standin_possible")]
    assert revise(found, "api key token", "Export the API key token first.", "", "SKILL.md", _tiny(0.5)) == found


def test_bundled_examples_keep_their_verdicts(examples_dir) -> None:
    """Switched on in the crawl, the opinion changes no bundled example's status or reasons (the sixth round's
    added needs_live_service to log-triage-awk at p 0.52 on "Top failing endpoint: `/api/checkout`"), keeps the
    stand-in waiver, and anything it adds carries a line of SKILL.md."""
    from skill2env_dagster.skillhub.config import CrawlSettings
    from skill2env_dagster.skillhub.crawl import crawl_paths
    from skill2env_dagster.skillhub.screen.engine import ScreenSettings

    def crawl(on: bool) -> dict:
        settings = CrawlSettings(screen=ScreenSettings(learned_opinion=on))
        return {r.rel_path: r for r in crawl_paths([examples_dir], settings).records}

    off, on = crawl(False), crawl(True)
    assert {k: (r.status, r.reasons) for k, r in on.items()} == {k: (r.status, r.reasons) for k, r in off.items()}
    assert on["log-triage-awk"].status == "eligible"
    assert ReasonCode.STANDIN_POSSIBLE in {f.code for f in on["inventory-api-client"].findings}
    learned = [f for r in on.values() for f in r.findings if f.rule == RULE_ADD]
    assert all(f.line > 0 and f.text.startswith("p=") for f in learned)


def test_on_by_default_in_the_crawl(tmp_path, monkeypatch) -> None:
    """The crawl's default settings apply the opinion (seventh round: its ship criterion held on the test half);
    `learned_opinion: false` gives the rules alone."""
    from skill2env_dagster.skillhub.config import CrawlSettings
    from skill2env_dagster.skillhub.crawl import crawl_paths
    from skill2env_dagster.skillhub.screen import learned
    from skill2env_dagster.skillhub.screen.engine import ScreenSettings

    sure = LearnedModel({"token_pattern": r"(?u)\b\w[\w.-]*\w\b|\b\w\b", "ngram_range": [1, 1],
                         "terms": ["podcasts.example-directory.com"], "idf": [1.0], "coef": [5.0], "intercept": 0.0,
                         "threshold": 0.6})
    monkeypatch.setattr(learned, "load_model", lambda: sure)
    skill = tmp_path / "hub" / "podcast-finder"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: podcast-finder\ndescription: List the newest podcast episodes on a "
                                    "topic.\nlicense: MIT\n---\n## Steps\n1. Search podcasts.example-directory.com "
                                    "for the topic.\n2. Write `episodes.md` with the five newest episodes.\n")

    def crawl(settings: CrawlSettings):
        (rec,) = crawl_paths([tmp_path / "hub"], settings).records
        return rec

    on, off = crawl(CrawlSettings()), crawl(CrawlSettings(screen=ScreenSettings(learned_opinion=False)))
    assert on.status == "screened_out" and on.reasons == [LIVE]
    (f,) = [f for f in on.findings if f.code == LIVE]
    assert f.rule == RULE_ADD and f.line == 7 and "podcasts.example-directory.com" in f.text
    assert off.status == "eligible" and off.reasons == []
