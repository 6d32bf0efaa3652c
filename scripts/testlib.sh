# Sourced by scripts/test, scripts/test-aarch64 and scripts/test-aarch64-vm
# (which set ta_script to their name first): the counts, what failed, and
# the closing lines every run ends with.  A CI log shows only its tail, so
# the end repeats each failure with the last lines of its output.

say() { echo "$ta_script: $*" >&2; }

passed=0
failed=0
failures=()

# One failure: counted, said now, and listed again at the end.  $1 names
# it; the lines that follow (optional) say what it printed last.
fail() {
	local what="$*"
	failed=$((failed + 1))
	failures+=("$what")
	say "FAILED: ${what%%$'\n'*}"
}

# The end of every run: what failed ("failed: WHAT", then its last lines
# as "    | LINE"; .ci/run collects both), then the one count line.
finish() {
	local f
	for f in "${failures[@]}"; do
		printf '%s\n' "$f" | sed '1s/^/failed: /; 2,$s/^/    | /'
	done
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
	exit
}

give_up() {
	fail "$*"
	finish
}

# Adds the results of a meson test run to the counts: $1 its build dir, $2
# meson's exit status, $3 "skips" to list the cases the end-to-end files
# skipped (unittest's "... skipped REASON"), with their reasons, on stderr.
# Each test that did not pass is a failure with its last 12 lines.
meson_results() {
	local dir=$1 status=$2 list_skips=${3:-} log=$1/meson-logs/testlog.json
	local out ok bad skipped i records=()
	if [ ! -f "$log" ]; then
		fail "meson test in $dir wrote no log (exit status $status)"
		return
	fi
	# One JSON object per line, one line per test.  Written to $out: the
	# counts, then per failing test its lines, each record NUL-terminated.
	out=$(mktemp)
	if ! python3 - "$log" "$list_skips" >"$out" <<'EOF'
import json, re, sys
ok = bad = skipped = 0
seen, failed = set(), []
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    test = json.loads(line)
    name = test["name"].split(" / ")[-1]
    if test["result"] in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif test["result"] == "SKIP":
        skipped += 1
    else:
        bad += 1
        text = ((test.get("stdout") or "") + (test.get("stderr") or "")).rstrip("\n")
        tail = [l[:200] for l in text.splitlines()[-12:]]
        failed.append("\n".join(["%s: %s after %.0f s" % (name, test["result"],
                                  test.get("duration") or 0)] + tail))
    if sys.argv[2] != "skips":
        continue
    for text in (test.get("stdout") or "", test.get("stderr") or ""):
        case = "?"
        for l in text.splitlines():
            m = re.match(r"\s*(test\w*) \(", l)
            case = m.group(1) if m else case
            m = re.search(r" \.\.\. skipped (.*)$", l)
            s = "skipped: %s %s: %s" % (name, case, m.group(1)) if m else None
            if s and s not in seen:
                seen.add(s)
                print(s, file=sys.stderr)
sys.stdout.write("%d %d %d\0" % (ok, bad, skipped))
for f in failed:
    sys.stdout.write(f.replace("\0", "") + "\0")
EOF
	then
		rm -f "$out"
		fail "the results of meson test in $dir: $log unreadable"
		return
	fi
	mapfile -d '' -t records <"$out"
	rm -f "$out"
	read -r ok bad skipped <<<"${records[0]}"
	passed=$((passed + ok))
	for ((i = 1; i < ${#records[@]}; i++)); do
		fail "${records[i]}"
	done
	[ "${skipped:-0}" -gt 0 ] && say "$skipped meson tests skipped in $dir"
	if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
		fail "meson test in $dir exited with $status"
	fi
}
