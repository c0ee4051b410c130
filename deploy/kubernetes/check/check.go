package check

import (
	"fmt"
	"math"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/logpond/logpond/conf"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pods' user and group (the image's USER 65532:65532).
const podUID = 65532

// Names the manifests share with the image, the docs and Filebeat's
// configuration.
const (
	ContainerName  = "logpond"
	StatefulSet    = "logpond"
	HeadlessName   = "logpond"
	MetricsService = "logpond-metrics"
	JournalVolume  = "journal"
	LedgerVolume   = "ledger"
)

// minStartupSeconds is the least time the startup probe gives logpond to
// recover large stores before liveness may restart it: a start killed
// while it replays its journal begins again, forever.
const minStartupSeconds = 10 * 60

// minGraceSeconds is the least terminationGracePeriodSeconds: a clean stop
// takes about 12 s (the admin endpoint's shutdown, the outputs' client
// close, the final flush), and the systemd unit gives it 30 s.
const minGraceSeconds = 30

// Install checks the rendering of a kustomization that installs logpond
// (the base, an overlay): one StatefulSet with its headless Service, its
// metrics Service and its PodDisruptionBudget, against the configuration
// in the ConfigMap its pods mount. It returns every problem found.
func Install(o *Objects) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, noSecretData(o)...)
	if len(o.StatefulSets) != 1 {
		bad("want one StatefulSet, have %d", len(o.StatefulSets))
		return errs
	}
	ss := o.StatefulSets[0]
	if ss.Name != StatefulSet {
		bad("StatefulSet is %q, want %q (the pods' DNS names and the drain Job's claim names follow it)", ss.Name, StatefulSet)
	}
	pod := &ss.Spec.Template
	cfg, c, perr := podConfig(o, &pod.Spec)
	errs = append(errs, perr...)
	if c == nil || cfg == nil {
		return errs
	}
	errs = append(errs, podSecurity(&pod.Spec, c)...)
	errs = append(errs, memory(c, cfg.Config)...)
	errs = append(errs, probes(c, cfg.Config)...)
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g < minGraceSeconds {
		bad("terminationGracePeriodSeconds must be at least %d: a clean stop persists every cursor and flushes the journal", minGraceSeconds)
	}

	// Volumes: each claim template is mounted, at the store its name says.
	templates := map[string]bool{}
	for _, t := range ss.Spec.VolumeClaimTemplates {
		templates[t.Name] = true
		if !mounted(c, t.Name) {
			bad("volumeClaimTemplate %q is not mounted in container %s", t.Name, c.Name)
		}
		if !slices.Equal(t.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
			bad("volumeClaimTemplate %q: accessModes %v, want [ReadWriteOnce]: one pod owns a store", t.Name, t.Spec.AccessModes)
		}
		if _, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			bad("volumeClaimTemplate %q requests no storage", t.Name)
		}
	}
	for _, v := range []string{JournalVolume, LedgerVolume} {
		if !templates[v] {
			bad("no volumeClaimTemplate %q: each pod needs its own %s volume", v, v)
		}
	}
	for _, v := range pod.Spec.Volumes {
		if templates[v.Name] {
			bad("pod volume %q hides the volumeClaimTemplate of that name", v.Name)
		}
	}

	// Selectors.
	podLabels := labels.Set(pod.Labels)
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
	switch {
	case err != nil:
		bad("StatefulSet selector: %v", err)
	case sel.Empty() || !sel.Matches(podLabels):
		bad("StatefulSet selector %v does not match its pod labels %v", sel, podLabels)
	}
	if ss.Spec.ServiceName != HeadlessName {
		bad("StatefulSet serviceName is %q, want the headless Service %q", ss.Spec.ServiceName, HeadlessName)
	}
	errs = append(errs, services(o, podLabels, pod, c, cfg.Config)...)
	errs = append(errs, networkPolicies(o, podLabels, c, cfg.Config)...)
	if len(o.PodDisruptionBudgets) != 1 {
		bad("want one PodDisruptionBudget, have %d", len(o.PodDisruptionBudgets))
	} else {
		pdb := o.PodDisruptionBudgets[0]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(podLabels) {
			bad("PodDisruptionBudget %s selector %v does not match the pod labels %v", pdb.Name, pdb.Spec.Selector, podLabels)
		}
		if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) {
			bad("PodDisruptionBudget %s: maxUnavailable must be 1", pdb.Name)
		}
	}
	return errs
}

