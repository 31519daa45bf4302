# Group Conventional Commits (hash<TAB>subject<TAB>body) into changelog sections.
{
  hash = $1; subj = $2; body = $3
  if (subj ~ /^Merge (pull request|branch)/) next
  if (!match(subj, /^[a-z]+(\([^)]*\))?!?: /)) { type = "other"; next }
  head = substr(subj, 1, RLENGTH - 2); text = substr(subj, RLENGTH + 1)
  brk = (head ~ /!$/ || body ~ /^BREAKING CHANGE:/)
  sub(/!$/, "", head)
  scope = ""
  if (match(head, /\([^)]*\)/)) { scope = substr(head, RSTART + 1, RLENGTH - 2); sub(/\(.*/, "", head) }
  gsub(/#[0-9]+/, "[&](../../issues/&)", text); gsub(/issues\/#/, "issues/", text)
  entry = "- " (scope != "" ? scope ": " : "") text " (" hash ")"
  if (brk) sec = "Breaking changes"; else if (head == "feat") sec = "Features"
  else if (head == "fix") sec = "Fixes"; else if (head == "perf") sec = "Performance"; else next
  out[sec] = out[sec] entry "\n"
}
END {
  n = split("Breaking changes,Features,Fixes,Performance", order, ",")
  for (i = 1; i <= n; i++) if (order[i] in out) printf "### %s\n%s\n", order[i], out[order[i]]
}
