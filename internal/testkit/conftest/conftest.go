// Package conftest holds configuration test data shared by conf's tests and
// cmd/logpond's (logpond -check-config must reject the same files, naming
// the same keys). Only tests import it.
package conftest

// Mistake is a configuration file with one problem and what the error about
// it must say.
type Mistake struct {
	Name string
	TOML string
	Key  string // the key the error must name ("" when there is none, e.g. a syntax error)
	Line int    // the line it must point at (0: not checked)
	Want string // a phrase the message must contain
}

// Whole says whether the problem is found by the checks of how components
// work together (server.ConfigChecks), not by conf alone.
func (m Mistake) Whole() bool { return whole[m.Name] }

var whole = map[string]bool{
	"ledger max below two records":         true,
	"index template unclosed":              true,
	"unaligned ledger segment":             true,
	"event larger than the journal admits": true,
}

// Mistakes are broken configuration files, one problem each. The error
// for each must start with "conf: <file name>", name Key and contain Want.
var Mistakes = []Mistake{
	{"unknown key", "[journal]\ndir = \"/j\"\nsegment_size = \"1MiB\"\n", "journal.segment_size", 3, `unknown key in [journal] (did you mean "segment_bytes"?)`},
	{"unknown key without a near miss", "[admin]\nzzz = 1\n", "admin.zzz", 2, "known keys there: listen"},
	{"unknown section", "[inputs.beats]\nlisten = \":5044\"\n", "inputs.beats", 1, "[inputs] is not a section of logpond's configuration (did you mean [input]?)"},
	{"unknown top-level key", "journal_dir = \"/j\"\n", "journal_dir", 1, "unknown key at the top level"},
	{"bad size", "[journal]\nmax_bytes = \"12XB\"\n", "journal.max_bytes", 2, `unknown unit "XB"`},
	{"ambiguous size unit", "[ledger]\nmax_bytes = \"10GB\"\n", "ledger.max_bytes", 2, "write 10GiB"},
	{"size without number", "[ledger]\nmax_bytes = \"GiB\"\n", "ledger.max_bytes", 2, "want a whole number and a unit"},
	{"negative size", "[ledger]\nmax_bytes = -1\n", "ledger.max_bytes", 2, "must not be negative"},
	{"bad duration", "[journal]\nmax_group_wait = \"2 fortnights\"\n", "journal.max_group_wait", 2, "invalid duration"},
	{"duration without unit", "[ledger]\nflush_interval = 100\n", "ledger.flush_interval", 2, "want a string with a unit"},
	{"negative duration", "[ledger]\nretention = \"-1h\"\n", "ledger.retention", 2, "must not be negative"},
	{"wrong type", "[ledger]\ndirect_io = \"yes\"\n", "", 0, "direct_io"},
	{"syntax error", "[journal\n", "", 2, "to end table name"},
	{"journal max below two segments", "[journal]\nsegment_bytes = \"64MiB\"\nmax_bytes = \"100MiB\"\nspare_segments = 0\n", "journal.max_bytes", 3, "less than (2 + journal.spare_segments 0) × journal.segment_bytes (64MiB): raise max_bytes to at least 128MiB"},
	{"journal max below two segments and the spares", "[journal]\nsegment_bytes = \"64MiB\"\nmax_bytes = \"200MiB\"\n", "journal.max_bytes", 3, "less than (2 + journal.spare_segments 2) × journal.segment_bytes (64MiB): raise max_bytes to at least 256MiB, lower spare_segments"},
	{"ledger max below two segments", "[ledger]\nmax_bytes = \"256MiB\"\n", "ledger.max_bytes", 2, "raise max_bytes to at least 512MiB"},
	{"ledger max below two records", "[journal]\nmax_group_bytes = \"4MiB\"\n[ledger]\nsegment_bytes = \"4MiB\"\nmax_bytes = \"12MiB\"\n", "ledger.max_bytes", 5, "no room for two of the largest records (8196KiB each on disk, from journal.max_group_bytes 4MiB): raise max_bytes to at least 17MiB"},
	{"group bytes above segment", "[journal]\nsegment_bytes = \"1MiB\"\nmax_bytes = \"2MiB\"\nmax_group_bytes = \"2MiB\"\n", "journal.max_group_bytes", 4, "more than journal.segment_bytes"},
	{"group bytes too small", "[journal]\nmax_group_bytes = 10\n", "journal.max_group_bytes", 2, "below 4KiB"},
	{"negative spare segments", "[journal]\nspare_segments = -1\n", "journal.spare_segments", 2, "outside 0…16"},
	{"index template unclosed", "[output.elasticsearch]\nindex = \"logs-%{[host][name]\"\n", "output.elasticsearch.index", 2, "sprintf:"},
	{"fallback index uppercase", "[output.elasticsearch]\nfallback_index = \"Lost\"\n", "output.elasticsearch.fallback_index", 2, "index names are lowercase"},
	{"document id mode", "[output.elasticsearch]\ndocument_id = \"random\"\n", "output.elasticsearch.document_id", 2, "use auto"},
	{"flush above request limit", "[output.elasticsearch]\nflush_bytes = \"200MiB\"\n", "output.elasticsearch.flush_bytes", 2, "outside 4KiB…max_request_bytes"},
	{"concurrency mode", "[output.elasticsearch]\nconcurrency = \"auto\"\n", "output.elasticsearch.concurrency", 2, "use adaptive"},
	{"compression", "[output.elasticsearch]\ncompression = \"zstd\"\n", "output.elasticsearch.compression", 2, "use none or gzip"},
	{"retry bounds", "[output.elasticsearch]\nretry_max_interval = \"1s\"\n", "output.elasticsearch.retry_max_interval", 2, "less than retry_initial_interval"},
	{"dead letters smaller than events", "[output.elasticsearch]\ndead_letter_max_bytes = \"16MiB\"\n", "output.elasticsearch.dead_letter_max_bytes", 2, "raise it to at least 68MiB"},
	{"dead letter age too short", "[output.elasticsearch]\ndead_letter_max_age = \"30s\"\n", "output.elasticsearch.dead_letter_max_age", 2, "use 0 to keep dead letters until they are purged, or at least 1m0s"},
	{"tls verification mode", "[output.elasticsearch.tls]\nverification_mode = \"strict\"\n", "output.elasticsearch.tls.verification_mode", 2, "use full"},
	{"ledger compression codec", "[ledger]\ncompression = \"gzip\"\n", "ledger.compression", 2, `"gzip": use s2 (records stored compressed, fastest), zstd`},
	{"ledger compression level name", "[ledger]\ncompression_level = \"max\"\n", "ledger.compression_level", 2, `"max" is not a level: use "fastest", "default", "better" or "best"`},
	{"ledger compression level number", "[ledger]\ncompression_level = 3\n", "ledger.compression_level", 2, `3: levels are names, not numbers: use "fastest" (about zstd level 1)`},
	{"group wait too long", "[journal]\nmax_group_wait = \"5s\"\n", "journal.max_group_wait", 2, "use a few milliseconds"},
	{"tiny segment", "[journal]\nsegment_bytes = \"4KiB\"\n", "journal.segment_bytes", 2, "outside 1MiB…1GiB"},
	{"unaligned ledger segment", "[ledger]\nsegment_bytes = 1048577\n", "ledger.segment_bytes", 2, "not a multiple of 4KiB"},
	{"zero flush interval", "[ledger]\nflush_interval = \"0s\"\n", "ledger.flush_interval", 2, "outside (0, 1m0s]"},
	{"missing journal dir", "[journal]\ndir = \"\"\n", "journal.dir", 2, "is empty: set it to the directory"},
	{"missing ledger dir", "[ledger]\ndir = \" \"\n", "ledger.dir", 2, "is empty"},
	{"same dirs", "[journal]\ndir = \"/d\"\n[ledger]\ndir = \"/d/\"\n", "ledger.dir", 4, "overlaps journal.dir"},
	{"ledger inside journal", "[journal]\ndir = \"/d\"\n[ledger]\ndir = \"/d/ledger\"\n", "ledger.dir", 4, "overlaps"},
	{"too many connections", "[input.beats]\nmax_connections = 70000\n", "input.beats.max_connections", 2, "at most 65536"},
	{"bad listen", "[input.beats]\nlisten = \"5044\"\n", "input.beats.listen", 2, "is not host:port"},
	{"bad port", "[admin]\nlisten = \"127.0.0.1:http\"\n", "admin.listen", 2, "not a number"},
	{"bad host", "[output.elasticsearch]\nhosts = [\"ftp://es:9200\"]\n", "output.elasticsearch.hosts", 2, `scheme "ftp"`},
	{"hosts with different credentials", "[output.elasticsearch]\nhosts = [\"https://a:pw1@es1:9200\", \"https://b:pw2@es2:9200\"]\n", "output.elasticsearch.hosts", 2, "entry 2 (\"https://es2:9200\") carries other credentials than entry 1"},
	{"host credentials and api_key", "[output.elasticsearch]\nhosts = [\"https://a:pw1@es1:9200\"]\napi_key = \"a2V5\"\n", "output.elasticsearch.hosts", 2, "api_key is set too: use one of them"},
	{"host credentials and other username", "[output.elasticsearch]\nhosts = [\"https://a:pw1@es1:9200\"]\nusername = \"b\"\npassword = \"pw2\"\n", "output.elasticsearch.hosts", 2, "other credentials than username and password"},
	{"section in other case", "[Journal]\ndir = \"/j\"\n", "Journal", 1, "keys are case-sensitive: write \"journal\""},
	{"key in other case", "[journal]\nDir = \"/j\"\n", "journal.Dir", 2, "keys are case-sensitive: write \"dir\""},
	{"host user without password", "[output.elasticsearch]\nhosts = [\"https://a@es1:9200\"]\n", "output.elasticsearch.hosts", 2, "has user info but no password"},
	{"host password with a slash", "[output.elasticsearch]\nhosts = [\"https://a:pw/1@es1:9200\"]\n", "output.elasticsearch.hosts", 2, "percent-encode"},
	{"no hosts", "[output.elasticsearch]\nhosts = []\n", "output.elasticsearch.hosts", 2, "list at least one"},
	{"event larger than the journal admits", "[journal]\nsegment_bytes = \"8MiB\"\nmax_bytes = \"32MiB\"\nmax_group_bytes = \"1MiB\"\n[input.beats]\nmax_event_bytes = \"12MiB\"\n", "input.beats.max_event_bytes", 0, "does not fit one journal record"},
	{"event larger than the batch", "[input.beats]\nmax_event_bytes = \"1GiB\"\n", "input.beats.max_batch_bytes", 0, "less than input.beats.max_event_bytes"},
	{"tls key without cert", "[input.beats.tls]\nkey = \"/k.pem\"\n", "input.beats.tls.key", 0, "set both"},
	{"client auth without CA", "[input.beats.tls]\ncert = \"/c\"\nkey = \"/k\"\nclient_auth = \"required\"\n", "input.beats.tls.client_ca", 0, "needs client_ca"},
	{"bad client auth", "[input.beats.tls]\nclient_auth = \"maybe\"\n", "input.beats.tls.client_auth", 2, "use none, optional or required"},
	{"zero keepalive", "[input.beats]\nkeepalive = \"0s\"\n", "input.beats.keepalive", 2, "must be more than 0s"},
	{"bad log level", "[log]\nlevel = \"loud\"\n", "log.level", 2, "use debug, info, warn or error"},
}