// Drain checks the rendering of the drain Job's kustomization: one Job
// that runs logpond -drain over a removed pod's claims
// (journal-logpond-N, ledger-logpond-N), mounted where the configuration
// puts the stores, and nothing that would change the running pods.
func Drain(o *Objects) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, noSecretData(o)...)
	if len(o.StatefulSets)+len(o.Services)+len(o.PodDisruptionBudgets) > 0 {
		bad("the drain kustomization must hold no StatefulSet, Service or PodDisruptionBudget: applying it would change the running pods")
	}
	if len(o.Jobs) != 1 {
		bad("want one Job, have %d", len(o.Jobs))
		return errs
	}
	job := o.Jobs[0]
	spec := &job.Spec.Template.Spec
	cfg, c, perr := podConfig(o, spec)
	errs = append(errs, perr...)
	if c == nil || cfg == nil {
		return errs
	}
	errs = append(errs, podSecurity(spec, c)...)
	errs = append(errs, memory(c, cfg.Config)...)
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		bad("Job restartPolicy is %q, want Never: exit 3 (not done in time) is for a person to look at", spec.RestartPolicy)
	}
	if !slices.Contains(c.Args, "-drain") {
		bad("the Job's container args %q lack -drain", c.Args)
	}
	if slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "beats" }) {
		bad("the Job's container exposes a beats port: a drain never listens for Beats")
	}
	claims := map[string]string{}
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
		if (v.Name == JournalVolume || v.Name == LedgerVolume) && v.PersistentVolumeClaim == nil {
			bad("Job volume %q is not a PersistentVolumeClaim: a drain reads a removed pod's kept claims", v.Name)
		}
	}
	jc, lc := claims[JournalVolume], claims[LedgerVolume]
	jn, jok := strings.CutPrefix(jc, JournalVolume+"-"+StatefulSet+"-")
	ln, lok := strings.CutPrefix(lc, LedgerVolume+"-"+StatefulSet+"-")
	if _, err := strconv.ParseUint(jn, 10, 32); !jok || err != nil {
		bad("journal claim %q is not %s-%s-N", jc, JournalVolume, StatefulSet)
	}
	if _, err := strconv.ParseUint(ln, 10, 32); !lok || err != nil {
		bad("ledger claim %q is not %s-%s-N", lc, LedgerVolume, StatefulSet)
	}
	if jok && lok && jn != ln {
		bad("journal claim %q and ledger claim %q belong to different pods", jc, lc)
	}
	return errs
}

// noSecretData fails on a Secret with data in the manifests: credentials
// are created in the cluster, never committed.
func noSecretData(o *Objects) []error {
	var errs []error
	for _, s := range o.Secrets {
		if len(s.Data)+len(s.StringData) > 0 {
			errs = append(errs, fmt.Errorf("Secret %s carries data in the manifests: create it in the cluster (kubectl create secret) instead", s.Name))
		}
	}
	return errs
}

// podConfig finds the logpond container of a pod spec and the ConfigMap it
// reads its configuration from, loads that configuration in the
// container's environment, and checks what ties them: the ConfigMap is
// mounted at ConfigDir, -config names its file, the stores' volumes are
// mounted at journal.dir and ledger.dir, every file the configuration
// reads is on a mounted volume, and its credentials come from Secrets.
func podConfig(o *Objects, spec *corev1.PodSpec) (*conf.Loaded, *corev1.Container, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == ContainerName })
	if i < 0 {
		bad("no container %q", ContainerName)
		return nil, nil, errs
	}
	c := &spec.Containers[i]

	// The configuration: the ConfigMap volume mounted at ConfigDir.
	var cmName string
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil && mountPath(c, v.Name) == ConfigDir {
			cmName = v.ConfigMap.Name
		}
	}
	if cmName == "" {
		bad("no ConfigMap volume is mounted at %s, where the image reads %s", ConfigDir, ConfigKey)
		return nil, c, errs
	}
	j := slices.IndexFunc(o.ConfigMaps, func(cm *corev1.ConfigMap) bool { return cm.Name == cmName })
	if j < 0 {
		bad("the ConfigMap %q mounted at %s is not in the manifests", cmName, ConfigDir)
		return nil, c, errs
	}
	data, ok := o.ConfigMaps[j].Data[ConfigKey]
	if !ok {
		bad("the ConfigMap %q has no key %s", cmName, ConfigKey)
		return nil, c, errs
	}
	if k := slices.Index(c.Args, "-config"); k < 0 || k+1 >= len(c.Args) || path.Clean(c.Args[k+1]) != path.Join(ConfigDir, ConfigKey) {
		bad("container args %q must pass -config %s", c.Args, path.Join(ConfigDir, ConfigKey))
	}
	l, err := parseConfig(data, c.Env)
	if err != nil {
		return nil, c, append(errs, err)
	}
	cfg := l.Config

	for vol, dir := range map[string]string{JournalVolume: cfg.Journal.Dir, LedgerVolume: cfg.Ledger.Dir} {
		if got := mountPath(c, vol); got != path.Clean(dir) {
			bad("volume %q is mounted at %q, but the configuration puts the %s at %q", vol, got, vol, dir)
		}
		for _, m := range c.VolumeMounts {
			if m.Name == vol && m.ReadOnly {
				bad("volume %q is mounted read-only", vol)
			}
		}
	}
	for key, file := range configFiles(cfg) {
		if !onMount(c, file) {
			bad("%s = %q is on no volume mounted in the container", key, file)
		}
	}
	errs = append(errs, credentials(l, c.Env)...)
	return l, c, errs
}

