# Usage: awk -F, -f normalise_ref.awk invoices.csv  -> prints normalised invoice numbers
NR > 1 {
  ref = toupper($1)
  gsub(/ /, "", ref)
  sub(/^#/, "", ref)
  sub(/^INV-?/, "", ref)
  print $2 "," ref
}
