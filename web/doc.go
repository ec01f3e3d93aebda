// Package web is the dashboard every agent serves: server-rendered pages
// (html/template, assets embedded), a read-only JSON API, Prometheus
// metrics at /metrics and a liveness probe at /healthz.
//
// The data comes from the head through a Source (the agent forwards each
// call to the head over libp2p, or in process when it is the head), for
// the user the request identified or anonymously. Nothing here writes to
// the cluster: the API answers GET only, and the one form signs a user in.
//
// Routes:
//
//	/                      the overview: nodes, memory, work by state, why work
//	                       waits, services, recent failures (overview.go)
//	/jobs, /jobs/{id}      work (jobs, managed reservations) and one piece of work
//	                       (a job's charts and work-item table: ?items=failed&offset=N)
//	/machines, /machines/{name}, /cluster
//	                       nodes; one node; head, Raft state and the head group
//	/services              registered services, instances, pinger state
//	/reservations, /classes
//	/api/v1/jobs[?all=1&user=U], /api/v1/jobs/{id}, /api/v1/nodes, /api/v1/status,
//	/api/v1/classes, /api/v1/services[?service=ID|ENDPOINT]
//	/api/v1/jobs/{id}/results[?failed=1&offset=N&limit=N], /jobs/{id}/log[?process=P]
//	/login (GET: the form or who is signed in; POST: sign in), POST /logout
//	/metrics, /healthz[?head=1]
//
// Pages refresh live: a little script polls the page's JSON API every two
// seconds and, when the answer changed, swaps in the server-rendered
// content (GET the page with ?fragment=1); durations and ages tick in the
// browser. Without JavaScript the pages are complete, just not live.
//
// Charts (charts.go) are SVG rendered on the server from the head's
// samples (wire.MethodCharts), with no script or inline style, so they
// pass the Content-Security-Policy.
//
// Adding a page: write assets/NAME.html defining "content" (and "title"),
// add an entry to the pages table in pages.go with a handler that fills
// the template data, and a row to navItems.
//
// Who is looking (identity.go, localuser.go): an anonymous visitor sees
// nothing private: no arguments of work and no environment or arguments
// of services (the head leaves them out for callers without a user name,
// and the fetcher removes them again; wire.WorkInfo.Redact,
// wire.ServiceInfo.Redact), and no items, results or logs.
//
// With Config.Private (web.private) the pages and the JSON API answer only
// clients on loopback and Config.TrustedProxies, and a request names its
// user with a dashboard token (`ducc web-token`; Authorization: Bearer, or
// the HttpOnly, SameSite=Strict cookie the sign-in form sets; checked with
// Config.TokenKey) or, from a trusted proxy, Config.UserHeader. The head
// then answers for that user under its usual access rule (their own
// arguments and service environments; logs and results of work they may
// read, served through Config.Logs and wire.MethodResults). Bad
// credentials get 401 on the API. With Config.LocalUsers (web.local_users,
// on in dev mode) a loopback client without a token is the user who owns
// its connection, from the kernel's socket table (localuser.go). Without
// either nobody is identified. server.seeYours is the one sentence every
// page, the API and /login give a visitor the dashboard does not know.
// /metrics and /healthz carry only counts and stay open so Prometheus can
// scrape every node. docs/security.md says it for operators.
//
// Metrics: HeadMetrics and AgentMetrics are registered by their owners and
// have nil-safe methods. The cluster-wide series (Cluster) are exported
// only by the agent whose head serves a view (HeadMetrics.ServeCluster),
// so sum() across agents counts them once; every agent asks the Source at
// scrape time whether the head answers and who it is
// (NewClusterCollector: ducc_head_reachable, ducc_is_head).
// docs/operations.md lists every series.
package web
