package processors

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	// The time zone database is embedded, as Filebeat does, so that
	// timezone names work where the system has none (containers).
	_ "time/tzdata"

	"github.com/logpond/logpond/internal/jsontree"
)

// timestamp is Filebeat's processor of that name
// (libbeat/processors/timestamp): it parses a time from a field with Go
// layouts and writes it to another (@timestamp by default), with
// Filebeat's options, defaults and failures:
//
//   - field (required): the field holding the time.
//   - target_field (@timestamp): where the time is written, always in UTC
//     with milliseconds, as Filebeat's encoder writes times
//     ("2006-01-02T15:04:05.000Z").
//   - layouts (required): Go time layouts, tried in order, and UNIX
//     (seconds since the epoch, an integer or a float, a number or a
//     string) and UNIX_MS (milliseconds). A time without a year gets the
//     current year in timezone.
//   - timezone (UTC): the zone of a time that does not name one: an IANA
//     name, "Local", or an offset "+07", "+0700" or "+07:00".
//   - ignore_missing (false): a missing field is not an error.
//   - ignore_failure (false): no failure is an error; the event is left
//     as it is.
//   - test: times that must parse with layouts and timezone when the
//     processor is built, else the configuration is refused.
//   - id: the processor's name in logs (Filebeat's instance_id).
//
// A failure keeps the event unchanged, with Filebeat's error: "failed to
// get time field F: key not found", "failed parsing time field F='V'"
// (%+v adds what each layout said), or the write's "expected map but
// type is T".

func init() { register("timestamp", tsBuild) }

// tsProcessor is a compiled timestamp. Immutable once built, safe for
// concurrent use.
type tsProcessor struct {
	field, target path
	layouts       []string
	loc           *time.Location
	ignoreMissing bool
	ignoreFailure bool
	id            string // Filebeat's name for its logs; unused here
}

// tsBuild reads timestamp's options (see the top of this file) and
// parses each test value, refusing the configuration when one does not
// parse: the error names test[i] and says what each layout said.
func tsBuild(o *options) (processor, error) {
	p := &tsProcessor{}
	var err error
	if p.field, err = newPath(o.required("field")); err != nil && o.err == nil {
		o.fail("field", "%v", err)
	}
	if p.target, err = newPath(o.str("target_field", "@timestamp")); err != nil {
		o.fail("target_field", "%v", err)
	}
	if !o.has("layouts") {
		o.fail("layouts", "missing (required)")
	}
	p.layouts = o.strings("layouts")
	if o.err == nil && len(p.layouts) == 0 {
		o.fail("layouts", "must hold at least one layout")
	}
	p.loc = time.UTC
	if tz := o.str("timezone", ""); o.has("timezone") && o.err == nil {
		if p.loc, err = tsLoadLocation(tz); err != nil {
			o.fail("timezone", "failed to parse timezone %q: %v", tz, err)
		}
	}
	p.ignoreMissing = o.boolean("ignore_missing", false)
	p.ignoreFailure = o.boolean("ignore_failure", false)
	p.id = o.str("id", "")
	tests := o.strings("test")
	if o.err != nil {
		return nil, o.err
	}
	var a jsontree.Arena
	for i, t := range tests {
		if _, err := p.parse(a.NewString(t)); err != nil {
			o.fail(fmt.Sprintf("test[%d]", i), "failed to parse test timestamp: %+v", err)
			break
		}
	}
	return p, o.err
}

// tsFixedOffsets are the offset forms Filebeat's timezone option takes.
var tsFixedOffsets = []string{"-07", "-0700", "-07:00"}

// tsLoadLocation is Filebeat's cfgtype timezone: a fixed offset, else an
// IANA name ("" and "UTC" are UTC, "Local" the system's zone).
func tsLoadLocation(tz string) (*time.Location, error) {
	for _, layout := range tsFixedOffsets {
		if t, err := time.Parse(layout, tz); err == nil {
			name, offset := t.Zone()
			return time.FixedZone(name, offset), nil
		}
	}
	return time.LoadLocation(tz)
}

// run parses the field and writes the time to target_field; a failure
// leaves the event unchanged and is returned unless ignore_failure (or,
// for a missing field, ignore_missing) says otherwise.
func (p *tsProcessor) run(e *event) (bool, error) {
	v, err := e.lookup(&p.field)
	if err != nil {
		if p.ignoreFailure || p.ignoreMissing && err == errKeyNotFound {
			return false, nil
		}
		return false, fmt.Errorf("failed to get time field %s: %w", p.field.name, err)
	}
	ts, err := p.parse(v)
	if err != nil {
		if p.ignoreFailure {
			return false, nil
		}
		return false, err
	}
	if err := e.putTime(&p.target, tsFormat(e, ts), nil); err != nil && !p.ignoreFailure {
		return false, err
	}
	return false, nil
}

