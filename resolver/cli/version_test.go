package cli

import (
	"runtime/debug"
	"testing"
)

// stamp sets the variables make build stamps, for one test.
func stamp(t *testing.T, v, c string) {
	t.Helper()
	oldV, oldC := version, commit
	version, commit = v, c
	t.Cleanup(func() { version, commit = oldV, oldC })
}

// toolgate version prints what make build stamped.
func TestVersionPrintsTheStampedVersionAndCommit(t *testing.T) {
	stamp(t, "v1.2.3-4-g9f237d1", "9f237d1-dirty")
	code, out, errs := run("version")
	if want := "toolgate version v1.2.3-4-g9f237d1 (commit 9f237d1-dirty)\n"; code != ExitOK || out != want || errs != "" {
		t.Fatalf("exit %d\nstdout %q, want %q\nstderr %s", code, out, want, errs)
	}
}

// Unstamped (go build, go run, go test: no VCS information in the build
// information), toolgate version says so.
func TestVersionUnstampedSaysDevelAndUnknown(t *testing.T) {
	stamp(t, "", "")
	code, out, errs := run("version")
	if want := "toolgate version devel (commit unknown)\n"; code != ExitOK || out != want || errs != "" {
		t.Fatalf("exit %d\nstdout %q, want %q\nstderr %s", code, out, want, errs)
	}
}

// Without a stamp, the version and commit come from the Go build
// information when it has them.
func TestBuildVersionFallsBackToTheBuildInformation(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	cases := []struct {
		name                    string
		stampedVersion, stamped string
		info                    *debug.BuildInfo
		wantVersion, wantCommit string
	}{
		{"no build information", "", "", nil, "devel", "unknown"},
		{"a devel build without VCS information", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel", "unknown"},
		{"go install at a version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0", "unknown"},
		{"a build with VCS stamping", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101120000-0123456789ab"}, Settings: vcs("0123456789abcdef", "false")},
			"v0.0.0-20260101120000-0123456789ab", "0123456789abcdef"},
		{"with uncommitted changes", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef", "true")}, "devel", "0123456789abcdef-dirty"},
		{"the stamp wins", "v2.0.0", "abc1234", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs("0123456789abcdef", "true")}, "v2.0.0", "abc1234"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, cm := buildVersion(c.stampedVersion, c.stamped, c.info)
			if v != c.wantVersion || cm != c.wantCommit {
				t.Fatalf("buildVersion = %q, %q; want %q, %q", v, cm, c.wantVersion, c.wantCommit)
			}
		})
	}
}
