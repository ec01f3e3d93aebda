package spec

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Endpoint kinds of service_request_endpoint.
const (
	EndpointCustom = "CUSTOM"
	EndpointHTTP   = "HTTP"
	EndpointTCP    = "TCP"
	EndpointUIMAAS = "UIMA-AS" // UIMA-AS:<queue>:<broker-url>, pinged by ducc's UIMA-AS pinger
)

// MaxEndpointSize is the longest service_request_endpoint accepted, in bytes.
const MaxEndpointSize = 1024

// ParseEndpoint splits "KIND:rest" and checks it: at most MaxEndpointSize
// bytes, a TCP endpoint a host and a port from 1 to 65535, an HTTP endpoint a
// URL with a host (and a valid port if one is given), a UIMA-AS endpoint a
// queue and a broker URL. HTTP endpoints without a scheme get http://.
func ParseEndpoint(ep string) (kind, target string, err error) {
	if len(ep) > MaxEndpointSize {
		return "", "", fmt.Errorf("service_request_endpoint of %d bytes: the limit is %d bytes", len(ep), MaxEndpointSize)
	}
	kind, target, ok := strings.Cut(ep, ":")
	if !ok || target == "" {
		return "", "", fmt.Errorf("service_request_endpoint %q: write CUSTOM:<name>, HTTP:<url>, TCP:<host:port> or UIMA-AS:<queue>:<broker-url>", ep)
	}
	switch strings.ToUpper(kind) {
	case EndpointCustom:
		return EndpointCustom, target, nil
	case EndpointHTTP:
		if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
			target = "http://" + target
		}
		u, err := url.Parse(target)
		if err != nil {
			return "", "", fmt.Errorf("service_request_endpoint %q: HTTP endpoints are HTTP:<url>: %v", ep, err)
		}
		if u.Hostname() == "" {
			return "", "", fmt.Errorf("service_request_endpoint %q: HTTP endpoints are HTTP:<url> with a host", ep)
		}
		if p := u.Port(); p != "" {
			if err := checkPort(p); err != nil {
				return "", "", fmt.Errorf("service_request_endpoint %q: %v", ep, err)
			}
		}
		return EndpointHTTP, target, nil
	case EndpointTCP:
		host, port, err := net.SplitHostPort(target)
		if err != nil {
			return "", "", fmt.Errorf("service_request_endpoint %q: TCP endpoints are TCP:<host:port>: %v", ep, err)
		}
		if host == "" {
			return "", "", fmt.Errorf("service_request_endpoint %q: TCP endpoints are TCP:<host:port>: no host", ep)
		}
		if err := checkPort(port); err != nil {
			return "", "", fmt.Errorf("service_request_endpoint %q: %v", ep, err)
		}
		return EndpointTCP, target, nil
	case EndpointUIMAAS:
		queue, broker, ok := strings.Cut(target, ":")
		if !ok || strings.TrimSpace(queue) == "" || strings.TrimSpace(broker) == "" {
			return "", "", fmt.Errorf("service_request_endpoint %q: UIMA-AS endpoints are UIMA-AS:<queue>:<broker-url>, e.g. UIMA-AS:MyQueue:tcp://broker:61616", ep)
		}
		return EndpointUIMAAS, target, nil
	}
	return "", "", fmt.Errorf("service_request_endpoint %q: unknown kind %q; use CUSTOM:<name>, HTTP:<url>, TCP:<host:port> or UIMA-AS:<queue>:<broker-url>", ep, kind)
}

// checkPort accepts a decimal port number from 1 to 65535.
func checkPort(p string) error {
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return fmt.Errorf("port %q: give a number from 1 to 65535", p)
	}
	return nil
}
