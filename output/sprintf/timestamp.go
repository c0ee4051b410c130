package sprintf

import (
	"math"
	"strconv"
	"time"
)

var timestampPath = []string{"@timestamp"}

// eventTime returns the event's @timestamp in UTC, or received (in UTC) when
// the event has none that can be read.
func eventTime(w *walker, received time.Time) time.Time {
	if v, ok := w.lookup(timestampPath); ok {
		if t, ok := parseTimestampValue(v); ok {
			return t
		}
	}
	return received.UTC()
}

// parseTimestampValue reads a raw @timestamp value: a string in RFC 3339
// form, or a number of milliseconds since the Unix epoch.
func parseTimestampValue(v []byte) (time.Time, bool) {
	switch {
	case len(v) == 0:
		return time.Time{}, false
	case v[0] == '"':
		s := v[1 : len(v)-1]
		var buf [64]byte
		for _, c := range s {
			if c == '\\' {
				// Escaped timestamps are legal JSON, if odd; decode first.
				if len(s) > len(buf) {
					return time.Time{}, false
				}
				d, ok := appendString(buf[:0], v)
				if !ok {
					return time.Time{}, false
				}
				s = d
				break
			}
		}
		if t, ok := parseRFC3339(s); ok {
			return t, true
		}
		t, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return time.Time{}, false
		}
		return t.UTC(), true
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		return parseEpochMillis(v)
	}
	return time.Time{}, false
}

// parseEpochMillis reads a JSON number of milliseconds since the epoch.
func parseEpochMillis(v []byte) (time.Time, bool) {
	if end, ok := numberEnd(v, 0); !ok || end != len(v) {
		return time.Time{}, false
	}
	// Integers (the usual case) without strconv.
	neg := v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	var ms int64
	integer := len(digits) <= 18
	for _, c := range digits {
		if c < '0' || c > '9' {
			integer = false
			break
		}
		ms = ms*10 + int64(c-'0')
	}
	if integer {
		if neg {
			ms = -ms
		}
		return time.UnixMilli(ms).UTC(), true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > 9e18 {
		return time.Time{}, false
	}
	sec := math.Floor(f / 1000)
	nsec := math.Round((f - sec*1000) * 1e6)
	return time.Unix(int64(sec), int64(nsec)).UTC(), true
}

func digits2(s []byte, i int) (int, bool) {
	a, b := s[i]-'0', s[i+1]-'0'
	if a > 9 || b > 9 {
		return 0, false
	}
	return int(a)*10 + int(b), true
}

// parseRFC3339 is an allocation-free parser for the timestamps Beats send,
// "2026-12-02T10:57:41.210Z", and their close relatives: 't' or ' ' for
// 'T', 'z' for 'Z', ',' for '.', 1 to 9 fraction digits (more are cut off),
// a "+hh:mm", "+hhmm" or "+hh" offset, or no zone at all (read as UTC, as
// Elasticsearch reads it). The result is in UTC.
func parseRFC3339(s []byte) (time.Time, bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	if c := s[10]; c != 'T' && c != 't' && c != ' ' {
		return time.Time{}, false
	}
	y1, ok1 := digits2(s, 0)
	y2, ok2 := digits2(s, 2)
	mo, ok3 := digits2(s, 5)
	d, ok4 := digits2(s, 8)
	h, ok5 := digits2(s, 11)
	mi, ok6 := digits2(s, 14)
	sec, ok7 := digits2(s, 17)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return time.Time{}, false
	}
	year := y1*100 + y2
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(year, mo) || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	i := 19
	nsec := 0
	if i < len(s) && (s[i] == '.' || s[i] == ',') {
		i++
		start := i
		scale := 100000000
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			nsec += int(s[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == start {
			return time.Time{}, false
		}
	}
	offset := 0
	if i < len(s) {
		switch s[i] {
		case 'Z', 'z':
			i++
		case '+', '-':
			sign := 1
			if s[i] == '-' {
				sign = -1
			}
			i++
			if len(s)-i < 2 {
				return time.Time{}, false
			}
			oh, ok := digits2(s, i)
			i += 2
			om := 0
			if i < len(s) && s[i] == ':' {
				i++
				if len(s)-i < 2 {
					return time.Time{}, false
				}
				om, ok2 = digits2(s, i)
				ok = ok && ok2
				i += 2
			} else if len(s)-i >= 2 {
				om, ok2 = digits2(s, i)
				ok = ok && ok2
				i += 2
			}
			if !ok || oh > 23 || om > 59 {
				return time.Time{}, false
			}
			offset = sign * (oh*3600 + om*60)
		default:
			return time.Time{}, false
		}
	}
	if i != len(s) {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(mo), d, h, mi, sec, nsec, time.UTC)
	if offset != 0 {
		t = t.Add(-time.Duration(offset) * time.Second)
	}
	return t, true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
