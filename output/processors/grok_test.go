package processors

import "testing"

// The grok processor against Logstash's grok filter.
func TestGrokProcessor(t *testing.T) {
	line := `83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /index.html HTTP/1.1" 200 203023 "http://semicomplete.com/" "Mozilla/5.0"`
	runCases(t, []processorCase{
		{"COMBINEDAPACHELOG, ECS names, types", `
[[processors]]
[processors.grok.match]
message = "%{COMBINEDAPACHELOG}"
`, `{"message":` + quoteJSON(line) + `}`, `{"message":` + quoteJSON(line) + `,"source":{"address":"83.149.9.216"},"timestamp":"17/May/2015:10:05:03 +0000",` +
			`"http":{"request":{"method":"GET","referrer":"http://semicomplete.com/"},"version":"1.1","response":{"status_code":200,"body":{"size":203023}}},` +
			`"url":{"original":"/index.html"},"user_agent":{"original":"Mozilla/5.0"}}`},
		{"no match tags _grokparsefailure once", `
[[processors]]
[processors.grok.match]
message = "%{IP:client.ip} %{WORD:verb}"
[[processors]]
[processors.grok.match]
message = "%{IP:client.ip} %{WORD:verb}"
`, `{"message":"not an ip"}`, `{"message":"not an ip","tags":["_grokparsefailure"]}`},
		{"missing field is a failure", `
[[processors]]
[processors.grok]
match = {message = "%{WORD:w}"}
tag_on_failure = ["nogrok", "x"]
`, `{"other":"a"}`, `{"other":"a","tags":["nogrok","x"]}`},
		{"patterns in order, first match wins", `
[[processors]]
[processors.grok.match]
message = ["%{INT:n:int} %{WORD:w}", "%{WORD:w} %{WORD:w2}"]
`, `{"message":"abc def"}`, `{"message":"abc def","w":"abc","w2":"def"}`},
		{"break_on_match false applies every pattern", `
[[processors]]
[processors.grok]
break_on_match = false
match = {message = ["%{WORD:first}", "%{WORD:a} %{WORD:b}"]}
`, `{"message":"abc def"}`, `{"message":"abc def","first":"abc","a":"abc","b":"def"}`},
		{"a capture into a string makes a list, unless overwrite", `
[[processors]]
[processors.grok]
match = {message = "%{WORD:message} %{WORD:second}"}
[[processors]]
[processors.grok]
match = {other = "%{WORD:other}"}
overwrite = ["other"]
`, `{"message":"one two","other":"x"}`, `{"message":["one two","one"],"second":"two","other":"x"}`},
		{"target and pattern_definitions", `
[[processors]]
[processors.grok]
target = "parsed"
match = {message = "%{MYID:id} %{NUMBER:took:float}"}
pattern_definitions = {MYID = "[A-Z]{3}-[0-9]+"}
`, `{"message":"ABC-123 0.25"}`, `{"message":"ABC-123 0.25","parsed":{"id":"ABC-123","took":0.25}}`},
		// b's group takes no part in the match, c and d capture the empty
		// string: left out by default.
		{"empty and absent captures left out", `
[[processors]]
[processors.grok.match]
message = "^%{WORD:a}(?: %{WORD:b})?(?: %{INT:n:int})?:%{DATA:c}:%{DATA:d:float}$"
`, `{"message":"x::"}`, `{"message":"x::","a":"x"}`},
		// Kept as Logstash keeps them: an absent capture null, an empty
		// one "", either of them 0 with an int or float hint.
		{"keep_empty_captures", `
[[processors]]
[processors.grok]
keep_empty_captures = true
match = {message = "^%{WORD:a}(?: %{WORD:b})?(?: %{INT:n:int})?:%{DATA:c}:%{DATA:d:float}$"}
`, `{"message":"x::"}`, `{"message":"x::","a":"x","b":null,"n":0,"c":"","d":0}`},
		{"keep_empty_captures: into a string, a list, as in Logstash", `
[[processors]]
[processors.grok]
keep_empty_captures = true
match = {message = "^%{WORD:a}(?: %{WORD:b})?$"}
`, `{"message":"x","b":"kept"}`, `{"message":"x","b":["kept",null],"a":"x"}`},
	})
}

// Logstash's bracket field names are refused by name, when checking.
func TestGrokProcessorErrors(t *testing.T) {
	for doc, at := range map[string]string{
		"[[processors]]\n[processors.grok.match]\nmessage = '%{IP:[client][ip]}'\n":            "processors[0].grok.match.message",
		"[[processors]]\n[processors.grok.match]\nmessage = '%{NOSUCHPATTERN:x}'\n":            "processors[0].grok.match.message",
		"[[processors]]\n[processors.grok]\ntarget = \"t\"\n":                                  "processors[0].grok.match",
		"[[processors]]\n[processors.grok]\nmatch = {m = \"%{WORD:w}\"}\nbreak_on_match = 1\n": "processors[0].grok.break_on_match",
	} {
		_, err := compileTOML(t, doc)
		ces := ConfigErrors(err)
		ok := len(ces) == 1
		var ce *ConfigError
		if ok {
			ce = ces[0]
		}
		if !ok || ce.At != at {
			t.Errorf("%s: got %v, want an error at %s", doc, err, at)
		}
	}
}
