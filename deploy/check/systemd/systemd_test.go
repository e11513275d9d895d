// Package systemd checks deploy/systemd, the units of a single-VM install:
// they parse, run the binaries the repository builds with the environment
// file it ships, order themselves after Redis, and are hardened — rated by
// systemd's own `systemd-analyze security` where it is installed.
package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/invoicewire/invoicewire/deploy/check/repo"
)

// hardening are the options every service unit sets.
var hardening = []string{
	"NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices",
	"ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups",
	"RestrictAddressFamilies", "RestrictNamespaces", "RestrictSUIDSGID", "LockPersonality",
	"MemoryDenyWriteExecute", "SystemCallFilter", "SystemCallArchitectures", "CapabilityBoundingSet",
	"DynamicUser", "UMask",
}

// egress are the units whose process reaches hosts anywhere on the
// internet, and why: no IPAddressDeny= may cut them off (the processes'
// own dialers keep them off private addresses, internal/netguard).
var egress = map[string]string{
	"invoicewire-origin.service": "resolves webhook host names at subscribe time and fetches the jwks_uri of IW_IDJAG_ISSUERS",
	"invoicewire-worker.service": "delivers webhooks",
}

// maxExposure is the highest `systemd-analyze security` exposure allowed,
// in its tenths (16 = 1.6, "OK"): the figure docs/operations.md promises.
const maxExposure = "16"

type unitFile struct {
	name string
	path string
	opts []*unit.UnitOption
}

func (u unitFile) get(section, name string) []string {
	var out []string
	for _, o := range u.opts {
		if o.Section == section && o.Name == name {
			out = append(out, o.Value)
		}
	}
	return out
}

func units(t *testing.T, root string) []unitFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "deploy", "systemd", "*.service"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no units in deploy/systemd (%v)", err)
	}
	var out []unitFile
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := unit.DeserializeOptions(f)
		f.Close()
		if err != nil {
			t.Errorf("%s: does not parse: %v", filepath.Base(p), err)
			continue
		}
		out = append(out, unitFile{filepath.Base(p), p, opts})
	}
	return out
}

func TestUnits(t *testing.T) {
	root := repo.Root(t)
	us := units(t, root)
	names := map[string]bool{"invoicewire.target": true}
	for _, u := range us {
		names[u.name] = true
	}
	want := []string{"invoicewire-redis.service", "invoicewire-redis-counters.service", "invoicewire-origin.service", "invoicewire-worker.service", "invoicewire-edge.service"}
	for _, w := range want {
		if !names[w] {
			t.Errorf("deploy/systemd has no %s", w)
		}
	}
	for _, u := range us {
		t.Run(u.name, func(t *testing.T) {
			exec := u.get("Service", "ExecStart")
			if len(exec) != 1 {
				t.Fatalf("want one ExecStart, got %q", exec)
			}
			bin := strings.Fields(exec[0])[0]
			if b, ok := strings.CutPrefix(bin, "/usr/local/bin/"); ok {
				if !repo.HasCommand(root, b) {
					t.Logf("cmd/%s is not in this checkout yet (its branch is not merged)", b)
				}
				if env := u.get("Service", "EnvironmentFile"); !slices.Contains(env, "/etc/invoicewire/invoicewire.env") {
					t.Errorf("EnvironmentFile=%q, want /etc/invoicewire/invoicewire.env (deploy/systemd/invoicewire.env)", env)
				}
				if !slices.ContainsFunc(u.get("Unit", "After"), func(v string) bool {
					return strings.Contains(v, "invoicewire-redis.service") || strings.Contains(v, "invoicewire-origin.service")
				}) {
					t.Errorf("not ordered after Redis (or the origin)")
				}
			} else if bin != "/usr/bin/redis-server" {
				t.Errorf("ExecStart runs %s: neither an Invoicewire binary nor redis-server", bin)
			}
			for _, h := range hardening {
				if len(u.get("Service", h)) == 0 {
					t.Errorf("missing hardening option %s=", h)
				}
			}
			if why, ok := egress[u.name]; ok && len(u.get("Service", "IPAddressDeny")) > 0 {
				t.Errorf("IPAddressDeny=%q, but the process %s (DNS and HTTPS to any address)", u.get("Service", "IPAddressDeny"), why)
			}
			if v := u.get("Service", "Restart"); len(v) != 1 || v[0] != "on-failure" {
				t.Errorf("Restart=%q, want on-failure", v)
			}
			for _, dep := range append(u.get("Unit", "After"), u.get("Unit", "Wants")...) {
				for _, d := range strings.Fields(dep) {
					if strings.HasPrefix(d, "invoicewire") && !names[d] {
						t.Errorf("depends on %s, which deploy/systemd does not hold", d)
					}
				}
			}
			if u.name == "invoicewire-redis-counters.service" {
				direct, loaded := reads(u)
				if !slices.Contains(append(direct, loaded...), "/etc/invoicewire/redis-counters.conf") {
					t.Errorf("redis-server does not read /etc/invoicewire/redis-counters.conf (deploy/systemd/invoicewire-redis-counters.conf)")
				}
			}
			if u.name == "invoicewire-redis.service" {
				// Redis says nothing while it loads its append-only file;
				// systemd's default start timeout would kill it mid-load
				// and Restart= begin the same load again.
				if v := u.get("Service", "TimeoutStartSec"); len(v) != 1 || v[0] != "infinity" {
					t.Errorf("TimeoutStartSec=%q, want infinity: a large AOF takes longer to load than the default 90 s", v)
				}
				direct, loaded := reads(u)
				if !slices.Contains(append(direct, loaded...), "/etc/invoicewire/redis.conf") {
					t.Errorf("redis-server does not read /etc/invoicewire/redis.conf (deploy/systemd/invoicewire-redis.conf)")
				}
			}
		})
	}
}

