package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/logpond/logpond/output/elasticsearch"
)

// pingElasticsearch says in the log, at start, whether Elasticsearch
// answers and which version it runs, so that a wrong host, credential or
// certificate shows at once rather than at the first batch. It never
// holds anything up: it runs beside the pipeline and gives up when ctx
// ends (the server stopping) or after the request timeout.
func (s *Server) pingElasticsearch(ctx context.Context, out *outputRunner, o *elasticsearch.Output) {
	es := out.conf.Elasticsearch
	log := s.log.With("output", out.name)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(es.Timeout))
	defer cancel()
	cl, err := o.Ping(ctx)
	switch {
	case err != nil && ctx.Err() == context.Canceled:
		return // stopping
	case err != nil:
		log.Warn("elasticsearch did not answer at start: events wait in the ledger and are sent once it does",
			"hosts", strings.Join(es.Hosts, ","), "err", err)
	case !versionAtLeast(cl.Version, 7, 14):
		log.Warn("elasticsearch answered with a version logpond does not support: it needs 7.14 or later",
			"cluster_name", cl.ClusterName, "version", cl.Version, "node", cl.Node)
	default:
		log.Info("elasticsearch answered", "cluster_name", cl.ClusterName, "version", cl.Version, "node", cl.Node)
	}
}

// versionAtLeast says whether a version "X.Y.Z…" is at least major.minor.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