// tsOutLayout is how Filebeat's encoder writes a time: UTC, milliseconds.
const tsOutLayout = "2006-01-02T15:04:05.000Z"

// tsFormat returns ts as Filebeat writes a time.
func tsFormat(e *event, ts time.Time) *jsontree.Value {
	var buf [40]byte
	return e.arena.NewStringBytes(ts.UTC().AppendFormat(buf[:0], tsOutLayout))
}

// parse tries the layouts in order on v.
func (p *tsProcessor) parse(v *jsontree.Value) (time.Time, error) {
	// Filebeat holds @timestamp as a time, which it takes whatever the
	// layouts: here it is the text its encoder wrote.
	if p.field.name == "@timestamp" && v.Type() == jsontree.TypeString {
		if ts, err := time.Parse(time.RFC3339Nano, v.Str()); err == nil {
			return ts, nil
		}
	}
	var causes []error
	for _, layout := range p.layouts {
		ts, err := p.parseLayout(v, layout)
		if err == nil {
			return ts, nil
		}
		var pe *time.ParseError
		if errors.As(err, &pe) {
			err = tsCause(pe)
		}
		causes = append(causes, err)
	}
	// The value's text may be the event's input, which the next event
	// reuses: the error keeps a copy.
	return time.Time{}, &tsParseError{field: p.field.name, value: strings.Clone(convRender(v)), causes: causes}
}

// parseLayout parses v with one layout, as Filebeat's parseValueByLayout.
func (p *tsProcessor) parseLayout(v *jsontree.Value, layout string) (time.Time, error) {
	switch layout {
	case "UNIX":
		if n, ok := tsToInt(v); ok {
			return time.Unix(n, 0), nil
		}
		if f, ok := tsToFloat(v); ok {
			return time.Unix(0, int64(f*float64(time.Second))), nil
		}
		return time.Time{}, errors.New("could not parse time field as int or float")
	case "UNIX_MS":
		if n, ok := tsToInt(v); ok {
			return time.Unix(0, n*int64(time.Millisecond)), nil
		}
		if f, ok := tsToFloat(v); ok {
			return time.Unix(0, int64(f*float64(time.Millisecond))), nil
		}
		return time.Time{}, errors.New("could not parse time field as int or float")
	}
	if v.Type() != jsontree.TypeString {
		return time.Time{}, fmt.Errorf("unexpected type %s for time field", convGoType(v))
	}
	ts, err := time.ParseInLocation(layout, v.Str(), p.loc)
	if err == nil && ts.Year() == 0 {
		// No year in the layout: the current year, in the time's zone.
		ts = ts.AddDate(time.Now().In(ts.Location()).Year(), 0, 0)
	}
	return ts, err
}

// tsToInt is Filebeat's TryToInt: an integer number, or a string
// strconv.Atoi takes.
func tsToInt(v *jsontree.Value) (int64, bool) {
	switch v.Type() {
	case jsontree.TypeNumber:
		if k, i, _ := convNumber(v); k == "int64" {
			return i, true
		}
	case jsontree.TypeString:
		if n, err := strconv.Atoi(v.Str()); err == nil {
			return int64(n), true
		}
	}
	return 0, false
}

// tsToFloat is Filebeat's TryToFloat64: a float number, or a string
// strconv.ParseFloat takes.
func tsToFloat(v *jsontree.Value) (float64, bool) {
	switch v.Type() {
	case jsontree.TypeNumber:
		if k, _, f := convNumber(v); k == "float64" {
			return f, true
		}
	case jsontree.TypeString:
		if f, err := strconv.ParseFloat(v.Str(), 64); err == nil {
			return f, true
		}
	}
	return 0, false
}

// tsParseError is Filebeat's parseError: its text names the field and
// the value; %+v adds what each layout said.
type tsParseError struct {
	field, value string
	causes       []error
}

func (e *tsParseError) Error() string {
	return "failed parsing time field " + e.field + "='" + e.value + "'"
}

// Unwrap returns what each layout said.
func (e *tsParseError) Unwrap() []error { return e.causes }

// Format writes the error; %+v adds each layout's failure, "; "-joined.
func (e *tsParseError) Format(f fmt.State, c rune) {
	_, _ = io.WriteString(f, e.Error())
	if c == 'v' && f.Flag('+') {
		msgs := make([]string, len(e.causes))
		for i, c := range e.causes {
			msgs[i] = c.Error()
		}
		_, _ = io.WriteString(f, ": "+strings.Join(msgs, "; "))
	}
}

// tsCause is Filebeat's parseErrorCause: a layout's failure in its words.
func tsCause(pe *time.ParseError) error {
	if pe.Message != "" {
		return errors.New(pe.Message)
	}
	return errors.New("failed using layout [" + pe.Layout + "] cannot parse [" + pe.ValueElem + "] as [" + pe.LayoutElem + "]")
}