// mountPath is where volume is mounted in c ("" when it is not), cleaned.
func mountPath(c *corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return path.Clean(m.MountPath)
		}
	}
	return ""
}

func mounted(c *corev1.Container, volume string) bool { return mountPath(c, volume) != "" }

// onMount reports whether file lies below one of c's volume mounts.
func onMount(c *corev1.Container, file string) bool {
	file = path.Clean(file)
	for _, m := range c.VolumeMounts {
		if p := path.Clean(m.MountPath); strings.HasPrefix(file, p+"/") {
			return true
		}
	}
	return false
}

// podSecurity checks that the pod runs as the image's unprivileged user
// with nothing it does not need: no root, no capability, no privilege
// escalation, a read-only root file system, the runtime's seccomp profile,
// and volumes made writable by its group.
func podSecurity(spec *corev1.PodSpec, c *corev1.Container) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	p := spec.SecurityContext
	if p == nil {
		p = &corev1.PodSecurityContext{}
	}
	s := c.SecurityContext
	if s == nil {
		s = &corev1.SecurityContext{}
	}
	is := func(v *int64) bool { return v != nil && *v == podUID }
	if !isTrue(p.RunAsNonRoot) && !isTrue(s.RunAsNonRoot) {
		bad("runAsNonRoot is not set")
	}
	if !is(p.RunAsUser) || s.RunAsUser != nil && !is(s.RunAsUser) {
		bad("the pod must run as user %d", podUID)
	}
	if !is(p.RunAsGroup) || s.RunAsGroup != nil && !is(s.RunAsGroup) {
		bad("the pod must run as group %d", podUID)
	}
	if !is(p.FSGroup) {
		bad("fsGroup must be %d, so that the volumes are writable by the pod's group", podUID)
	}
	if p.FSGroupChangePolicy == nil || *p.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch {
		bad("fsGroupChangePolicy must be OnRootMismatch, so that a large ledger is not walked at every start")
	}
	runtimeDefault := func(sp *corev1.SeccompProfile) bool {
		return sp != nil && sp.Type == corev1.SeccompProfileTypeRuntimeDefault
	}
	if !runtimeDefault(s.SeccompProfile) && !(s.SeccompProfile == nil && runtimeDefault(p.SeccompProfile)) {
		bad("seccompProfile must be RuntimeDefault")
	}
	if !isTrue(s.ReadOnlyRootFilesystem) {
		bad("readOnlyRootFilesystem must be true")
	}
	if s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation {
		bad("allowPrivilegeEscalation must be false")
	}
	if s.Privileged != nil && *s.Privileged {
		bad("the container must not be privileged")
	}
	if s.Capabilities == nil || !slices.Contains(s.Capabilities.Drop, "ALL") || len(s.Capabilities.Add) > 0 {
		bad("capabilities must drop ALL and add none")
	}
	return errs
}

func isTrue(b *bool) bool { return b != nil && *b }

