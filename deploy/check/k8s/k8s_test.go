// Package k8s checks deploy/k8s: it builds the kustomize base and every
// overlay with the kustomize library, decodes every object strictly into
// the Kubernetes API types (an unknown or misspelt field fails), and checks
// the wiring a cluster would only reveal at run time: selectors and labels,
// ports, probes, ConfigMaps and Secrets, the Caddyfile, the binaries, the
// IW_* variables and the Prometheus annotations.
package k8s

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// externalSecrets are the Secrets the manifests use but do not hold (no
// secret belongs in git): docs/operations.md says how to create each, with
// exactly these keys.
var externalSecrets = map[string][]string{
	"invoicewire-secrets": {"redis-password", "redis-url", "signing-key"},
	"invoicewire-tls":     {"tls.crt", "tls.key"},
}

// builds are the kustomizations an operator applies.
var builds = []string{"base", "overlays/production"}

// objects is one build, decoded.
type objects struct {
	all          []runtime.Object
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	services     map[string]*corev1.Service
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	pods         []pod // every pod template, with its owner
}

// pod is a pod template and what owns it.
type pod struct {
	owner string // Kind/name
	meta  metav1.ObjectMeta
	spec  corev1.PodSpec
}

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, autoscalingv2.AddToScheme, batchv1.AddToScheme,
		networkingv1.AddToScheme, policyv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatalf("building the scheme: %v", err)
		}
	}
	return s
}

// build runs kustomize on deploy/k8s/<dir> and decodes every object.
func build(t *testing.T, root, dir string) *objects {
	t.Helper()
	return buildIn(t, filesys.MakeFsOnDisk(), filepath.Join(root, "deploy", "k8s"), dir)
}

// buildIn runs kustomize on <k8s>/<dir> of fsys and decodes every object.
func buildIn(t *testing.T, fsys filesys.FileSystem, k8s, dir string) *objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(fsys, filepath.Join(k8s, dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	s := scheme(t)
	// Strict: unknown and duplicate fields are errors, so a misspelt
	// "readinesProbe" fails here instead of being dropped by the API server.
	dec := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s, kjson.SerializerOptions{Yaml: true, Strict: true})
	o := &objects{
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{}, deployments: map[string]*appsv1.Deployment{},
		statefulSets: map[string]*appsv1.StatefulSet{},
	}
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s: %s: as YAML: %v", dir, r.CurId(), err)
		}
		obj, _, err := dec.Decode(y, nil, nil)
		if err != nil {
			t.Errorf("%s: %s does not decode into the Kubernetes API types: %v", dir, r.CurId(), err)
			continue
		}
		o.all = append(o.all, obj)
		switch v := obj.(type) {
		case *corev1.ConfigMap:
			o.configMaps[v.Name] = v
		case *corev1.Secret:
			o.secrets[v.Name] = v
		case *corev1.Service:
			o.services[v.Name] = v
		case *appsv1.Deployment:
			o.deployments[v.Name] = v
			o.pods = append(o.pods, pod{"Deployment/" + v.Name, v.Spec.Template.ObjectMeta, v.Spec.Template.Spec})
		case *appsv1.StatefulSet:
			o.statefulSets[v.Name] = v
			o.pods = append(o.pods, pod{"StatefulSet/" + v.Name, v.Spec.Template.ObjectMeta, v.Spec.Template.Spec})
		case *batchv1.Job:
			o.pods = append(o.pods, pod{"Job/" + v.Name, v.Spec.Template.ObjectMeta, v.Spec.Template.Spec})
		case *batchv1.CronJob:
			o.pods = append(o.pods, pod{"CronJob/" + v.Name, v.Spec.JobTemplate.Spec.Template.ObjectMeta, v.Spec.JobTemplate.Spec.Template.Spec})
		}
	}
	if len(o.all) == 0 {
		t.Fatalf("%s: kustomize built no objects", dir)
	}
	return o
}

