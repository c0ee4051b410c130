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
	// UUID is the cluster's cluster_uuid: two hosts that report different
	// ones belong to different clusters. It is "" when the node does not
	// say, which versions before 5 do not, and which a node whose cluster
	// has not formed yet reports as "_na_".
	UUID    string
	Version string // e.g. "8.17.0"
}

// maxInfoBytes bounds how much of an answer to GET / is read: a real one
// is about half a kilobyte.
const maxInfoBytes = 1 << 20

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
	body, err := io.ReadAll(io.LimitReader(res.Body, maxInfoBytes))
	if err != nil {
		return Cluster{}, fmt.Errorf("reading the answer to GET /: %w", err)
	}
	if res.StatusCode != 200 {
		errType, why := errorBody(body)
		return Cluster{}, fmt.Errorf("GET / answered %d %s %s", res.StatusCode, errType, why)
	}
	return parseInfo(body)
}

// parseInfo reads the answer to GET /. An answer without a version is not
// Elasticsearch's.
func parseInfo(body []byte) (Cluster, error) {
	v := gjson.GetManyBytes(body, "name", "cluster_name", "cluster_uuid", "version.number")
	if v[3].String() == "" {
		return Cluster{}, fmt.Errorf("GET / answered without a version: %.200s", body)
	}
	uuid := v[2].String()
	if uuid == "_na_" {
		uuid = ""
	}
	return Cluster{Node: v[0].String(), ClusterName: v[1].String(), UUID: uuid, Version: v[3].String()}, nil
}
