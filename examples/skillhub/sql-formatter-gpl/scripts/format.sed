s/\<select\>/SELECT/gI
s/\<from\>/\nFROM/gI
s/\<where\>/\nWHERE/gI
s/\<group by\>/\nGROUP BY/gI
s/\<order by\>/\nORDER BY/gI