// selected returns the pod templates a label selector matches.
func (o *objects) selected(t *testing.T, sel labels.Selector) []pod {
	var out []pod
	for _, p := range o.pods {
		if sel.Matches(labels.Set(p.meta.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

func mustSelector(t *testing.T, what string, ls *metav1.LabelSelector) labels.Selector {
	t.Helper()
	if ls == nil || (len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0) {
		t.Errorf("%s: empty selector (it would select every pod)", what)
		return labels.Nothing()
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Errorf("%s: selector: %v", what, err)
		return labels.Nothing()
	}
	return s
}

// hasPort reports whether the port (a number or a container port's name)
// is declared by one of the pod's containers.
func hasPort(spec corev1.PodSpec, port intstr.IntOrString) bool {
	for _, c := range spec.Containers {
		if containerPort(c, port) != 0 {
			return true
		}
	}
	return false
}

// containerPort resolves port against c's declared ports: its number, or 0.
func containerPort(c corev1.Container, port intstr.IntOrString) int32 {
	for _, p := range c.Ports {
		if port.Type == intstr.String && p.Name == port.StrVal {
			return p.ContainerPort
		}
		if port.Type == intstr.Int && p.ContainerPort == port.IntVal {
			return p.ContainerPort
		}
	}
	return 0
}

func TestBuilds(t *testing.T) {
	root := repo.Root(t)
	for _, dir := range builds {
		t.Run(dir, func(t *testing.T) {
			o := build(t, root, dir)
			checkWorkloads(t, o)
			checkServices(t, o)
			checkSelectorsOf(t, o)
			checkReferences(t, o)
			checkProbesAndPorts(t, root, o)
			checkEnvironment(t, root, o)
			checkCaddyfile(t, root, o)
			checkBinaries(t, root, o)
		})
	}
}

// checkWorkloads: selectors match their own templates; every container asks
// for CPU and memory and runs unprivileged; HPA targets exist and own the
// replica count.
func checkWorkloads(t *testing.T, o *objects) {
	for name, d := range o.deployments {
		sel := mustSelector(t, "Deployment/"+name, d.Spec.Selector)
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment/%s: selector %s does not match its pod template's labels %v", name, sel, d.Spec.Template.Labels)
		}
	}
	for name, s := range o.statefulSets {
		sel := mustSelector(t, "StatefulSet/"+name, s.Spec.Selector)
		if !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			t.Errorf("StatefulSet/%s: selector %s does not match its pod template's labels %v", name, sel, s.Spec.Template.Labels)
		}
		svc, ok := o.services[s.Spec.ServiceName]
		switch {
		case !ok:
			t.Errorf("StatefulSet/%s: serviceName %q names no Service", name, s.Spec.ServiceName)
		case svc.Spec.ClusterIP != corev1.ClusterIPNone:
			t.Errorf("StatefulSet/%s: its Service %s must be headless for stable pod names", name, svc.Name)
		case !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(s.Spec.Template.Labels)):
			t.Errorf("StatefulSet/%s: its Service %s does not select its pods", name, svc.Name)
		}
	}
	for _, p := range o.pods {
		for _, c := range append(slices.Clone(p.spec.InitContainers), p.spec.Containers...) {
			what := p.owner + "/" + c.Name
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("%s: needs CPU and memory requests", what)
			}
			sc := c.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: needs allowPrivilegeEscalation: false and readOnlyRootFilesystem: true", what)
			}
			if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("%s: needs capabilities drop [ALL]", what)
			}
			if c.Image == "" || c.ImagePullPolicy == "Never" {
				t.Errorf("%s: no usable image", what)
			}
		}
		if psc := p.spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("%s: needs runAsNonRoot", p.owner)
		}
	}
	for _, obj := range o.all {
		h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			continue
		}
		ref := h.Spec.ScaleTargetRef
		d, ok := o.deployments[ref.Name]
		if ref.Kind != "Deployment" || !ok {
			t.Errorf("HPA/%s: target %s/%s does not exist", h.Name, ref.Kind, ref.Name)
			continue
		}
		if d.Spec.Replicas != nil {
			t.Errorf("HPA/%s: Deployment/%s sets replicas, which resets the autoscaler on every apply", h.Name, d.Name)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			t.Errorf("HPA/%s: needs 2 <= minReplicas <= maxReplicas", h.Name)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Resources.Requests.Cpu().IsZero() {
				t.Errorf("HPA/%s: container %s has no CPU request, so CPU utilisation is undefined", h.Name, c.Name)
			}
		}
	}
}

