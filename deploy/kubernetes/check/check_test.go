package check

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The kustomizations of deploy/kubernetes, relative to this directory.
const (
	installDir = ".."
	baseDir    = "../base"
	overlayDir = "../overlays/example"
	drainDir   = "../drain-job"
)

// render renders dir with kustomize's library and, when kubectl is on
// PATH, with `kubectl kustomize` too, and fails unless both agree: the
// test checks what `kubectl apply -k` applies.
func render(t *testing.T, dir string) []byte {
	t.Helper()
	out, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("kubectl"); err == nil {
		k, err := RenderKubectl(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := Equal(out, k); err != nil {
			t.Fatalf("%s: kustomize's library and kubectl kustomize disagree: %v", dir, err)
		}
	} else {
		t.Logf("%s: kubectl not on PATH: rendered with kustomize's library only", dir)
	}
	return out
}

// decoded renders and decodes dir once per call, so that each case can
// change its own copy.
func decoded(t *testing.T, rendered []byte) *Objects {
	t.Helper()
	o, err := Decode(rendered)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func noErrors(t *testing.T, what string, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Errorf("%s: %v", what, err)
	}
}

func TestInstallManifests(t *testing.T) {
	for _, dir := range []string{installDir, baseDir, overlayDir} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			o := decoded(t, render(t, dir))
			noErrors(t, dir, Install(o))
		})
	}
}

// TestInstallIsBase: `kubectl apply -k deploy/kubernetes` applies the base
// as it is.
func TestInstallIsBase(t *testing.T) {
	a, b := render(t, installDir), render(t, baseDir)
	if err := Equal(a, b); err != nil {
		t.Fatal(err)
	}
}

func TestDrainJob(t *testing.T) {
	o := decoded(t, render(t, drainDir))
	noErrors(t, drainDir, Drain(o))
	// The Job reads the very ConfigMap the base's pods read.
	base := decoded(t, render(t, baseDir))
	if len(o.ConfigMaps) != 1 || len(base.ConfigMaps) != 1 || o.ConfigMaps[0].Name != base.ConfigMaps[0].Name {
		t.Errorf("the drain Job's ConfigMap is not the base's")
	}
	if o.Jobs[0].Spec.Template.Spec.Containers[0].Image != base.StatefulSets[0].Spec.Template.Spec.Containers[0].Image {
		t.Errorf("the drain Job's image is not the base's")
	}
}

// TestOverlayChanges: the overlay's additions are there: TLS for Beats,
// a second output, storage classes.
func TestOverlayChanges(t *testing.T) {
	o := decoded(t, render(t, overlayDir))
	ss := o.StatefulSets[0]
	for _, vct := range ss.Spec.VolumeClaimTemplates {
		if vct.Spec.StorageClassName == nil || *vct.Spec.StorageClassName == "" {
			t.Errorf("overlay: volumeClaimTemplate %s has no storageClassName", vct.Name)
		}
	}
	c := &ss.Spec.Template.Spec.Containers[0]
	l, err := parseConfig(o.ConfigMaps[0].Data[ConfigKey], c.Env)
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.Input.Beats.TLS.Cert == "" {
		t.Errorf("overlay: no Beats TLS")
	}
	if len(l.Config.Outputs()) != 2 {
		t.Errorf("overlay: %d outputs, want 2", len(l.Config.Outputs()))
	}
}

// mutation changes rendered objects so that one check must fail.
type mutation struct {
	name   string
	change func(*Objects)
	want   string // in one of the errors
}

func container(o *Objects) *corev1.Container {
	if len(o.StatefulSets) > 0 {
		return &o.StatefulSets[0].Spec.Template.Spec.Containers[0]
	}
	return &o.Jobs[0].Spec.Template.Spec.Containers[0]
}

func podSpec(o *Objects) *corev1.PodSpec {
	if len(o.StatefulSets) > 0 {
		return &o.StatefulSets[0].Spec.Template.Spec
	}
	return &o.Jobs[0].Spec.Template.Spec
}

func editConfig(old, new string) func(*Objects) {
	return func(o *Objects) {
		cm := o.ConfigMaps[0]
		cm.Data[ConfigKey] = strings.Replace(cm.Data[ConfigKey], old, new, 1)
	}
}

func mount(o *Objects, name string) *corev1.VolumeMount {
	c := container(o)
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == name {
			return &c.VolumeMounts[i]
		}
	}
	panic("no mount " + name)
}

func service(o *Objects, name string) *corev1.Service {
	for _, s := range o.Services {
		if s.Name == name {
			return s
		}
	}
	panic("no Service " + name)
}

func ptr[T any](v T) *T { return &v }

