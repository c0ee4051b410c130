package server

import (
	"os"
	"os/user"
	"path/filepath"
	"testing"
)

// TestAcceptLossCommandNamesTheOwner: the accept-loss command that the
// refusals to start suggest runs as the user that owns the ledger (ledgerctl
// refuses to write another user's stores); for stores root owns it is the
// bare command.
func TestAcceptLossCommandNamesTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving the stores to another user needs root")
	}
	root := t.TempDir()
	jdir, ldir := filepath.Join(root, "journal"), filepath.Join(root, "ledger")
	for _, d := range []string{jdir, ldir} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	bare := "ledgerctl -journal " + jdir + " -ledger " + ldir + " accept-loss"
	if got := acceptLossCommand(jdir, ldir); got != bare {
		t.Errorf("root's stores: %q, want %q", got, bare)
	}
	const uid = 65534
	for _, d := range []string{jdir, ldir} {
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	who := "'#65534'"
	if u, err := user.LookupId("65534"); err == nil {
		who = u.Username
	}
	if got, want := acceptLossCommand(jdir, ldir), "sudo -u "+who+" "+bare; got != want {
		t.Errorf("stores of uid %d: %q, want %q", uid, got, want)
	}
}
