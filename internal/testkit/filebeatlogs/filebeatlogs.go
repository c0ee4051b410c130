// Package filebeatlogs turns files of real log lines into events shaped
// as Filebeat sends them, the measuring material of logpond's compression
// benchmarks (the record package's and the benchmark report's). It
// imports nothing of logpond, so any package's tests may use it.
package filebeatlogs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LogFile is the events made from one file of real log lines, in the
// file's order.
type LogFile struct {
	Name   string   // the file's name without ".log"
	Events [][]byte // one Filebeat-shaped JSON event per line
}

// filebeatEvent is an event laid out as Filebeat 8's filestream input
// sends it through the Beats protocol: per file only message,
// @timestamp and log.offset vary, so what compresses between events is
// what compresses in a real Filebeat window.
type filebeatEvent struct {
	Timestamp string `json:"@timestamp"`
	Metadata  struct {
		Beat    string `json:"beat"`
		Type    string `json:"type"`
		Version string `json:"version"`
	} `json:"@metadata"`
	Log struct {
		Offset int64 `json:"offset"`
		File   struct {
			Path string `json:"path"`
		} `json:"file"`
	} `json:"log"`
	Message string `json:"message"`
	Input   struct {
		Type string `json:"type"`
	} `json:"input"`
	ECS struct {
		Version string `json:"version"`
	} `json:"ecs"`
	Host struct {
		Name         string `json:"name"`
		Hostname     string `json:"hostname"`
		Architecture string `json:"architecture"`
		OS           struct {
			Platform string `json:"platform"`
			Version  string `json:"version"`
			Family   string `json:"family"`
			Name     string `json:"name"`
			Kernel   string `json:"kernel"`
			Codename string `json:"codename"`
			Type     string `json:"type"`
		} `json:"os"`
		ID  string   `json:"id"`
		IP  []string `json:"ip"`
		MAC []string `json:"mac"`
	} `json:"host"`
	Agent struct {
		Type        string `json:"type"`
		Version     string `json:"version"`
		EphemeralID string `json:"ephemeral_id"`
		ID          string `json:"id"`
		Name        string `json:"name"`
	} `json:"agent"`
}

// Load reads every *.log file in dir (one log line per line)
// and wraps each line in an event shaped as Filebeat sends it, the files
// in name order, each as shipped by a host of its own. A missing dir is an
// error wrapping os.ErrNotExist (callers skip on it); a dir without *.log
// files, or with no lines, is an error too.
func Load(dir string) ([]LogFile, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("filebeatlogs: log lines: %w", err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, fmt.Errorf("filebeatlogs: log lines in %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("filebeatlogs: no *.log files in %s", dir)
	}
	var files []LogFile
	for i, p := range paths {
		evs, err := wrapLines(p, i)
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 {
			files = append(files, LogFile{Name: strings.TrimSuffix(filepath.Base(p), ".log"), Events: evs})
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("filebeatlogs: the *.log files in %s hold no lines", dir)
	}
	return files, nil
}

// AllEvents is the events of every file, file after file.
func AllEvents(files []LogFile) [][]byte {
	var out [][]byte
	for _, f := range files {
		out = append(out, f.Events...)
	}
	return out
}

// wrapLines makes one event per line of the file at path, as host number
// host would ship it; empty lines are skipped, as Filebeat does.
func wrapLines(path string, host int) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("filebeatlogs: log lines: %w", err)
	}
	defer f.Close()
	var ev filebeatEvent
	name := fmt.Sprintf("app-%02d", host)
	ev.Metadata.Beat, ev.Metadata.Type, ev.Metadata.Version = "filebeat", "_doc", "8.19.0"
	ev.Host.Name, ev.Host.Hostname, ev.Host.Architecture = name, name, "x86_64"
	ev.Host.OS.Platform, ev.Host.OS.Version, ev.Host.OS.Family, ev.Host.OS.Name = "ubuntu", "22.04.4 LTS (Jammy Jellyfish)", "debian", "Ubuntu"
	ev.Host.OS.Kernel, ev.Host.OS.Codename, ev.Host.OS.Type = "5.15.0-105-generic", "jammy", "linux"
	ev.Host.ID = fmt.Sprintf("5d0e9a3c71b24f86%016x", host)
	ev.Host.IP = []string{fmt.Sprintf("10.0.4.%d", 10+host), fmt.Sprintf("fe80::42:acff:fe12:%x", host)}
	ev.Host.MAC = []string{fmt.Sprintf("02-42-AC-12-00-%02X", host)}
	ev.Agent.Type, ev.Agent.Version, ev.Agent.Name = "filebeat", "8.19.0", name
	ev.Agent.EphemeralID = fmt.Sprintf("6a1c2e94-3f0b-4d7a-9c58-%012x", host)
	ev.Agent.ID = fmt.Sprintf("e2b7d4f1-8c3a-4b09-a1d6-%012x", host)
	ev.Log.File.Path = "/var/log/" + strings.TrimSuffix(filepath.Base(path), ".log") + "/current.log"
	ev.Input.Type = "filestream"
	ev.ECS.Version = "8.0.0"
	// Lines about 2 ms apart, as a busy service logs them.
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var events [][]byte
	var offset int64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20) // a longer line is an error, not cut short
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > 0 {
			ev.Message, ev.Log.Offset = string(line), offset
			ev.Timestamp = at.Format("2006-01-02T15:04:05.000Z")
			at = at.Add(1900 * time.Microsecond)
			j, err := json.Marshal(&ev)
			if err != nil {
				return nil, fmt.Errorf("filebeatlogs: %s: %w", path, err)
			}
			events = append(events, j)
		}
		offset += int64(len(line)) + 1
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("filebeatlogs: %s: %w", path, err)
	}
	return events, nil
}