// memory checks the container's resources against the memory formula for
// its configuration on as many CPUs as its CPU limit (GOMAXPROCS follows
// the limit, and the input keeps one compressor per CPU): the memory
// limit is at least the formula's total, and the request equals the limit
// (the pod is not evicted for memory it was promised).
func memory(c *corev1.Container, cfg *conf.Config) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	cpu, ok := c.Resources.Limits[corev1.ResourceCPU]
	if !ok {
		bad("container %s has no CPU limit: the memory formula depends on the CPUs logpond runs on", c.Name)
		return errs
	}
	cpus := int(math.Ceil(float64(cpu.MilliValue()) / 1000))
	mem, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		bad("container %s has no memory limit", c.Name)
		return errs
	}
	if req, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok || req.Cmp(mem) != 0 {
		bad("memory request %v must equal the limit %v", c.Resources.Requests.Memory(), mem.String())
	}
	if want := cfg.MemoryFor(cpus).Total(); mem.Value() < want {
		bad("memory limit %s (%d bytes) is below the memory formula for this configuration on %d CPUs: %d bytes (%.1f MiB; docs/operations.md, Memory)",
			mem.String(), mem.Value(), cpus, want, float64(want)/(1<<20))
	}
	return errs
}

// listenPort is the port of a listen address.
func listenPort(addr string) (int32, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(p, 10, 16)
	return int32(n), err
}

// listensOnPod reports whether a listen address takes connections on the
// pod's address (not loopback only).
func listensOnPod(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(h)
	return h == "" || ip != nil && ip.IsUnspecified()
}

// containerPort resolves a probe's or Service's target port (a number or
// a port name) against c's ports.
func containerPort(c *corev1.Container, p intstr.IntOrString) (int32, bool) {
	if p.Type == intstr.Int {
		return p.IntVal, true
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// probes checks the startup, liveness and readiness probes: HTTP GETs of
// /livez and /readyz on the port admin.listen names, and a startup probe
// that gives a start the time a large journal takes to recover.
func probes(c *corev1.Container, cfg *conf.Config) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	admin, err := listenPort(cfg.Admin.Listen)
	if err != nil || !listensOnPod(cfg.Admin.Listen) {
		bad("admin.listen = %q must listen on every address of the pod (0.0.0.0:PORT): the kubelet probes it there", cfg.Admin.Listen)
		return errs
	}
	check := func(name string, pr *corev1.Probe, want string) {
		if pr == nil || pr.HTTPGet == nil {
			bad("no HTTP %s probe", name)
			return
		}
		if pr.HTTPGet.Path != want {
			bad("%s probe path %q, want %s", name, pr.HTTPGet.Path, want)
		}
		if p, ok := containerPort(c, pr.HTTPGet.Port); !ok || p != admin {
			bad("%s probe port %s is not admin.listen's port %d", name, pr.HTTPGet.Port.String(), admin)
		}
	}
	check("startup", c.StartupProbe, "/livez")
	check("liveness", c.LivenessProbe, "/livez")
	check("readiness", c.ReadinessProbe, "/readyz")
	if sp := c.StartupProbe; sp != nil {
		if total := int64(max(sp.PeriodSeconds, 10)) * int64(max(sp.FailureThreshold, 3)); total < minStartupSeconds {
			bad("the startup probe gives a start %d s; recovering large stores needs at least %d s before liveness may restart it", total, minStartupSeconds)
		}
	}
	if lp := c.LivenessProbe; lp != nil && lp.FailureThreshold > 0 && lp.FailureThreshold < 3 {
		bad("liveness failureThreshold %d restarts logpond on a single slow answer", lp.FailureThreshold)
	}
	named := false
	for _, p := range c.Ports {
		if p.Name == "admin" {
			named = true
			if p.ContainerPort != admin {
				bad("container port admin is %d, admin.listen's port is %d", p.ContainerPort, admin)
			}
		}
	}
	if !named {
		bad("container has no port named admin")
	}
	return errs
}

// services checks the headless Service Beats clients resolve and the
// metrics Service Prometheus scrapes, with the Prometheus annotations of
// the pod template.
func services(o *Objects, podLabels labels.Set, pod *corev1.PodTemplateSpec, c *corev1.Container, cfg *conf.Config) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	beats, err := listenPort(cfg.Input.Beats.Listen)
	if err != nil || !listensOnPod(cfg.Input.Beats.Listen) {
		bad("input.beats.listen = %q must listen on every address of the pod (0.0.0.0:PORT)", cfg.Input.Beats.Listen)
	}
	admin, _ := listenPort(cfg.Admin.Listen)
	byName := map[string]*corev1.Service{}
	for _, s := range o.Services {
		byName[s.Name] = s
		sel := labels.SelectorFromSet(s.Spec.Selector)
		if len(s.Spec.Selector) == 0 || !sel.Matches(podLabels) {
			bad("Service %s selector %v does not match the pod labels %v", s.Name, s.Spec.Selector, podLabels)
		}
	}
	if h := byName[HeadlessName]; h == nil {
		bad("no headless Service %q", HeadlessName)
	} else {
		if h.Spec.ClusterIP != corev1.ClusterIPNone {
			bad("Service %s must be headless (clusterIP: None): Filebeat balances over the pods' names itself", h.Name)
		}
		if h.Spec.PublishNotReadyAddresses {
			bad("Service %s publishes pods that are not ready: clients would connect to a pod that waits", h.Name)
		}
		if !slices.ContainsFunc(h.Spec.Ports, func(p corev1.ServicePort) bool {
			t, ok := containerPort(c, p.TargetPort)
			return p.Port == beats && ok && t == beats
		}) {
			bad("Service %s has no port %d targeting input.beats.listen's port %d", h.Name, beats, beats)
		}
	}
	if m := byName[MetricsService]; m == nil {
		bad("no Service %q", MetricsService)
	} else {
		errs = append(errs, prometheus("Service "+m.Name, m.Annotations, admin)...)
		if !slices.ContainsFunc(m.Spec.Ports, func(p corev1.ServicePort) bool {
			t, ok := containerPort(c, p.TargetPort)
			return strconv.Itoa(int(p.Port)) == m.Annotations["prometheus.io/port"] && ok && t == admin
		}) {
			bad("Service %s has no port matching its prometheus.io/port that targets admin.listen's port %d", m.Name, admin)
		}
	}
	errs = append(errs, prometheus("the pod template", pod.Annotations, admin)...)
	return errs
}

