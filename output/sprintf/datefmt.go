package sprintf

import (
	"fmt"
	"time"
)

// A date pattern (Joda-Time for %{+...}, java.time for %{{...}}) compiles to
// a list of dateOps. All output is in UTC with English names, as Logstash
// produces with its default locale, so zone letters compile to literals.

type opKind uint8

const (
	opLiteral        opKind = iota
	opYear                  // proleptic year (Joda y, java u)
	opYearOfEra             // Joda Y, java y
	opWeekyear              // ISO week-based year (Joda x)
	opTwoDigitYear          // |year| % 100, two digits
	opTwoDigitYoE           // |year of era| % 100, two digits
	opTwoDigitWeekyr        // |ISO week-based year| % 100, two digits
	opCentury               // century of era (Joda C)
	opEra                   // AD / BC
	opEraLong               // Anno Domini / Before Christ (java GGGG)
	opEraNarrow             // A / B (java GGGGG)
	opMonth                 // 1..12
	opMonthShort            // Jan
	opMonthLong             // January
	opMonthNarrow           // J
	opDay                   // day of month
	opDayOfYear             // 1..366
	opWeek                  // ISO week of week-based year
	opWeekdayNum            // ISO day of week, Monday=1 .. Sunday=7
	opWeekdayShort          // Mon
	opWeekdayLong           // Monday
	opWeekdayNarrow         // M
	opHalfday               // AM / PM
	opHour                  // 0..23
	opHourOfHalfday         // 0..11
	opClockhourHalf         // 1..12
	opClockhourDay          // 1..24
	opMinute                // 0..59
	opSecond                // 0..59
	opFractionMillis        // Joda S: n digits of the millisecond fraction
	opFractionNanos         // java S: n digits of the nanosecond fraction
	opNanoOfSecond          // java n
)

type dateOp struct {
	kind opKind
	// n is the letter count: the minimum number of digits for numbers, the
	// number of digits for fractions.
	n int
	// plus makes java's EXCEEDS_PAD sign style print '+' before a year that
	// is wider than n digits.
	plus bool
	lit  string
}

var (
	monthsLong = [...]string{"January", "February", "March", "April", "May", "June",
		"July", "August", "September", "October", "November", "December"}
	weekdaysLong = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday",
		"Thursday", "Friday", "Saturday"}
)

