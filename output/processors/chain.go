package processors

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/logpond/logpond/internal/jsontree"
)

// processor is one configured processor. run edits e in place; it
// returns drop to remove the event (drop_event), or an error that says
// why it could not process the event. The chain then counts the failure
// and goes on with the event as the processor left it, as Filebeat's
// pipeline does; the processor itself marks the event where Filebeat's
// does (error.message for rename, copy_fields and replace; log.flags for
// dissect and truncate_fields; the error object of decode_json_fields
// with add_error_key; tags for grok, as Logstash's). A processor is
// immutable once built and safe for concurrent use: per-event state
// lives in the event.
type processor interface {
	run(e *event) (drop bool, err error)
}

// condition is a compiled `when`: immutable, safe for concurrent use.
type condition interface {
	match(e *event) bool
}

// builder makes a processor from its options. It reads every option it
// knows through o; the caller refuses the rest.
type builder func(o *options) (processor, error)

// builders are the processors by their Filebeat (or, for grok, Logstash)
// names. It is filled by init functions of the files that implement
// them, and read only after.
var builders = map[string]builder{}

func register(name string, b builder) { builders[name] = b }

// Known lists the processors a chain may use, sorted.
func Known() []string { return sortedKeys(builders) }

// List is a compiled list of processors, in order: the global
// [[processors]] or one output's own. Immutable and safe for concurrent
// use; a Chain runs it.
type List struct {
	at    string // e.g. "processors", "output.kafka.main.processors"
	steps []*spec
}

// spec is one element of a List.
type spec struct {
	name string // e.g. "processors[2].dissect", for metrics and logs
	kind string // the processor's name, "if" for an if/then/else
	proc processor
	when condition // nil: always
}

// Len says how many processors the list holds (at its top level).
func (l *List) Len() int {
	if l == nil {
		return 0
	}
	return len(l.steps)
}

// Compile checks and compiles list, the processors configured at at
// ("processors" for the global list, "output.<type>.<name>.processors"
// for an output's). Each element is a table with one key, the
// processor's name, holding its options; or Filebeat's if/then/else
// form. An error is a *ConfigError naming the element and the key.
//
// Every element is checked: the error joins one *ConfigError per element
// that is wrong (the first problem of each), so that a check reports them
// all at once.
func Compile(at string, list []map[string]any) (*List, error) {
	l := &List{at: at}
	var errs []error
	for i, el := range list {
		s, err := compileElement(fmt.Sprintf("%s[%d]", at, i), el)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l.steps = append(l.steps, s)
	}
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// ConfigErrors returns the problems an error of Compile holds, each
// naming its key.
func ConfigErrors(err error) []*ConfigError {
	var out []*ConfigError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if ce, ok := err.(*ConfigError); ok {
			out = append(out, ce)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var ce *ConfigError
		if errors.As(err, &ce) {
			out = append(out, ce)
		}
	}
	walk(err)
	return out
}

func compileElement(at string, el map[string]any) (*spec, error) {
	if _, ok := el["if"]; ok {
		p, err := compileIf(at, el)
		if err != nil {
			return nil, err
		}
		return &spec{name: at + ".if", kind: "if", proc: p}, nil
	}
	if len(el) != 1 {
		keys := sortedKeys(el)
		if len(keys) == 0 {
			return nil, &ConfigError{At: at, Err: errors.New("empty: name one processor, e.g. [" + at + ".add_tags]")}
		}
		return nil, &ConfigError{At: at, Err: fmt.Errorf("names %d processors (%s): put each in its own element of the list", len(keys), strings.Join(keys, ", "))}
	}
	var name string
	for k := range el {
		name = k
	}
	b, ok := builders[name]
	if !ok {
		return nil, &ConfigError{At: at + "." + name, Err: fmt.Errorf("unknown processor; known: %s", strings.Join(Known(), ", "))}
	}
	o, err := newOptions(at+"."+name, el[name])
	if err != nil {
		return nil, err
	}
	var when condition
	if v, ok := o.get("when"); ok {
		when, err = compileCondition(o.key("when"), v)
		if err != nil {
			return nil, err
		}
	}
	p, err := b(o)
	if err != nil {
		return nil, asConfigError(o, err)
	}
	if err := o.done(); err != nil {
		return nil, err
	}
	return &spec{name: at + "." + name, kind: name, proc: p, when: when}, nil
}

// asConfigError names the processor in an error its builder returned
// without saying which option was wrong.
func asConfigError(o *options, err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return err
	}
	return &ConfigError{At: o.at, Err: err}
}