// networkPolicies checks that the NetworkPolicies selecting the pods let
// Beats and Prometheus reach them: some ingress rule of each allows the
// port input.beats.listen names and some allows admin.listen's. (Who may
// connect is the policy's business; a policy that shuts a port entirely
// is a mistake.)
func networkPolicies(o *Objects, podLabels labels.Set, c *corev1.Container, cfg *conf.Config) []error {
	var errs []error
	beats, _ := listenPort(cfg.Input.Beats.Listen)
	admin, _ := listenPort(cfg.Admin.Listen)
	for _, np := range o.NetworkPolicies {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			errs = append(errs, fmt.Errorf("NetworkPolicy %s: %v", np.Name, err))
			continue
		}
		if !sel.Matches(podLabels) {
			continue
		}
		ingress := len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
		if !ingress {
			continue
		}
		for what, port := range map[string]int32{"input.beats.listen": beats, "admin.listen": admin} {
			if !slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool { return allowsPort(r, c, port) }) {
				errs = append(errs, fmt.Errorf("NetworkPolicy %s lets nothing reach %s's port %d", np.Name, what, port))
			}
		}
	}
	return errs
}

// allowsPort reports whether an ingress rule lets some peer reach port.
func allowsPort(r networkingv1.NetworkPolicyIngressRule, c *corev1.Container, port int32) bool {
	if len(r.Ports) == 0 {
		return true
	}
	for _, p := range r.Ports {
		if p.Port == nil {
			return true
		}
		n, ok := containerPort(c, *p.Port)
		if !ok {
			continue
		}
		end := n
		if p.EndPort != nil {
			end = *p.EndPort
		}
		if n <= port && port <= end {
			return true
		}
	}
	return false
}

// prometheus checks the prometheus.io annotations: scrape, the admin port
// and /metrics.
func prometheus(what string, ann map[string]string, admin int32) []error {
	var errs []error
	if ann["prometheus.io/scrape"] != "true" {
		errs = append(errs, fmt.Errorf("%s: prometheus.io/scrape is not \"true\"", what))
	}
	if want := strconv.Itoa(int(admin)); ann["prometheus.io/port"] != want {
		errs = append(errs, fmt.Errorf("%s: prometheus.io/port is %q, admin.listen's port is %s", what, ann["prometheus.io/port"], want))
	}
	if ann["prometheus.io/path"] != "/metrics" {
		errs = append(errs, fmt.Errorf("%s: prometheus.io/path is %q, want /metrics", what, ann["prometheus.io/path"]))
	}
	return errs
}
