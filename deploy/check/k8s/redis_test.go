package k8s

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// shippedBuilds are the base and every overlay under deploy/k8s/overlays,
// found on disk, so an overlay added later is checked too.
func shippedBuilds(t *testing.T, root string) []string {
	t.Helper()
	dirs := []string{"base"}
	found, err := filepath.Glob(filepath.Join(root, "deploy", "k8s", "overlays", "*", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		dirs = append(dirs, "overlays/"+filepath.Base(filepath.Dir(f)))
	}
	if !slices.Contains(dirs, "overlays/production") {
		t.Fatalf("found the builds %v, without overlays/production: the search is off", dirs)
	}
	return dirs
}

// isTestOverlay reports whether an overlay is for a local or test cluster
// by its name (docs/operations.md, "Redis placement"): only those may let
// Redis pods share a node.
func isTestOverlay(dir string) bool {
	name, ok := strings.CutPrefix(dir, "overlays/")
	if !ok {
		return false
	}
	return name == "test" || name == "local" || strings.HasPrefix(name, "test-") || strings.HasPrefix(name, "local-")
}

// redisOnePerNode returns why the Redis StatefulSet's pods could share a
// node, or nil: it needs a required anti-affinity term per host name whose
// selector matches its own pods, in its own namespace.
func redisOnePerNode(o *objects) error {
	ss, ok := o.statefulSets["redis"]
	if !ok {
		return errors.New("no StatefulSet redis")
	}
	own := labels.Set(ss.Spec.Template.Labels)
	var paa *corev1.PodAntiAffinity
	if a := ss.Spec.Template.Spec.Affinity; a != nil {
		paa = a.PodAntiAffinity
	}
	if paa == nil {
		return errors.New("StatefulSet/redis has no pod anti-affinity")
	}
	for _, term := range paa.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != corev1.LabelHostname || len(term.Namespaces) != 0 || term.NamespaceSelector != nil {
			continue
		}
		if term.LabelSelector == nil || len(term.LabelSelector.MatchLabels)+len(term.LabelSelector.MatchExpressions) == 0 {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err == nil && sel.Matches(own) {
			return nil
		}
	}
	return fmt.Errorf("StatefulSet/redis: no requiredDuringSchedulingIgnoredDuringExecution anti-affinity term on %s selecting its own pods (%v), so a master and its replica may share a node", corev1.LabelHostname, own)
}

// TestRedisOnePodPerNode: in every shipped build but a test or local
// overlay, no two Redis pods may run on one node (docs/operations.md,
// "Redis placement").
func TestRedisOnePodPerNode(t *testing.T) {
	root := repo.Root(t)
	for _, dir := range shippedBuilds(t, root) {
		t.Run(dir, func(t *testing.T) {
			err := redisOnePerNode(build(t, root, dir))
			switch {
			case err == nil:
			case isTestOverlay(dir):
				t.Logf("%s relaxes it, as a test/local overlay may: %v", dir, err)
			default:
				t.Errorf("%s: %v; only an overlay named test or local (or test-*, local-*) may relax this", dir, err)
			}
		})
	}
}

// docYAML returns the one ```yaml block of docs/operations.md that contains
// want.
func docYAML(t *testing.T, root, want string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		if strings.Contains(m[1], want) {
			found = append(found, m[1])
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/operations.md has %d yaml blocks with %q, want one", len(found), want)
	}
	return found[0]
}

// buildDocOverlay builds a kustomization of docs/operations.md, whose first
// line names where it goes ("# deploy/k8s/overlays/<name>/kustomization.yaml"),
// beside a copy of deploy/k8s in memory. It returns the overlay's directory
// and its objects.
func buildDocOverlay(t *testing.T, root, kustomization string) (string, *objects) {
	t.Helper()
	m := regexp.MustCompile(`^# deploy/k8s/(overlays/[^/\s]+)/kustomization\.yaml`).FindStringSubmatch(kustomization)
	if m == nil {
		t.Fatalf("docs/operations.md: the overlay's first line does not say where it goes:\n%s", kustomization)
	}
	fsys := filesys.MakeFsInMemory()
	k8s := filepath.Join(root, "deploy", "k8s")
	err := filepath.WalkDir(k8s, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(k8s, path)
		if err != nil {
			return err
		}
		return fsys.WriteFile(filepath.Join("/k8s", rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	if fsys.Exists(filepath.Join("/k8s", m[1])) {
		t.Fatalf("docs/operations.md: %s is an overlay the repository ships; the example must be a new one", m[1])
	}
	if err := fsys.WriteFile(filepath.Join("/k8s", m[1], "kustomization.yaml"), []byte(kustomization)); err != nil {
		t.Fatal(err)
	}
	return m[1], buildIn(t, fsys, "/k8s", m[1])
}

// TestRedisRelaxDocumented: the overlay docs/operations.md gives for a
// single-node test cluster builds, lets the Redis pods share a node while
// still spreading them where it can, and is named as a test overlay, so
// TestRedisOnePodPerNode would accept it if it were shipped.
func TestRedisRelaxDocumented(t *testing.T) {
	root := repo.Root(t)
	dir, o := buildDocOverlay(t, root, docYAML(t, root, "podAntiAffinity"))
	if !isTestOverlay(dir) {
		t.Errorf("docs/operations.md puts the relaxing overlay in %s, which is no test or local overlay", dir)
	}
	if err := redisOnePerNode(o); err == nil {
		t.Errorf("%s (docs/operations.md) still requires one Redis pod per node", dir)
	}
	ss := o.statefulSets["redis"]
	spread := false
	if a := ss.Spec.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			sel, err := metav1.LabelSelectorAsSelector(w.PodAffinityTerm.LabelSelector)
			spread = spread || err == nil && w.PodAffinityTerm.TopologyKey == corev1.LabelHostname && sel.Matches(labels.Set(ss.Spec.Template.Labels))
		}
	}
	if !spread {
		t.Errorf("%s (docs/operations.md): the Redis pods are no longer spread over the nodes there are", dir)
	}
}

// announcedHost is the host name the first pod of the Redis StatefulSet
// announces to clients: its --cluster-announce-hostname, expanded with the
// pod's environment as the kubelet would set it.
func announcedHost(t *testing.T, o *objects) string {
	t.Helper()
	ss, ok := o.statefulSets["redis"]
	if !ok {
		t.Fatal("no StatefulSet redis")
	}
	ns := ss.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // kubectl apply's, with no namespace set
	}
	for _, c := range ss.Spec.Template.Spec.Containers {
		m := regexp.MustCompile(`--cluster-announce-hostname "([^"]+)"`).FindStringSubmatch(strings.Join(c.Command, " "))
		if m == nil {
			continue
		}
		vars := map[string]string{}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom == nil:
				vars[e.Name] = e.Value
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				vars[e.Name] = ss.Name + "-0"
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
				vars[e.Name] = ns
			case e.ValueFrom.ConfigMapKeyRef != nil:
				r := e.ValueFrom.ConfigMapKeyRef
				if cm, ok := o.configMaps[r.Name]; ok {
					if v, ok := cm.Data[r.Key]; ok {
						vars[e.Name] = v
					}
				}
			}
		}
		return os.Expand(m[1], func(name string) string {
			v, ok := vars[name]
			if !ok {
				t.Errorf("StatefulSet/redis/%s: --cluster-announce-hostname uses $%s, which its environment does not set", c.Name, name)
			}
			return v
		})
	}
	t.Fatal("StatefulSet/redis: no container runs with --cluster-announce-hostname")
	return ""
}