// credentials are a unit's LoadCredential= entries: credential id → the
// file systemd reads (as root) for it.
func credentials(u unitFile) map[string]string {
	out := map[string]string{}
	for _, v := range u.get("Service", "LoadCredential") {
		if id, path, ok := strings.Cut(v, ":"); ok {
			out[id] = path
		}
	}
	return out
}

// reads are the files of /etc/invoicewire a unit's processes need: direct,
// the paths on its command lines, which the process opens itself; loaded,
// the files behind the credentials those command lines name (%d/ID or
// ${CREDENTIALS_DIRECTORY}/ID), which systemd reads for it as root.
func reads(u unitFile) (direct, loaded []string) {
	creds := credentials(u)
	for _, key := range []string{"ExecStartPre", "ExecStart", "ExecReload"} {
		for _, line := range u.get("Service", key) {
			for _, arg := range strings.Fields(line) {
				for _, dir := range []string{"%d/", "${CREDENTIALS_DIRECTORY}/", "$CREDENTIALS_DIRECTORY/"} {
					if id, ok := strings.CutPrefix(arg, dir); ok {
						loaded = append(loaded, creds[id])
					}
				}
				if strings.HasPrefix(arg, "/etc/invoicewire/") {
					direct = append(direct, arg)
				}
			}
		}
	}
	return direct, loaded
}

