package web

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/ducc-project/ducc/wire"
)

//go:embed assets
var assets embed.FS

// staticFS serves assets/static under /static/.
func staticFS() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}

// navItem is one entry of the navigation bar.
type navItem struct{ Path, Label string }

var navItems = []navItem{
	{"/", "Overview"}, {"/jobs", "Jobs"}, {"/services", "Services"}, {"/reservations", "Reservations"},
	{"/machines", "Machines"}, {"/classes", "Classes"}, {"/cluster", "Cluster"},
}

// route is one page: its template and how to fill it.
type route struct {
	path, tmpl, nav string
	fill            func(s *server, r *http.Request, d *pageData) error
}

// pageData is what every page template gets.
type pageData struct {
	Title   string
	Nav     []navItem
	Active  string
	API     string // polled by live.js; empty: not live
	Version string
	Node    string
	Now     int64  // unix ms
	Private bool   // web.private: the header offers signing in
	User    string // the identified user; empty: anonymous
	Via     string // how User was identified (viaToken, viaProxy, viaLocal)
	// Hint says how an anonymous viewer gets to see their own private
	// details here (server.seeYours); empty for an identified user.
	Hint string
	Err  string
	Body any
}

type pageSet struct {
	routes []route
	tmpl   map[string]*template.Template
}

func mustPages() *pageSet {
	ps, err := parsePages()
	if err != nil {
		panic(err) // templates are embedded: a parse error is a build bug caught by tests
	}
	return ps
}

func parsePages() (*pageSet, error) {
	routes := []route{
		{"/{$}", "overview", "/", fillOverview},
		{"/jobs", "jobs", "/jobs", fillJobs},
		{"/jobs/{id}", "job", "/jobs", fillJob},
		{"/machines", "machines", "/machines", fillMachines},
		{"/machines/{name}", "node", "/machines", fillNode},
		{"/cluster", "cluster", "/cluster", fillCluster},
		{"/services", "services", "/services", fillServices},
		{"/reservations", "reservations", "/reservations", fillReservations},
		{"/classes", "classes", "/classes", fillClasses},
		{"/login", "login", "/login", fillLogin},
	}
	base, err := template.New("layout").Funcs(funcs()).ParseFS(assets, "assets/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse layout: %w", err)
	}
	ps := &pageSet{routes: routes, tmpl: map[string]*template.Template{}}
	for _, r := range routes {
		if ps.tmpl[r.tmpl] != nil {
			continue
		}
		t, err := base.Clone()
		if err == nil {
			t, err = t.ParseFS(assets, "assets/"+r.tmpl+".html")
		}
		if err != nil {
			return nil, fmt.Errorf("parse page %s: %w", r.tmpl, err)
		}
		ps.tmpl[r.tmpl] = t
	}
	return ps, nil
}