// checkServices: every Service selects pods, and every target port exists
// on each of them.
func checkServices(t *testing.T, o *objects) {
	for name, svc := range o.services {
		if len(svc.Spec.Selector) == 0 {
			t.Errorf("Service/%s: no selector", name)
			continue
		}
		pods := o.selected(t, labels.SelectorFromSet(svc.Spec.Selector))
		if len(pods) == 0 {
			t.Errorf("Service/%s: selector %v matches no pod template", name, svc.Spec.Selector)
		}
		for _, p := range pods {
			if strings.HasPrefix(p.owner, "Job/") || strings.HasPrefix(p.owner, "CronJob/") {
				t.Errorf("Service/%s: selects the pods of %s too", name, p.owner)
				continue
			}
			for _, sp := range svc.Spec.Ports {
				target := sp.TargetPort
				if target.Type == intstr.Int && target.IntVal == 0 {
					target = intstr.FromInt32(sp.Port)
				}
				if !hasPort(p.spec, target) {
					t.Errorf("Service/%s port %s: target port %s is not a container port of %s", name, sp.Name, target.String(), p.owner)
				}
			}
		}
	}
	for _, obj := range o.all {
		ing, ok := obj.(*networkingv1.Ingress)
		if !ok {
			continue
		}
		for _, rule := range ing.Spec.Rules {
			for _, path := range rule.HTTP.Paths {
				b := path.Backend.Service
				svc, ok := o.services[b.Name]
				if !ok {
					t.Errorf("Ingress/%s: backend Service %q does not exist", ing.Name, b.Name)
					continue
				}
				found := false
				for _, sp := range svc.Spec.Ports {
					found = found || (b.Port.Name != "" && sp.Name == b.Port.Name) || (b.Port.Number != 0 && sp.Port == b.Port.Number)
				}
				if !found {
					t.Errorf("Ingress/%s: Service %s has no port %+v", ing.Name, b.Name, b.Port)
				}
				if svc.Name != "edge" {
					t.Errorf("Ingress/%s: routes to %s; only the edge is public (docs/architecture.md)", ing.Name, svc.Name)
				}
			}
		}
		for _, tls := range ing.Spec.TLS {
			if _, ok := o.secrets[tls.SecretName]; !ok && externalSecrets[tls.SecretName] == nil {
				t.Errorf("Ingress/%s: TLS Secret %q neither built nor documented as external", ing.Name, tls.SecretName)
			}
		}
	}
}

// checkSelectorsOf: PDBs and NetworkPolicies select real pods, and the
// ports a policy opens exist on them.
func checkSelectorsOf(t *testing.T, o *objects) {
	for _, obj := range o.all {
		switch v := obj.(type) {
		case *policyv1.PodDisruptionBudget:
			if len(o.selected(t, mustSelector(t, "PDB/"+v.Name, v.Spec.Selector))) == 0 {
				t.Errorf("PDB/%s: selects no pods", v.Name)
			}
			if (v.Spec.MinAvailable == nil) == (v.Spec.MaxUnavailable == nil) {
				t.Errorf("PDB/%s: set exactly one of minAvailable and maxUnavailable", v.Name)
			}
		case *networkingv1.NetworkPolicy:
			pods := o.selected(t, mustSelector(t, "NetworkPolicy/"+v.Name, &v.Spec.PodSelector))
			if len(pods) == 0 {
				t.Errorf("NetworkPolicy/%s: selects no pods", v.Name)
			}
			for _, rule := range v.Spec.Ingress {
				for _, pp := range rule.Ports {
					for _, p := range pods {
						if pp.Port != nil && !hasPort(p.spec, *pp.Port) {
							t.Errorf("NetworkPolicy/%s: port %s is not a container port of %s", v.Name, pp.Port.String(), p.owner)
						}
					}
				}
				for _, peer := range rule.From {
					if peer.PodSelector != nil && len(peer.PodSelector.MatchLabels) > 0 && len(o.selected(t, mustSelector(t, "NetworkPolicy/"+v.Name+" from", peer.PodSelector))) == 0 {
						t.Errorf("NetworkPolicy/%s: peer %v selects no pods", v.Name, peer.PodSelector.MatchLabels)
					}
				}
			}
		}
	}
	// Every long-running pod must be allowed in by some policy on each of its
	// ports if a policy selects it: an unlisted port is silently closed.
}

