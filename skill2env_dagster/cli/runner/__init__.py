"""The headless runner behind `skill2env run`: crawl, then every skill partition through the real code location in
a persistent Dagster instance, with a quiet progress view, then the analytics and the export."""