// page renders one route; ?fragment=1 renders only its content (live.js).
func (s *server) page(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := viewerOf(r)
		d := &pageData{Nav: navItems, Active: rt.nav, Version: s.cfg.Version, Node: s.cfg.Node, Now: s.cfg.Now().UnixMilli(),
			Private: s.cfg.Private, User: v.c.User, Via: v.via, Hint: s.seeYours(v)}
		code := http.StatusOK
		if err := rt.fill(s, r, d); err != nil {
			code = httpStatus(err)
			d.Err = err.Error()
			s.log.Debug("page data unavailable", "path", r.URL.Path, "err", err)
		}
		name := "layout"
		if r.URL.Query().Get("fragment") != "" {
			name = "content"
		}
		var buf bytes.Buffer
		if err := s.pages.tmpl[rt.tmpl].ExecuteTemplate(&buf, name, d); err != nil {
			s.log.Error("render page", "page", rt.tmpl, "err", err)
			http.Error(w, "internal error rendering the page (see the agent's log)", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_, _ = buf.WriteTo(w)
	}
}

// jobsBody is the Jobs page.
type jobsBody struct {
	All         bool
	User        string
	Rows        []jobRow
	AnyProgress bool
}

// jobRow is one line of the Jobs page.
type jobRow struct {
	wire.WorkInfo
	Live     int // processes not ended
	Progress *progress
}

// progress is a job's work-item count, for the kinds of work that have
// items.
type progress struct{ Done, Total, Errors int }

// progressOf returns the work-item counts of a job, or nil for work
// without items.
func progressOf(w wire.WorkInfo) *progress {
	if w.Job == nil {
		return nil
	}
	return &progress{Done: w.Job.Done, Total: w.Job.Total, Errors: w.Job.Failed}
}

func liveProcs(w wire.WorkInfo) int {
	n := 0
	for _, p := range w.Procs {
		if p.EndedAt == 0 {
			n++
		}
	}
	return n
}

func fillJobs(s *server, r *http.Request, d *pageData) error {
	req := listRequest(r)
	q := url.Values{}
	if req.All {
		q.Set("all", "1")
	}
	if req.User != "" {
		q.Set("user", req.User)
	}
	d.Title, d.API = "Jobs", "/api/v1/jobs"
	if len(q) > 0 {
		d.API += "?" + q.Encode()
	}
	body := jobsBody{All: req.All, User: req.User}
	d.Body = &body
	list, err := s.data.jobs(r.Context(), callerOf(r), req)
	if err != nil {
		return err
	}
	for _, w := range list.Work {
		row := jobRow{WorkInfo: w, Live: liveProcs(w), Progress: progressOf(w)}
		body.AnyProgress = body.AnyProgress || row.Progress != nil
		body.Rows = append(body.Rows, row)
	}
	slices.SortFunc(body.Rows, func(a, b jobRow) int { return cmp.Compare(b.ID, a.ID) })
	return nil
}

// jobBody is the job details page.
type jobBody struct {
	wire.WorkInfo
	Progress   *progress
	Procs      []procRow
	ResultsURL string // the results API, for an identified user who may read them
	// Charts of a job: progress and items/s over time.
	ProgressChart, RateChart *chart
	// Items is the page of the work-item table (jobs only).
	Items *itemsPage
	// ProcGPUs: a process holds GPUs (the table gets their column).
	ProcGPUs bool
}

// itemsPageSize is how many items one page of the work-item table shows.
const itemsPageSize = 50

// itemsPage is one page of a job's work-item table (DUCC's Work Items
// tab), from the head's results RPC under its access rule.
type itemsPage struct {
	Failed         bool // only failed items
	Offset, Next   int  // this page's first item index; the next page's (-1: none)
	Total          int
	Rows           []itemRow
	Private        string // why no items are shown
	Base, Filtered string // links: all items, failed only
}

// itemRow is one item of the table.
type itemRow struct {
	wire.ItemResult
	ProcURL string
}

type procRow struct {
	wire.ProcInfo
	LogURL string
	LogCmd string
}

func fillJob(s *server, r *http.Request, d *pageData) error {
	raw := r.PathValue("id")
	d.Title = "Work " + raw
	id, err := parseID(raw)
	if err != nil {
		return err
	}
	d.API = "/api/v1/jobs/" + strconv.FormatUint(id, 10)
	w, err := s.data.show(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	d.Title = kindTitle(w.Kind) + " " + strconv.FormatUint(w.ID, 10)
	switch w.Kind {
	case wire.WorkService:
		d.Active = "/services"
	case wire.WorkReservation:
		d.Active = "/reservations"
	}
	// An identified user gets links to the logs and results; the head
	// decides when they are followed whether this user may read them.
	mine := callerOf(r).User != ""
	b := &jobBody{WorkInfo: w, Progress: progressOf(w)}
	if mine && w.Job != nil {
		b.ResultsURL = "/api/v1/jobs/" + strconv.FormatUint(w.ID, 10) + "/results"
	}
	for _, p := range w.Procs {
		pr := procRow{ProcInfo: p, LogCmd: fmt.Sprintf("ducc logs %d --process %s", w.ID, p.ID)}
		switch {
		case s.cfg.LogURL != nil:
			pr.LogURL = s.cfg.LogURL(w, p)
		case mine && s.cfg.Logs != nil && p.LogPath != "":
			pr.LogURL = "/jobs/" + strconv.FormatUint(w.ID, 10) + "/log?" + url.Values{"process": {p.ID}}.Encode()
		}
		b.Procs = append(b.Procs, pr)
		b.ProcGPUs = b.ProcGPUs || len(p.GPUs) > 0
	}
	if w.Job != nil {
		ch, err := s.data.charts(r.Context(), w.ID)
		if err != nil {
			s.log.Debug("no chart samples", "work", w.ID, "err", err)
		}
		b.ProgressChart, b.RateChart = jobCharts(ch.Work, w, d.Now)
		b.Items = s.itemsPage(r, b)
	}
	d.Body = b
	return nil
}

// itemsPage fills the work-item table: ?items=failed shows only failed
// items, ?offset=N starts at item N. Anonymous viewers see none (the
// results are private to those who may read the job's output).
func (s *server) itemsPage(r *http.Request, b *jobBody) *itemsPage {
	q := r.URL.Query()
	base := "/jobs/" + strconv.FormatUint(b.ID, 10)
	p := &itemsPage{Failed: q.Get("items") == "failed", Next: -1, Base: base, Filtered: base + "?items=failed"}
	p.Offset, _ = strconv.Atoi(q.Get("offset"))
	p.Offset = max(p.Offset, 0)
	v := viewerOf(r)
	c := v.c
	if c.User == "" {
		p.Private = "The items and results of work are private to its owner (and those it is shared with) and administrators: " +
			s.seeYours(v) + "."
		return p
	}
	rep, err := s.data.results(r.Context(), c, wire.ResultsRequest{ID: b.ID, Failed: p.Failed, Offset: p.Offset, Limit: itemsPageSize})
	if err != nil {
		p.Private = err.Error()
		return p
	}
	p.Next, p.Total = rep.Next, rep.Total
	logs := map[string]string{}
	for _, pr := range b.Procs {
		logs[pr.ID] = pr.LogURL
	}
	for _, it := range rep.Results {
		row := itemRow{ItemResult: it}
		if it.Proc != "" {
			row.ProcURL = logs[it.Proc]
			if row.ProcURL == "" {
				row.ProcURL = "#proc-" + it.Proc
			}
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

// pageURL is the link to another page of the item table.
func (p *itemsPage) PageURL(offset int) string {
	v := url.Values{}
	if p.Failed {
		v.Set("items", "failed")
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if len(v) == 0 {
		return p.Base
	}
	return p.Base + "?" + v.Encode()
}

// kindTitle names a kind of work in a page title: "Job 5", "Service 7".
func kindTitle(k wire.WorkKind) string {
	switch k {
	case wire.WorkJob:
		return "Job"
	case wire.WorkService:
		return "Service"
	case wire.WorkManaged:
		return "Managed reservation"
	case wire.WorkReservation:
		return "Reservation"
	default:
		return "Work"
	}
}

// nodeURL is the page of a node.
func nodeURL(name string) string { return "/machines/" + url.PathEscape(name) }

// machinesBody is the Machines page: the nodes, their shares used now
// and the cluster's over time.
type machinesBody struct {
	Nodes       []wire.NodeInfo
	Bars        *barChart
	SharesChart *chart
	// GPUs: a node has GPUs (the table gets their column).
	GPUs bool
}

func fillMachines(s *server, r *http.Request, d *pageData) error {
	d.Title, d.API = "Machines", "/api/v1/nodes"
	nodes, err := s.data.nodes(r.Context())
	if err != nil {
		return err
	}
	slices.SortFunc(nodes.Nodes, func(a, b wire.NodeInfo) int { return cmp.Compare(a.Name, b.Name) })
	b := &machinesBody{Nodes: nodes.Nodes, Bars: nodeBars(nodes.Nodes), GPUs: anyNodeGPUs(nodes.Nodes)}
	if ch, err := s.data.charts(r.Context(), 0); err == nil {
		b.SharesChart = clusterChart(ch.Cluster)
	}
	d.Body = b
	return nil
}

// nodeBody is one node's page: the node and the live processes on it.
type nodeBody struct {
	wire.NodeInfo
	Procs []nodeProc
	// Reserved is the reservation that holds the node, if any.
	Reserved *wire.WorkInfo
}

// nodeProc is a live process on a node with the work it belongs to.
type nodeProc struct {
	wire.ProcInfo
	Work uint64
	Kind wire.WorkKind
	User string
}

func fillNode(s *server, r *http.Request, d *pageData) error {
	name := r.PathValue("name")
	d.Title, d.API = "Node "+name, "/api/v1/nodes"
	nodes, err := s.data.nodes(r.Context())
	if err != nil {
		return err
	}
	i := slices.IndexFunc(nodes.Nodes, func(n wire.NodeInfo) bool { return n.Name == name })
	if i < 0 {
		return wire.Errorf(wire.CodeUsage, "no node %q has sent a heartbeat to this head", name)
	}
	b := &nodeBody{NodeInfo: nodes.Nodes[i]}
	d.Body = b
	list, err := s.data.jobs(r.Context(), callerOf(r), wire.ListRequest{})
	if err != nil {
		return err
	}
	svcs, err := s.data.services(r.Context(), callerOf(r), wire.ServiceQueryRequest{})
	if err != nil {
		return err
	}
	add := func(id uint64, kind wire.WorkKind, user string, p wire.ProcInfo) {
		if p.Node == name && p.EndedAt == 0 {
			b.Procs = append(b.Procs, nodeProc{ProcInfo: p, Work: id, Kind: kind, User: user})
		}
	}
	for _, w := range list.Work {
		if w.Kind == wire.WorkReservation && w.Node == name && !w.Ended && w.State == "Running" {
			b.Reserved = &w
		}
		for _, p := range w.Procs {
			add(w.ID, w.Kind, w.User, p)
		}
	}
	for _, sv := range svcs.Services {
		for _, in := range sv.Procs {
			add(sv.ID, wire.WorkService, sv.User, in.Proc)
		}
	}
	slices.SortFunc(b.Procs, func(x, y nodeProc) int { return cmp.Or(cmp.Compare(x.Work, y.Work), cmp.Compare(x.ID, y.ID)) })
	return nil
}

func fillCluster(s *server, r *http.Request, d *pageData) error {
	d.Title, d.API = "Cluster", "/api/v1/status"
	st, err := s.data.status(r.Context())
	if err != nil {
		return err
	}
	d.Body = st
	return nil
}

// fillServices lists the registered services with their instances and
// pinger state.
func fillServices(s *server, r *http.Request, d *pageData) error {
	d.Title, d.API = "Services", "/api/v1/services"
	list, err := s.data.services(r.Context(), callerOf(r), wire.ServiceQueryRequest{})
	if err != nil {
		return err
	}
	d.Body = list.Services
	return nil
}

// fillReservations lists whole-machine reservations, held and pending.
func fillReservations(s *server, r *http.Request, d *pageData) error {
	d.Title, d.API = "Reservations", "/api/v1/jobs?all=1"
	list, err := s.data.jobs(r.Context(), callerOf(r), wire.ListRequest{All: listRequest(r).All})
	if err != nil {
		return err
	}
	var rows []wire.WorkInfo
	for _, w := range list.Work {
		if w.Kind == wire.WorkReservation {
			rows = append(rows, w)
		}
	}
	d.Body = rows
	return nil
}

// fillClasses lists the scheduling classes with demand and allocation.
func fillClasses(s *server, r *http.Request, d *pageData) error {
	d.Title, d.API = "Classes", "/api/v1/classes"
	var list wire.ClassList
	if err := s.data.call(r.Context(), wire.Caller{}, wire.MethodClasses, wire.Empty{}, &list); err != nil {
		return err
	}
	b := &classesBody{Classes: list.Classes}
	if ch, err := s.data.charts(r.Context(), 0); err == nil {
		b.Chart = classChart(ch.Classes)
	}
	d.Body = b
	return nil
}

// classesBody is the Classes page: the classes and their allocation over
// time.
type classesBody struct {
	Classes []wire.ClassInfo
	Chart   *chart
}