// installed reads the install commands of docs/operations.md's VM section:
// destination → mode and source.
func installed(t *testing.T, root string) map[string][2]string {
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Deploying on one VM (systemd)")
	if !ok {
		t.Fatal(`docs/operations.md has no section "## Deploying on one VM (systemd)"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	out := map[string][2]string{}
	for _, line := range strings.Split(section, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "install" || f[1] != "-m" {
			continue
		}
		mode, srcs, dest := f[2], f[3:len(f)-1], f[len(f)-1]
		var files []string
		for _, src := range srcs {
			m, _ := filepath.Glob(filepath.Join(root, src))
			for _, p := range m {
				rel, _ := filepath.Rel(root, p)
				files = append(files, rel)
			}
			if len(m) == 0 {
				files = append(files, src)
			}
		}
		if strings.HasSuffix(dest, "/") {
			for _, src := range files {
				out[dest+filepath.Base(src)] = [2]string{mode, src}
			}
		} else if len(files) == 1 {
			out[dest] = [2]string{mode, srcs[0]}
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/operations.md: no `install -m MODE SOURCE DEST` commands in the VM section")
	}
	return out
}

// TestInstallInstructions: every file a unit needs is installed by
// docs/operations.md's commands, and readable by whoever reads it. A
// DynamicUser= process is neither root nor in a file's group, so what it
// opens itself must be readable by all; EnvironmentFile= and
// LoadCredential= files are read by systemd as root and may stay private
// (and must, when they hold the Redis password).
func TestInstallInstructions(t *testing.T) {
	root := repo.Root(t)
	inst := installed(t, root)
	for _, u := range units(t, root) {
		t.Run(u.name, func(t *testing.T) {
			if _, ok := inst["/etc/systemd/system/"+u.name]; !ok {
				t.Errorf("the instructions do not install %s into /etc/systemd/system/", u.name)
			}
			dynamic := slices.Contains(u.get("Service", "DynamicUser"), "yes")
			direct, loaded := reads(u)
			for _, path := range direct {
				in, ok := inst[path]
				if !ok {
					t.Errorf("reads %s, which the instructions do not install", path)
					continue
				}
				mode, err := strconv.ParseUint(in[0], 8, 32)
				if err != nil {
					t.Errorf("install -m %s %s: not an octal mode", in[0], path)
					continue
				}
				if dynamic && mode&0o004 == 0 {
					t.Errorf("its dynamic user opens %s, installed with mode %s (root's): Permission denied. Make it readable by all, or load it with LoadCredential=", path, in[0])
				}
			}
			for _, id := range repo.Sorted(mapKeys(credentials(u))) {
				if !slices.Contains(loaded, credentials(u)[id]) {
					t.Errorf("LoadCredential=%s:%s: no command line reads %%d/%s", id, credentials(u)[id], id)
				}
			}
			for _, p := range append(u.get("Service", "EnvironmentFile"), loaded...) {
				p = strings.TrimPrefix(p, "-")
				in, ok := inst[p]
				if !ok {
					t.Errorf("systemd loads %s for it, which the instructions do not install", p)
					continue
				}
				if mode, _ := strconv.ParseUint(in[0], 8, 32); mode&0o007 != 0 && secret(t, root, in[1]) {
					t.Errorf("%s holds the Redis password but is installed with mode %s, readable by all", p, in[0])
				}
			}
			for _, doc := range u.get("Unit", "Documentation") {
				for _, d := range strings.Fields(doc) {
					if p, ok := strings.CutPrefix(d, "file://"); ok {
						if _, ok := inst[p]; !ok {
							t.Errorf("Documentation=%s, which the instructions do not install", d)
						}
					}
				}
			}
			bin := strings.Fields(u.get("Service", "ExecStart")[0])[0]
			if strings.HasPrefix(bin, "/usr/local/bin/") {
				if in, ok := inst[bin]; !ok || in[0] != "0755" {
					t.Errorf("runs %s, which the instructions do not install with mode 0755", bin)
				}
			}
		})
	}
}

// TestInstallSteps: docs/operations.md's VM commands build the binaries
// before installing them, install redis-server (which the Redis unit runs)
// and disable Debian's own instance, which would hold 127.0.0.1:6379, before
// the target starts, and leave no password in the operator's shell.
func TestInstallSteps(t *testing.T) {
	root := repo.Root(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "## Deploying on one VM (systemd)")
	section, _, _ = strings.Cut(section, "\n## ")
	var lines []string
	for _, line := range strings.Split(section, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			lines = append(lines, line)
		}
	}
	// at is the index of the first command line starting with prefix.
	at := func(prefix string) int {
		return slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) })
	}
	steps := []struct {
		desc, before, after string
	}{
		{desc: "the binaries are built before they are installed", before: "make build", after: "install -m 0755 bin/"},
		{desc: "redis-server is installed before Debian's instance is disabled", before: "apt-get install -y redis-server", after: "systemctl disable --now redis-server"},
		{desc: "Debian's Redis is disabled before the target starts", before: "systemctl disable --now redis-server", after: "systemctl daemon-reload && systemctl enable --now invoicewire.target"},
		{desc: "Redis may fork for its rewrites before it starts", before: "echo vm.overcommit_memory=1 >", after: "systemctl daemon-reload && systemctl enable --now invoicewire.target"},
	}
	for _, st := range steps {
		t.Run(st.desc, func(t *testing.T) {
			b, a := at(st.before), at(st.after)
			if b < 0 || a < 0 || b > a {
				t.Errorf("want %q (line %d) before %q (line %d)", st.before, b, st.after, a)
			}
		})
	}
	for _, l := range lines {
		if strings.Contains(l, ". /etc/invoicewire/invoicewire.env") && !strings.HasPrefix(l, "(") {
			t.Errorf("%q loads the environment into the operator's shell; run it in a subshell ( ... )", l)
		}
	}
}

// secret reports whether the repository file src holds a password.
func secret(t *testing.T, root, src string) bool {
	b, err := os.ReadFile(filepath.Join(root, src))
	if err != nil {
		t.Errorf("the instructions install %s, which does not exist: %v", src, err)
		return false
	}
	return strings.Contains(string(b), "requirepass") || strings.Contains(string(b), "redis://:")
}

// TestExposure rates each unit with `systemd-analyze security --offline`.
func TestExposure(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not installed; make test installs it (deploy/local/deps.sh test), or: sudo apt-get install -y systemd")
	}
	root := repo.Root(t)
	for _, u := range units(t, root) {
		cmd := exec.Command(sa, "security", "--offline=yes", "--no-pager", "--threshold="+maxExposure, u.path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: exposure above %s tenths (or not rated): %v\n%s", u.name, maxExposure, err, lastLines(string(out), 3))
		} else {
			t.Logf("%s: %s", u.name, lastLines(string(out), 1))
		}
	}
}

// TestEnvironmentFile: the example environment sets only variables the
// code reads, the Redis URL agrees with redis.conf's port and password, and
// the edge's Caddyfile variables are there.
func TestEnvironmentFile(t *testing.T) {
	root := repo.Root(t)
	env := readEnv(t, filepath.Join(root, "deploy", "systemd", "invoicewire.env"))
	known := repo.KnownVars(t, root)
	for _, k := range repo.Sorted(mapKeys(env)) {
		if known[k] {
			continue
		}
		if strings.HasPrefix(k, "IW_WORKER_") && !repo.HasCommand(root, "worker") {
			t.Logf("%s is read by the worker branch, not merged yet", k)
			continue
		}
		if !repo.HasCommand(root, "edge") && (k == "IW_SITE_HOST" || k == "IW_ORIGIN_ADDRS" || strings.HasPrefix(k, "IW_RATELIMIT_") || k == "IW_TRUSTED_PROXIES") {
			t.Logf("%s is read by the edge's Caddyfile, not merged yet", k)
			continue
		}
		t.Errorf("invoicewire.env sets %s, which no code of the repository reads", k)
	}
	// Each Redis URL agrees with its Redis's configuration; the rate-limit
	// counts have a Redis of their own (docs/decisions.md, "Rate-limit state").
	redisURLs := []struct{ name, conf string }{
		{"IW_REDIS_URL", "invoicewire-redis.conf"},
		{"IW_RATELIMIT_REDIS_URL", "invoicewire-redis-counters.conf"},
	}
	for _, r := range redisURLs {
		conf, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", r.conf))
		if err != nil {
			t.Fatal(err)
		}
		var port, pass string
		for _, line := range strings.Split(string(conf), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == "port" {
				port = f[1]
			}
			if len(f) == 2 && f[0] == "requirepass" {
				pass = f[1]
			}
		}
		if want := "redis://:" + pass + "@127.0.0.1:" + port + "/0"; env[r.name] != want {
			t.Errorf("%s=%q, but %s makes it %q", r.name, env[r.name], r.conf, want)
		}
	}
	if env["IW_ORIGIN_ADDRS"] != env["IW_ORIGIN_ADDR"] {
		t.Errorf("the edge proxies to IW_ORIGIN_ADDRS=%q, the origin listens on IW_ORIGIN_ADDR=%q", env["IW_ORIGIN_ADDRS"], env["IW_ORIGIN_ADDR"])
	}
}

// TestEdgeAdminOnUnixSocket: on the VM the edge's admin API, which serves
// the Redis password and takes a new configuration, is a unix socket of
// mode 0600 in the edge unit's own RuntimeDirectory=, not TCP loopback that
// every local user reaches; Prometheus scrapes the metrics-only listener.
func TestEdgeAdminOnUnixSocket(t *testing.T) {
	root := repo.Root(t)
	env := readEnv(t, filepath.Join(root, "deploy", "systemd", "invoicewire.env"))
	var edge unitFile
	for _, u := range units(t, root) {
		if u.name == "invoicewire-edge.service" {
			edge = u
		}
	}
	admin := env["IW_EDGE_ADMIN_ADDR"]
	path, perm, _ := strings.Cut(strings.TrimPrefix(admin, "unix/"), "|")
	runtime := edge.get("Service", "RuntimeDirectory")
	checks := []struct {
		desc string
		ok   bool
	}{
		{desc: "IW_EDGE_ADMIN_ADDR is a unix socket", ok: strings.HasPrefix(admin, "unix/")},
		{desc: "the socket is in the edge unit's RuntimeDirectory=", ok: len(runtime) == 1 && filepath.Dir(path) == "/run/"+runtime[0]},
		{desc: "the RuntimeDirectory= is the edge user's alone", ok: slices.Equal(edge.get("Service", "RuntimeDirectoryMode"), []string{"0700"})},
		{desc: "the socket is the edge user's alone (|0600)", ok: perm == "0600"},
		{desc: "ExecReload reaches the admin socket", ok: slices.ContainsFunc(edge.get("Service", "ExecReload"), func(v string) bool { return strings.Contains(v, "--address ${IW_EDGE_ADMIN_ADDR}") })},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: IW_EDGE_ADMIN_ADDR=%q, RuntimeDirectory=%q", c.desc, admin, runtime)
		}
	}
	prom, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"127.0.0.1:` + env["IW_EDGE_METRICS_PORT"] + `"`; env["IW_EDGE_METRICS_PORT"] == "" || !strings.Contains(string(prom), want) {
		t.Errorf("prometheus.yml does not scrape the edge's metrics listener %s (IW_EDGE_METRICS_PORT)", want)
	}
}

func readEnv(t *testing.T, path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("%s: %q is not NAME=value", path, line)
			continue
		}
		env[k] = v
	}
	return env
}

