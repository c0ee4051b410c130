package server

import (
	"fmt"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/sprintf"
	"github.com/logpond/logpond/record"
)

// ConfigChecks are the checks of a configuration that need to know how the
// components work together: record sizes the journal admits and the
// ledger stores, the ledger's block size, the index templates. conf checks
// each key on its own; both `logpond -config` and `-check-config` load with
// these (conf.Load(path, server.ConfigChecks)), so a configuration that
// passes the check starts.
func ConfigChecks(c *conf.Config) []*conf.KeyError {
	var ps []*conf.KeyError
	bad := func(key, format string, args ...any) {
		ps = append(ps, &conf.KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	j, l, ib := c.Journal, c.Ledger, c.Input.Beats

	// Every processor option, named by list, index and key.
	checkProcessors(c, bad)

	// O_DIRECT writes whole blocks: segments must end on a block boundary.
	if l.SegmentBytes%ledger.BlockSize != 0 {
		bad("ledger.segment_bytes", "%s is not a multiple of %s (the direct-IO block size): use e.g. %s",
			l.SegmentBytes, conf.Size(ledger.BlockSize), (l.SegmentBytes/ledger.BlockSize+1)*ledger.BlockSize)
	}
	// A record bigger than a segment has a segment of its own, and the
	// open segment is never deleted: with less room than two of them, the
	// ledger could refuse the next record for ever, even with every
	// output caught up.
	if frame := conf.Size(ledger.DiskBytes(MaxRecordBytes(c))); l.MaxBytes >= 2*l.SegmentBytes && l.MaxBytes < 2*frame {
		bad("ledger.max_bytes", "%s leaves no room for two of the largest records (%s each on disk, from journal.max_group_bytes %s): raise max_bytes to at least %s or lower journal.max_group_bytes",
			l.MaxBytes, frame, j.MaxGroupBytes, (2*frame+1<<20-1)/(1<<20)*(1<<20))
	}
	// An event bigger than a record is a record of its own; one the
	// journal can never admit would be refused at every retry, and the
	// client would resend it for ever.
	if room := conf.Size(max(journalMaxRecord(c)-record.MinSize-record.EventOverhead, 0)); ib.MaxEventBytes > room {
		bad("input.beats.max_event_bytes", "%s does not fit one journal record: at most %s (about journal.max_bytes − (1 + journal.spare_segments) × journal.segment_bytes); raise journal.max_bytes or lower max_event_bytes",
			ib.MaxEventBytes, room)
	}
	for _, o := range c.Outputs() {
		if k := o.Kafka; k != nil {
			for key, tmpl := range map[string]string{".topic": k.Topic, ".key": k.Key} {
				if tmpl == "" {
					continue
				}
				if _, err := sprintf.Compile(tmpl); err != nil {
					bad(o.Key+key, "%v", err)
				}
			}
		}
		es := o.Elasticsearch
		if es == nil {
			continue
		}
		if es.Index != "" {
			if _, err := sprintf.Compile(es.Index); err != nil {
				bad(o.Key+".index", "%v", err)
			}
		}
		if es.Pipeline != "" {
			if _, err := sprintf.Compile(es.Pipeline); err != nil {
				bad(o.Key+".pipeline", "%v", err)
			}
		}
	}
	return ps
}

// MaxRecordBytes is the largest journal record the Beats input builds from
// a batch's events (a bigger batch spans consecutive records; a record
// always takes one event, however big). It is twice journal.max_group_bytes,
// as a journal round takes at least two records (so a default Filebeat
// batch, 2048 1 KiB events, stays one record and big batches still share
// fsyncs), but never more than the journal can ever admit.
func MaxRecordBytes(c *conf.Config) int {
	return int(min(2*int64(c.Journal.MaxGroupBytes), journalMaxRecord(c)))
}

// journalMaxRecord is the largest record the configured journal admits.
func journalMaxRecord(c *conf.Config) int64 {
	return journal.Options{MaxBytes: int64(c.Journal.MaxBytes), SegmentBytes: int64(c.Journal.SegmentBytes), SpareSegments: c.Journal.SpareSegments}.MaxRecordBytes()
}
