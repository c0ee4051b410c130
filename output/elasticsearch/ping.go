package elasticsearch

import (
	"context"
	"fmt"
	"io"

	"github.com/tidwall/gjson"
)

// Cluster is what an Elasticsearch cluster says about itself on GET /.
type Cluster struct {
	Node        string // the node that answered
	ClusterName string
	Version     string // e.g. "8.17.0"
}

// Ping asks the cluster who it is (GET /) with the output's hosts,
// credentials and TLS settings, and returns its answer or why there was
// none (refused connection, timeout, 401 for wrong credentials, …). It is
// a check for the operator's eyes at start, apart from the bulk requests:
// it sends nothing else, and the output's state does not depend on it.
// Safe to call while Run runs.
func (o *Output) Ping(ctx context.Context) (Cluster, error) {
	res, err := o.client.Info(o.client.Info.WithContext(ctx))
	if err != nil {
		return Cluster{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return Cluster{}, fmt.Errorf("reading the answer to GET /: %w", err)
	}
	if res.StatusCode != 200 {
		errType, why := errorBody(body)
		return Cluster{}, fmt.Errorf("GET / answered %d %s %s", res.StatusCode, errType, why)
	}
	v := gjson.GetManyBytes(body, "name", "cluster_name", "version.number")
	if v[2].String() == "" {
		return Cluster{}, fmt.Errorf("GET / answered without a version: %.200s", body)
	}
	return Cluster{Node: v[0].String(), ClusterName: v[1].String(), Version: v[2].String()}, nil
}
