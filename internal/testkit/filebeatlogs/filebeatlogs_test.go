package filebeatlogs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLoad: each non-empty line of each *.log becomes one
// Filebeat-shaped event carrying the line as message and its byte offset,
// files in name order, each from a host of its own; other files are
// ignored; a missing folder is os.ErrNotExist, a folder without logs an
// error.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.log", "first \"quoted\" line\n\nthird line\n")
	write("a.log", "only line")
	write("README.md", "not a log\n")
	files, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		Timestamp string                `json:"@timestamp"`
		Metadata  struct{ Beat string } `json:"@metadata"`
		Message   string
		Log       struct {
			Offset int64
			File   struct{ Path string }
		}
		Host struct{ Name string }
	}
	want := []struct {
		name    string
		lines   []string
		offsets []int64
	}{{"a", []string{"only line"}, []int64{0}}, {"b", []string{`first "quoted" line`, "third line"}, []int64{0, 21}}}
	if len(files) != len(want) {
		t.Fatalf("%d files, want %d", len(files), len(want))
	}
	hosts := map[string]bool{}
	for i, w := range want {
		f := files[i]
		if f.Name != w.name || len(f.Events) != len(w.lines) {
			t.Fatalf("file %d: %s with %d events, want %s with %d", i, f.Name, len(f.Events), w.name, len(w.lines))
		}
		for j, raw := range f.Events {
			var ev event
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatalf("%s event %d: %v: %s", f.Name, j, err, raw)
			}
			if ev.Message != w.lines[j] || ev.Log.Offset != w.offsets[j] || ev.Metadata.Beat != "filebeat" || ev.Timestamp == "" || ev.Log.File.Path == "" {
				t.Fatalf("%s event %d is not line %q at offset %d: %s", f.Name, j, w.lines[j], w.offsets[j], raw)
			}
			hosts[ev.Host.Name] = true
		}
	}
	if len(hosts) != 2 {
		t.Fatalf("hosts %v: want one per file", hosts)
	}
	if n := len(AllEvents(files)); n != 3 {
		t.Fatalf("AllEvents: %d events, want 3", n)
	}
	if _, err := Load(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing folder: %v, want os.ErrNotExist", err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Fatal("a folder without *.log gives no error")
	}
}
