package elasticsearch

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// clusterInfo is what a node says about itself and its cluster on GET /.
type clusterInfo struct {
	Node        string // the node that answered
	ClusterName string
	// UUID is the cluster's cluster_uuid: two hosts that report different
	// ones belong to different clusters. It is "" when the node does not
	// say, which versions before 5 do not, and which a node whose cluster
	// has not formed yet reports as "_na_".
	UUID    string
	Version string // version.number, e.g. "8.17.0"
}

// maxInfoBytes bounds how much of an answer to GET / is read: a real one
// is about half a kilobyte.
const maxInfoBytes = 1 << 20

// parseInfo reads the answer to GET /. An answer without a version is not
// Elasticsearch's.
func parseInfo(body []byte) (clusterInfo, error) {
	v := gjson.GetManyBytes(body, "name", "cluster_name", "cluster_uuid", "version.number")
	if v[3].String() == "" {
		return clusterInfo{}, fmt.Errorf("GET / answered without a version: %.200s", body)
	}
	uuid := v[2].String()
	if uuid == "_na_" {
		uuid = ""
	}
	return clusterInfo{Node: v[0].String(), ClusterName: v[1].String(), UUID: uuid, Version: v[3].String()}, nil
}
