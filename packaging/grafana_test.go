package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dashboardFile is the Grafana dashboard the packages install to
// /usr/share/ducc/grafana/.
const dashboardFile = "grafana/ducc-dashboard.json"

type grafanaPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) (map[string]any, []grafanaPanel) {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var d struct {
		Panels []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return raw, d.Panels
}

// The dashboard is well formed: a uid and title, a data source variable,
// unique panel ids, panels inside the 24-column grid, and every graph
// with a query.
func TestGrafanaDashboardShape(t *testing.T) {
	raw, panels := loadDashboard(t)
	for _, k := range []string{"uid", "title", "schemaVersion", "templating"} {
		if raw[k] == nil {
			t.Errorf("dashboard lacks %q", k)
		}
	}
	if !strings.Contains(mustJSON(t, raw["templating"]), `"type":"datasource"`) {
		t.Error("dashboard has no data source variable; it would be bound to one Prometheus")
	}
	ids := map[int]bool{}
	queries := 0
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X < 0 || p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("panel %q outside the grid: %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q has an empty query %s", p.Title, q.RefID)
			}
			queries++
		}
	}
	if queries < 20 {
		t.Errorf("only %d queries", queries)
	}
}

// dashboardExprs are the dashboard's PromQL queries.
func dashboardExprs(t *testing.T) []string {
	_, panels := loadDashboard(t)
	var out []string
	for _, p := range panels {
		for _, q := range p.Targets {
			out = append(out, q.Expr)
		}
	}
	return out
}

// The queries parse as PromQL (promtool check rules, with Grafana's
// variables filled in); skipped where promtool is not installed.
func TestGrafanaDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range dashboardExprs(t) {
		e = strings.ReplaceAll(e, "$job", ".*")
		b, _ := json.Marshal(e) // a JSON string is a YAML string
		rules.WriteString("      - record: dashboard:query" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + "\n")
		rules.WriteString("        expr: " + string(b) + "\n")
	}
	path := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s\n%s", err, out, rules.String())
	}
}

// seriesName matches the ducc metric names a query uses.
var seriesName = regexp.MustCompile(`\b(ducc|process)_[a-z0-9_]+`)

// Every series the dashboard queries is documented in docs/operations.md
// (whose table the end-to-end test checks against a real /metrics).
func TestGrafanaDashboardSeriesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range dashboardExprs(t) {
		for _, name := range seriesName.FindAllString(e, -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if !strings.Contains(string(doc), "`"+base) {
				t.Errorf("the dashboard queries %s, which docs/operations.md does not document", name)
			}
		}
	}
}

// nfpm installs the dashboard.
func TestGrafanaDashboardPackaged(t *testing.T) {
	data, err := os.ReadFile("nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "src: packaging/"+dashboardFile+"\n    dst: /usr/share/ducc/grafana/ducc-dashboard.json") {
		t.Errorf("nfpm.yaml does not install %s to /usr/share/ducc/grafana/", dashboardFile)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
