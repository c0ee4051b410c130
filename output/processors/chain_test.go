package processors

import (
	"fmt"
	"sync"
	"testing"
)

// The dissect processor's options and failures, as Filebeat's.
func TestDissectProcessor(t *testing.T) {
	runCases(t, []processorCase{
		{"default target_prefix", `
[[processors]]
[processors.dissect]
tokenizer = "%{key1} %{key2}"
`, `{"message":"a b"}`, `{"message":"a b","dissect":{"key1":"a","key2":"b"}}`},
		{"root, dotted keys nest, conversions", `
[[processors]]
[processors.dissect]
tokenizer = '%{client.ip} [%{ts}] %{status|integer} %{took|float} %{ok|boolean}'
target_prefix = ""
`, `{"message":"10.0.0.1 [now] 200 0.5 true"}`, `{"message":"10.0.0.1 [now] 200 0.5 true","client":{"ip":"10.0.0.1"},"ts":"now","status":200,"took":0.5,"ok":true}`},
		{"a conversion that fails keeps the string", `
[[processors]]
[processors.dissect]
tokenizer = '%{status|integer}'
target_prefix = ""
`, `{"message":"abc"}`, `{"message":"abc","status":"abc"}`},
		{"other field, trim_values", `
[[processors]]
[processors.dissect]
tokenizer = "%{a},%{b}"
field = "raw"
target_prefix = "p"
trim_values = "all"
trim_chars = " *"
`, `{"raw":" x *, *y "}`, `{"raw":" x *, *y ","p":{"a":"x","b":"y"}}`},
		{"no match flags the event, twice when two fail", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} - %{b}"
[[processors]]
[processors.dissect]
tokenizer = "%{a} - %{b}"
ignore_failure = true
`, `{"message":"nothing to cut"}`, `{"message":"nothing to cut","log":{"flags":["dissect_parsing_error","dissect_parsing_error"]}}`},
		{"existing key is not overwritten", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{b}"
target_prefix = ""
`, `{"message":"1 2","b":"keep"}`, `{"message":"1 2","b":"keep"}`},
		{"overwrite_keys", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{b}"
target_prefix = ""
overwrite_keys = true
`, `{"message":"1 2","b":"old"}`, `{"message":"1 2","a":"1","b":"2"}`},
		{"missing field: not flagged", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{b}"
`, `{"other":"1 2"}`, `{"other":"1 2"}`},
		{"a nested key taken: nothing written", `
[[processors]]
[processors.dissect]
tokenizer = "%{x} %{a.b} %{a.c}"
target_prefix = ""
`, `{"message":"1 2 3","a":{"c":"keep"}}`, `{"message":"1 2 3","a":{"c":"keep"}}`},
		{"a path through a string: nothing written", `
[[processors]]
[processors.dissect]
tokenizer = "%{x} %{a.b}"
target_prefix = ""
`, `{"message":"1 2","a":"text"}`, `{"message":"1 2","a":"text"}`},
		{"a key that is a prefix of another", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{a.b}"
target_prefix = ""
`, `{"message":"1 2"}`, `{"message":"1 2"}`},
		{"into objects already there", `
[[processors]]
[processors.dissect]
tokenizer = "%{a.b} %{a.c.d} %{e}"
target_prefix = ""
`, `{"message":"1 2 3","a":{"z":0,"c":{"y":1}}}`, `{"message":"1 2 3","a":{"z":0,"c":{"y":1,"d":"2"},"b":"1"},"e":"3"}`},
		{"indirect field", `
[[processors]]
[processors.dissect]
tokenizer = "%{?name}=%{&name}"
target_prefix = ""
`, `{"message":"color=red"}`, `{"message":"color=red","color":"red"}`},
	})
}

// Conditions on processors, and Filebeat's if/then/else.
func TestConditionsInChains(t *testing.T) {
	runCases(t, []processorCase{
		{"when equals drops", `
[[processors]]
[processors.drop_event.when.equals]
"http.method" = "OPTIONS"
`, `{"http":{"method":"OPTIONS"}}`, ``},
		{"when equals keeps the others", `
[[processors]]
[processors.drop_event.when.equals]
"http.method" = "OPTIONS"
`, `{"http":{"method":"GET"}}`, `{"http":{"method":"GET"}}`},
		{"when range and not", `
[[processors]]
[processors.add_tags]
tags = ["error"]
when.and = [{range = {"status.gte" = 500}}, {not = {has_fields = ["ignored"]}}]
`, `{"status":503}`, `{"status":503,"tags":["error"]}`},
		{"if then", `
[[processors]]
if.contains.message = "ERROR"
then = [{add_tags = {tags = ["bad"]}}]
else = [{add_tags = {tags = ["good"]}}, {drop_fields = {fields = ["x"]}}]
`, `{"message":"an ERROR here","x":1}`, `{"message":"an ERROR here","x":1,"tags":["bad"]}`},
		{"if else", `
[[processors]]
if.contains.message = "ERROR"
then = [{add_tags = {tags = ["bad"]}}]
else = [{add_tags = {tags = ["good"]}}, {drop_fields = {fields = ["x"]}}]
`, `{"message":"fine","x":1}`, `{"message":"fine","tags":["good"]}`},
		{"then stops at its first failure", `
[[processors]]
if.has_fields = ["message"]
then = [{rename = {fields = [{from = "nope", to = "b"}], fail_on_error = false}}, {drop_fields = {fields = ["nope"]}}, {add_tags = {tags = ["after"]}}]
`, `{"message":"m"}`, `{"message":"m"}`},
		{"drop inside then", `
[[processors]]
if.equals.drop = true
then = [{drop_event = {}}]
`, `{"drop":true}`, ``},
	})
}

// The counts of a chain are exact with many Runners at once, more than
// it has count shards (some then share one).
func TestStatsCountEveryRunner(t *testing.T) {
	c := mustChain(t, `
[[processors]]
[processors.add_tags]
tags = ["seen"]
[[processors]]
[processors.drop_event.when.equals]
drop = true
`)
	const runners, events = countShards + 5, 200
	var wg sync.WaitGroup
	for range runners {
		r := c.NewRunner()
		wg.Go(func() {
			for i := range events {
				if _, _, err := r.Run(fmt.Appendf(nil, `{"drop":%v}`, i%4 == 0)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	st := c.Stats()
	if len(st) != 2 || st[0].In != runners*events || st[1].In != runners*events/4 || st[1].Dropped != runners*events/4 {
		t.Errorf("stats %+v, want %d events in, %d of them dropped", st, runners*events, runners*events/4)
	}
}