// checkReferences: every ConfigMap and Secret a pod names exists (or is a
// documented external Secret), with the keys it reads.
func checkReferences(t *testing.T, o *objects) {
	cm := func(what, name, key string, optional *bool) {
		c, ok := o.configMaps[name]
		if !ok {
			if optional == nil || !*optional {
				t.Errorf("%s: ConfigMap %q does not exist", what, name)
			}
			return
		}
		if key != "" {
			if _, ok := c.Data[key]; !ok {
				t.Errorf("%s: ConfigMap %s has no key %q", what, name, key)
			}
		}
	}
	sec := func(what, name, key string, optional *bool) {
		if s, ok := o.secrets[name]; ok {
			if _, ok := s.Data[key]; key != "" && !ok {
				if _, ok := s.StringData[key]; !ok {
					t.Errorf("%s: Secret %s has no key %q", what, name, key)
				}
			}
			return
		}
		keys, ok := externalSecrets[name]
		if !ok {
			t.Errorf("%s: Secret %q neither built nor documented as external", what, name)
			return
		}
		if key != "" && !slices.Contains(keys, key) {
			t.Errorf("%s: the external Secret %s is documented without key %q", what, name, key)
		}
	}
	for _, p := range o.pods {
		for _, c := range append(slices.Clone(p.spec.InitContainers), p.spec.Containers...) {
			what := p.owner + "/" + c.Name
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					cm(what, ef.ConfigMapRef.Name, "", ef.ConfigMapRef.Optional)
				}
				if ef.SecretRef != nil {
					sec(what, ef.SecretRef.Name, "", ef.SecretRef.Optional)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					cm(what+" env "+e.Name, r.Name, r.Key, r.Optional)
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					sec(what+" env "+e.Name, r.Name, r.Key, r.Optional)
				}
			}
			for _, vm := range c.VolumeMounts {
				found := slices.ContainsFunc(p.spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
				if !found && !isClaimTemplate(o, p, vm.Name) {
					t.Errorf("%s: volume mount %q names no volume", what, vm.Name)
				}
			}
		}
		for _, v := range p.spec.Volumes {
			if v.ConfigMap != nil {
				cm(p.owner+" volume "+v.Name, v.ConfigMap.Name, "", v.ConfigMap.Optional)
				for _, it := range v.ConfigMap.Items {
					cm(p.owner+" volume "+v.Name, v.ConfigMap.Name, it.Key, v.ConfigMap.Optional)
				}
			}
			if v.Secret != nil {
				sec(p.owner+" volume "+v.Name, v.Secret.SecretName, "", v.Secret.Optional)
			}
		}
	}
}

func isClaimTemplate(o *objects, p pod, name string) bool {
	s, ok := o.statefulSets[strings.TrimPrefix(p.owner, "StatefulSet/")]
	return ok && slices.ContainsFunc(s.Spec.VolumeClaimTemplates, func(c corev1.PersistentVolumeClaim) bool { return c.Name == name })
}

// env returns the value a container sets for name directly, or from the
// ConfigMaps it loads whole, and whether it is set at all.
func env(o *objects, c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			if m, ok := o.configMaps[ef.ConfigMapRef.Name]; ok {
				if v, ok := m.Data[name]; ok {
					return v, true
				}
			}
		}
	}
	return "", false
}

// component is the app.kubernetes.io/component of a pod.
func component(p pod) string { return p.meta.Labels["app.kubernetes.io/component"] }

