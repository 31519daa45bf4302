# Print "line<TAB>block path<TAB>directive" for every nginx directive (comments stripped).
{
  line = $0
  sub(/#.*/, "", line)
  while (match(line, /[{};]/)) {
    tok = substr(line, 1, RSTART)
    rest = substr(line, RSTART + 1)
    gsub(/^[ \t]+|[ \t]+$/, "", tok)
    if (tok ~ /\{$/) { name = tok; sub(/[ \t]*\{$/, "", name); stack[++depth] = name }
    else if (tok == "}") { depth-- }
    else if (tok != ";") {
      path = ""
      for (i = 1; i <= depth; i++) path = path (i > 1 ? "/" : "") stack[i]
      print NR "\t" path "\t" tok
    }
    line = rest
  }
}
