// Package sprintf implements Logstash's sprintf format ("event dependent
// configuration") for index and pipeline names, evaluated directly on the raw
// JSON bytes of a Beats event, without decoding the event.
//
// A template is compiled once with [Compile]; [Format.Append] then renders it
// for each event:
//
//	f, err := sprintf.Compile("%{[@metadata][beat]}-%{[@metadata][version]}-%{+yyyy.MM.dd}")
//	...
//	buf, ok := f.Append(buf[:0], event, received)
//	// Filebeat event of 2026-12-02: "filebeat-9.3.0-2026.12.02"
//
// # Template syntax
//
// Text outside references is copied verbatim. There is no escape for a
// literal "%{"; a lone "%" or "}" is ordinary text. A reference starts at
// "%{" and ends at the first "}" after it, so no reference can contain "}".
// Compile rejects an unclosed "%{" (Logstash would copy it verbatim) and an
// empty "%{}" (which Logstash, by a quirk, renders as %{+%s}).
//
// # Field references
//
// %{[a][b][c]} is the field c of the object b of the object a. %{name},
// without brackets, is the top-level field "name", whatever characters the
// name holds: "%{host.name}" is the top-level field "host.name", not
// [host][name]. The bracket grammar is Logstash's strict one: a reference
// is either a bare name or a sequence of bracketed components; text after
// "]" ("[a]b"), "[" inside a name ("a[b]"), an empty "[]", and unbalanced
// brackets are Compile errors. Embedded references flatten, so
// "[a][[b][c]]" is [a][b][c]. Logstash's optional escape styles for field
// references (percent, ampersand) are not supported, so names containing
// "[", "]" or "}" cannot be referenced.
//
// Components are matched against the decoded JSON keys, byte for byte;
// characters that are special in gjson paths or elsewhere ("@", ".", "*",
// "?", "#", "|", "!", spaces, non-ASCII) have no special meaning. In the
// Beats event shape, "@metadata" is an ordinary top-level object, so
// %{[@metadata][beat]} reads it like any other field. When a key occurs twice
// in one object, the first occurrence is used (Logstash, decoding the event
// into a map, would keep the last one; Beats never send duplicate keys).
//
// When the value reached is an array, a component that is a decimal integer
// (optionally signed, as Java's Integer.parseInt reads it) selects an
// element; negative indexes count from the end: %{[tags][0]},
// %{[tags][-1]}.
//
// A referenced value renders as:
//
//   - string: its decoded content (JSON escapes resolved; invalid UTF-8
//     becomes U+FFFD, as in encoding/json). An empty string renders as
//     nothing and counts as present.
//   - number: its JSON text, as written in the event ("1.50", "1e3"); Logstash
//     would print its own rendering of the decoded number ("1.5", "1000.0").
//   - true, false: "true", "false".
//   - object: compact JSON, members in event order, strings with their
//     original escaping (Logstash also renders hashes as JSON).
//   - array: like Logstash, the elements joined with ",", nested arrays
//     flattened, null elements rendering as nothing, strings decoded and
//     objects as compact JSON: ["a","b"] renders as "a,b" and [] as nothing.
//     (Logstash prints objects inside arrays with Java's Map.toString.)
//   - null, a missing field, or a value that is not valid JSON: the reference
//     fails, and Append reports ok=false. Logstash would leave the "%{...}"
//     text in place instead; here the caller chooses the fallback.
//
// # Date references
//
// Date references format the event's @timestamp field in UTC. @timestamp
// may be a string in RFC 3339 form (Beats send "2026-12-02T10:57:41.210Z";
// offsets such as "+02:00", "+0200" or "+02", 1 to 9 fraction digits, no
// fraction, 't', 'z' and ' ' variants are also read, and a timestamp without
// a zone is taken as UTC, as Elasticsearch takes it) or a number of
// milliseconds since the Unix epoch. When @timestamp is missing, null or
// unreadable, the received time given to Append is used instead. Date
// references therefore never fail.
//
// %{+%s} is the number of seconds since the Unix epoch (Logstash's special
// case), rounded down.
//
// %{+PATTERN} formats with a Joda-Time DateTimeFormat pattern, as Logstash
// does. Runs of a letter form a field; the run length is its width:
//
//	y     year; yy is the year modulo 100 in two digits; y, yyy, yyyy... pad to that many digits
//	Y     year of era (the same as y for years after 1 BC); YY as for yy
//	x     ISO 8601 week-based year ("weekyear"); xx as for yy
//	w     ISO 8601 week of the week-based year (1..53)
//	e     ISO day of week, Monday=1 .. Sunday=7
//	E     day of week: E, EE, EEE "Tue"; EEEE... "Tuesday"
//	M     month: M "7", MM "07", MMM "Jul", MMMM... "July"
//	d     day of month        D    day of year (DDD: 001..366)
//	H     hour 0..23          k    hour 1..24
//	K     hour 0..11          h    hour 1..12          a    "AM" / "PM"
//	m     minute              s    second
//	S     fraction of second, as many digits as letters, truncated; Joda
//	      keeps milliseconds only, so SSSSSS is "210000" for .210123
//	C     century of era      G    era, "AD" / "BC"
//	z     time zone name: z..zzz "UTC", zzzz... "Coordinated Universal Time"
//	Z     offset: Z "+0000", ZZ "+00:00", ZZZ... "UTC"
//	'...' literal text; '' is a single quote, inside or outside quotes
//
// Other letters are Compile errors. Characters that are not ASCII letters
// ("." "-" "_" ":" "/" " " and so on) are literal. Numbers are zero-padded to
// the run length (d "2", dd "02", ddd "002"); a negative year keeps its '-'.
// An empty pattern and an unterminated quote are Compile errors (Joda would
// accept the latter).
//
// Note the usual trap, which this package keeps for compatibility: in Joda,
// YYYY is the calendar year of era, not the ISO week-based year, so
// "%{+YYYY.ww}" gives "2027.53" for 2027-01-01 (ISO week 53 of 2026). Use
// "%{+xxxx.ww}" for weekly indexes ("2026.53").
//
// %{{PATTERN}}, Logstash 8's java.time form, is supported for the letters
// whose output does not depend on the JVM's locale. They follow
// java.time.format.DateTimeFormatter: u proleptic year and y year of era
// (uu/yy two digits; four or more letters pad and put '+' before a wider
// year), M (M, MM, MMM "Jul", MMMM "July", MMMMM "J"), d and D, E (E..EEE
// "Tue", EEEE "Tuesday", EEEEE "T"), a, H, K, h, k, m, s (at most two
// letters, D three), S fraction of second (1 to 9 letters, nanosecond
// precision, truncated), n nano of second, G era (G..GGG "AD", GGGG "Anno
// Domini", GGGGG "A"), and the UTC offsets X ("Z"), x ("+00", "+0000",
// "+00:00") and Z ("+0000", ZZZZ "GMT", ZZZZZ "Z"). Quotes work as in Joda;
// "[" and "]" (optional sections) are accepted and print their content.
// (n and nn... pad to the letter count but print every digit where Java
// would fail on a value wider than that.)
// Y, w, W, e and c are rejected: their meaning follows the JVM's default
// locale, so Logstash's own output varies (use the Joda x and w for ISO
// weeks). %{{TIME_NOW}}, which Logstash renders as the current wall-clock
// time, is rejected too, as is any other letter.
//
// # Errors
//
// Compile errors start with "sprintf: " and give the byte offset in the
// template of the offending reference or pattern letter, and its text.
package sprintf