// podMutations break what Install and Drain both check in a pod.
var podMutations = []mutation{
	{"journal mounted elsewhere", func(o *Objects) { mount(o, "journal").MountPath = "/data/journal" }, `volume "journal" is mounted at`},
	{"ledger dir elsewhere in the TOML", editConfig(`dir = "/var/lib/logpond/ledger"`, `dir = "/var/lib/logpond/ledger2"`), `puts the ledger at`},
	{"configuration not at /etc/logpond", func(o *Objects) { mount(o, "config").MountPath = "/config" }, "no ConfigMap volume is mounted at /etc/logpond"},
	{"-config elsewhere", func(o *Objects) { container(o).Args[1] = "/etc/logpond/other.toml" }, "must pass -config"},
	{"literal password", editConfig(`password = "${ES_PASSWORD}"`, `password = "hunter2"`), "output.elasticsearch.password is written in the ConfigMap"},
	{"password with a default", editConfig(`password = "${ES_PASSWORD}"`, `password = "${ES_PASSWORD:hunter2}"`), "output.elasticsearch.password is written in the ConfigMap"},
	{"password in a host URL", editConfig(`https://elasticsearch.example.com:9200`, `https://logpond:hunter2@elasticsearch.example.com:9200`), "output.elasticsearch"},
	{"literal api_key of a second output", editConfig("[admin]", "[output.elasticsearch.siem]\napi_key = \"aWQ6a2V5\"\n\n[admin]"), "output.elasticsearch.siem.api_key is written"},
	{"password variable from a literal env value", func(o *Objects) {
		c := container(o)
		for i := range c.Env {
			if c.Env[i].Name == "ES_PASSWORD" {
				c.Env[i].ValueFrom, c.Env[i].Value = nil, "hunter2"
			}
		}
	}, "does not come from a Secret"},
	{"variable the pod does not set", func(o *Objects) {
		c := container(o)
		c.Env = c.Env[:1]
	}, "environment variable ES_PASSWORD is not set"},
	{"Secret with data", func(o *Objects) {
		o.Secrets = append(o.Secrets, &corev1.Secret{StringData: map[string]string{"password": "hunter2"}})
	}, "carries data in the manifests"},
	{"TLS key on no volume", editConfig("[output.elasticsearch]\n", "[output.elasticsearch.tls]\nca = \"/certs/ca.pem\"\n\n[output.elasticsearch]\n"), `output.elasticsearch.tls.ca = "/certs/ca.pem" is on no volume`},
	{"memory below the formula", func(o *Objects) {
		r := &container(o).Resources
		r.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
		r.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
	}, "below the memory formula"},
	{"more CPUs, same memory", func(o *Objects) {
		r := &container(o).Resources
		r.Limits[corev1.ResourceCPU] = resource.MustParse("16")
	}, "below the memory formula for this configuration on 16 CPUs"},
	{"more connections, same memory", editConfig(`listen = "0.0.0.0:5044"`, "listen = \"0.0.0.0:5044\"\nmax_connections = 5000"), "below the memory formula"},
	{"memory request below the limit", func(o *Objects) {
		container(o).Resources.Requests[corev1.ResourceMemory] = resource.MustParse("64Mi")
	}, "must equal the limit"},
	{"no CPU limit", func(o *Objects) { delete(container(o).Resources.Limits, corev1.ResourceCPU) }, "no CPU limit"},
	{"runs as root", func(o *Objects) { podSpec(o).SecurityContext.RunAsUser = ptr(int64(0)) }, "must run as user 65532"},
	{"root allowed", func(o *Objects) {
		podSpec(o).SecurityContext.RunAsNonRoot = nil
		container(o).SecurityContext.RunAsNonRoot = nil
	}, "runAsNonRoot"},
	{"no fsGroup", func(o *Objects) { podSpec(o).SecurityContext.FSGroup = nil }, "fsGroup must be 65532"},
	{"fsGroup walked always", func(o *Objects) {
		podSpec(o).SecurityContext.FSGroupChangePolicy = ptr(corev1.FSGroupChangeAlways)
	}, "OnRootMismatch"},
	{"writable root", func(o *Objects) { container(o).SecurityContext.ReadOnlyRootFilesystem = ptr(false) }, "readOnlyRootFilesystem"},
	{"privilege escalation", func(o *Objects) { container(o).SecurityContext.AllowPrivilegeEscalation = ptr(true) }, "allowPrivilegeEscalation"},
	{"capabilities kept", func(o *Objects) { container(o).SecurityContext.Capabilities.Drop = nil }, "drop ALL"},
	{"unconfined seccomp", func(o *Objects) {
		container(o).SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}, "seccompProfile"},
}