func mapKeys(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestRunbookLoadsTheEnvironment: a command of docs/operations.md that has
// the edge read its Caddyfile by hand (edge adapt, validate or run) loads
// the unit's EnvironmentFile= first, as systemd does for the unit: the
// Caddyfile takes its values from it, and without them a good file fails
// to adapt ({$IW_REDIS_URL} empty), at the wrong line.
func TestRunbookLoadsTheEnvironment(t *testing.T) {
	root := repo.Root(t)
	var env []string
	for _, u := range units(t, root) {
		if u.name == "invoicewire-edge.service" {
			env = u.get("Service", "EnvironmentFile")
		}
	}
	if len(env) != 1 {
		t.Fatalf("invoicewire-edge.service: EnvironmentFile=%q, want one", env)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The inline commands, fenced blocks left out (their backquotes would
	// pair with the inline ones').
	text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(b), "")
	found := 0
	for _, span := range regexp.MustCompile("`[^`]+`").FindAllString(text, -1) {
		cmd := strings.Join(strings.Fields(strings.Trim(span, "`")), " ")
		if !regexp.MustCompile(`(^|[ ;(/])edge (adapt|validate|run) `).MatchString(cmd) {
			continue
		}
		found++
		load := "set -a; . " + env[0] + "; set +a;"
		if i := strings.Index(cmd, load); i < 0 || i > strings.Index(cmd, "edge ") {
			t.Errorf("docs/operations.md: %q does not load %s first (%q)", cmd, env[0], load)
		}
	}
	if found == 0 {
		t.Error("docs/operations.md shows no edge adapt command; the runbook of InvoicewireEdgeDown has one")
	}
}
