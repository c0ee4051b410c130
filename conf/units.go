package conf

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Size is a number of bytes. In TOML it is a string with a binary unit
// ("64MiB", "512 KiB", "1GiB") or a plain integer number of bytes.
type Size int64

// sizeUnits are the accepted units, largest first so String picks the
// largest exact one. Binary units only: "MB" means 10^6 to some tools and
// 2^20 to others (Logstash), so logpond refuses to guess.
var sizeUnits = []struct {
	name string
	mult int64
}{
	{"TiB", 1 << 40},
	{"GiB", 1 << 30},
	{"MiB", 1 << 20},
	{"KiB", 1 << 10},
	{"B", 1},
}

// ParseSize parses "64MiB", "512 KiB", "4096" or "4096B".
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid size %q: want a whole number and a unit, like \"64MiB\"", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: number too large", s)
	}
	unit := strings.TrimSpace(t[i:])
	if unit == "" {
		return Size(n), nil
	}
	for _, u := range sizeUnits {
		if unit == u.name {
			if n > (1<<63-1)/u.mult {
				return 0, fmt.Errorf("invalid size %q: too large", s)
			}
			return Size(n * u.mult), nil
		}
	}
	switch strings.ToLower(unit) {
	case "k", "kb", "m", "mb", "g", "gb", "t", "tb":
		return 0, fmt.Errorf("invalid size %q: unit %q is ambiguous (1000 or 1024?); write %s%s", s, unit, t[:i], binaryFor(unit))
	}
	return 0, fmt.Errorf("invalid size %q: unknown unit %q; use B, KiB, MiB, GiB or TiB", s, unit)
}

func binaryFor(unit string) string {
	switch strings.ToLower(unit)[0] {
	case 'k':
		return "KiB"
	case 'm':
		return "MiB"
	case 'g':
		return "GiB"
	}
	return "TiB"
}

// String formats the size with the largest unit that represents it exactly.
func (s Size) String() string {
	for _, u := range sizeUnits {
		if s != 0 && int64(s)%u.mult == 0 {
			return strconv.FormatInt(int64(s)/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

// MarshalText writes the form ParseSize reads, so a Config encodes to TOML
// that loads back unchanged.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalTOML accepts a string with a unit or a non-negative integer.
func (s *Size) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		*s = n
	case int64:
		if v < 0 {
			return fmt.Errorf("invalid size %d: must not be negative", v)
		}
		*s = Size(v)
	default:
		return fmt.Errorf("invalid size %v (%T): want a string like \"64MiB\" or a whole number of bytes", v, v)
	}
	return nil
}

// Duration is a time span written the Go way in TOML: "2ms", "1.5s", "24h".
type Duration time.Duration

// String formats like time.Duration ("2ms", "1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the form UnmarshalTOML reads.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalTOML accepts a non-negative duration string. A bare number is
// refused because its unit would be a guess.
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("invalid duration %v (%T): want a string with a unit, like \"2ms\", \"5s\" or \"24h\"", v, v)
	}
	p, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a number with a unit (ns, us, ms, s, m, h), like \"2ms\" or \"24h\"", s)
	}
	if p < 0 {
		return fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	*d = Duration(p)
	return nil
}
