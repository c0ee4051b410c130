package dirowner

import (
	"os"
	"os/user"
	"testing"
)

// TestOfNamesTheOwner: a directory chowned to another uid is reported with
// that uid and the name the host's user database gives it.
func TestOfNamesTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	dir := t.TempDir()
	const uid = 65534
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	o, err := Of(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	if u, err := user.LookupId("65534"); err == nil {
		want = u.Username
	}
	if o.UID != uid || o.Name != want {
		t.Fatalf("Of = %+v, want uid %d named %q", o, uid, want)
	}
	if _, err := Of(dir + "/missing"); err == nil {
		t.Fatal("Of on a missing path: no error")
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		o    Owner
		want string
	}{
		{Owner{UID: 990, Name: "logpond"}, "sudo -u logpond ledgerctl -config /etc/logpond/logpond.toml accept-loss"},
		{Owner{UID: 4242}, "sudo -u '#4242' ledgerctl -config /etc/logpond/logpond.toml accept-loss"},
		{Owner{UID: 0, Name: "root"}, "ledgerctl -config /etc/logpond/logpond.toml accept-loss"},
	} {
		if got := tc.o.Command("ledgerctl -config /etc/logpond/logpond.toml accept-loss"); got != tc.want {
			t.Errorf("%+v: Command = %q, want %q", tc.o, got, tc.want)
		}
	}
	if got := (Owner{UID: 990, Name: "logpond"}).String(); got != "logpond (uid 990)" {
		t.Errorf("String = %q", got)
	}
	if got := (Owner{UID: 990}).String(); got != "uid 990" {
		t.Errorf("String = %q", got)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/logpond":  "/var/lib/logpond",
		"--through=a:12":    "--through=a:12",
		"":                  "''",
		"/data/my journal":  "'/data/my journal'",
		"it's":              `'it'\''s'`,
		"#4242":             "'#4242'",
		"2026-12-03T04:00Z": "2026-12-03T04:00Z",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}
