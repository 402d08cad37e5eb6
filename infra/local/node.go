package local

import "context"

// StartNode starts a Node.js stand-in of another package: node runs script
// (a path from the repository root, such as "infra/local/sqs/server.mjs")
// with args(port) in the repository root, with the stand-ins' minimal
// environment (PATH, HOME, TMPDIR, TZ: nothing of the caller's AWS
// configuration), on a free 127.0.0.1 port, as StartDynalite starts
// dynalite. It waits up to StartTimeout for the port to accept connections
// and for ready (nil: none) to succeed, starting again on fresh ports when
// the chosen one was taken. name names the process in errors. ctx bounds
// the start; when it is done later, the process is stopped. Process.Stop
// ends it by PID.
func StartNode(ctx context.Context, name, script string, ready func(context.Context, *Process) error, args func(port int) []string) (*Process, error) {
	return startNode(ctx, name, script, ready, args)
}
