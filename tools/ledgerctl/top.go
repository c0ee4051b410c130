package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/server"
)

// topTimeout bounds one request to the admin listener.
const topTimeout = 10 * time.Second

// topRates are the per-second rates between two NodeInfo answers.
type topRates struct {
	Seconds        float64 `json:"seconds"` // between the two answers
	InputEvents    float64 `json:"input_events_per_second"`
	InputBytes     float64 `json:"input_bytes_per_second"`
	JournalRecords float64 `json:"journal_records_per_second"`
	LedgerRecords  float64 `json:"ledger_records_per_second"`
	// Outputs are each output's rates, in the order of the later answer.
	Outputs []outputRates `json:"outputs"`
}

// outputRates are one output's per-second rates.
type outputRates struct {
	Name         string  `json:"name"`
	Events       float64 `json:"events_per_second"`
	Bytes        float64 `json:"bytes_per_second"`
	DeadLettered float64 `json:"dead_lettered_per_second"`
	Retried      float64 `json:"items_retried_per_second"`
	Failed       float64 `json:"requests_failed_per_second"`
}

// cmdTop is ledgerctl top: a live view of a running logpond, read from
// GET / on its admin listener, refreshed every interval: per stage its
// state, its rates and how full it is.
func cmdTop(e *env, args []string) int {
	fs, asJSON := newFlags(e, "top", "top [--admin HOST:PORT] [--interval D] [--once] [--json]")
	admin := fs.String("admin", "", "logpond's admin listener (default: [admin] listen of -config, else of "+defaultConfigPath+", else "+conf.Default().Admin.Listen+")")
	interval := fs.Duration("interval", 2*time.Second, "time between refreshes (and between the two answers rates come from)")
	once := fs.Bool("once", false, "print one view (after one interval, for the rates) and exit")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	listen, err := topAdmin(e, *admin)
	if err != nil {
		e.errorf("top: %v", err)
		return exitUsage
	}
	e.admin = listen
	if *interval <= 0 {
		e.errorf("top: --interval %s: want a positive duration", *interval)
		return exitUsage
	}
	addr, err := dialAddr(e.admin)
	if err != nil {
		e.errorf("top: admin listener %q: %v", e.admin, err)
		return exitUsage
	}
	url := "http://" + addr + "/"
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &http.Client{Timeout: topTimeout}
	prev, err := fetchNode(ctx, client, url)
	if err != nil {
		e.errorf("top: %v", err)
		return exitFailed
	}
	clear := !*once && !*asJSON && isTerminal(e.stdout)
	t := time.NewTicker(*interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case <-t.C:
		}
		cur, err := fetchNode(ctx, client, url)
		if errors.Is(err, context.Canceled) {
			return exitOK
		}
		if err != nil {
			e.errorf("top: %v", err)
			return exitFailed
		}
		r := rates(prev, cur)
		switch {
		case *asJSON:
			json.NewEncoder(e.stdout).Encode(struct {
				Node  server.NodeInfo `json:"node"`
				Rates topRates        `json:"rates"`
			}{cur, r})
		default:
			if clear {
				fmt.Fprint(e.stdout, "\x1b[H\x1b[2J") // home, clear screen
			}
			printTop(e.stdout, cur, r)
		}
		if *once {
			return exitOK
		}
		prev = cur
	}
}

// topAdmin is the admin listener top reads: flag (--admin) when given, else
// [admin] listen of -config, else of the installed configuration
// (e.defaultConfig) when it exists, else the default listen address
// (127.0.0.1:9600). An installed configuration that cannot be read is
// passed over with a note on stderr: the default address may still be
// right. A configuration that turns the admin listener off is an error:
// there is nothing to read.
func topAdmin(e *env, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if e.config != "" {
		if e.admin == "" {
			return "", fmt.Errorf("%s turns logpond's admin listener off ([admin] listen = \"\"): set it and restart logpond, or give --admin HOST:PORT", e.config)
		}
		return e.admin, nil
	}
	def := conf.Default().Admin.Listen
	if e.defaultConfig == "" {
		return def, nil
	}
	if _, err := os.Stat(e.defaultConfig); errors.Is(err, os.ErrNotExist) {
		return def, nil
	}
	cfg, err := conf.Load(e.defaultConfig)
	if err != nil {
		fmt.Fprintf(e.stderr, "ledgerctl: top: %v; trying the default admin listener %s (-config FILE or --admin HOST:PORT say where it is)\n", err, def)
		return def, nil
	}
	if cfg.Admin.Listen == "" {
		return "", fmt.Errorf("%s turns logpond's admin listener off ([admin] listen = \"\"): set it and restart logpond, or give --admin HOST:PORT", e.defaultConfig)
	}
	return cfg.Admin.Listen, nil
}

