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
