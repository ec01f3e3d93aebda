// Package web is the dashboard every agent serves: server-rendered pages
// (html/template, assets embedded), a read-only JSON API, Prometheus
// metrics at /metrics and a liveness probe at /healthz.
//
// The data comes from the head through a Source (the agent forwards each
// call to the head over libp2p, or in process when it is the head). Nothing
// here writes: the dashboard has no forms and the API answers GET only.
//
// Routes:
//
//	/                      redirect to /jobs
//	/jobs, /jobs/{id}      work (jobs, managed reservations) and one piece of work
//	/machines, /cluster    nodes; head, Raft state and peers
//	/services              registered services, instances, pinger state
//	/reservations, /classes
//	/api/v1/jobs[?all=1&user=U], /api/v1/jobs/{id}, /api/v1/nodes, /api/v1/status,
//	/api/v1/classes, /api/v1/services[?service=ID|ENDPOINT]
//	/metrics, /healthz[?head=1]
//
// Pages refresh live: a little script polls the page's JSON API every two
// seconds and, when the answer changed, swaps in the server-rendered
// content (GET the page with ?fragment=1); durations and ages tick in the
// browser. Without JavaScript the pages are complete, just not live.
//
// Adding a page: write assets/NAME.html defining "content" (and "title"),
// add an entry to the pages table in pages.go with a handler that fills
// the template data, and a row to navItems.
//
// The dashboard cannot tell who is looking, so it shows nothing private to
// one user: no arguments of work and no environment or arguments of
// services (the head leaves them out for callers without a user name, and
// the fetcher removes them again; wire.WorkInfo.Redact,
// wire.ServiceInfo.Redact). Items and results are not served at all.
//
// With Config.Private (web.private) the pages and the JSON API answer only
// clients on loopback (use an SSH tunnel or a reverse proxy with its own
// authentication on the node); /metrics and /healthz carry only counts and
// stay open so Prometheus can scrape every node.
//
// Metrics: HeadMetrics and AgentMetrics are registered by their owners and
// have nil-safe methods; the cluster collector (NewClusterCollector) asks
// the Source at scrape time for work, nodes and status.
package web
