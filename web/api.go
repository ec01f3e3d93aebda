package web

import (
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
		if strings.Contains(err.Error(), "no work with id") {
			return http.StatusNotFound
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
	out, err := s.data.jobs(r.Context(), listRequest(r))
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
	out, err := s.data.show(r.Context(), id)
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
	if err := s.data.call(r.Context(), wire.MethodClasses, wire.Empty{}, &out); err != nil {
		s.apiFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) apiServices(w http.ResponseWriter, r *http.Request) {
	out, err := s.data.services(r.Context(), wire.ServiceQueryRequest{Service: r.URL.Query().Get("service")})
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	if out.Services == nil {
		out.Services = []wire.ServiceInfo{}
	}
	writeJSON(w, http.StatusOK, out)
}