// installMutations break what only Install checks.
var installMutations = []mutation{
	{"readiness probe on the wrong port", func(o *Objects) {
		container(o).ReadinessProbe.HTTPGet.Port = intstr.FromInt32(9601)
	}, "readiness probe port 9601"},
	{"liveness probe on the beats port", func(o *Objects) {
		container(o).LivenessProbe.HTTPGet.Port = intstr.FromString("beats")
	}, "liveness probe port beats"},
	{"admin on loopback", editConfig(`listen = "0.0.0.0:9600"`, `listen = "127.0.0.1:9600"`), "admin.listen"},
	{"admin on another port", editConfig(`listen = "0.0.0.0:9600"`, `listen = "0.0.0.0:9700"`), "admin.listen's port 9700"},
	{"liveness on /readyz", func(o *Objects) { container(o).LivenessProbe.HTTPGet.Path = "/readyz" }, "liveness probe path"},
	{"no startup probe", func(o *Objects) { container(o).StartupProbe = nil }, "no HTTP startup probe"},
	{"short startup probe", func(o *Objects) { container(o).StartupProbe.FailureThreshold = 3 }, "the startup probe gives a start 30 s"},
	{"beats on another port", editConfig(`listen = "0.0.0.0:5044"`, `listen = "0.0.0.0:5045"`), "targeting input.beats.listen's port 5045"},
	{"headless Service targets admin", func(o *Objects) {
		service(o, HeadlessName).Spec.Ports[0].TargetPort = intstr.FromString("admin")
	}, "Service logpond has no port 5044"},
	{"Service not headless", func(o *Objects) { service(o, HeadlessName).Spec.ClusterIP = "" }, "must be headless"},
	{"not-ready pods published", func(o *Objects) { service(o, HeadlessName).Spec.PublishNotReadyAddresses = true }, "publishes pods that are not ready"},
	{"Service selector mismatch", func(o *Objects) {
		service(o, HeadlessName).Spec.Selector["app.kubernetes.io/name"] = "logstash"
	}, "Service logpond selector"},
	{"metrics Service selector mismatch", func(o *Objects) {
		service(o, MetricsService).Spec.Selector["tier"] = "x"
	}, "Service logpond-metrics selector"},
	{"PodDisruptionBudget selector mismatch", func(o *Objects) {
		o.PodDisruptionBudgets[0].Spec.Selector.MatchLabels["app.kubernetes.io/name"] = "other"
	}, "PodDisruptionBudget logpond selector"},
	{"PodDisruptionBudget allows two", func(o *Objects) {
		o.PodDisruptionBudgets[0].Spec.MaxUnavailable = ptr(intstr.FromInt32(2))
	}, "maxUnavailable must be 1"},
	{"StatefulSet selector mismatch", func(o *Objects) {
		o.StatefulSets[0].Spec.Selector.MatchLabels["app.kubernetes.io/name"] = "other"
	}, "StatefulSet selector"},
	{"serviceName names no headless Service", func(o *Objects) { o.StatefulSets[0].Spec.ServiceName = "logpond-beats" }, "serviceName"},
	{"claim template not mounted", func(o *Objects) {
		c := container(o)
		c.VolumeMounts = c.VolumeMounts[:2] // config, journal
	}, `volumeClaimTemplate "ledger" is not mounted`},
	{"ledger on an emptyDir", func(o *Objects) {
		s := podSpec(o)
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "ledger", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}, "hides the volumeClaimTemplate"},
	{"prometheus port on beats", func(o *Objects) {
		o.StatefulSets[0].Spec.Template.Annotations["prometheus.io/port"] = "5044"
	}, "the pod template: prometheus.io/port"},
	{"metrics Service path", func(o *Objects) {
		service(o, MetricsService).Annotations["prometheus.io/path"] = "/"
	}, "Service logpond-metrics: prometheus.io/path"},
	{"short grace period", func(o *Objects) { podSpec(o).TerminationGracePeriodSeconds = ptr(int64(5)) }, "terminationGracePeriodSeconds"},
}

// drainMutations break what only Drain checks.
var drainMutations = []mutation{
	{"no -drain", func(o *Objects) { container(o).Args = container(o).Args[:2] }, "lack -drain"},
	{"claims of two pods", func(o *Objects) {
		for _, v := range podSpec(o).Volumes {
			if v.Name == "ledger" {
				v.PersistentVolumeClaim.ClaimName = "ledger-logpond-2"
			}
		}
	}, "belong to different pods"},
	{"journal on an emptyDir", func(o *Objects) {
		for i, v := range podSpec(o).Volumes {
			if v.Name == "journal" {
				podSpec(o).Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
			}
		}
	}, `Job volume "journal" is not a PersistentVolumeClaim`},
	{"restarted on failure", func(o *Objects) { podSpec(o).RestartPolicy = corev1.RestartPolicyOnFailure }, "restartPolicy"},
	{"StatefulSet included", func(o *Objects) { o.Services = append(o.Services, &corev1.Service{}) }, "no StatefulSet, Service or PodDisruptionBudget"},
}