// ifProcessor is Filebeat's if/then/else element: then runs on the
// events the condition matches, else (if any) on the others.
type ifProcessor struct {
	cond            condition
	then, otherwise []*step
}

func compileIf(at string, el map[string]any) (*ifProcessor, error) {
	for _, k := range sortedKeys(el) {
		if k != "if" && k != "then" && k != "else" {
			return nil, &ConfigError{At: at + "." + k, Err: errors.New("unknown key beside if; known: if, then, else")}
		}
	}
	cond, err := compileCondition(at+".if", el["if"])
	if err != nil {
		return nil, err
	}
	p := &ifProcessor{cond: cond}
	if _, ok := el["then"]; !ok {
		return nil, &ConfigError{At: at + ".then", Err: errors.New("missing: an if needs a then list")}
	}
	if p.then, err = compileBranch(at+".then", el["then"]); err != nil {
		return nil, err
	}
	if v, ok := el["else"]; ok {
		if p.otherwise, err = compileBranch(at+".else", v); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// compileBranch compiles the then or else list of an if, at key at.
func compileBranch(at string, v any) ([]*step, error) {
	list, err := asTables(v)
	if err != nil {
		return nil, &ConfigError{At: at, Err: err}
	}
	sub, err := Compile(at, list)
	if err != nil {
		return nil, err
	}
	return newSteps(sub.steps), nil
}

func (p *ifProcessor) run(e *event) (bool, error) {
	steps, branch := p.otherwise, "else"
	if p.cond.match(e) {
		steps, branch = p.then, "then"
	}
	// A then or else list stops at its first failure, as Filebeat's
	// does; the chain goes on after the if.
	for _, s := range steps {
		e.failed = false
		if drop := s.run(e); drop {
			return true, nil
		}
		if e.failed {
			return false, errors.New("a processor of the " + branch + " list failed")
		}
	}
	return false, nil
}

// Chain is what one output runs: the global list, then its own. It
// counts, per processor, the events that came in, those it dropped,
// those it failed on, and the time it spent. Safe for concurrent use:
// each goroutine runs it through its own Runner.
type Chain struct {
	steps         []*step
	unprocessable atomic.Int64
	runners       atomic.Uint64 // Runners made, for their count shards
}

// Unprocessable counts the events the chain could not run on: not a JSON
// object (the output keeps them as dead letters).
func (c *Chain) Unprocessable() int64 {
	if c == nil {
		return 0
	}
	return c.unprocessable.Load()
}

// step is a spec with its counters for one output.
type step struct {
	*spec
	// counts are sharded by Runner: every event adds to them, and the
	// goroutines of one output, on different cores, would otherwise
	// pass one cache line back and forth at every processor of every
	// event.
	counts [countShards]stepCounts
}

// countShards is how many Runners of a chain count without sharing a
// cache line; more share them (the counts stay exact).
const countShards = 16

// stepCounts are a step's counters for the Runners of one shard, alone
// on their cache line (64 bytes).
type stepCounts struct {
	in, dropped, failed, nanos atomic.Int64
	_                          [32]byte
}

func newSteps(specs []*spec) []*step {
	out := make([]*step, len(specs))
	for i, s := range specs {
		out[i] = &step{spec: s}
	}
	return out
}

// NewChain returns the chain of an output: the processors of lists, in
// order, each with counters of its own. It returns nil when the lists
// hold no processor: an output without a chain sends events as stored.
func NewChain(lists ...*List) *Chain {
	c := &Chain{}
	for _, l := range lists {
		if l != nil {
			c.steps = append(c.steps, newSteps(l.steps)...)
		}
	}
	if len(c.steps) == 0 {
		return nil
	}
	return c
}

// run runs one step on e: its condition, then its processor, counted.
// A failure is counted and sets e.failed; the event goes on.
func (s *step) run(e *event) (drop bool) {
	if s.when != nil && !s.when.match(e) {
		return false
	}
	var err error
	c := &s.counts[e.shard]
	if e.timed {
		start := time.Now()
		drop, err = s.proc.run(e)
		c.nanos.Add(timeSample * int64(time.Since(start)))
	} else {
		drop, err = s.proc.run(e)
	}
	c.in.Add(1)
	if err != nil {
		c.failed.Add(1)
		e.failed = true
	}
	if drop {
		c.dropped.Add(1)
	}
	return drop
}

// ProcessorStats are one processor's counters in one output's chain.
type ProcessorStats struct {
	// Name is the processor's key in the configuration, e.g.
	// "processors[0].dissect" or "output.kafka.main.processors[1].rename".
	Name string
	// In counts the events the processor ran on (its `when` matched);
	// Dropped those it dropped; Failed those it could not process (kept,
	// marked where Filebeat marks them). An if/then/else counts the
	// events its lists dropped or failed on too, as do the processors in
	// them.
	In, Dropped, Failed int64
	// Time is the time spent in the processor, estimated from one event
	// in timeSample: reading the clock twice per processor and event
	// would cost a tenth of a cheap chain.
	Time time.Duration
}

// Stats returns the counters of every processor of the chain, in order
// (the processors inside an if/then/else after it).
func (c *Chain) Stats() []ProcessorStats {
	if c == nil {
		return nil
	}
	var out []ProcessorStats
	var walk func(steps []*step)
	walk = func(steps []*step) {
		for _, s := range steps {
			st := ProcessorStats{Name: s.name}
			for i := range s.counts {
				c := &s.counts[i]
				st.In += c.in.Load()
				st.Dropped += c.dropped.Load()
				st.Failed += c.failed.Load()
				st.Time += time.Duration(c.nanos.Load())
			}
			out = append(out, st)
			if p, ok := s.proc.(*ifProcessor); ok {
				walk(p.then)
				walk(p.otherwise)
			}
		}
	}
	walk(c.steps)
	return out
}

// timeSample is how many events of a Runner one timed event stands for.
const timeSample = 8

// Runner runs a Chain on one event at a time, reusing its memory from
// one event to the next. Not safe for concurrent use: each goroutine
// that processes events holds its own.
type Runner struct {
	c      *Chain
	parser jsontree.Parser
	arena  jsontree.Arena
	ev     event
	out    []byte
	n      uint64 // events run, for timing one in timeSample
	// outsized says the last event was larger than runnerKeepEventBytes:
	// the next Run starts on fresh buffers.
	outsized bool
}

// runnerKeepEventBytes is the largest event after which a Runner keeps
// the buffers it grew (the parsed tree, the serialized result, the
// processors' scratch) for the next event. After a larger one it drops
// them, so that one outsized event does not hold its memory for as long
// as the goroutine runs: the memory formula counts ChainRunnerBytes per
// runner, which events up to this size stay within (a test holds them).
const runnerKeepEventBytes = 32 << 10

// NewRunner returns a Runner of c.
func (c *Chain) NewRunner() *Runner {
	r := &Runner{}
	r.start(c, int((c.runners.Add(1)-1)%countShards), 0)
	return r
}

// start sets r up on empty buffers, as a Runner of c on its counters'
// shard that has run n events.
func (r *Runner) start(c *Chain, shard int, n uint64) {
	*r = Runner{c: c, ev: event{shard: shard}, n: n}
	r.ev.arena = &r.arena
}

// ErrNotObject says an event is not a JSON object: no processor can
// run on it.
var ErrNotObject = errors.New("the event is not a JSON object")

// Run runs the chain on raw, one event as stored. It returns the event
// after the chain, valid until the next Run, or keep false when a
// processor dropped it. An error says the event could not be parsed (it
// is not a JSON object): the caller keeps it as a dead letter with that
// reason. A processor failing is not an error: the event is kept, marked
// as Filebeat marks it.
func (r *Runner) Run(raw []byte) (out []byte, keep bool, err error) {
	if r.outsized {
		// The last event's result, which the caller may have held until
		// now, is no longer in use: drop the buffers it grew.
		r.start(r.c, r.ev.shard, r.n)
	}
	r.outsized = len(raw) > runnerKeepEventBytes
	r.arena.Reset()
	// The input validated every event before acknowledging it: the
	// ledger holds valid JSON, parsed here without checking it again.
	v := r.parser.ParseValid(unsafeString(raw))
	if v.Type() != jsontree.TypeObject {
		r.c.unprocessable.Add(1)
		return nil, false, fmt.Errorf("processors: %w: it is %s", ErrNotObject, typeName(v.Type()))
	}
	r.ev.root = v
	r.n++
	r.ev.timed = r.n%timeSample == 1
	for _, s := range r.c.steps {
		if s.run(&r.ev) {
			return nil, false, nil
		}
	}
	r.out = r.ev.root.MarshalTo(r.out[:0])
	return r.out, true, nil
}