// dateError builds a Compile error for a date pattern; off is the byte
// offset in the template of the offending character.
func dateError(kind, pattern string, off int, format string, args ...any) error {
	return fmt.Errorf("sprintf: %s %q at offset %d: %s", kind, pattern, off, fmt.Sprintf(format, args...))
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// patternItem is a run of one pattern letter, or a piece of literal text.
type patternItem struct {
	letter byte // 0 for literal text
	n      int
	lit    string
	off    int // offset of the item within the pattern
}

// splitPattern cuts a pattern into letter runs and literal text. Both
// dialects quote literal text with '...' and write a quote as two quotes. Letters
// outside quotes are pattern letters; other characters are literal, except
// those in special, which are passed as one-character letter items.
func splitPattern(kind, pattern string, base int, special string) ([]patternItem, error) {
	var items []patternItem
	var lit []byte
	litOff := -1
	flush := func() {
		if len(lit) > 0 {
			items = append(items, patternItem{lit: string(lit), off: litOff})
			lit = lit[:0]
		}
		litOff = -1
	}
	for i := 0; i < len(pattern); {
		c := pattern[i]
		switch {
		case c == '\'':
			if litOff < 0 {
				litOff = i
			}
			if i+1 < len(pattern) && pattern[i+1] == '\'' {
				lit = append(lit, '\'')
				i += 2
				continue
			}
			j := i + 1
			for {
				if j >= len(pattern) {
					return nil, dateError(kind, pattern, base+i, "unterminated quote")
				}
				if pattern[j] == '\'' {
					if j+1 < len(pattern) && pattern[j+1] == '\'' {
						lit = append(lit, '\'')
						j += 2
						continue
					}
					break
				}
				lit = append(lit, pattern[j])
				j++
			}
			i = j + 1
		case isLetter(c):
			flush()
			j := i + 1
			for j < len(pattern) && pattern[j] == c {
				j++
			}
			items = append(items, patternItem{letter: c, n: j - i, off: i})
			i = j
		case indexByte(special, c):
			flush()
			items = append(items, patternItem{letter: c, n: 1, off: i})
			i++
		default:
			if litOff < 0 {
				litOff = i
			}
			lit = append(lit, c)
			i++
		}
	}
	flush()
	return items, nil
}

func indexByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// compileJoda compiles a Joda-Time DateTimeFormat pattern (Logstash's
// %{+...}). base is the offset of the pattern in the template.
func compileJoda(pattern string, base int) ([]dateOp, error) {
	const kind = "date format"
	if pattern == "" {
		return nil, fmt.Errorf("sprintf: empty date format \"%%{+}\" at offset %d", base-3)
	}
	items, err := splitPattern(kind, pattern, base, "")
	if err != nil {
		return nil, err
	}
	ops := make([]dateOp, 0, len(items))
	for _, it := range items {
		n := it.n
		var op dateOp
		switch it.letter {
		case 0:
			op = dateOp{kind: opLiteral, lit: it.lit}
		case 'G':
			op = dateOp{kind: opEra}
		case 'C':
			op = dateOp{kind: opCentury, n: n}
		case 'y', 'Y', 'x':
			full, two := opYear, opTwoDigitYear
			switch it.letter {
			case 'Y':
				// Joda prints YY from the proleptic year, like yy.
				full = opYearOfEra
			case 'x':
				full, two = opWeekyear, opTwoDigitWeekyr
			}
			if n == 2 {
				op.kind = two
			} else {
				op = dateOp{kind: full, n: n}
			}
		case 'M':
			switch {
			case n >= 4:
				op.kind = opMonthLong
			case n == 3:
				op.kind = opMonthShort
			default:
				op = dateOp{kind: opMonth, n: n}
			}
		case 'd':
			op = dateOp{kind: opDay, n: n}
		case 'D':
			op = dateOp{kind: opDayOfYear, n: n}
		case 'w':
			op = dateOp{kind: opWeek, n: n}
		case 'e':
			op = dateOp{kind: opWeekdayNum, n: n}
		case 'E':
			if n >= 4 {
				op.kind = opWeekdayLong
			} else {
				op.kind = opWeekdayShort
			}
		case 'a':
			op.kind = opHalfday
		case 'H':
			op = dateOp{kind: opHour, n: n}
		case 'K':
			op = dateOp{kind: opHourOfHalfday, n: n}
		case 'h':
			op = dateOp{kind: opClockhourHalf, n: n}
		case 'k':
			op = dateOp{kind: opClockhourDay, n: n}
		case 'm':
			op = dateOp{kind: opMinute, n: n}
		case 's':
			op = dateOp{kind: opSecond, n: n}
		case 'S':
			op = dateOp{kind: opFractionMillis, n: n}
		case 'z':
			if n >= 4 {
				op = dateOp{kind: opLiteral, lit: "Coordinated Universal Time"}
			} else {
				op = dateOp{kind: opLiteral, lit: "UTC"}
			}
		case 'Z':
			switch n {
			case 1:
				op = dateOp{kind: opLiteral, lit: "+0000"}
			case 2:
				op = dateOp{kind: opLiteral, lit: "+00:00"}
			default:
				op = dateOp{kind: opLiteral, lit: "UTC"}
			}
		default:
			return nil, dateError(kind, pattern, base+it.off,
				"unknown pattern letter %q (Joda-Time letters: G C Y x w e E y D M d a K h H k m s S z Z; quote literal text with '...')", it.letter)
		}
		ops = appendOp(ops, op)
	}
	return ops, nil
}

// compileJava compiles the supported subset of a java.time DateTimeFormatter
// pattern (Logstash 8's %{{...}}). base is the offset of the pattern in the
// template.
func compileJava(pattern string, base int) ([]dateOp, error) {
	const kind = "java time format"
	if pattern == "" {
		return nil, fmt.Errorf("sprintf: empty java time format \"%%{{}}\" at offset %d", base-3)
	}
	if pattern == "TIME_NOW" {
		return nil, fmt.Errorf("sprintf: %%{{TIME_NOW}} at offset %d is not supported (it renders the wall clock, not the event)", base-3)
	}
	items, err := splitPattern(kind, pattern, base, "[]{}#")
	if err != nil {
		return nil, err
	}
	ops := make([]dateOp, 0, len(items))
	optional := 0
	for _, it := range items {
		n := it.n
		tooMany := func(max int) error {
			if n > max {
				return dateError(kind, pattern, base+it.off, "too many pattern letters %q (at most %d)", it.letter, max)
			}
			return nil
		}
		var op dateOp
		var err error
		switch it.letter {
		case 0:
			op = dateOp{kind: opLiteral, lit: it.lit}
		case '[':
			// Optional sections print whenever their fields are available,
			// and every supported field always is.
			optional++
			continue
		case ']':
			if optional == 0 {
				return nil, dateError(kind, pattern, base+it.off, "']' without a previous '['")
			}
			optional--
			continue
		case '{', '}', '#':
			return nil, dateError(kind, pattern, base+it.off, "%q is reserved", it.letter)
		case 'G':
			switch {
			case n <= 3:
				op.kind = opEra
			case n == 4:
				op.kind = opEraLong
			case n == 5:
				op.kind = opEraNarrow
			}
			err = tooMany(5)
		case 'u', 'y':
			k := opYear
			if it.letter == 'y' {
				k = opYearOfEra
			}
			switch {
			case n == 2 && k == opYear:
				op.kind = opTwoDigitYear
			case n == 2:
				op.kind = opTwoDigitYoE
			default:
				op = dateOp{kind: k, n: n, plus: n >= 4}
			}
		case 'M':
			switch n {
			case 1, 2:
				op = dateOp{kind: opMonth, n: n}
			case 3:
				op.kind = opMonthShort
			case 4:
				op.kind = opMonthLong
			case 5:
				op.kind = opMonthNarrow
			}
			err = tooMany(5)
		case 'd':
			op, err = dateOp{kind: opDay, n: n}, tooMany(2)
		case 'D':
			op, err = dateOp{kind: opDayOfYear, n: n}, tooMany(3)
		case 'E':
			switch {
			case n <= 3:
				op.kind = opWeekdayShort
			case n == 4:
				op.kind = opWeekdayLong
			case n == 5:
				op.kind = opWeekdayNarrow
			}
			err = tooMany(5)
		case 'a':
			op, err = dateOp{kind: opHalfday}, tooMany(1)
		case 'H':
			op, err = dateOp{kind: opHour, n: n}, tooMany(2)
		case 'K':
			op, err = dateOp{kind: opHourOfHalfday, n: n}, tooMany(2)
		case 'h':
			op, err = dateOp{kind: opClockhourHalf, n: n}, tooMany(2)
		case 'k':
			op, err = dateOp{kind: opClockhourDay, n: n}, tooMany(2)
		case 'm':
			op, err = dateOp{kind: opMinute, n: n}, tooMany(2)
		case 's':
			op, err = dateOp{kind: opSecond, n: n}, tooMany(2)
		case 'S':
			op, err = dateOp{kind: opFractionNanos, n: n}, tooMany(9)
		case 'n':
			op = dateOp{kind: opNanoOfSecond, n: n}
		case 'X':
			op, err = dateOp{kind: opLiteral, lit: "Z"}, tooMany(5)
		case 'x':
			op.kind = opLiteral
			switch n {
			case 1:
				op.lit = "+00"
			case 2, 4:
				op.lit = "+0000"
			default:
				op.lit = "+00:00"
			}
			err = tooMany(5)
		case 'Z':
			op.kind = opLiteral
			switch {
			case n <= 3:
				op.lit = "+0000"
			case n == 4:
				op.lit = "GMT"
			default:
				op.lit = "Z"
			}
			err = tooMany(5)
		case 'Y', 'w', 'W', 'e', 'c':
			return nil, dateError(kind, pattern, base+it.off,
				"pattern letter %q depends on the JVM's locale and is not supported; for ISO weeks use the Joda form %%{+xxxx.ww}", it.letter)
		default:
			return nil, dateError(kind, pattern, base+it.off,
				"pattern letter %q is not supported (supported: G u y M d D E a H K h k m s S n X x Z; quote literal text with '...')", it.letter)
		}
		if err != nil {
			return nil, err
		}
		ops = appendOp(ops, op)
	}
	return ops, nil
}

// appendOp appends op, merging adjacent literals.
func appendOp(ops []dateOp, op dateOp) []dateOp {
	if op.kind == opLiteral && len(ops) > 0 && ops[len(ops)-1].kind == opLiteral {
		ops[len(ops)-1].lit += op.lit
		return ops
	}
	return append(ops, op)
}

// needsISOWeek reports whether ops use the ISO week date.
func needsISOWeek(ops []dateOp) bool {
	for _, op := range ops {
		switch op.kind {
		case opWeekyear, opTwoDigitWeekyr, opWeek:
			return true
		}
	}
	return false
}

// dateFields is a broken-down UTC time.
type dateFields struct {
	year, month, day    int
	hour, minute, sec   int
	nsec, yday, weekday int // weekday: 0 = Sunday
	isoYear, isoWeek    int
}

func breakDown(t time.Time, iso bool) dateFields {
	var f dateFields
	var m time.Month
	f.year, m, f.day = t.Date()
	f.month = int(m)
	f.hour, f.minute, f.sec = t.Clock()
	f.nsec = t.Nanosecond()
	f.yday = t.YearDay()
	f.weekday = int(t.Weekday())
	if iso {
		f.isoYear, f.isoWeek = t.ISOWeek()
	}
	return f
}

func yearOfEra(y int) int {
	if y <= 0 {
		return 1 - y
	}
	return y
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// appendNum appends v in decimal with at least min digits (after the sign).
// With plus, a positive v wider than min digits gets a '+' sign.
func appendNum(dst []byte, v int64, min int, plus bool) []byte {
	var u uint64
	if v < 0 {
		dst = append(dst, '-')
		u = uint64(-(v + 1)) + 1
	} else {
		u = uint64(v)
	}
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	w := len(buf) - i
	if plus && v > 0 && w > min {
		dst = append(dst, '+')
	}
	for ; w < min; w++ {
		dst = append(dst, '0')
	}
	return append(dst, buf[i:]...)
}

// appendFraction appends the first n digits of the fraction of a second
// given as frac units of 10^-prec seconds (prec is 3 or 9).
func appendFraction(dst []byte, frac, prec, n int) []byte {
	var buf [9]byte
	for i := prec - 1; i >= 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	if n <= prec {
		return append(dst, buf[:n]...)
	}
	dst = append(dst, buf[:prec]...)
	for i := prec; i < n; i++ {
		dst = append(dst, '0')
	}
	return dst
}

func appendDate(dst []byte, ops []dateOp, f *dateFields) []byte {
	for i := range ops {
		op := &ops[i]
		switch op.kind {
		case opLiteral:
			dst = append(dst, op.lit...)
		case opYear:
			dst = appendNum(dst, int64(f.year), op.n, op.plus)
		case opYearOfEra:
			dst = appendNum(dst, int64(yearOfEra(f.year)), op.n, op.plus)
		case opWeekyear:
			dst = appendNum(dst, int64(f.isoYear), op.n, false)
		case opTwoDigitYear:
			dst = appendNum(dst, int64(abs(f.year)%100), 2, false)
		case opTwoDigitYoE:
			dst = appendNum(dst, int64(yearOfEra(f.year)%100), 2, false)
		case opTwoDigitWeekyr:
			dst = appendNum(dst, int64(abs(f.isoYear)%100), 2, false)
		case opCentury:
			dst = appendNum(dst, int64(yearOfEra(f.year)/100), op.n, false)
		case opEra:
			if f.year > 0 {
				dst = append(dst, "AD"...)
			} else {
				dst = append(dst, "BC"...)
			}
		case opEraLong:
			if f.year > 0 {
				dst = append(dst, "Anno Domini"...)
			} else {
				dst = append(dst, "Before Christ"...)
			}
		case opEraNarrow:
			if f.year > 0 {
				dst = append(dst, 'A')
			} else {
				dst = append(dst, 'B')
			}
		case opMonth:
			dst = appendNum(dst, int64(f.month), op.n, false)
		case opMonthShort:
			dst = append(dst, monthsLong[f.month-1][:3]...)
		case opMonthLong:
			dst = append(dst, monthsLong[f.month-1]...)
		case opMonthNarrow:
			dst = append(dst, monthsLong[f.month-1][0])
		case opDay:
			dst = appendNum(dst, int64(f.day), op.n, false)
		case opDayOfYear:
			dst = appendNum(dst, int64(f.yday), op.n, false)
		case opWeek:
			dst = appendNum(dst, int64(f.isoWeek), op.n, false)
		case opWeekdayNum:
			dst = appendNum(dst, int64((f.weekday+6)%7+1), op.n, false)
		case opWeekdayShort:
			dst = append(dst, weekdaysLong[f.weekday][:3]...)
		case opWeekdayLong:
			dst = append(dst, weekdaysLong[f.weekday]...)
		case opWeekdayNarrow:
			dst = append(dst, weekdaysLong[f.weekday][0])
		case opHalfday:
			if f.hour < 12 {
				dst = append(dst, "AM"...)
			} else {
				dst = append(dst, "PM"...)
			}
		case opHour:
			dst = appendNum(dst, int64(f.hour), op.n, false)
		case opHourOfHalfday:
			dst = appendNum(dst, int64(f.hour%12), op.n, false)
		case opClockhourHalf:
			h := f.hour % 12
			if h == 0 {
				h = 12
			}
			dst = appendNum(dst, int64(h), op.n, false)
		case opClockhourDay:
			h := f.hour
			if h == 0 {
				h = 24
			}
			dst = appendNum(dst, int64(h), op.n, false)
		case opMinute:
			dst = appendNum(dst, int64(f.minute), op.n, false)
		case opSecond:
			dst = appendNum(dst, int64(f.sec), op.n, false)
		case opFractionMillis:
			if op.n > 18 {
				// Joda cannot scale milliseconds past 18 digits and prints zeros.
				for j := 0; j < op.n; j++ {
					dst = append(dst, '0')
				}
				break
			}
			dst = appendFraction(dst, f.nsec/1e6, 3, op.n)
		case opFractionNanos:
			dst = appendFraction(dst, f.nsec, 9, op.n)
		case opNanoOfSecond:
			dst = appendNum(dst, int64(f.nsec), op.n, false)
		}
	}
	return dst
}
