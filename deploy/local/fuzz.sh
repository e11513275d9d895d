#!/usr/bin/env bash
# make fuzz: every Go fuzz target (func Fuzz* in a *_test.go of the main
# module) for FUZZTIME each. A target that fails leaves its crasher where
# go test wrote it (<package>/testdata/fuzz/<target>/<hash>, printed below
# with the package's path); the other targets still run and the script exits
# 1 at the end. Committed with the fix, the crasher is a seed that make test
# runs from then on.
#
# FUZZ_ONLY=regexp runs only the targets whose "<dir> <name>" matches.
# FUZZ_SAVE=N copies up to N of the inputs the fuzzer found new coverage
# with (go test keeps them in $(go env GOCACHE)/fuzz) into each target's
# testdata/fuzz/<target>/, the committed seed corpus: the smallest first,
# skipping ones already there.
set -euo pipefail
cd "$(dirname "$0")/../.."

FUZZTIME=${FUZZTIME:-30s}
FUZZ_SAVE=${FUZZ_SAVE:-0}
FUZZ_ONLY=${FUZZ_ONLY:-.}
GO=${GO:-go}
module=$($GO list -m)
cache=$($GO env GOCACHE)/fuzz
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# "dir name" per target, in a stable order.
targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' --exclude-dir=deploy --exclude-dir=node_modules . |
	sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz.*)$#\1 \2#' | sort -u | grep -E -- "$FUZZ_ONLY" || true)
count=$(printf '%s\n' "$targets" | grep -c . || true)
echo "fuzz: $count targets, $FUZZTIME each"

failed=()
while read -r dir fn; do
	[ -n "$dir" ] || continue
	echo "fuzz: ./$dir $fn"
	if $GO test -run '^$' -fuzz "^$fn\$" -fuzztime "$FUZZTIME" "./$dir" >"$log" 2>&1; then
		tail -n 2 "$log"
	else
		cat "$log"
		written=$(sed -nE 's#.*Failing input written to (testdata/fuzz/[^ ]+).*#\1#p' "$log" | head -n 1)
		if [ -n "$written" ]; then
			echo "fuzz: CRASHER in $fn written to $dir/$written"
			echo "fuzz: replay it with: go test -run '^$fn/$(basename "$written")\$' ./$dir"
			failed+=("$fn: $dir/$written")
		else
			failed+=("$fn: ./$dir failed before fuzzing (see the output above)")
		fi
		continue
	fi
	if [ "$FUZZ_SAVE" -gt 0 ] && [ -d "$cache/$module/$dir/$fn" ]; then
		mkdir -p "$dir/testdata/fuzz/$fn"
		n=0
		for f in $(ls -Sr "$cache/$module/$dir/$fn"); do
			[ "$n" -lt "$FUZZ_SAVE" ] || break
			[ -e "$dir/testdata/fuzz/$fn/$f" ] && continue
			cp "$cache/$module/$dir/$fn/$f" "$dir/testdata/fuzz/$fn/$f"
			n=$((n + 1))
		done
		echo "fuzz: $n inputs saved to $dir/testdata/fuzz/$fn"
	fi
done <<<"$targets"

if [ "${#failed[@]}" -gt 0 ]; then
	echo "fuzz: ${#failed[@]} of $count targets failed:"
	printf '  %s\n' "${failed[@]}"
	exit 1
fi
echo "fuzz: all $count targets passed"
