"""The instruction quotes the skill's own names: stripping markdown must not rewrite them."""

import pytest

from skill2env_dagster.tasks.compose.context import short


@pytest.mark.parametrize(("text", "want"), [
    ("`assets/molar_masses.json`", "assets/molar_masses.json"),  # a file name the task really ships
    ("greatest_iso column", "greatest_iso column"),
    ("_emphasis_ and **bold** [link]", "emphasis and bold link"),
    ("__strong__ words", "strong words"),
])
def test_short_strips_markup_but_keeps_names(text: str, want: str) -> None:
    assert short(text, 5) == want
