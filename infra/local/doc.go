// Package local starts the real local stand-ins that toolgate's tests run
// against, as child processes on free 127.0.0.1 ports:
//
//   - dynalite (DynamoDB's wire API, in memory) — StartDynalite
//   - aws-ses-v2-local (SES v2 SendEmail, with GET /store) — StartSES
//   - the Lambda Runtime Interface Emulator running one bootstrap — StartRIE,
//     with BuildBootstrap to compile a Go Lambda for it
//
// Nothing here is a mock: every stand-in speaks the AWS wire protocol, so the
// AWS SDK for Go talks to it with BaseEndpoint set to Process.Endpoint and
// static fake credentials.
//
// The npm stand-ins come from node_modules (package-lock.json) and the
// emulator from bin/aws-lambda-rie; `make deps` installs both. Each stand-in
// runs in its own process group (Setpgid) and listens on 127.0.0.1 only;
// Process.Stop ends the group by PID (SIGTERM, then SIGKILL after 5 s). On
// Linux a stand-in also gets SIGKILL when the thread that started it dies, so
// a test binary that crashes or times out leaves no stand-ins behind.
//
// Package localtest wraps these for tests: it starts a stand-in on demand and
// registers t.Cleanup(Stop).
package local