// listens are, per component, the ports its process listens on, derived
// from its configuration: the IW_*_ADDR variables of origin and worker, the
// Caddyfile's site addresses for the edge, redis.conf for Redis.
func listens(t *testing.T, o *objects, p pod, c corev1.Container) (ports map[int32]string) {
	ports = map[int32]string{}
	addr := func(v, def string) {
		val, ok := env(o, c, v)
		if !ok {
			val = def
		}
		host, port, err := net.SplitHostPort(val)
		if err != nil {
			t.Errorf("%s: %s=%q is not host:port", p.owner, v, val)
			return
		}
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			t.Errorf("%s: %s=%q listens on loopback, out of reach of the kubelet, Prometheus and the other pods", p.owner, v, val)
		}
		n, _ := strconv.Atoi(port)
		ports[int32(n)] = v
	}
	switch component(p) {
	case "origin":
		addr("IW_ORIGIN_ADDR", "127.0.0.1:8081")
		addr("IW_ORIGIN_METRICS_ADDR", "127.0.0.1:8091")
	case "worker":
		addr("IW_WORKER_METRICS_ADDR", "127.0.0.1:8082")
	case "edge":
		for _, m := range regexp.MustCompile(`(?m)^:(\d+) \{`).FindAllStringSubmatch(caddyfileOf(t, o, p, c), -1) {
			n, _ := strconv.Atoi(m[1])
			ports[int32(n)] = "Caddyfile site :" + m[1]
		}
	case "redis":
		if isRedisExporter(c) {
			ports[9121] = "redis_exporter METRICS (--web.listen-address :9121)"
			break
		}
		ports[6379] = "redis.conf port"
		ports[16379] = "cluster bus (port + 10000)"
	case "redis-counters":
		if isRedisExporter(c) {
			ports[9121] = "redis_exporter METRICS (--web.listen-address :9121)"
			break
		}
		if i := slices.Index(c.Command, "--port"); i >= 0 && i+1 < len(c.Command) {
			n, _ := strconv.Atoi(c.Command[i+1])
			ports[int32(n)] = "redis-server --port"
		}
	}
	return ports
}

// checkProbesAndPorts: each declared container port is one the process
// really listens on; each probe and the Prometheus annotation point at one.
func checkProbesAndPorts(t *testing.T, root string, o *objects) {
	for _, p := range o.pods {
		comp := component(p)
		if comp == "" {
			t.Errorf("%s: pod template without app.kubernetes.io/component", p.owner)
		}
		long := strings.HasPrefix(p.owner, "Deployment/") || strings.HasPrefix(p.owner, "StatefulSet/")
		if !long {
			continue
		}
		var scrapePort string
		if p.meta.Annotations["prometheus.io/scrape"] == "true" {
			scrapePort = p.meta.Annotations["prometheus.io/port"]
			if p.meta.Annotations["prometheus.io/path"] != "/metrics" {
				t.Errorf("%s: prometheus.io/path must be /metrics", p.owner)
			}
		} else {
			t.Errorf("%s: no prometheus.io/scrape annotation: its metrics would never be collected", p.owner)
		}
		if scrapePort != "" {
			n, err := strconv.Atoi(scrapePort)
			if err != nil || !hasPort(p.spec, intstr.FromInt(n)) {
				t.Errorf("%s: prometheus.io/port %q is not a container port", p.owner, scrapePort)
			}
		}
		for _, c := range p.spec.Containers {
			what := p.owner + "/" + c.Name
			real := listens(t, o, p, c)
			for _, cp := range c.Ports {
				if _, ok := real[cp.ContainerPort]; !ok {
					t.Errorf("%s: declares port %s %d, but the process listens on %v", what, cp.Name, cp.ContainerPort, real)
				}
			}
			for kind, pr := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if pr == nil {
					if kind != "startup" {
						t.Errorf("%s: no %s probe", what, kind)
					}
					continue
				}
				var port intstr.IntOrString
				switch {
				case pr.HTTPGet != nil:
					port = pr.HTTPGet.Port
					if !strings.HasPrefix(pr.HTTPGet.Path, "/") {
						t.Errorf("%s: %s probe path %q", what, kind, pr.HTTPGet.Path)
					}
					if n := containerPort(c, port); n != 0 && comp != "edge" && pr.HTTPGet.Path != "/metrics" && pr.HTTPGet.Path != "/healthz" {
						t.Errorf("%s: %s probe path %q is not served on port %d", what, kind, pr.HTTPGet.Path, n)
					}
				case pr.TCPSocket != nil:
					port = pr.TCPSocket.Port
				case pr.Exec != nil:
					continue
				default:
					t.Errorf("%s: %s probe has no handler", what, kind)
					continue
				}
				if containerPort(c, port) == 0 {
					t.Errorf("%s: %s probe port %s is not a declared container port", what, kind, port.String())
				}
			}
			if scrapePort != "" {
				n, err := strconv.Atoi(scrapePort)
				if err != nil || containerPort(c, intstr.FromInt(n)) == 0 {
					continue // another container's port (checked above)
				} else if src := real[int32(n)]; comp != "edge" && !strings.Contains(src, "METRICS") || comp == "edge" && n == 8080 {
					t.Errorf("%s: prometheus.io/port %d is not the metrics listener (%s)", what, n, src)
				}
			}
		}
	}
}

