package web

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/wire"
)

// apiError is the body of a failed API request.
type apiError struct {
	Error string `json:"error"`
	Code  int    `json:"code"`
}

// httpStatus maps a head error to an HTTP status.
func httpStatus(err error) int {
	switch wire.ErrorCode(err) {
	case wire.CodeUsage:
		if strings.Contains(err.Error(), "no work with id") || strings.HasPrefix(err.Error(), "no node ") {
			return http.StatusNotFound
		}
		if strings.Contains(err.Error(), "private") || strings.Contains(err.Error(), "may read") {
			return http.StatusForbidden // the head's refusals name who may read
		}
		return http.StatusBadRequest
	case wire.CodeUnreachable:
		return http.StatusBadGateway
	default:
		return http.StatusInternalServerError
	}
}

func (s *server) apiFail(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Debug("api request failed", "path", r.URL.Path, "err", err)
	writeJSON(w, httpStatus(err), apiError{Error: err.Error(), Code: wire.ErrorCode(err)})
}

// listRequest reads ?all=1&user=U.
func listRequest(r *http.Request) wire.ListRequest {
	q := r.URL.Query()
	all, _ := strconv.ParseBool(q.Get("all"))
	return wire.ListRequest{All: all, User: q.Get("user")}
}

func (s *server) apiJobs(w http.ResponseWriter, r *http.Request) {
	out, err := s.data.jobs(r.Context(), callerOf(r), listRequest(r))
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	if out.Work == nil {
		out.Work = []wire.WorkInfo{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) apiShow(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(r.PathValue("id"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Code: wire.CodeUsage})
		return
	}
	out, err := s.data.show(r.Context(), callerOf(r), id)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) apiNodes(w http.ResponseWriter, r *http.Request) {
	out, err := s.data.nodes(r.Context())
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	if out.Nodes == nil {
		out.Nodes = []wire.NodeInfo{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) apiStatus(w http.ResponseWriter, r *http.Request) {
	out, err := s.data.status(r.Context())
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, wire.Errorf(wire.CodeUsage, "bad work id %q: want a positive number such as 17", s)
	}
	return id, nil
}

func (s *server) apiClasses(w http.ResponseWriter, r *http.Request) {
	var out wire.ClassList
	if err := s.data.call(r.Context(), wire.Caller{}, wire.MethodClasses, wire.Empty{}, &out); err != nil {
		s.apiFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) apiServices(w http.ResponseWriter, r *http.Request) {
	out, err := s.data.services(r.Context(), callerOf(r), wire.ServiceQueryRequest{Service: r.URL.Query().Get("service")})
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	if out.Services == nil {
		out.Services = []wire.ServiceInfo{}
	}
	writeJSON(w, http.StatusOK, out)
}

// apiResults pages through a job's item results
// (?failed=1&offset=N&limit=N) for a user who may read them.
func (s *server) apiResults(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(r.PathValue("id"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Code: wire.CodeUsage})
		return
	}
	if v := viewerOf(r); v.c.User == "" {
		writeJSON(w, http.StatusForbidden, apiError{Code: wire.CodeUsage,
			Error: fmt.Sprintf("the results of work %d are private to its owner, those it is shared with and administrators: %s", id, s.seeYours(v))})
		return
	}
	q := r.URL.Query()
	req := wire.ResultsRequest{ID: id}
	req.Failed, _ = strconv.ParseBool(q.Get("failed"))
	req.Offset, _ = strconv.Atoi(q.Get("offset"))
	req.Limit, _ = strconv.Atoi(q.Get("limit"))
	out, err := s.data.results(r.Context(), callerOf(r), req)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	if out.Results == nil {
		out.Results = []wire.ItemResult{}
	}
	writeJSON(w, http.StatusOK, out)
}

// procLog serves a process's log as text to an identified user who may
// read it (Config.Logs; ?process=ID, default the first process).
func (s *server) procLog(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v := viewerOf(r)
	c := v.c
	switch {
	case s.cfg.Logs == nil:
		http.Error(w, "this dashboard does not serve logs: use `ducc logs`", http.StatusNotFound)
		return
	case c.User == "":
		http.Error(w, "logs are private to the work's owner, those it is shared with and administrators: "+s.seeYours(v), http.StatusForbidden)
		return
	}
	lw := &lazyWriter{w: w}
	err = s.cfg.Logs(r.Context(), c, id, r.URL.Query().Get("process"), lw)
	switch {
	case err != nil && !lw.started:
		http.Error(w, err.Error(), httpStatus(err))
	case err != nil:
		_, _ = io.WriteString(lw, "\n[ducc: the log ends here: "+err.Error()+"]\n")
	case !lw.started:
		lw.start()
	}
}

// lazyWriter sends the headers of a text answer with its first byte, so
// that a refusal before any output can still be an error status.
type lazyWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyWriter) start() {
	l.started = true
	l.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	l.w.Header().Set("Cache-Control", "no-store")
	l.w.WriteHeader(http.StatusOK)
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(p)
}
