package sprintf

import (
	"strconv"
	"testing"
	"time"
)

func tsEvent(ts string) string { return `{"@timestamp":"` + ts + `","x":1}` }

func TestJodaFormats(t *testing.T) {
	const ts = "2026-12-02T10:57:41.210Z" // a Wednesday
	for _, tc := range []struct {
		pattern, ts, want string
	}{
		{"yyyy.MM.dd", ts, "2026.12.02"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSSZ", ts, "2026-12-02T10:57:41.210+0000"},
		{"yy", ts, "26"},
		{"y", ts, "2026"},
		{"yyy", ts, "2026"},
		{"yyyyyy", ts, "002026"},
		{"YYYY", ts, "2026"},
		{"YY", ts, "26"},
		{"xxxx.ww", ts, "2026.49"},
		{"xx", ts, "26"},
		{"M MM MMM MMMM MMMMM", ts, "12 12 Dec December December"},
		{"M/d", "2026-03-05T00:00:00Z", "3/5"},
		{"d dd ddd", "2026-03-05T00:00:00Z", "5 05 005"},
		{"D DD DDD", "2026-01-09T00:00:00Z", "9 09 009"},
		{"DDD", "2024-02-29T12:00:00Z", "060"},
		{"DDD", "2024-12-31T12:00:00Z", "366"},
		{"DDD", "2026-12-31T12:00:00Z", "365"},
		{"MM-dd", "2024-02-29T23:59:59Z", "02-29"},
		{"H HH h hh K KK k kk a", "2026-12-02T00:05:06Z", "0 00 12 12 0 00 24 24 AM"},
		{"H h K k a", "2026-12-02T12:05:06Z", "12 12 0 12 PM"},
		{"H h K k a", "2026-12-02T23:05:06Z", "23 11 11 23 PM"},
		{"m mm s ss", "2026-12-02T10:05:06Z", "5 05 6 06"},
		{"S SS SSS SSSS SSSSSS", "2026-12-02T10:57:41.987654321Z", "9 98 987 9870 987000"},
		{"SSS", "2026-12-02T10:57:41Z", "000"},
		{"SSS", "2026-12-02T10:57:41.05Z", "050"},
		{"e E EE EEE EEEE", ts, "3 Wed Wed Wed Wednesday"},
		{"e EEE", "2026-12-06T00:00:00Z", "7 Sun"},
		{"e EEEE", "2026-12-07T00:00:00Z", "1 Monday"},
		{"C CC G GGGG", ts, "20 20 AD AD"},
		{"z zzz zzzz", ts, "UTC UTC Coordinated Universal Time"},
		{"Z ZZ ZZZ", ts, "+0000 +00:00 UTC"},
		{"'T'", ts, "T"},
		{"''", ts, "'"},
		{"'it''s' yyyy", ts, "it's 2026"},
		{"'yyyy'", ts, "yyyy"},
		{"'a''b'''", ts, "a'b'"},
		{"yyyy/MM/dd_HH:mm", ts, "2026/12/02_10:57"},
		{"yyyy.MM.dd-HH.mm.ss", ts, "2026.12.02-10.57.41"},
		{"yyyyMMdd", ts, "20261202"},
		{" -_.,;:#@!$%^&*()=~`<>?|\\ ", ts, " -_.,;:#@!$%^&*()=~`<>?|\\ "},
		{"日本yyyy", ts, "日本2026"},

		// ISO week-year at the year boundaries.
		{"xxxx.ww e", "2026-12-31T12:00:00Z", "2026.53 4"},
		{"xxxx.ww e", "2027-01-01T12:00:00Z", "2026.53 5"},
		{"YYYY.ww", "2027-01-01T12:00:00Z", "2027.53"}, // Joda's trap, kept
		{"yyyy.ww", "2027-01-01T12:00:00Z", "2027.53"},
		{"xxxx.ww", "2027-01-04T00:00:00Z", "2027.01"},
		{"xxxx.ww", "2020-12-31T00:00:00Z", "2020.53"},
		{"xxxx.ww", "2021-01-03T23:59:59Z", "2020.53"},
		{"xxxx.ww", "2021-01-04T00:00:00Z", "2021.01"},
		{"xxxx.ww", "2024-12-30T00:00:00Z", "2025.01"},
		{"xx.w", "2024-12-30T00:00:00Z", "25.1"},
		{"xxxx-'W'ww-e", "2008-12-29T00:00:00Z", "2009-W01-1"},
		{"xxxx.ww", "2024-02-29T00:00:00Z", "2024.09"},

		// Offsets are converted to UTC first.
		{"yyyy.MM.dd HH", "2026-12-02T01:00:00+02:00", "2026.12.01 23"},
		{"yyyy.MM.dd HH", "2026-12-31T23:30:00-01:00", "2027.01.01 00"},
	} {
		f, err := Compile("%{+" + tc.pattern + "}")
		if err != nil {
			t.Errorf("pattern %q: %v", tc.pattern, err)
			continue
		}
		got, ok := f.Render([]byte(tsEvent(tc.ts)), received)
		if !ok || got != tc.want {
			t.Errorf("%%{+%s} at %s: got %q, want %q", tc.pattern, tc.ts, got, tc.want)
		}
	}
}

func TestJavaFormats(t *testing.T) {
	const ts = "2026-12-02T10:57:41.123456789Z"
	for _, tc := range []struct {
		pattern, ts, want string
	}{
		{"yyyy-MM-dd", ts, "2026-12-02"},
		{"uuuu.MM.dd", ts, "2026.12.02"},
		{"u y yy uu yyy", ts, "2026 2026 26 26 2026"},
		{"M MM MMM MMMM MMMMM", ts, "12 12 Dec December D"},
		{"d dd D DD DDD", "2026-01-05T00:00:00Z", "5 05 5 05 005"},
		{"E EE EEE EEEE EEEEE", ts, "Wed Wed Wed Wednesday W"},
		{"H HH h hh K KK k kk a", "2026-12-02T00:05:06Z", "0 00 12 12 0 00 24 24 AM"},
		{"m mm s ss", "2026-12-02T10:05:06Z", "5 05 6 06"},
		{"S SSS SSSSSS SSSSSSSSS", ts, "1 123 123456 123456789"},
		{"n nnnnnnnnnn", "2026-12-02T10:57:41.000001Z", "1000 0000001000"},
		{"G GGGG GGGGG", ts, "AD Anno Domini A"},
		{"X XX XXXXX x xx xxx xxxx xxxxx", ts, "Z Z Z +00 +0000 +00:00 +0000 +00:00"},
		{"Z ZZZ ZZZZ ZZZZZ", ts, "+0000 +0000 GMT Z"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSSX", ts, "2026-12-02T10:57:41.123Z"},
		{"'W'''", ts, "W'"},
		{"yyyy[.MM[.dd]]", ts, "2026.12.02"},
		{"yyyy-DDD", "2024-12-31T00:00:00Z", "2024-366"},
	} {
		f, err := Compile("%{{" + tc.pattern + "}}")
		if err != nil {
			t.Errorf("pattern %q: %v", tc.pattern, err)
			continue
		}
		got, ok := f.Render([]byte(tsEvent(tc.ts)), received)
		if !ok || got != tc.want {
			t.Errorf("%%{{%s}} at %s: got %q, want %q", tc.pattern, tc.ts, got, tc.want)
		}
	}
}

// TestExtremeYears checks sign and padding rules outside 1..9999, reached
// through numeric (epoch millisecond) timestamps.
func TestExtremeYears(t *testing.T) {
	ms := func(y int) string {
		return strconv.FormatInt(time.Date(y, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), 10)
	}
	for _, tc := range []struct {
		year     int
		template string
		want     string
	}{
		{10000, "%{+yyyy}", "10000"},
		{10000, "%{{yyyy}}", "+10000"},
		{10000, "%{{uuuu}}", "+10000"},
		{10000, "%{{yyy}}", "10000"},
		{10000, "%{+yy}", "00"},
		{5, "%{+yyyy}", "0005"},
		{0, "%{+yyyy YYYY G C}", "0000 0001 BC 0"},
		{-1, "%{+yyyy YYYY yy G}", "-0001 0002 01 BC"},
		{-1, "%{{uuuu yyyy G}}", "-0001 0002 BC"},
	} {
		f := MustCompile(tc.template)
		got, ok := f.Render([]byte(`{"@timestamp":`+ms(tc.year)+`}`), received)
		if !ok || got != tc.want {
			t.Errorf("year %d, %s: got %q, want %q", tc.year, tc.template, got, tc.want)
		}
	}
}

func TestTimestampForms(t *testing.T) {
	const full = "%{+yyyy-MM-dd'T'HH:mm:ss.SSS}"
	nanos := MustCompile("%{{yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSS}}")
	for _, tc := range []struct {
		name, event, want string
	}{
		{"beats", `{"@timestamp":"2026-12-02T10:57:41.210Z"}`, "2026-12-02T10:57:41.210"},
		{"no fraction", `{"@timestamp":"2026-12-02T10:57:41Z"}`, "2026-12-02T10:57:41.000"},
		{"nanoseconds", `{"@timestamp":"2026-12-02T10:57:41.123456789Z"}`, "2026-12-02T10:57:41.123"},
		{"too many digits", `{"@timestamp":"2026-12-02T10:57:41.1234567891234Z"}`, "2026-12-02T10:57:41.123"},
		{"comma fraction", `{"@timestamp":"2026-12-02T10:57:41,5Z"}`, "2026-12-02T10:57:41.500"},
		{"offset", `{"@timestamp":"2026-12-02T12:57:41.210+02:00"}`, "2026-12-02T10:57:41.210"},
		{"negative offset", `{"@timestamp":"2026-12-02T05:27:41.210-05:30"}`, "2026-12-02T10:57:41.210"},
		{"offset no colon", `{"@timestamp":"2026-12-02T12:57:41.210+0200"}`, "2026-12-02T10:57:41.210"},
		{"offset hours", `{"@timestamp":"2026-12-02T12:57:41.210+02"}`, "2026-12-02T10:57:41.210"},
		{"lower case", `{"@timestamp":"2026-12-02t10:57:41.210z"}`, "2026-12-02T10:57:41.210"},
		{"space", `{"@timestamp":"2026-12-02 10:57:41.210Z"}`, "2026-12-02T10:57:41.210"},
		{"no zone is UTC", `{"@timestamp":"2026-12-02T10:57:41.210"}`, "2026-12-02T10:57:41.210"},
		{"escaped", `{"@timestamp":"2026\u002d12-02T10:57:41.210Z"}`, "2026-12-02T10:57:41.210"},
		{"epoch millis", `{"@timestamp":1764672000123}`, "2025-12-02T10:40:00.123"},
		{"epoch zero", `{"@timestamp":0}`, "1970-01-01T00:00:00.000"},
		{"negative epoch", `{"@timestamp":-1}`, "1969-12-31T23:59:59.999"},
		{"float epoch", `{"@timestamp":1764672000123.5}`, "2025-12-02T10:40:00.123"},
		{"exponent epoch", `{"@timestamp":1.764672000123e12}`, "2025-12-02T10:40:00.123"},
		{"later field", `{"a":{"@timestamp":"2000-01-01T00:00:00Z"},"@timestamp":"2026-12-02T10:57:41.210Z"}`, "2026-12-02T10:57:41.210"},
		{"leap second", `{"@timestamp":"2026-12-31T23:59:60Z"}`, "2030-05-06T07:08:09.000"},

		// Fallbacks to the received time.
		{"missing", `{"a":1}`, "2030-05-06T07:08:09.000"},
		{"null", `{"@timestamp":null}`, "2030-05-06T07:08:09.000"},
		{"garbage", `{"@timestamp":"yesterday"}`, "2030-05-06T07:08:09.000"},
		{"empty", `{"@timestamp":""}`, "2030-05-06T07:08:09.000"},
		{"bad day", `{"@timestamp":"2026-02-29T00:00:00Z"}`, "2030-05-06T07:08:09.000"},
		{"bad hour", `{"@timestamp":"2026-12-02T24:00:00Z"}`, "2030-05-06T07:08:09.000"},
		{"bad month", `{"@timestamp":"2026-13-02T10:00:00Z"}`, "2030-05-06T07:08:09.000"},
		{"bad offset", `{"@timestamp":"2026-12-02T10:00:00+2:00"}`, "2030-05-06T07:08:09.000"},
		{"trailing junk", `{"@timestamp":"2026-12-02T10:00:00Zjunk"}`, "2030-05-06T07:08:09.000"},
		{"empty fraction", `{"@timestamp":"2026-12-02T10:00:00.Z"}`, "2030-05-06T07:08:09.000"},
		{"object", `{"@timestamp":{"a":1}}`, "2030-05-06T07:08:09.000"},
		{"bool", `{"@timestamp":true}`, "2030-05-06T07:08:09.000"},
		{"bad number", `{"@timestamp":12-3}`, "2030-05-06T07:08:09.000"},
		{"not an object", `"2026-12-02T10:57:41.210Z"`, "2030-05-06T07:08:09.000"},
		{"invalid json", `{"@timestamp":`, "2030-05-06T07:08:09.000"},
	} {
		got, ok := MustCompile(full).Render([]byte(tc.event), received)
		if !ok || got != tc.want {
			t.Errorf("%s: %s: got %q, want %q", tc.name, tc.event, got, tc.want)
		}
	}
	got, _ := nanos.Render([]byte(`{"@timestamp":"2026-12-02T10:57:41.000000001+00:00"}`), received)
	if got != "2026-12-02T10:57:41.000000001" {
		t.Errorf("nanosecond precision lost: %q", got)
	}
}

func TestReceivedInUTC(t *testing.T) {
	loc := time.FixedZone("UTC+9", 9*3600)
	recv := time.Date(2027, 1, 1, 5, 0, 0, 0, loc) // 2026-12-31T20:00:00Z
	got, ok := MustCompile("%{+yyyy.MM.dd.HH}").Render([]byte(`{}`), recv)
	if !ok || got != "2026.12.31.20" {
		t.Fatalf("got %q, %v", got, ok)
	}
}

func TestEpochSeconds(t *testing.T) {
	f := MustCompile("x-%{+%s}")
	for _, tc := range []struct {
		event string
		recv  time.Time
		want  string
	}{
		{filebeatEvent, received, "x-1796209061"},
		{`{"@timestamp":"1970-01-01T00:00:00Z"}`, received, "x-0"},
		{`{}`, time.Date(1969, 12, 31, 23, 59, 59, 500000000, time.UTC), "x--1"},
		{`{}`, received, "x-" + strconv.FormatInt(received.Unix(), 10)},
	} {
		got, ok := f.Render([]byte(tc.event), tc.recv)
		if !ok || got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.event, got, tc.want)
		}
	}
}

func TestParseRFC3339MatchesTime(t *testing.T) {
	for _, s := range []string{
		"2026-12-02T10:57:41.210Z", "2026-12-02T10:57:41Z", "0001-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z", "2000-02-29T00:00:00+14:00", "2026-06-30T00:00:00-12:00",
		"2026-12-02T10:57:41.1+01:30",
	} {
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := parseRFC3339([]byte(s))
		if !ok || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%s: got %v, %v; want %v", s, got, ok, want)
		}
	}
}
