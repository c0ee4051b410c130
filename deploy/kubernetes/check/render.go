// Package check renders logpond's Kubernetes manifests (deploy/kubernetes)
// and checks that they agree with the configuration they ship: the volumes
// are mounted where logpond.toml puts the stores, the probes and Services
// reach the ports it listens on, the memory limit covers its memory
// formula, the pods run unprivileged and no credential is written in a
// manifest. Its tests run the checks on every kustomization of
// deploy/kubernetes, and on broken copies of them to show each check can
// fail.
//
// It is a module of its own so that logpond's module does not depend on
// the Kubernetes API types and kustomize.
package check

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Render builds the kustomization in dir with kustomize's library, as
// `kubectl kustomize dir` does, and returns the objects as YAML documents.
// It needs no kubectl.
func Render(dir string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("check: kustomize %s: %w", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("check: kustomize %s: %w", dir, err)
	}
	return out, nil
}

// RenderKubectl builds the kustomization in dir with `kubectl kustomize`
// (the kustomize that `kubectl apply -k` uses). It fails when kubectl is
// not on PATH.
func RenderKubectl(dir string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("kubectl", "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("check: kubectl kustomize %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Objects are the rendered objects of a kustomization, decoded into their
// Kubernetes API types, in the order rendered.
type Objects struct {
	StatefulSets         []*appsv1.StatefulSet
	Jobs                 []*batchv1.Job
	Services             []*corev1.Service
	ConfigMaps           []*corev1.ConfigMap
	Secrets              []*corev1.Secret
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	NetworkPolicies      []*networkingv1.NetworkPolicy
}

// Decode splits rendered YAML into its documents and decodes each strictly
// into its API type: a field the type does not have is an error (a typo
// that the API server would drop or refuse), and so is a kind this package
// does not know.
func Decode(rendered []byte) (*Objects, error) {
	objs := &Objects{}
	for i, doc := range splitDocuments(rendered) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("check: document %d: %w", i+1, err)
		}
		var err error
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 StatefulSet":
			objs.StatefulSets, err = decodeInto(doc, objs.StatefulSets)
		case "batch/v1 Job":
			objs.Jobs, err = decodeInto(doc, objs.Jobs)
		case "v1 Service":
			objs.Services, err = decodeInto(doc, objs.Services)
		case "v1 ConfigMap":
			objs.ConfigMaps, err = decodeInto(doc, objs.ConfigMaps)
		case "v1 Secret":
			objs.Secrets, err = decodeInto(doc, objs.Secrets)
		case "policy/v1 PodDisruptionBudget":
			objs.PodDisruptionBudgets, err = decodeInto(doc, objs.PodDisruptionBudgets)
		case "networking.k8s.io/v1 NetworkPolicy":
			objs.NetworkPolicies, err = decodeInto(doc, objs.NetworkPolicies)
		default:
			return nil, fmt.Errorf("check: document %d: unknown apiVersion and kind %q", i+1, meta.APIVersion+" "+meta.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("check: document %d (%s): %w", i+1, meta.Kind, err)
		}
	}
	return objs, nil
}

// decodeInto decodes doc strictly into a new T and appends it.
func decodeInto[T any](doc []byte, list []*T) ([]*T, error) {
	v := new(T)
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		return list, err
	}
	return append(list, v), nil
}

// splitDocuments splits a YAML stream on its "---" lines, dropping empty
// documents.
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(cur.Bytes())) > 0 {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for line := range bytes.Lines(b) {
		if t := bytes.TrimRight(line, " \r\n"); bytes.Equal(t, []byte("---")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

// Equal reports whether two renderings hold the same objects, in any
// order (kustomize's library and kubectl's kustomize order them
// differently): objects are matched by kind, namespace and name and
// compared as decoded values, so that formatting (quoting, key order) does
// not count.
func Equal(a, b []byte) error {
	ma, err := byIdentity(a)
	if err != nil {
		return err
	}
	mb, err := byIdentity(b)
	if err != nil {
		return err
	}
	var errs []error
	for id, va := range ma {
		vb, ok := mb[id]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("check: %s only in the first rendering", id))
		case !bytes.Equal(va, vb):
			errs = append(errs, fmt.Errorf("check: %s differs:\n%s\nagainst\n%s", id, va, vb))
		}
	}
	for id := range mb {
		if _, ok := ma[id]; !ok {
			errs = append(errs, fmt.Errorf("check: %s only in the second rendering", id))
		}
	}
	return errors.Join(errs...)
}

// byIdentity maps each object of a rendering, by "kind namespace/name",
// to its canonical form (decoded and encoded again, keys sorted).
func byIdentity(rendered []byte) (map[string][]byte, error) {
	m := map[string][]byte{}
	for i, doc := range splitDocuments(rendered) {
		var v struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return nil, fmt.Errorf("check: document %d: %w", i+1, err)
		}
		var all any
		if err := yaml.Unmarshal(doc, &all); err != nil {
			return nil, fmt.Errorf("check: document %d: %w", i+1, err)
		}
		canon, err := yaml.Marshal(all)
		if err != nil {
			return nil, fmt.Errorf("check: document %d: %w", i+1, err)
		}
		id := v.Kind + " " + v.Metadata.Namespace + "/" + v.Metadata.Name
		if _, dup := m[id]; dup {
			return nil, fmt.Errorf("check: %s twice", id)
		}
		m[id] = canon
	}
	return m, nil
}
