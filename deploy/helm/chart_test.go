// Package helm holds the test of the Helm chart deploy/helm/crucible.
package helm

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psa "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// kubeVersion is the cluster the chart is rendered for.
const kubeVersion = "v1.34.0"

// manifests is what a chart rendered to, decoded into the API's types.
type manifests struct {
	statefulSet *appsv1.StatefulSet
	services    []*corev1.Service
	configMap   *corev1.ConfigMap
	pdb         *policyv1.PodDisruptionBudget
	hpa         *autoscalingv2.HorizontalPodAutoscaler
	netpol      *networkingv1.NetworkPolicy
	other       []string // kinds without types here (ServiceMonitor)
}

func load(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load("crucible")
	if err != nil {
		t.Fatal(err)
	}
	if !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, kubeVersion) {
		t.Fatalf("the chart's kubeVersion %q does not take %s", c.Metadata.KubeVersion, kubeVersion)
	}
	return c
}

// render renders the chart with values over its defaults (checked against
// its schema, as helm install does), into the API's types, strictly: a
// field the API does not have fails.
func render(t *testing.T, values string) (*manifests, error) {
	t.Helper()
	c := load(t)
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: kubeVersion, Major: "1", Minor: "34"}
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "crucible", Namespace: "agents", IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(c, rv)
	if err != nil {
		return nil, err
	}
	m := &manifests{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" || strings.HasSuffix(name, ".tpl") {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			var into any
			switch tm.Kind {
			case "StatefulSet":
				m.statefulSet = &appsv1.StatefulSet{}
				into = m.statefulSet
			case "Service":
				s := &corev1.Service{}
				m.services, into = append(m.services, s), s
			case "ConfigMap":
				m.configMap = &corev1.ConfigMap{}
				into = m.configMap
			case "PodDisruptionBudget":
				m.pdb = &policyv1.PodDisruptionBudget{}
				into = m.pdb
			case "HorizontalPodAutoscaler":
				m.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
				into = m.hpa
			case "NetworkPolicy":
				m.netpol = &networkingv1.NetworkPolicy{}
				into = m.netpol
			default:
				m.other = append(m.other, tm.Kind)
				continue
			}
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Fatalf("%s (%s): %v\n%s", name, tm.Kind, err, doc)
			}
		}
	}
	if m.statefulSet == nil || m.configMap == nil || len(m.services) != 2 {
		t.Fatalf("the chart rendered no StatefulSet, ConfigMap or two Services: %+v", m)
	}
	return m, nil
}