// overlayMutations break what only the overlay has.
var overlayMutations = []mutation{
	{"NetworkPolicy shuts Beats out", func(o *Objects) {
		o.NetworkPolicies[0].Spec.Ingress = o.NetworkPolicies[0].Spec.Ingress[1:]
	}, "NetworkPolicy logpond lets nothing reach input.beats.listen's port 5044"},
	{"NetworkPolicy names a port the pod lacks", func(o *Objects) {
		o.NetworkPolicies[0].Spec.Ingress[1].Ports[0].Port = ptr(intstr.FromString("metrics"))
	}, "lets nothing reach admin.listen's port 9600"},
	{"TLS certificate not mounted", func(o *Objects) {
		c := container(o)
		c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "beats-tls" })
	}, `input.beats.tls.cert = "/etc/logpond-tls/tls.crt" is on no volume`},
	{"second output's key not from a Secret", func(o *Objects) {
		c := container(o)
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "SIEM_API_KEY" })
	}, "environment variable SIEM_API_KEY is not set"},
	{"memory of one output for two", func(o *Objects) {
		r := &container(o).Resources
		r.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
		r.Requests[corev1.ResourceMemory] = resource.MustParse("256Mi")
	}, "below the memory formula"},
}

func runMutations(t *testing.T, rendered []byte, check func(*Objects) []error, ms []mutation) {
	for _, m := range ms {
		t.Run(m.name, func(t *testing.T) {
			o := decoded(t, rendered)
			m.change(o)
			errs := check(o)
			for _, err := range errs {
				if strings.Contains(err.Error(), m.want) {
					return
				}
			}
			t.Errorf("no error contains %q; errors: %v", m.want, errs)
		})
	}
}

func TestInstallCheckFails(t *testing.T) {
	rendered := render(t, baseDir)
	runMutations(t, rendered, Install, append(append([]mutation{}, podMutations...), installMutations...))
}

func TestOverlayCheckFails(t *testing.T) {
	runMutations(t, render(t, overlayDir), Install, overlayMutations)
}

func TestDrainCheckFails(t *testing.T) {
	rendered := render(t, drainDir)
	runMutations(t, rendered, Drain, append(append([]mutation{}, podMutations...), drainMutations...))
}

// TestDecodeStrict: a field the API type lacks (a typo) fails the decode.
func TestDecodeStrict(t *testing.T) {
	rendered := render(t, baseDir)
	bad := strings.Replace(string(rendered), "publishNotReadyAddresses:", "publishNotReadyAdresses:", 1)
	if bad == string(rendered) {
		t.Fatal("the rendering has no publishNotReadyAddresses to misspell")
	}
	if _, err := Decode([]byte(bad)); err == nil || !strings.Contains(err.Error(), "publishNotReadyAdresses") {
		t.Fatalf("a misspelled field decoded: %v", err)
	}
	if _, err := Decode([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n")); err == nil {
		t.Fatal("an unexpected kind decoded")
	}
}

// TestMemoryCommentsStateTheFormula: the comments beside the memory
// limits give the formula's total for the configuration they ship, so
// that a change of the formula or of a default (which moves it) shows
// here rather than leaving a stale figure for users to size by.
func TestMemoryCommentsStateTheFormula(t *testing.T) {
	for _, tc := range []struct{ dir, file string }{
		{baseDir, "../base/statefulset.yaml"},
		{overlayDir, "../overlays/example/statefulset-patch.yaml"},
	} {
		o := decoded(t, render(t, tc.dir))
		spec := &o.StatefulSets[0].Spec.Template.Spec
		l, c, errs := podConfig(o, spec)
		noErrors(t, tc.dir, errs)
		if l == nil {
			continue
		}
		cpu := c.Resources.Limits[corev1.ResourceCPU]
		total := l.Config.MemoryFor(int((cpu.MilliValue() + 999) / 1000)).Total()
		text, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%.1f MiB", float64(total)/(1<<20)); !strings.Contains(strings.Join(strings.Fields(string(text)), " "), want) {
			t.Errorf("%s does not state the memory formula's total, %s", tc.file, want)
		}
	}
}
