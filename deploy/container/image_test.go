package container

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The names the Kubernetes manifests and docs rely on
// (docs/kubernetes.md); the image must keep them.
const (
	runUID       = 65532
	userSpec     = "65532:65532"
	logpondPath  = "/usr/local/bin/logpond"
	ledgerctl    = "/usr/local/bin/ledgerctl"
	caBundle     = "/etc/ssl/certs/ca-certificates.crt"
	journalDir   = "/var/lib/logpond/journal"
	ledgerDir    = "/var/lib/logpond/ledger"
	configPath   = "/etc/logpond/logpond.toml"
	stateDirRoot = "/var/lib/logpond"
)

// TestImage builds the image with `make image CONTAINER_ENGINE=podman …` and
// checks its configuration (podman image inspect) and its files (podman save,
// the layers read here), then runs the binaries it holds.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the container image with podman and compiles both binaries: not with -short")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("no podman on PATH: this test builds the image with it (.ci/run installs the Debian package podman)")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the test gives podman a storage of its own (--root, --runroot), which needs root")
	}
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make on PATH: the test builds the image with `make image`")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("repository root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "Dockerfile")); err != nil {
		t.Fatalf("no Dockerfile at the repository root: %v", err)
	}

	tmp := t.TempDir()
	// make splits CONTAINER_ENGINE on blanks: a path with one would break it.
	if strings.ContainsAny(tmp, " \t'\"$\\") {
		t.Skipf("temporary directory %q has characters make would split or expand", tmp)
	}
	// A storage of its own, under tmp: the test leaves no image, layer or
	// event log on the machine, and sees none of the machine's. vfs needs
	// no mounts, so removing tmp removes everything.
	engine := []string{podman,
		"--root", filepath.Join(tmp, "storage"),
		"--runroot", filepath.Join(tmp, "run"),
		"--tmpdir", filepath.Join(tmp, "libpod"),
		"--storage-driver", "vfs",
		"--events-backend", "none",
	}
	version := "v0.0.0-imagetest-" + randomHex(t)
	image := "localhost/logpond-imagetest:" + version

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	build := exec.CommandContext(ctx, makeBin, "--no-print-directory", "-C", repo, "image",
		"CONTAINER_ENGINE="+strings.Join(engine, " "),
		"IMAGE="+image,
		"VERSION="+version,
		"BIN="+filepath.Join(tmp, "bin"))
	build.Env = makeEnv()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, tail(out, 4000))
	}

	t.Run("config", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, engine[0], append(engine[1:], "image", "inspect", image)...).Output()
		if err != nil {
			t.Fatalf("podman image inspect: %v", commandError(err))
		}
		checkConfig(t, out, version)
	})

	archive := filepath.Join(tmp, "image.tar")
	if out, err := exec.CommandContext(ctx, engine[0], append(engine[1:], "save", "--quiet", "--format", "docker-archive", "-o", archive, image)...).CombinedOutput(); err != nil {
		t.Fatalf("podman save: %v\n%s", err, out)
	}
	fsys, err := flatten(archive)
	if err != nil {
		t.Fatalf("reading the saved image: %v", err)
	}
	t.Run("files", func(t *testing.T) { checkFiles(t, fsys) })
	t.Run("binaries run", func(t *testing.T) { checkBinariesRun(ctx, t, fsys, tmp, version) })
}

// imageInspect is the part of `podman image inspect` the test reads.
type imageInspect struct {
	Config struct {
		User         string
		ExposedPorts map[string]struct{}
		Env          []string
		Entrypoint   []string
		Cmd          []string
		Volumes      map[string]struct{}
		Labels       map[string]string
	}
}