// checkEnvironment: every IW_* variable set is one the code reads; every
// Invoicewire process gets its Redis and public URL.
func checkEnvironment(t *testing.T, root string, o *objects) {
	known := repo.KnownVars(t, root)
	noWorker := !repo.HasCommand(root, "worker")
	for _, p := range o.pods {
		if component(p) == "redis" || component(p) == "redis-init" || component(p) == "redis-counters" {
			continue
		}
		for _, c := range p.spec.Containers {
			names := map[string]bool{}
			for _, e := range c.Env {
				names[e.Name] = true
			}
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					for k := range o.configMaps[ef.ConfigMapRef.Name].Data {
						names[k] = true
					}
				}
			}
			for _, n := range repo.Sorted(names) {
				if !strings.HasPrefix(n, "IW_") || known[n] {
					continue
				}
				if noWorker && (strings.HasPrefix(n, "IW_WORKER_") || n == "IW_SIGNING_KEY") {
					t.Logf("%s: %s is read by the worker branch, not merged yet", p.owner, n)
					continue
				}
				t.Errorf("%s/%s: sets %s, which no code of the repository reads", p.owner, c.Name, n)
			}
			for _, need := range []string{"IW_REDIS_URL", "IW_PUBLIC_URL"} {
				if !names[need] {
					t.Errorf("%s/%s: %s is not set", p.owner, c.Name, need)
				}
			}
		}
	}
}

// caddyfileOf returns the Caddyfile the edge container runs: the --config
// argument, resolved through its volume mounts to a ConfigMap key.
func caddyfileOf(t *testing.T, o *objects, p pod, c corev1.Container) string {
	args := append(slices.Clone(c.Command), c.Args...)
	i := slices.Index(args, "--config")
	if i < 0 || i+1 >= len(args) {
		t.Errorf("%s: the edge runs without --config", p.owner)
		return ""
	}
	path := args[i+1]
	for _, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range p.spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil {
				m, ok := o.configMaps[v.ConfigMap.Name]
				if !ok {
					return ""
				}
				body, ok := m.Data[rel]
				if !ok {
					t.Errorf("%s: --config %s: ConfigMap %s has no key %q", p.owner, path, m.Name, rel)
				}
				return body
			}
		}
	}
	t.Errorf("%s: --config %s is on no ConfigMap volume", p.owner, path)
	return ""
}

// checkCaddyfile: the edge's ConfigMap holds deploy/k8s/base/Caddyfile, and
// that file proxies to the origin Service's name and port.
func checkCaddyfile(t *testing.T, root string, o *objects) {
	want, err := os.ReadFile(filepath.Join(root, "deploy", "k8s", "base", "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range o.pods {
		if component(p) != "edge" {
			continue
		}
		for _, c := range p.spec.Containers {
			got := caddyfileOf(t, o, p, c)
			if got != string(want) {
				t.Errorf("%s: the mounted Caddyfile is not deploy/k8s/base/Caddyfile", p.owner)
			}
			m := regexp.MustCompile(`dynamic a \{\s*name (\S+)\s*port (\d+)`).FindStringSubmatch(got)
			if m == nil {
				t.Errorf("%s: the Caddyfile has no `dynamic a { name ... port ... }` upstream", p.owner)
				continue
			}
			svc, ok := o.services[m[1]]
			switch {
			case !ok:
				t.Errorf("Caddyfile: upstream name %q is no Service", m[1])
			case svc.Spec.ClusterIP != corev1.ClusterIPNone:
				t.Errorf("Caddyfile: Service %s must be headless for `dynamic a` to see every pod", m[1])
			default:
				n, _ := strconv.Atoi(m[2])
				pods := o.selected(t, labels.SelectorFromSet(svc.Spec.Selector))
				for _, op := range pods {
					if !hasPort(op.spec, intstr.FromInt(n)) {
						t.Errorf("Caddyfile: upstream port %d is not a container port of %s", n, op.owner)
					}
				}
			}
		}
	}
}

// checkBinaries: each Invoicewire container runs a binary the image builds
// (cmd/<name>, copied to /usr/local/bin by deploy/Dockerfile).
func checkBinaries(t *testing.T, root string, o *objects) {
	dockerfile, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatalf("reading deploy/Dockerfile: %v", err)
	}
	for _, want := range []string{"./cmd/...", "/usr/local/bin/", "content /srv/invoicewire/content"} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("deploy/Dockerfile does not contain %q", want)
		}
	}
	for _, p := range o.pods {
		for _, c := range p.spec.Containers {
			if !strings.Contains(c.Image, "invoicewire") {
				continue
			}
			if len(c.Command) == 0 {
				t.Errorf("%s/%s: no command", p.owner, c.Name)
				continue
			}
			bin, ok := strings.CutPrefix(c.Command[0], "/usr/local/bin/")
			if !ok {
				t.Errorf("%s/%s: runs %s, not a binary of the image", p.owner, c.Name, c.Command[0])
				continue
			}
			if !repo.HasCommand(root, bin) {
				t.Logf("%s: cmd/%s is not in this checkout yet (its branch is not merged)", p.owner, bin)
			}
		}
	}
}