func mustRender(t *testing.T, values string) *manifests {
	t.Helper()
	m, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// level is the most restrictive Pod Security Standard the pod meets, by
// the Kubernetes admission's own evaluator, and why it meets no stricter.
func level(t *testing.T, pod *corev1.PodTemplateSpec) (psa.Level, string) {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	why := ""
	for _, l := range []psa.Level{psa.LevelRestricted, psa.LevelBaseline} {
		res := policy.AggregateCheckResults(ev.EvaluatePod(psa.LevelVersion{Level: l, Version: psa.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
		if res.Allowed {
			return l, why
		}
		if why == "" {
			why = res.ForbiddenDetail()
		}
	}
	return psa.LevelPrivileged, why
}

const secrets = "token: {secretName: crucible-token}\nreplicaKey: {secretName: crucible-replica-key}\n"

// The default profile, userns: Baseline by the admission's evaluator, with
// user namespaces, no capability, the shipped seccomp profile, the tun
// device from a device plugin, and no hostPath, privilege or host
// namespace anywhere. The config it renders is one crucible takes, with
// the replicas reaching each other by the headless Service's names.
func TestUsernsProfile(t *testing.T) {
	m := mustRender(t, secrets+"config:\n  network:\n    allow: [api.github.com]\n")
	pod := &m.statefulSet.Spec.Template
	if l, why := level(t, pod); l != psa.LevelBaseline {
		t.Errorf("the userns pod is %s, want baseline (%s)", l, why)
	} else {
		t.Logf("userns: baseline; not restricted because %s", why)
	}
	spec := pod.Spec
	c := spec.Containers[0]
	sc := c.SecurityContext
	switch {
	case spec.HostUsers == nil || *spec.HostUsers:
		t.Error("the pod shares the host's user namespace")
	case spec.SecurityContext.SeccompProfile == nil || spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost ||
		*spec.SecurityContext.SeccompProfile.LocalhostProfile != "crucible.json":
		t.Errorf("seccomp: %+v", spec.SecurityContext.SeccompProfile)
	case spec.SecurityContext.RunAsUser == nil || *spec.SecurityContext.RunAsUser == 0:
		t.Error("the pod runs as root")
	case sc.Privileged != nil && *sc.Privileged, sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities: %+v", sc)
	case sc.ProcMount == nil || *sc.ProcMount != corev1.UnmaskedProcMount:
		t.Error("procMount is not Unmasked: the jail cannot mount its /proc")
	case c.Resources.Limits.Name("squat.ai/tun", "").Value() != 1:
		t.Errorf("no tun device from the device plugin: %v", c.Resources.Limits)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("a host namespace")
	}

	cfg, err := config.Parse([]byte(m.configMap.Data["crucible.yaml"]), "crucible.yaml")
	if err != nil {
		t.Fatalf("crucible does not take the chart's config: %v\n%s", err, m.configMap.Data["crucible.yaml"])
	}
	if r := cfg.Serve.Replicas; r.Peer != "http://{name}.crucible-peers.agents.svc:8080" || r.Key.From != "file:/etc/crucible/replica-key/key" ||
		!slices.Equal(cfg.Network.Allow, []string{"api.github.com"}) || !slices.Contains(cfg.Sandbox.AllowDegraded, "cgroup") || !cfg.Serve.OpsPublic ||
		cfg.Serve.DrainTimeout.String() != "1m0s" {
		t.Errorf("the config: %+v\n%s", cfg.Serve, m.configMap.Data["crucible.yaml"])
	}
	if grace := *spec.TerminationGracePeriodSeconds; grace != 90 {
		t.Errorf("grace period %ds, want the drain's 60 and 30", grace)
	}
	peers := m.services[1]
	if peers.Spec.ClusterIP != "None" || !peers.Spec.PublishNotReadyAddresses || m.statefulSet.Spec.ServiceName != peers.Name {
		t.Errorf("the peers' Service: %+v", peers.Spec)
	}
	if m.pdb == nil || m.netpol == nil || m.hpa != nil {
		t.Errorf("pdb %v, network policy %v, hpa %v", m.pdb != nil, m.netpol != nil, m.hpa != nil)
	}
	if *m.statefulSet.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *m.statefulSet.Spec.Replicas)
	}
}

// privileged-node, for clusters without pod user namespaces: the chart's
// README says it is Privileged, and the evaluator agrees.
func TestPrivilegedNodeProfile(t *testing.T) {
	m := mustRender(t, secrets+"profile: privileged-node\n")
	if l, why := level(t, &m.statefulSet.Spec.Template); l != psa.LevelPrivileged {
		t.Errorf("privileged-node is %s, want privileged", l)
	} else {
		t.Logf("privileged-node: privileged, because %s", why)
	}
	if m.statefulSet.Spec.Template.Spec.HostUsers != nil {
		t.Error("privileged-node asks for user namespaces")
	}
}

// Values are checked against the chart's schema, and what the chart
// cannot do without is required, with a message that names it.
func TestValues(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{secrets + "profile: bogus\n", "profile"},
		{secrets + "replicas: 0\n", "replicas"},
		{secrets + "tokens: x\n", "tokens"},
		{"replicaKey: {secretName: k}\n", "token.secretName is required"},
		{"token: {secretName: t}\n", "replicaKey.secretName is required with more than one replica"},
	} {
		if _, err := render(t, c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %q: %v, want an error about %s", c.values, err, c.want)
		}
	}
	// One replica needs no key and sets no replicas section.
	m := mustRender(t, "token: {secretName: t}\nreplicas: 1\n")
	if strings.Contains(m.configMap.Data["crucible.yaml"], "replicas") {
		t.Errorf("one replica's config:\n%s", m.configMap.Data["crucible.yaml"])
	}
	// The autoscaler on CPU and running executions; the StatefulSet then
	// leaves its replicas to it. A ServiceMonitor when asked for.
	m = mustRender(t, secrets+"autoscaling: {enabled: true, executionsPerPod: 4}\nserviceMonitor: {enabled: true}\n")
	if m.hpa == nil || len(m.hpa.Spec.Metrics) != 2 || m.hpa.Spec.Metrics[1].Pods.Metric.Name != "crucible_executions_running" || m.statefulSet.Spec.Replicas != nil {
		t.Errorf("hpa: %+v", m.hpa)
	}
	if !slices.Equal(m.other, []string{"ServiceMonitor"}) {
		t.Errorf("other kinds: %q", m.other)
	}
}

// The chart's README and values agree on the profiles' names.
func TestReadmeNamesProfiles(t *testing.T) {
	c := load(t)
	var readme []byte
	for _, f := range c.Files {
		if f.Name == "README.md" {
			readme = f.Data
		}
	}
	for _, p := range []string{"userns", "privileged-node", "Baseline", "Privileged"} {
		if !bytes.Contains(readme, []byte(p)) {
			t.Errorf("the chart's README does not name %s", p)
		}
	}
}

// The AppArmor profile shipped for pods (deploy/apparmor/crucible-pod):
// confined (a runtime's default, not Unconfined), with what the jail
// needs on top, parsed by the real parser; and the chart that names it
// stays Baseline. (AppArmor is off in this machine's kernel: the profile
// is parsed, never loaded.)
func TestPodAppArmorProfile(t *testing.T) {
	b, err := os.ReadFile("../apparmor/crucible-pod")
	if err != nil {
		t.Fatal(err)
	}
	profile := string(b)
	if !strings.Contains(profile, "\nprofile crucible-pod flags=(attach_disconnected,mediate_deleted) {\n") || strings.Contains(profile, "unconfined)") {
		t.Errorf("want a confined profile named crucible-pod:\n%s", profile)
	}
	for _, rule := range []string{"userns", "mount", "umount", "pivot_root", "deny @{PROC}/sysrq-trigger rwklx", "deny /sys/firmware/** rwklx"} {
		if !strings.Contains(profile, "\n  "+rule+",\n") {
			t.Errorf("the profile lacks %q", rule)
		}
	}
	testenv.AppArmorParse(t, profile)

	m := mustRender(t, secrets+"appArmor: {localhostProfile: crucible-pod}\n")
	pod := &m.statefulSet.Spec.Template
	if p := pod.Spec.SecurityContext.AppArmorProfile; p == nil || p.Type != corev1.AppArmorProfileTypeLocalhost || *p.LocalhostProfile != "crucible-pod" {
		t.Errorf("the pod's AppArmor profile: %+v", p)
	}
	if l, why := level(t, pod); l != psa.LevelBaseline {
		t.Errorf("with the AppArmor profile the pod is %s, want baseline (%s)", l, why)
	}
}