func checkConfig(t *testing.T, inspectJSON []byte, version string) {
	var images []imageInspect
	if err := json.Unmarshal(inspectJSON, &images); err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	if len(images) != 1 {
		t.Fatalf("podman image inspect: %d images, want 1", len(images))
	}
	c := images[0].Config
	// Numeric and not root: Kubernetes' runAsNonRoot can only verify a
	// numeric user, and the stores' volumes belong to 65532.
	if c.User != userSpec {
		t.Errorf("User = %q, want %q", c.User, userSpec)
	}
	for _, port := range []string{"5044/tcp", "9600/tcp"} {
		if _, ok := c.ExposedPorts[port]; !ok {
			t.Errorf("ExposedPorts %v: %s missing", keys(c.ExposedPorts), port)
		}
	}
	if want := []string{journalDir, ledgerDir}; !reflect.DeepEqual(keys(c.Volumes), want) {
		t.Errorf("Volumes = %v, want %v", keys(c.Volumes), want)
	}
	if want := []string{logpondPath}; !reflect.DeepEqual(c.Entrypoint, want) {
		t.Errorf("Entrypoint = %q, want %q", c.Entrypoint, want)
	}
	if want := []string{"-config", configPath}; !reflect.DeepEqual(c.Cmd, want) {
		t.Errorf("Cmd = %q, want %q", c.Cmd, want)
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE="+caBundle) {
		t.Errorf("Env %q: no SSL_CERT_FILE=%s", c.Env, caBundle)
	}
	if !slices.ContainsFunc(c.Env, func(e string) bool {
		p, ok := strings.CutPrefix(e, "PATH=")
		return ok && slices.Contains(filepath.SplitList(p), "/usr/local/bin")
	}) {
		t.Errorf("Env %q: PATH does not hold /usr/local/bin (exec ledgerctl by name)", c.Env)
	}
	labels := map[string]string{
		"org.opencontainers.image.title":    "logpond",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	for k, want := range labels {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"org.opencontainers.image.revision", "org.opencontainers.image.source"} {
		if c.Labels[k] == "" {
			t.Errorf("label %s empty or missing (labels: %v)", k, c.Labels)
		}
	}
}

func checkFiles(t *testing.T, fsys map[string]entry) {
	for _, p := range []string{logpondPath, ledgerctl} {
		e, ok := fsys[p]
		if !ok {
			t.Errorf("%s: not in the image", p)
			continue
		}
		if e.hdr.Typeflag != tar.TypeReg || e.hdr.Mode&0o111 == 0 {
			t.Errorf("%s: type %c mode %o, want an executable regular file", p, e.hdr.Typeflag, e.hdr.Mode)
		}
		// The server's user must not be able to replace its own binary.
		if e.hdr.Uid != 0 || e.hdr.Mode&0o022 != 0 {
			t.Errorf("%s: uid %d mode %o, want root's and writable by root only", p, e.hdr.Uid, e.hdr.Mode)
		}
		if err := checkStatic(e.data); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	if e, ok := fsys[caBundle]; !ok {
		t.Errorf("%s: not in the image", caBundle)
	} else if n, err := countCertificates(e.data); err != nil || n == 0 {
		t.Errorf("%s: %d certificates parse (%v), want at least one", caBundle, n, err)
	}

	if e, ok := fsys["/etc/passwd"]; !ok {
		t.Error("/etc/passwd: not in the image")
	} else if name := lookup(e.data, 2, runUID); name != "logpond" {
		t.Errorf("/etc/passwd: uid %d is named %q, want \"logpond\"\n%s", runUID, name, e.data)
	}
	if e, ok := fsys["/etc/group"]; !ok {
		t.Error("/etc/group: not in the image")
	} else if name := lookup(e.data, 2, runUID); name != "logpond" {
		t.Errorf("/etc/group: gid %d is named %q, want \"logpond\"\n%s", runUID, name, e.data)
	}

	// The stores' directories belong to the server's user, so a run
	// without mounted volumes can write them; nothing else does.
	for _, p := range []string{journalDir, ledgerDir} {
		e, ok := fsys[p]
		if !ok {
			t.Errorf("%s: not in the image", p)
			continue
		}
		if e.hdr.Typeflag != tar.TypeDir || e.hdr.Uid != runUID || e.hdr.Gid != runUID || e.hdr.Mode&0o700 != 0o700 {
			t.Errorf("%s: type %c uid %d gid %d mode %o, want a directory %d:%d the owner can write",
				p, e.hdr.Typeflag, e.hdr.Uid, e.hdr.Gid, e.hdr.Mode, runUID, runUID)
		}
	}
	for p, e := range fsys {
		if (e.hdr.Uid == runUID || e.hdr.Gid == runUID) && p != journalDir && p != ledgerDir {
			t.Errorf("%s: owned by %d:%d; only the store directories belong to the server's user", p, e.hdr.Uid, e.hdr.Gid)
		}
	}
	if e, ok := fsys[stateDirRoot]; !ok || e.hdr.Typeflag != tar.TypeDir {
		t.Errorf("%s: not a directory in the image", stateDirRoot)
	}
}

func checkBinariesRun(ctx context.Context, t *testing.T, fsys map[string]entry, tmp, version string) {
	dir := filepath.Join(tmp, "extracted")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(p string, args ...string) (string, error) {
		e, ok := fsys[p]
		if !ok {
			return "", fmt.Errorf("%s not in the image", p)
		}
		bin := filepath.Join(dir, path.Base(p))
		if err := os.WriteFile(bin, e.data, 0o755); err != nil {
			return "", err
		}
		// A bound, not an assertion: a hung binary fails the test instead
		// of stalling it until go test's own timeout.
		runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(runCtx, bin, args...)
		cmd.Env = []string{"PATH=/nonexistent"} // as bare as the image's
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(logpondPath, "-version")
	if err != nil {
		t.Errorf("logpond -version: %v\n%s", err, out)
	} else if !strings.Contains(out, version) {
		t.Errorf("logpond -version does not name the version %q: the image's binary is not stamped like make logpond\n%s", version, out)
	}
	out, err = run(ledgerctl, "-h")
	if err != nil {
		t.Errorf("ledgerctl -h: %v\n%s", err, out)
	} else if !strings.Contains(out, "usage: ledgerctl") {
		t.Errorf("ledgerctl -h: no usage\n%s", out)
	}
}

// checkStatic says why an ELF file would not run on an empty base image: it
// names a program interpreter (the dynamic loader) or shared libraries.
func checkStatic(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (PT_INTERP): built with cgo?")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading its imported libraries: %w", err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %v", libs)
	}
	return nil
}

// countCertificates returns how many PEM CERTIFICATE blocks of b parse as
// X.509 certificates, and the first parse error.
func countCertificates(b []byte) (int, error) {
	n := 0
	var first error
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return n, first
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		n++
	}
}

// lookup returns the name (first field) of the line of a passwd or group
// file whose field idx (0-based, colon-separated) is id; "" when none.
func lookup(file []byte, idx, id int) string {
	sc := bufio.NewScanner(bytes.NewReader(file))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) > idx && f[idx] == fmt.Sprint(id) {
			return f[0]
		}
	}
	return ""
}

