"""Record fixtures shared by the recipes: rows drawn from the skill's own tables, or from its vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

from skill2env_dagster.tasks.recipes.base import RecipeInput, slug

# Column names that would clash with SQL keywords or with the fixed columns of the recipes.
RESERVED = {"id", "name", "status", "day", "order", "group", "select", "table", "index", "key", "values", "from",
            "where", "events", "rows", "item", "count", "limit", "default", "check", "case", "when", "end"}
_MEASURES = ["count", "minutes", "points", "size_kb", "units", "hits"]


@dataclass
class Records:
    """id, category, item, measure, status rows; categories and items come from the skill."""

    category_col: str
    item_col: str
    measure_col: str
    categories: list[str]
    rows: list[tuple[str, str, str, int, str]]
    origin: str

    def header(self) -> list[str]:
        return ["id", self.category_col, self.item_col, self.measure_col, "status"]


def _items(inp: RecipeInput, n: int, salt: str) -> tuple[list[str], str, str]:
    """Item names and the item column name: the first text column of a skill table when there is one."""
    rng = inp.rng(salt + ":items")
    for table in inp.grounding.tables:
        texts = table.text_columns()
        if texts:
            col = texts[0]
            values = list(dict.fromkeys(slug(r[col]) for r in table.rows if slug(r[col]) != "item"))
            if len(values) >= 3:
                return [values[i % len(values)] for i in range(n)], slug(table.columns[col], "item"), table.origin
    words = inp.grounding.words(min(n, 12), rng)
    return [f"{words[i % len(words)]}-{i + 1:02d}" for i in range(n)], "item", "vocabulary"


def make_records(inp: RecipeInput, n: int, salt: str) -> Records:
    """n ≥ 2 rows with 3–4 categories named after the skill's vocabulary, seeded integer measures, and at least
    one void and one ok row."""
    rng = inp.rng(salt)
    items, item_col, origin = _items(inp, n, salt)
    cat_word, *cats = inp.grounding.words(5, rng, exclude=set(item_col.split("-")))
    categories = sorted(cats[: 3 + (inp.level >= 2)])
    statuses = ["void" if rng.random() < 0.2 else "ok" for _ in range(n)]
    for status in ("void", "ok"):  # both always present: the status rule must change the answer
        if status not in statuses:
            statuses[rng.randrange(n)] = status
    rows = [(f"r{i + 1:03d}", categories[i % len(categories)], items[i], rng.randint(1, 90), statuses[i])
            for i in range(n)]
    rng.shuffle(rows)
    category_col = slug(cat_word, "group").replace("-", "_")
    item_col = item_col.replace("-", "_")
    if category_col in RESERVED:
        category_col = f"{category_col}_group"
    if category_col == item_col:
        category_col = f"{category_col}_group"
    return Records(category_col, item_col, rng.choice(_MEASURES), categories, rows, origin)
