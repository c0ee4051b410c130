package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// position is a place in the ledger: the event at pos in the record at
// lsn. The output's position in Kafka is the next event to send: every
// event before it is in Kafka, in a committed transaction.
type position struct {
	lsn uint64
	pos int
}

// before reports whether p comes before q.
func (p position) before(q position) bool {
	return p.lsn < q.lsn || p.lsn == q.lsn && p.pos < q.pos
}

// positionPrefix starts the offset commit metadata that holds a position;
// the stream id follows, so that a ledger rebuilt from scratch (a new
// stream, LSNs from 1 again) does not take an old ledger's position.
const positionPrefix = "logpond-position v1 "

func (o *Output) encodePosition(p position) string {
	return fmt.Sprintf("%sstream=%s lsn=%d pos=%d", positionPrefix, o.ledger.StreamID(), p.lsn, p.pos)
}

// decodePosition reads a position from offset commit metadata; ok is
// false for metadata that is not one of this ledger's positions.
func (o *Output) decodePosition(meta string) (p position, ok bool) {
	rest, found := strings.CutPrefix(meta, positionPrefix)
	if !found {
		return p, false
	}
	var stream string
	if _, err := fmt.Sscanf(rest, "stream=%s lsn=%d pos=%d", &stream, &p.lsn, &p.pos); err != nil {
		return p, false
	}
	return p, stream == o.ledger.StreamID() && p.pos >= 0
}

// readPosition asks Kafka for the output's committed position (the
// zero position when it has none). It asks for stable offsets only, so a
// transaction still being completed is waited for, never read half done.
func (o *Output) readPosition(ctx context.Context, cl *kgo.Client) (position, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = o.txnID
	req.RequireStable = true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = o.txnID
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return position{}, fmt.Errorf("reading the output's position (group %q): %w", o.txnID, err)
	}
	var best position
	check := func(code int16) error {
		if err := kerr.ErrorForCode(code); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("reading the output's position (group %q): %w", o.txnID, err)
		}
		return nil
	}
	if err := check(resp.ErrorCode); err != nil {
		return position{}, err
	}
	take := func(meta *string) {
		if meta == nil {
			return
		}
		if p, ok := o.decodePosition(*meta); ok && best.before(p) {
			best = p
		}
	}
	for _, t := range resp.Topics {
		for _, pt := range t.Partitions {
			if err := check(pt.ErrorCode); err != nil {
				return position{}, err
			}
			take(pt.Metadata)
		}
	}
	for _, gr := range resp.Groups {
		if err := check(gr.ErrorCode); err != nil {
			return position{}, err
		}
		for _, t := range gr.Topics {
			for _, pt := range t.Partitions {
				if err := check(pt.ErrorCode); err != nil {
					return position{}, err
				}
				take(pt.Metadata)
			}
		}
	}
	return best, nil
}

// commitPosition adds the position p to the open transaction: an offset
// commit, for the group named after the transactional id, on a partition
// the transaction wrote to (Kafka refuses commits for unknown topics),
// with p in its metadata. It becomes visible when the transaction
// commits, and never without it.
func (o *Output) commitPosition(ctx context.Context, cl *kgo.Client, topic string, partition int32, offset int64, p position) error {
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("committing the position: producer id: %w", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = o.txnID, id, epoch, o.txnID
	addResp, err := add.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("committing the position: AddOffsetsToTxn: %w", err)
	}
	if err := kerr.ErrorForCode(addResp.ErrorCode); err != nil {
		return fmt.Errorf("committing the position: AddOffsetsToTxn: %w", err)
	}
	// Newer versions of the request name the topic by its id.
	topicID, err := topicID(ctx, cl, topic)
	if err != nil {
		return fmt.Errorf("committing the position: %w", err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = o.txnID, o.txnID, id, epoch
	req.Generation, req.MemberID = -1, ""
	meta := o.encodePosition(p)
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = partition, offset, -1, &meta
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("committing the position: TxnOffsetCommit: %w", err)
	}
	for _, t := range resp.Topics {
		for _, pt := range t.Partitions {
			if err := kerr.ErrorForCode(pt.ErrorCode); err != nil {
				return fmt.Errorf("committing the position: TxnOffsetCommit %s/%d: %w", t.Topic, pt.Partition, err)
			}
		}
	}
	return nil
}

// topicID asks the client's metadata (cached) for the id of topic.
func topicID(ctx context.Context, cl *kgo.Client, topic string) ([16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := cl.RequestCachedMetadata(ctx, req, 0)
	if err != nil {
		return [16]byte{}, fmt.Errorf("metadata of topic %q: %w", topic, err)
	}
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
				return [16]byte{}, fmt.Errorf("metadata of topic %q: %w", topic, err)
			}
			return mt.TopicID, nil
		}
	}
	return [16]byte{}, fmt.Errorf("metadata of topic %q: not in the answer", topic)
}