// fetchNode reads GET / of the admin listener.
func fetchNode(ctx context.Context, c *http.Client, url string) (server.NodeInfo, error) {
	var n server.NodeInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return n, err
	}
	res, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		return n, fmt.Errorf("asking logpond at %s: %w", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return n, fmt.Errorf("reading %s: %w", url, err)
	}
	if res.StatusCode != http.StatusOK {
		return n, fmt.Errorf("%s answered %s: %s", url, res.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, &n); err != nil || n.Name != "logpond" {
		return n, fmt.Errorf("%s is not a logpond admin listener (its answer is not logpond's node info)", url)
	}
	return n, nil
}

// rates computes per-second rates from two answers of the same process (a
// restarted logpond's counters start again: its rates count from 0).
func rates(a, b server.NodeInfo) topRates {
	r := topRates{Seconds: b.Now.Sub(a.Now).Seconds()}
	if r.Seconds <= 0 {
		return r
	}
	per := func(x, y int64) float64 {
		if y < x { // restarted
			x = 0
		}
		return float64(y-x) / r.Seconds
	}
	r.InputEvents, r.InputBytes = per(a.Input.EventsTotal, b.Input.EventsTotal), per(a.Input.BytesTotal, b.Input.BytesTotal)
	r.JournalRecords = per(int64(a.Journal.LastLSN), int64(b.Journal.LastLSN))
	r.LedgerRecords = per(int64(a.Ledger.LastLSN), int64(b.Ledger.LastLSN))
	r.Outputs = []outputRates{}
	for _, bo := range b.Outputs {
		// An output that the earlier answer lacks (added by a restart with
		// another configuration) counts from 0, as after any restart.
		var ao server.OutputInfo
		if o := outputNamed(a, bo.Name); o != nil {
			ao = *o
		}
		r.Outputs = append(r.Outputs, outputRates{Name: bo.Name,
			Events: per(ao.EventsDeliveredTotal, bo.EventsDeliveredTotal), Bytes: per(ao.BytesSentTotal, bo.BytesSentTotal),
			DeadLettered: per(ao.DeadLetteredTotal, bo.DeadLetteredTotal), Retried: per(ao.RetriedTotal, bo.RetriedTotal),
			Failed: per(ao.RequestsFailedTotal, bo.RequestsFailedTotal)})
	}
	return r
}