// TestRedisClusterDomain: the Redis nodes announce their names in the
// cluster's DNS domain: cluster.local in every shipped build, and the
// overlay's own where one sets it as docs/operations.md, "Cluster domain",
// says.
func TestRedisClusterDomain(t *testing.T) {
	root := repo.Root(t)
	want := func(o *objects, domain string) string {
		ss := o.statefulSets["redis"]
		ns := ss.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		return fmt.Sprintf("%s-0.%s.%s.svc.%s", ss.Name, ss.Spec.ServiceName, ns, domain)
	}
	for _, dir := range shippedBuilds(t, root) {
		o := build(t, root, dir)
		if got, w := announcedHost(t, o), want(o, "cluster.local"); got != w {
			t.Errorf("%s: redis-0 announces %q, want %q", dir, got, w)
		}
	}
	doc := docYAML(t, root, "CLUSTER_DOMAIN")
	m := regexp.MustCompile(`CLUSTER_DOMAIN=(\S+)`).FindStringSubmatch(doc)
	if m == nil || m[1] == "cluster.local" {
		t.Fatalf("docs/operations.md: the example sets no CLUSTER_DOMAIN other than cluster.local:\n%s", doc)
	}
	dir, o := buildDocOverlay(t, root, doc)
	if got, w := announcedHost(t, o), want(o, m[1]); got != w {
		t.Errorf("%s (docs/operations.md): redis-0 announces %q, want %q", dir, got, w)
	}
}
