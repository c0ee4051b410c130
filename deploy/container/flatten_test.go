package container

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestFlatten checks the reading of a saved image that TestImage relies
// on, without podman: later layers win, whiteouts delete, gzipped layers
// are read, and a manifest naming a missing layer is an error.
func TestFlatten(t *testing.T) {
	type file struct {
		name string
		body string // "" and a trailing slash: a directory
	}
	layer := func(gz bool, files ...file) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, f := range files {
			h := &tar.Header{Name: f.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f.body))}
			if f.name[len(f.name)-1] == '/' {
				h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write([]byte(f.body)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if !gz {
			return buf.Bytes()
		}
		var zbuf bytes.Buffer
		zw := gzip.NewWriter(&zbuf)
		if _, err := zw.Write(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return zbuf.Bytes()
	}
	archive := func(layers map[string][]byte, order ...string) string {
		manifest, err := json.Marshal([]map[string]any{{"Config": "c.json", "Layers": order}})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		add := func(name string, b []byte) {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o444, Typeflag: tar.TypeReg, Size: int64(len(b))}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(b); err != nil {
				t.Fatal(err)
			}
		}
		add("manifest.json", manifest)
		for name, b := range layers {
			add(name, b)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "image.tar")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	layers := map[string][]byte{
		"base.tar": layer(false,
			file{"etc/", ""}, file{"etc/passwd", "old"}, file{"etc/gone", "x"},
			file{"opt/", ""}, file{"opt/a", "a"}, file{"opt/sub/b", "b"}, file{"keep/c", "c"}),
		"top.tar": layer(true,
			file{"./etc/passwd", "new"}, file{"etc/.wh.gone", ""},
			file{"opt/.wh..wh..opq", ""}, file{"opt/fresh", "f"}),
	}
	fsys, err := flatten(archive(layers, "base.tar", "top.tar"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for p, e := range fsys {
		got[p] = string(e.data)
	}
	want := map[string]string{
		"/etc": "", "/etc/passwd": "new", "/opt": "", "/opt/fresh": "f", "/keep/c": "c",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flattened = %q, want %q", got, want)
	}

	if _, err := flatten(archive(layers, "base.tar", "missing.tar")); err == nil {
		t.Error("a manifest naming a layer the archive lacks: no error")
	}
}