// printTop writes one view: a header line, one row per stage (input,
// journal, ledger, then each output by name and each cursor no output
// owns), then a line of detail per output.
func printTop(w io.Writer, n server.NodeInfo, r topRates) {
	ready := "ready"
	if !n.Ready {
		ready = "NOT READY: " + strings.Join(n.NotReady, "; ")
	}
	fmt.Fprintf(w, "logpond %s  stream %s  up %s  %s  (rates over %.1fs)\n\n", n.Version, n.StreamID,
		time.Duration(n.UptimeSeconds*float64(time.Second)).Round(time.Second), ready, r.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tSTATE\tEVENTS/S\tBYTES/S\tRECORDS/S\tFILL\tLAG\t")
	fmt.Fprintf(tw, "input\t%s\t%.0f\t%s\t-\t%s\t-\t\n", n.Input.State, r.InputEvents, humanBytes(int64(r.InputBytes)),
		fillOf(n.Input.InflightBytes, n.Input.MaxInflightBytes))
	fmt.Fprintf(tw, "journal\t%s\t-\t-\t%.0f\t%.1f%%\t-\t\n", n.Journal.State, r.JournalRecords, 100*n.Journal.FillRatio)
	fmt.Fprintf(tw, "ledger\t%s\t-\t-\t%.0f\t%.1f%%\t-\t\n", n.Ledger.State, r.LedgerRecords, 100*n.Ledger.FillRatio)
	for _, o := range n.Outputs {
		rt := ratesOf(r, o.Name)
		fmt.Fprintf(tw, "output %s\t%s\t%.0f\t%s\t-\t%s\t%d records (%s)\t\n", o.Name, o.State, rt.Events, humanBytes(int64(rt.Bytes)),
			deadLetterFill(o), o.PendingRecords, humanBytes(o.PendingBytes))
	}
	for _, c := range n.OrphanCursors {
		fmt.Fprintf(tw, "cursor %s\tnot configured\t-\t-\t-\t-\tholds %s\t\n", c.Name, humanBytes(c.HeldBytes))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ninput: %d connections, %d violations\n", n.Input.Connections, n.Input.ViolationsTotal)
	for _, o := range n.Outputs {
		rt := ratesOf(r, o.Name)
		fmt.Fprintf(w, "output %s (%s): lag %d events (%d records, %s), oldest %s; %d of %d requests in flight",
			o.Name, o.Type, o.PendingEvents, o.PendingRecords, humanBytes(o.PendingBytes),
			time.Duration(o.OldestPendingSeconds*float64(time.Second)).Round(time.Second), o.InFlight, o.ConcurrencyLimit)
		if o.PaceEventsPerSecond > 0 {
			fmt.Fprintf(w, ", paced to %.0f events/s", o.PaceEventsPerSecond)
		}
		fmt.Fprintf(w, "; %d waiting to retry; per second %.1f retried, %.1f requests failed", o.RetryQueueEvents, rt.Retried, rt.Failed)
		if o.Type == conf.TypeElasticsearch {
			fmt.Fprintf(w, ", %.1f dead-lettered; dead letters %s of %s", rt.DeadLettered, humanBytes(o.DeadLetterBytes), humanBytes(o.DeadLetterMaxBytes))
		}
		if o.SkippedEventsTotal > 0 {
			fmt.Fprintf(w, "; %d events skipped past max_lag", o.SkippedEventsTotal)
		}
		fmt.Fprintln(w)
	}
	if len(n.OrphanCursors) > 0 {
		fmt.Fprintln(w, "cursors not configured: no output drains them, and retention keeps what they hold; ledgerctl cursors delete NAME releases one")
	}
	fmt.Fprintln(w, "fill: input of max_inflight_bytes, journal and ledger of max_bytes, an Elasticsearch output of its dead-letter store")
	for _, s := range []struct{ name, why string }{
		{"input", firstNonEmpty(n.Input.Error, n.Input.Waiting)},
		{"journal", firstNonEmpty(n.Journal.Error, n.Journal.Waiting)},
		{"ledger", firstNonEmpty(n.Ledger.Error, n.Ledger.Waiting)},
	} {
		if s.why != "" {
			fmt.Fprintf(w, "%s: %s\n", s.name, s.why)
		}
	}
	for _, o := range n.Outputs {
		if why := firstNonEmpty(o.Error, o.Waiting); why != "" {
			fmt.Fprintf(w, "output %s: %s\n", o.Name, why)
		}
	}
	if len(n.Outputs) == 0 {
		fmt.Fprintln(w, "outputs: none configured: nothing drains the ledger")
	}
}

// deadLetterFill is an output's FILL cell: an Elasticsearch output's
// dead-letter store's fill, "-" for an output without dead letters.
func deadLetterFill(o server.OutputInfo) string {
	if o.Type != conf.TypeElasticsearch {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*o.DeadLetterFillRatio)
}

// ratesOf is the rates of the output called name (zero when r has none).
func ratesOf(r topRates, name string) outputRates {
	for _, o := range r.Outputs {
		if o.Name == name {
			return o
		}
	}
	return outputRates{Name: name}
}

func fillOf(used, limit int64) string {
	if limit <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(used)/float64(limit))
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// outputNamed is the node's output called name, nil when it has none.
func outputNamed(n server.NodeInfo, name string) *server.OutputInfo {
	for i := range n.Outputs {
		if n.Outputs[i].Name == name {
			return &n.Outputs[i]
		}
	}
	return nil
}
