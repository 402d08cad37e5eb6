package sources

import (
	"testing"

	"github.com/toolgate/toolgate/shared/table"
)

// The sources function's role may make the requests its commands make
// (shared/table Accesses, from which its IAM statements are generated):
// add, list, rotate-secret, retire-secrets and remove of sources and
// schedules (shared/inbound/store), add's read of the published Solution
// (ledger.Store.PublishedSolution) and the caller verifier's proof record.
// Without one, the command answers SOURCES_UNAVAILABLE on AWS (dynalite,
// which the tests and the local stack run, checks no IAM).
func TestSourcesFunctionMayMakeTheRequestsItsCommandsMake(t *testing.T) {
	for _, c := range []struct {
		command string
		action  table.Action
		kind    *table.Kind
	}{
		{"source add (PutSource)", table.PutItem, table.InboundSource},
		{"source list (Sources)", table.Query, table.InboundSource},
		{"source rotate-secret (Source)", table.GetItem, table.InboundSource},
		{"source rotate-secret (UpdateSecrets)", table.UpdateItem, table.InboundSource},
		{"source remove (DeleteSource)", table.DeleteItem, table.InboundSource},
		{"schedule add (PutSchedule)", table.PutItem, table.Schedule},
		{"schedule list (Schedules)", table.Query, table.Schedule},
		{"schedule pause (Schedule)", table.GetItem, table.Schedule},
		{"schedule pause (SetScheduleState)", table.UpdateItem, table.Schedule},
		{"schedule remove (DeleteSchedule)", table.DeleteItem, table.Schedule},
		{"add's Solution (ledger.Store.PublishedSolution)", table.GetItem, table.Published},
		{"the caller verifier's proof record", table.PutItem, table.Proof},
	} {
		allowed := false
		for _, a := range table.Of(table.Sources) {
			allowed = allowed || a.Allows(table.Sources, c.action, c.kind, nil)
		}
		if !allowed {
			t.Errorf("%s: the sources function may not %s a %s item", c.command, c.action, c.kind.Name)
		}
	}
}
