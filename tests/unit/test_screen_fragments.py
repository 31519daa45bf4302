"""Named regex fragments of the rule book (`fragments:`, used as `{{name}}`): substituted once at load time."""

from __future__ import annotations

import re

import pytest
import yaml

from skill2env_dagster.reasons import InputError
from skill2env_dagster.skillhub.screen import learned
from skill2env_dagster.skillhub.screen.rules import DEFAULT_RULES_PATH, book_fragments, load_rule_book


def _write(tmp_path, name: str, raw: dict) -> object:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False))
    return path


def test_every_reference_is_substituted_and_none_is_left():
    book = load_rule_book()
    frags = book.book.fragments
    assert {"local_host", "placeholder_host", "your_host"} <= set(frags)
    assert not any("{{" in v for v in frags.values())
    dumped = yaml.safe_dump(book.book.model_dump(mode="json", exclude={"fragments"}))
    assert "{{" not in dumped
    remote = next(r for r in book.rules if r.rule.id == "live.remote_http_call")
    assert frags["local_host"] in remote.rx.pattern and frags["placeholder_host"] in remote.rx.pattern


def test_an_unknown_fragment_is_a_load_error_that_names_it_and_where_it_stood(tmp_path):
    raw = yaml.safe_load(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    raw["rules"][3]["pattern"] = r"https?://{{local_hots}}\b"
    with pytest.raises(InputError, match=r"unknown fragment \{\{local_hots\}\} in rules\[3\]\.pattern"):
        load_rule_book(_write(tmp_path, "typo.yaml", raw))


def test_fragments_may_use_each_other_in_any_order_but_not_themselves(tmp_path):
    raw = yaml.safe_load(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    raw["fragments"] = {"outer": "x{{inner}}", "inner": "y", **raw["fragments"]}
    raw["rules"][3]["pattern"] = "{{outer}}z"
    book = load_rule_book(_write(tmp_path, "order.yaml", raw))
    assert book.book.fragments["outer"] == "xy" and book.rules[3].rx.pattern == "xyz"
    raw["fragments"]["inner"] = "y{{outer}}"
    with pytest.raises(InputError, match=r"fragment \{\{outer\}\} uses itself \(outer -> inner -> outer\)"):
        load_rule_book(_write(tmp_path, "cycle.yaml", raw))
    raw["fragments"]["inner"] = "y{{nowhere}}"
    with pytest.raises(InputError, match=r"unknown fragment \{\{nowhere\}\} in fragments\.inner"):
        load_rule_book(_write(tmp_path, "unknown.yaml", raw))
    raw["fragments"] = {"bad": "(unclosed", **raw["fragments"]}
    with pytest.raises(InputError, match="bad regex"):
        load_rule_book(_write(tmp_path, "badfrag.yaml", raw))


def test_the_learned_anchor_takes_its_local_and_placeholder_hosts_from_the_book():
    frags = book_fragments()
    assert frags == load_rule_book().book.fragments
    assert frags["local_host"] in learned.ANCHOR.pattern and frags["placeholder_host"] in learned.ANCHOR.pattern
    assert not learned.ANCHOR.search("Open http://127.0.0.1:8080/status to see the queue")
    assert not learned.ANCHOR.search("POST the form to https://forms.example.org/submit now")
    assert learned.ANCHOR.search("The status page lives at https://status.tidewatch.io/now")
    assert re.search(frags["your_host"], "https://your-instance.tidewatch.io/api")
