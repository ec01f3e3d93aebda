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
	{"/jobs", "Jobs"}, {"/services", "Services"}, {"/reservations", "Reservations"},
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
	Err     string
	Body    any
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
		{"/jobs", "jobs", "/jobs", fillJobs},
		{"/jobs/{id}", "job", "/jobs", fillJob},
		{"/machines", "machines", "/machines", fillMachines},
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
		d := &pageData{Nav: navItems, Active: rt.nav, Version: s.cfg.Version, Node: s.cfg.Node, Now: s.cfg.Now().UnixMilli(),
			Private: s.cfg.Private, User: callerOf(r).User}
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
}

type procRow struct {
	wire.ProcInfo
	LogURL string
	LogCmd string
}

func fillJob(s *server, r *http.Request, d *pageData) error {
	raw := r.PathValue("id")
	d.Title = "Job " + raw
	id, err := parseID(raw)
	if err != nil {
		return err
	}
	d.API = "/api/v1/jobs/" + strconv.FormatUint(id, 10)
	w, err := s.data.show(r.Context(), callerOf(r), id)
	if err != nil {
		return err
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
	}
	d.Body = b
	return nil
}

func fillMachines(s *server, r *http.Request, d *pageData) error {
	d.Title, d.API = "Machines", "/api/v1/nodes"
	nodes, err := s.data.nodes(r.Context())
	if err != nil {
		return err
	}
	slices.SortFunc(nodes.Nodes, func(a, b wire.NodeInfo) int { return cmp.Compare(a.Name, b.Name) })
	d.Body = nodes.Nodes
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
	d.Body = list.Classes
	return nil
}
