"""build_to_spec / exact_state: build a documentation tree from the skill's own section list (minimal image)."""

from __future__ import annotations

import re

from skill2env_dagster.tasks.recipes.base import Brief, Design, RecipeInput, Rubric, reward_prelude

METRICS = ["paths_present", "contents_correct", "manifest_correct"]


def dir_slug(title: str) -> str:
    """The rule the instruction states: lower-case, other runs become one hyphen, no hyphen at either end."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _titles(inp: RecipeInput) -> list[tuple[str, bool]]:
    """(title, is_draft): the skill's own headings when it has enough, else titles from its vocabulary."""
    rng = inp.rng("layout")
    clean = [re.sub(r"[^A-Za-z0-9 ]+", " ", h).strip() for h in inp.grounding.headings]
    titles = list(dict.fromkeys(" ".join(t.split()) for t in clean if t[:1].isalpha() and len(t) <= 30))
    if len(titles) < 4:
        titles += [f"{w.title()} {rng.choice(['Overview', 'Checklist', 'Notes', 'Runbook'])}"
                   for w in inp.grounding.words(6, rng)]
    titles = titles[: 4 + inp.level]
    drafts = set(rng.sample(range(1, len(titles)), 1 + inp.level // 2)) if inp.level >= 1 else set()
    return [(t, i in drafts) for i, t in enumerate(titles)]


class LayoutRecipe:
    name = "docs_tree_to_spec"
    archetype = "build_to_spec"
    verifier = "exact_state"
    image = "minimal"

    def design(self, inp: RecipeInput) -> Design:
        titles = _titles(inp)
        project = dir_slug(inp.grounding.skill_name)[:24].strip("-") or "project"
        kept = [t for t, draft in titles if not draft]
        files = [(f"docs/{i + 1:02d}-{dir_slug(t)}/README.md", f"# {t}") for i, t in enumerate(kept)]
        manifest = "".join(f"{p}\n" for p in sorted(p for p, _ in files))
        spec = "".join(f"{t}{' (draft)' if d else ''}\n" for t, d in titles)
        expected = "".join(f"{p}\t{first}\n" for p, first in files)
        return Design(
            recipe=self.name, archetype=self.archetype, verifier=self.verifier, image=self.image,
            env_files={"app/spec/sections.txt": spec}, docker_lines=["COPY app/ /app/"],
            brief=self._brief(inp, project, any(d for _, d in titles)),
            tests={"test.sh": self._test(project), "expected.tsv": expected, "manifest.txt": manifest},
            metrics=METRICS, rubric=self._rubric(inp),
            solve=self._solve(project, "%02d"), wrong=self._solve(project, "%d"),
            grounded_on=["headings" if inp.grounding.headings else "vocabulary"],
        )

    def _brief(self, inp: RecipeInput, project: str, drafts: bool) -> Brief:
        rules = ["Each section gets its own folder under docs/, named by its two-digit position and a slug of "
                 "its title (lower-case, every run of other characters turned into one hyphen, no hyphen at "
                 "either end), holding a README.md whose first line is '# ' followed by the exact title.",
                 "A MANIFEST file at the project root lists every other file of the project, one relative path "
                 "per line, sorted bytewise."]
        if drafts:
            rules.insert(1, "Sections marked (draft) are not built, and positions count only the sections that are.")
        return Brief(
            topic=f"the {project} documentation tree",
            situation=f"The {inp.grounding.skill_name} material is being reorganised for the "
                      f"{inp.workflow.name.replace('-', ' ')} effort; /app/spec/sections.txt lists the sections "
                      "in order, one title per line.",
            ask=f"build the documentation tree for it under /app/{project}",
            rules=rules,
            deliverable=f"Everything goes under /app/{project}; nothing else in /app needs to change.",
            example=f"/app/{project}/docs/01-<slug>/README.md",
            novice_hint="mkdir -p, printf and find are enough; check the slugs carefully.",
        )

    def _test(self, project: str) -> str:
        return reward_prelude(METRICS) + f"""ROOT=/app/{project}
[ -d "$ROOT" ] || exit 0
total=0; present=0; right=0
while IFS=$'\\t' read -r path first; do
  total=$((total + 1))
  if [ -f "$ROOT/$path" ]; then
    present=$((present + 1))
    [ "$(head -n 1 "$ROOT/$path" | tr -d '\\r')" = "$first" ] && right=$((right + 1))
  fi
done < /tests/expected.tsv
m_paths_present=$(ratio "$present" "$total")
m_contents_correct=$(ratio "$right" "$total")
if [ -f "$ROOT/MANIFEST" ]; then
  want=$(grep -c . /tests/manifest.txt)
  got=$(grep -c . "$ROOT/MANIFEST" || true)
  same=$(awk 'NR == FNR {{ e[FNR] = $0; next }} e[FNR] == $0 {{ c++ }} END {{ print c + 0 }}' /tests/manifest.txt "$ROOT/MANIFEST")
  m_manifest_correct=$(ratio "$same" $(( got > want ? got : want )))
fi
"""

    def _solve(self, project: str, numfmt: str) -> str:
        return f"""#!/bin/bash
set -euo pipefail
root=/app/{project}
n=0
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in ""|*"(draft)") continue ;; esac
  n=$((n + 1))
  slug=$(printf '%s' "$line" | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
  dir=$(printf "$root/docs/{numfmt}-%s" "$n" "$slug")
  mkdir -p "$dir"
  printf '# %s\\n' "$line" > "$dir/README.md"
done < /app/spec/sections.txt
cd "$root" && find . -type f ! -name MANIFEST | sed 's|^\\./||' | LC_ALL=C sort > MANIFEST
"""

    def _rubric(self, inp: RecipeInput) -> Rubric:
        return Rubric(
            must_do=["Create one numbered folder per built section with a README.md titled exactly",
                     "Write a sorted MANIFEST of all other files", "Keep everything under the project folder"],
            must_avoid=["Building sections marked (draft)", "Renaming titles", "Editing the spec file"],
            best_practice=[f"Mirror the {inp.grounding.skill_name} structure faithfully",
                           "Generate paths from the spec rather than by hand", "Verify the tree against the manifest"],
        )
