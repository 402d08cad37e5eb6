#!/bin/sh
# Writes the fixtures of earlier code (testdata/ledger-items/README.md):
# each generator here runs in a copy of the commit whose ledger it names,
# with shared/ledger/itemjson_test.go for the DynamoDB JSON, against
# dynalite. Run from the repository root, node_modules installed.
set -eu
gen() {
	commit=$1 file=$2
	dir=$(mktemp -d)
	git archive "$commit" | tar -x -C "$dir"
	ln -s "$PWD/node_modules" "$dir/node_modules"
	mkdir -p "$dir/testdata/ledger-items"
	cp shared/ledger/itemjson_test.go "testdata/ledger-items/gen/$file" "$dir/shared/ledger/"
	(cd "$dir" && go test ./shared/ledger -run '^TestWriteEarlierItems$' -count=1)
	cp "$dir"/testdata/ledger-items/*.json testdata/ledger-items/
	rm "$dir/node_modules"
	rm -rf "$dir"
}
gen cc85e25a39094bec275523709ccce1c3431c5757 before_for_each_test.go
gen c246a191bf847e5ceaf5e9bcdf8e7c109585ac1d before_run_timeout_test.go
# The dispatcher's items: the generator runs in that commit's shared/dispatch.
gen_dispatch() {
	commit=$1 file=$2 out=$3
	dir=$(mktemp -d)
	git archive "$commit" | tar -x -C "$dir"
	ln -s "$PWD/node_modules" "$dir/node_modules"
	mkdir -p "$dir/testdata/ledger-items"
	sed 's/^package ledger_test$/package dispatch/' shared/ledger/itemjson_test.go >"$dir/shared/dispatch/itemjson_test.go"
	cp "testdata/ledger-items/gen/$file" "$dir/shared/dispatch/"
	(cd "$dir" && go test ./shared/dispatch -run '^TestWriteEarlierItems$' -count=1)
	cp "$dir/testdata/ledger-items/$out" testdata/ledger-items/
	rm "$dir/node_modules"
	rm -rf "$dir"
}
gen_dispatch 107d92a0cbaec694b5ff7a5e8d6273e5f925853b dispatched_before_compact_test.go call.dispatched-before-compact.json
