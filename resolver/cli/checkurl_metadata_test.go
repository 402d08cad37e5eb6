package cli

import "testing"

// check-url is documented to give the Lambda's answer, and docs/tools.md
// says cloud metadata addresses are never exempt. An exemption written in
// IPv6 (::ffff:0:0/96) is accepted and makes the metadata service, in its
// IPv4-mapped form, "allow" (exit 0). It should be refused as a bad
// --allow-address (exit 2, as 0.0.0.0/0 and 169.254.0.0/16 are) or the URL
// refused (exit 1).
func TestCheckURLRefusesMappedMetadataAddresses(t *testing.T) {
	t.Parallel()
	code, out, errs := run("check-url", "--allow", "[::ffff:169.254.169.254]:80", "--allow-address", "::ffff:0:0/96",
		"http://[::ffff:169.254.169.254]/latest/meta-data/")
	if code == ExitOK {
		t.Fatalf("exit %d: %s%s; want 1 or 2: the metadata service is never exempt", code, out, errs)
	}
}
