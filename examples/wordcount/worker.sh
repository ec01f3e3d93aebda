#!/bin/sh
# Word-count stream worker (worker_protocol: stream), plain POSIX awk.
#
# Protocol (docs/jobs.md): print {"ready": true} once initialized, then for
# each input line {"id": ..., "item": "..."} answer one line
# {"id": ..., "ok": true, "result": ...} (or {"id": ..., "error": "..."}).
# Answers must be flushed at once: ducc keeps several items outstanding.

# mawk reads its input in blocks unless told otherwise, which would stall a
# stream worker: ask it to read line by line.
interactive=
if awk -W version 2>/dev/null | grep -q mawk; then interactive="-W interactive"; fi
exec awk $interactive '
# field returns the raw JSON value of key `name` in `line`: a string with
# its quotes (escapes kept) or a bare token such as a number.
function field(line, name,    i, rest, c, out, j, esc) {
	i = index(line, "\"" name "\"")
	if (i == 0) return ""
	rest = substr(line, i + length(name) + 2)
	sub(/^[ \t]*:[ \t]*/, "", rest)
	if (substr(rest, 1, 1) != "\"") {
		match(rest, /^[^,} \t]+/)
		return substr(rest, 1, RLENGTH)
	}
	out = "\""
	for (j = 2; j <= length(rest); j++) {
		c = substr(rest, j, 1)
		out = out c
		if (esc) { esc = 0; continue }
		if (c == "\\") { esc = 1; continue }
		if (c == "\"") return out
	}
	return ""
}
BEGIN { print "{\"ready\": true}"; fflush() }
{
	id = field($0, "id")
	item = field($0, "item")
	if (id == "" || item == "") {
		print "wordcount: not a work item: " $0 > "/dev/stderr"
		next
	}
	text = substr(item, 2, length(item) - 2)
	gsub(/\\[nrt]/, " ", text)     # JSON escapes of white space
	n = split(text, words)          # split on blanks, like wc -w
	printf "{\"id\": %s, \"ok\": true, \"result\": %d}\n", id, n
	fflush()
}'
