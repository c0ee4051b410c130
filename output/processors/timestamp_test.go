package processors

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tsExpected is the time of Filebeat's own timestamp tests.
var tsExpected = time.Date(2015, 3, 7, 11, 6, 39, 0, time.UTC)

// tsOut is t as the processor writes it.
func tsOut(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// TestTimestamp follows Filebeat's own tests of the processor
// (timestamp_test.go) and its documented options.
func TestTimestamp(t *testing.T) {
	const layouts = `layouts = ["Mon Jan _2 15:04:05 2006", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05Z07:00"]`
	sec := tsExpected.Unix()
	ms := tsExpected.UnixMilli()
	out := `"` + tsOut(tsExpected) + `"`
	cases := []djCase{
		{name: "ANSIC", opts: "field = \"ts\"\n" + layouts,
			in: `{"ts":"` + tsExpected.Format(time.ANSIC) + `"}`, want: `{"ts":"` + tsExpected.Format(time.ANSIC) + `","@timestamp":` + out + `}`},
		{name: "RFC3339Nano", opts: "field = \"ts\"\n" + layouts,
			in: `{"ts":"2015-03-07T11:06:39.123456789Z"}`, want: `{"ts":"2015-03-07T11:06:39.123456789Z","@timestamp":"2015-03-07T11:06:39.123Z"}`},
		{name: "RFC3339 with an offset, written in UTC", opts: "field = \"ts\"\n" + layouts,
			in: `{"ts":"2015-03-07T13:06:39+02:00"}`, want: `{"ts":"2015-03-07T13:06:39+02:00","@timestamp":` + out + `}`},
		{name: "replaces @timestamp", opts: "field = \"ts\"\n" + layouts,
			in: `{"@timestamp":"2026-01-01T00:00:00.000Z","ts":"2015-03-07T11:06:39Z"}`, want: `{"@timestamp":` + out + `,"ts":"2015-03-07T11:06:39Z"}`},
		{name: "UNIX integer", opts: "field = \"ts\"\nlayouts = [\"UNIX\"]",
			in: `{"ts":` + strconv.FormatInt(sec, 10) + `}`, want: `{"ts":` + strconv.FormatInt(sec, 10) + `,"@timestamp":` + out + `}`},
		{name: "UNIX float", opts: "field = \"ts\"\nlayouts = [\"UNIX\"]",
			in: `{"ts":` + strconv.FormatInt(sec, 10) + `.5}`, want: `{"ts":` + strconv.FormatInt(sec, 10) + `.5,"@timestamp":"2015-03-07T11:06:39.500Z"}`},
		{name: "UNIX string", opts: "field = \"ts\"\nlayouts = [\"UNIX\"]",
			in: `{"ts":"` + strconv.FormatInt(sec, 10) + `"}`, want: `{"ts":"` + strconv.FormatInt(sec, 10) + `","@timestamp":` + out + `}`},
		{name: "UNIX float string", opts: "field = \"ts\"\nlayouts = [\"UNIX\"]",
			in: `{"ts":"` + strconv.FormatInt(sec, 10) + `.0"}`, want: `{"ts":"` + strconv.FormatInt(sec, 10) + `.0","@timestamp":` + out + `}`},
		{name: "UNIX_MS integer", opts: "field = \"ts\"\nlayouts = [\"UNIX_MS\"]",
			in: `{"ts":` + strconv.FormatInt(ms+7, 10) + `}`, want: `{"ts":` + strconv.FormatInt(ms+7, 10) + `,"@timestamp":"2015-03-07T11:06:39.007Z"}`},
		{name: "UNIX_MS float string", opts: "field = \"ts\"\nlayouts = [\"UNIX_MS\"]",
			in: `{"ts":"` + strconv.FormatInt(ms, 10) + `.0"}`, want: `{"ts":"` + strconv.FormatInt(ms, 10) + `.0","@timestamp":` + out + `}`},
		{name: "UNIX of a boolean", opts: "field = \"ts\"\nlayouts = [\"UNIX\"]",
			in: `{"ts":true}`, want: `{"ts":true}`, err: "failed parsing time field ts='true'"},
		{name: "the first layout that parses wins", opts: "field = \"ts\"\nlayouts = [\"2006-01-02\", \"UNIX\", \"2006-01-02T15:04:05Z07:00\"]",
			in: `{"ts":"2015-03-07T11:06:39Z"}`, want: `{"ts":"2015-03-07T11:06:39Z","@timestamp":` + out + `}`},
		{name: "missing field", opts: "field = \"ts\"\n" + layouts,
			in: `{}`, want: `{}`, err: "failed to get time field ts: key not found"},
		{name: "missing field, ignore_missing", opts: "field = \"ts\"\nignore_missing = true\n" + layouts,
			in: `{}`, want: `{}`},
		{name: "missing field, ignore_failure", opts: "field = \"ts\"\nignore_failure = true\n" + layouts,
			in: `{}`, want: `{}`},
		{name: "field through a string, ignore_missing", opts: "field = \"a.ts\"\nignore_missing = true\n" + layouts,
			in: `{"a":"x"}`, want: `{"a":"x"}`, err: "failed to get time field a.ts: expected map but type is string"},
		{name: "no layout parses", opts: "field = \"ts\"\nlayouts = [\"2006-01-02T15:04:05Z07:00\"]",
			in: `{"ts":"11:06AM"}`, want: `{"ts":"11:06AM"}`, err: "failed parsing time field ts='11:06AM'"},
		{name: "no layout parses, ignore_failure", opts: "field = \"ts\"\nignore_failure = true\nlayouts = [\"2006-01-02T15:04:05Z07:00\"]",
			in: `{"ts":"11:06AM"}`, want: `{"ts":"11:06AM"}`},
		{name: "not a string for a Go layout", opts: "field = \"ts\"\nlayouts = [\"2006-01-02T15:04:05Z07:00\"]",
			in: `{"ts":5}`, want: `{"ts":5}`, err: "failed parsing time field ts='5'"},
		{name: "target_field", opts: "field = \"@metadata.time\"\ntarget_field = \"@metadata.ts\"\ntimezone = \"EST\"\nlayouts = [\"2006-01-02T15:04:05Z07:00\"]",
			in:   `{"@metadata":{"time":"2006-01-02T15:04:05Z"}}`,
			want: `{"@metadata":{"time":"2006-01-02T15:04:05Z","ts":"2006-01-02T15:04:05.000Z"}}`},
		{name: "target through a string", opts: "field = \"ts\"\ntarget_field = \"a.b\"\n" + layouts,
			in: `{"a":"x","ts":"2015-03-07T11:06:39Z"}`, want: `{"a":"x","ts":"2015-03-07T11:06:39Z"}`, err: "expected map but type is string"},
		{name: "target through a string, ignore_failure", opts: "field = \"ts\"\ntarget_field = \"a.b\"\nignore_failure = true\n" + layouts,
			in: `{"a":"x","ts":"2015-03-07T11:06:39Z"}`, want: `{"a":"x","ts":"2015-03-07T11:06:39Z"}`},
		{name: "@timestamp is a time whatever the layouts", opts: "field = \"@timestamp\"\ntarget_field = \"t\"\nlayouts = [\"UNIX\"]",
			in: `{"@timestamp":"2026-12-02T10:57:41.210Z"}`, want: `{"@timestamp":"2026-12-02T10:57:41.210Z","t":"2026-12-02T10:57:41.210Z"}`},
		{name: "time zone of a time without one", opts: "field = \"ts\"\ntimezone = \"America/Panama\"\nlayouts = [\"2006-01-02 15:04:05\"]",
			in: `{"ts":"2015-03-07 06:06:39"}`, want: `{"ts":"2015-03-07 06:06:39","@timestamp":` + out + `}`},
		{name: "a time with a zone keeps it", opts: "field = \"ts\"\ntimezone = \"America/Panama\"\nlayouts = [\"2006-01-02T15:04:05Z07:00\"]",
			in: `{"ts":"2015-03-07T11:06:39Z"}`, want: `{"ts":"2015-03-07T11:06:39Z","@timestamp":` + out + `}`},
	}
	djRunCases(t, "timestamp", cases)
}

// TestTimestampCauses checks what %+v adds to the error: each layout's
// failure, as Filebeat logs it.
func TestTimestampCauses(t *testing.T) {
	p := djProc(t, "timestamp", "field = \"ts\"\nlayouts = [\"2006-01-02T15:04:05Z07:00\", \"UNIX\", \"2006-01-02 15:04\"]")
	_, err := djRun(t, p, `{"ts":"11:06AM"}`)
	want := "failed parsing time field ts='11:06AM': failed using layout [2006-01-02T15:04:05Z07:00] cannot parse [11:06AM] as [2006]; " +
		"could not parse time field as int or float; failed using layout [2006-01-02 15:04] cannot parse [11:06AM] as [2006]"
	if got := fmt.Sprintf("%+v", err); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := fmt.Sprintf("%v", err); got != "failed parsing time field ts='11:06AM'" {
		t.Errorf("%%v: %s", got)
	}
	_, err = djRun(t, p, `{"ts":"2015-03-07 11:06:39"}`)
	if got := fmt.Sprintf("%+v", err); !strings.HasSuffix(got, `; : extra text: ":39"`) {
		t.Errorf("extra text: %s", got)
	}
	_, err = djRun(t, p, `{"ts":{"a":1}}`)
	if got := fmt.Sprintf("%+v", err); got != `failed parsing time field ts='{"a":1}': unexpected type map[string]interface {} for time field; `+
		`could not parse time field as int or float; unexpected type map[string]interface {} for time field` {
		t.Errorf("object: %s", got)
	}
	var pe *tsParseError
	if !errors.As(err, &pe) || len(pe.Unwrap()) != 3 {
		t.Errorf("error %T does not unwrap to its causes", err)
	}
}

// TestTimestampNoYear follows Filebeat's TestParseNoYear: a layout
// without a year gets the current year in the time zone.
func TestTimestampNoYear(t *testing.T) {
	p := djProc(t, "timestamp", "field = \"ts\"\ntimezone = \"EST\"\nlayouts = [\"Jan _2 15:04:05.000\"]")
	got, err := djRun(t, p, `{"ts":"Mar  7 11:06:39.002"}`)
	if err != nil {
		t.Fatal(err)
	}
	est, _ := time.LoadLocation("EST")
	want := time.Date(time.Now().In(est).Year(), 3, 7, 11, 6, 39, int(2*time.Millisecond), est)
	if !djSameJSON(t, got, `{"ts":"Mar  7 11:06:39.002","@timestamp":"`+tsOut(want)+`"}`) {
		t.Errorf("got %s, want %s", got, tsOut(want))
	}
}

// TestTimestampTimezone follows Filebeat's TestTimezone.
func TestTimestampTimezone(t *testing.T) {
	for _, c := range []struct {
		tz   string
		want time.Time // zero: a configuration error
	}{
		{"", tsExpected},
		{"UTC", tsExpected},
		{"America/Panama", tsExpected.Add(5 * time.Hour)},
		{"Etc/UTC", tsExpected},
		{"Etc/GMT+2", tsExpected.Add(2 * time.Hour)},
		{"+0000", tsExpected},
		{"+0430", tsExpected.Add(-4*time.Hour - 30*time.Minute)},
		{"+03:00", tsExpected.Add(-3 * time.Hour)},
		{"+00:30", tsExpected.Add(-30 * time.Minute)},
		{"+04", tsExpected.Add(-4 * time.Hour)},
		{"-03:30", tsExpected.Add(3*time.Hour + 30*time.Minute)},
		{"-00:30", tsExpected.Add(30 * time.Minute)},
		{"-04", tsExpected.Add(4 * time.Hour)},
		{"Local", tsExpected.Add(-tsLocalOffset(tsExpected))},
		{"Z", time.Time{}},
		{"Equatorial/Kundu", time.Time{}},
		{"-400", time.Time{}},
	} {
		opts := "field = \"ts\"\nlayouts = [\"Mon Jan _2 15:04:05 2006\"]"
		if c.tz != "" {
			opts += "\ntimezone = " + strconv.Quote(c.tz)
		}
		p, err := djCompile(t, "timestamp", opts)
		if c.want.IsZero() {
			want := fmt.Sprintf(`processors[0].timestamp.timezone: failed to parse timezone %q: unknown time zone %s`, c.tz, c.tz)
			if err == nil || err.Error() != want {
				t.Errorf("%q: error %v, want %s", c.tz, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.tz, err)
			continue
		}
		in := `{"ts":"` + tsExpected.Format(time.ANSIC) + `"}`
		got, err := djRun(t, p, in)
		if err != nil || !djSameJSON(t, got, `{"ts":"`+tsExpected.Format(time.ANSIC)+`","@timestamp":"`+tsOut(c.want)+`"}`) {
			t.Errorf("%q: got %s (%v), want %s", c.tz, got, err, tsOut(c.want))
		}
	}
}

func tsLocalOffset(t time.Time) time.Duration {
	local := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.Local)
	_, off := local.Zone()
	return time.Duration(off) * time.Second
}

func TestTimestampConfig(t *testing.T) {
	const at = "processors[0].timestamp."
	for _, c := range []struct{ opts, err string }{
		{`layouts = ["UNIX"]`, at + "field: missing (required)"},
		{`field = "ts"`, at + "layouts: missing (required)"},
		{"field = \"ts\"\nlayouts = []", at + "layouts: must hold at least one layout"},
		{"field = \"ts\"\nlayouts = [\"UNIX\"]\ntarget_field = \"\"", at + "target_field: a field name is empty"},
		{"field = \"ts\"\nlayouts = [\"2006-01-89T15:04:05Z07:00\"]\ntest = [\"2015-03-07T11:06:39Z\"]",
			at + "test[0]: failed to parse test timestamp: failed parsing time field ts='2015-03-07T11:06:39Z': " +
				"failed using layout [2006-01-89T15:04:05Z07:00] cannot parse [07T11:06:39Z] as [-89T]"},
		{"field = \"ts\"\nlayouts = [\"UNIX\", \"2006-01-02\"]\ntest = [\"1\", \"2019-06-22T16:33:51Z\"]",
			at + "test[1]: failed to parse test timestamp: failed parsing time field ts='2019-06-22T16:33:51Z': " +
				`could not parse time field as int or float; : extra text: "T16:33:51Z"`},
		{"field = \"ts\"\nlayouts = [\"UNIX\"]\nignore_failure = \"yes\"", at + `ignore_failure: want true or false, got the string "yes"`},
		{"field = \"ts\"\nlayouts = [\"UNIX\"]\nformat = \"x\"", at + "format: unknown option..."},
	} {
		_, err := djCompile(t, "timestamp", c.opts)
		var ce *ConfigError
		switch {
		case err == nil || !errors.As(err, &ce):
			t.Errorf("%q: error %v, want %s", c.opts, err, c.err)
		case strings.HasSuffix(c.err, "...") && !strings.HasPrefix(err.Error(), strings.TrimSuffix(c.err, "...")),
			!strings.HasSuffix(c.err, "...") && err.Error() != c.err:
			t.Errorf("%q: error %v\nwant %s", c.opts, err, c.err)
		}
	}
	for _, opts := range []string{
		"field = \"start_time\"\nlayouts = ['2006-01-02T15:04:05Z', '2006-01-02T15:04:05.999Z']\ntest = ['2019-06-22T16:33:51Z', '2019-11-18T04:59:51.123Z']",
		"field = \"ts\"\nlayouts = \"UNIX_MS\"\ntarget_field = \"event.created\"\ntimezone = \"Europe/Paris\"\nignore_missing = true\nignore_failure = true\nid = \"ts1\"",
	} {
		if _, err := djCompile(t, "timestamp", opts); err != nil {
			t.Errorf("%q: %v", opts, err)
		}
	}
}

// BenchmarkTimestamp measures the processor alone on a parsed event.
func BenchmarkTimestamp(b *testing.B) {
	p := djProc(b, "timestamp", "field = \"ts\"\nlayouts = [\"2006-01-02T15:04:05.999Z07:00\"]")
	ev := djBenchEvent("x")
	ev = append(ev[:len(ev)-1], `,"ts":"2026-12-02T10:57:41.210+01:00"}`...)
	r := djChainOf(b, p)
	b.ReportAllocs()
	for range b.N {
		if _, _, err := r.Run(ev); err != nil {
			b.Fatal(err)
		}
	}
}

// djChainOf is a Runner of a chain of the one processor p.
func djChainOf(t testing.TB, p processor) *Runner {
	t.Helper()
	c := &Chain{steps: newSteps([]*spec{{name: "processors[0]", proc: p}})}
	return c.NewRunner()
}