// TestProductionPinsImages: production never runs a moving tag.
func TestProductionPinsImages(t *testing.T) {
	o := build(t, repo.Root(t), "overlays/production")
	for _, p := range o.pods {
		for _, c := range p.spec.Containers {
			if strings.HasSuffix(c.Image, ":latest") || !strings.Contains(c.Image, ":") {
				t.Errorf("%s/%s: image %q is not pinned", p.owner, c.Name, c.Image)
			}
		}
	}
	if ns := namespaces(o); len(ns) != 1 || ns[0] != "invoicewire" {
		t.Errorf("production objects are in namespaces %v, want [invoicewire]", ns)
	}
}

func namespaces(o *objects) []string {
	seen := map[string]bool{}
	for _, obj := range o.all {
		m, err := metaOf(obj)
		if err != nil {
			continue
		}
		if _, isNS := obj.(*corev1.Namespace); !isNS {
			seen[m.GetNamespace()] = true
		}
	}
	return repo.Sorted(seen)
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

// TestExternalSecretsDocumented: each Secret the manifests expect to find
// is explained, with its keys, in docs/operations.md.
func TestExternalSecretsDocumented(t *testing.T) {
	root := repo.Root(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatalf("reading docs/operations.md: %v", err)
	}
	for name, keys := range externalSecrets {
		if !strings.Contains(string(b), name) {
			t.Errorf("docs/operations.md does not say how to create Secret %s", name)
		}
		for _, k := range keys {
			if !strings.Contains(string(b), k) {
				t.Errorf("docs/operations.md does not name key %s of Secret %s", k, name)
			}
		}
	}
}

// caddyfileExceptions are the directives of caddyfile/Caddyfile.production
// the Kubernetes Caddyfile leaves out, by block path; its header must name
// each (in backquotes) among the ways it differs.
var caddyfileExceptions = map[string]string{
	"global/email":                              "ACME account: TLS ends at the Ingress",
	"global/servers/listener_wrappers/tls":      "TLS ends at the Ingress",
	"site/log":                                  "no access log",
	"site/bind":                                 "the metrics site is on the pod address, for Prometheus and the kubelet",
	"site/handle/reverse_proxy/health_uri":      "passive health: no active checks on dynamic upstreams",
	"site/handle/reverse_proxy/health_interval": "passive health: no active checks on dynamic upstreams",
}

// caddyfileDirectives returns the directives of a Caddyfile by block path:
// "global/servers/timeouts/read_header", "site/handle/reverse_proxy/...";
// every site block is "site".
func caddyfileDirectives(t *testing.T, root, path string) map[string]bool {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	var stack []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line == "}" {
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		name := strings.Fields(line)[0]
		if len(stack) == 0 {
			if line == "{" {
				stack = append(stack, "global")
			} else if strings.HasSuffix(line, "{") {
				stack = append(stack, "site")
			}
			continue
		}
		p := strings.Join(stack, "/") + "/" + name
		out[p] = true
		if strings.HasSuffix(line, "{") {
			stack = append(stack, name)
		}
	}
	return out
}

// TestCaddyfileFollowsProduction: the Kubernetes Caddyfile keeps every
// directive of caddyfile/Caddyfile.production (the edge's own production
// example), block by block, except those its header names as left out.
func TestCaddyfileFollowsProduction(t *testing.T) {
	root := repo.Root(t)
	prod := caddyfileDirectives(t, root, "caddyfile/Caddyfile.production")
	k8s := caddyfileDirectives(t, root, "deploy/k8s/base/Caddyfile")
	b, err := os.ReadFile(filepath.Join(root, "deploy", "k8s", "base", "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(b), "\n{")
	for _, d := range repo.Sorted(prod) {
		if k8s[d] {
			continue
		}
		why, ok := caddyfileExceptions[d]
		if !ok {
			t.Errorf("caddyfile/Caddyfile.production has %s, deploy/k8s/base/Caddyfile does not", d)
			continue
		}
		name := d[strings.LastIndex(d, "/")+1:]
		if !strings.Contains(header, "`"+name+"`") {
			t.Errorf("deploy/k8s/base/Caddyfile leaves out %s (%s), but its header does not name `%s` among the ways it differs", d, why, name)
		}
	}
	if len(prod) < 50 || len(k8s) < 50 {
		t.Errorf("read %d directives of the production Caddyfile and %d of the Kubernetes one: the parser is off", len(prod), len(k8s))
	}
}

// TestRedisClusterInit: the Job that forms the cluster names every node of
// the StatefulSet, and the cluster gets at least three masters with one
// replica each.
func TestRedisClusterInit(t *testing.T) {
	for _, dir := range builds {
		o := build(t, repo.Root(t), dir)
		ss, ok := o.statefulSets["redis"]
		if !ok || ss.Spec.Replicas == nil {
			t.Fatalf("%s: no redis StatefulSet with replicas", dir)
		}
		n := int(*ss.Spec.Replicas)
		var script string
		for _, p := range o.pods {
			if p.owner == "Job/redis-cluster-init" {
				script = strings.Join(p.spec.Containers[0].Command, " ")
			}
		}
		m := regexp.MustCompile(`for i in ([0-9 ]+);`).FindStringSubmatch(script)
		if m == nil {
			t.Fatalf("%s: the init Job does not loop over the nodes", dir)
		}
		if got := len(strings.Fields(m[1])); got != n {
			t.Errorf("%s: the init Job forms a cluster of %d nodes, the StatefulSet has %d", dir, got, n)
		}
		if !strings.Contains(script, "--cluster-replicas 1") || n/2 < 3 {
			t.Errorf("%s: want at least three masters with one replica each (%d nodes)", dir, n)
		}
		if !strings.Contains(script, "redis-$i."+ss.Spec.ServiceName) {
			t.Errorf("%s: the init Job does not address the nodes through Service %s", dir, ss.Spec.ServiceName)
		}
	}
}

// TestCounterRedis: the edges' rate-limit counts have a Redis of their own
// (docs/decisions.md, "Rate-limit state"), which persists nothing (no
// volume, no AOF, no snapshots) and makes room by expiry when full, and
// IW_RATELIMIT_REDIS_URL points the edges at its Service.
func TestCounterRedis(t *testing.T) {
	root := repo.Root(t)
	for _, dir := range builds {
		t.Run(dir, func(t *testing.T) {
			o := build(t, root, dir)
			var url string
			for _, cm := range o.configMaps {
				if v, ok := cm.Data["IW_RATELIMIT_REDIS_URL"]; ok {
					url = v
				}
			}
			if _, ok := o.services["redis-counters"]; !ok || url != "redis://redis-counters:6379/0" {
				t.Errorf("IW_RATELIMIT_REDIS_URL=%q, Service redis-counters present: %v; want the counts on redis://redis-counters:6379/0", url, ok)
			}
			d, ok := o.deployments["redis-counters"]
			if !ok {
				t.Fatal("no Deployment redis-counters")
			}
			if len(d.Spec.Template.Spec.Volumes) != 0 {
				t.Errorf("Deployment/redis-counters mounts %d volumes; the counts need no durability", len(d.Spec.Template.Spec.Volumes))
			}
			cmd := strings.Join(d.Spec.Template.Spec.Containers[0].Command, " ")
			for _, want := range []string{"--appendonly no", `--save  `, "--maxmemory 256mb", "--maxmemory-policy volatile-ttl"} {
				if !strings.Contains(cmd+" ", want) {
					t.Errorf("Deployment/redis-counters runs %q, without %q", cmd, want)
				}
			}
		})
	}
}