// entry is one path of the image's file system: its header in the layer
// that last wrote it, and a regular file's bytes.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// maxArchiveFile bounds what flatten reads of one file: the image holds
// two binaries of tens of MiB; anything far larger is not this image.
const maxArchiveFile = 512 << 20

// flatten reads a docker-archive (podman save --format docker-archive) and
// returns the image's file system as a container would see it: the layers
// applied in manifest order, later ones over earlier ones, whiteouts
// (.wh.NAME, .wh..wh..opq) removing what they name; paths absolute and
// clean.
func flatten(archive string) (map[string]entry, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := readBounded(tr, h.Name)
		if err != nil {
			return nil, err
		}
		files[path.Clean(h.Name)] = b
	}
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("manifest.json: %d images, want 1", len(manifest))
	}
	fsys := map[string]entry{}
	for _, layer := range manifest[0].Layers {
		b, ok := files[path.Clean(layer)]
		if !ok {
			return nil, fmt.Errorf("layer %s: not in the archive", layer)
		}
		if err := applyLayer(fsys, b); err != nil {
			return nil, fmt.Errorf("layer %s: %w", layer, err)
		}
	}
	return fsys, nil
}

// applyLayer writes one layer (a tar, possibly gzipped) over fsys.
func applyLayer(fsys map[string]entry, layer []byte) error {
	var r io.Reader = bytes.NewReader(layer)
	if bytes.HasPrefix(layer, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := path.Clean("/" + h.Name)
		dir, base := path.Split(p)
		dir = path.Clean(dir)
		if base == ".wh..wh..opq" { // opaque directory: hide what lower layers put in it
			for q := range fsys {
				if strings.HasPrefix(q, strings.TrimSuffix(dir, "/")+"/") {
					delete(fsys, q)
				}
			}
			continue
		}
		if name, ok := strings.CutPrefix(base, ".wh."); ok { // whiteout: NAME was deleted
			gone := path.Join(dir, name)
			for q := range fsys {
				if q == gone || strings.HasPrefix(q, gone+"/") {
					delete(fsys, q)
				}
			}
			continue
		}
		e := entry{hdr: h}
		if h.Typeflag == tar.TypeReg {
			if e.data, err = readBounded(tr, h.Name); err != nil {
				return err
			}
		}
		fsys[p] = e
	}
}

func readBounded(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxArchiveFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxArchiveFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxArchiveFile)
	}
	return b, nil
}

// makeEnv is the environment for the nested make: the test's, without
// what an enclosing make (make test) passes down — its variables in
// MAKEFLAGS would override the test's BIN or IMAGE, and its jobserver's
// descriptors are not open here.
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func randomHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func commandError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}
