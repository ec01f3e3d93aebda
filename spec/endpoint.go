package spec

import (
	"fmt"
	"net"
	"strings"
)

// Endpoint kinds of service_request_endpoint.
const (
	EndpointCustom = "CUSTOM"
	EndpointHTTP   = "HTTP"
	EndpointTCP    = "TCP"
)

// ParseEndpoint splits "KIND:rest" and checks it. HTTP endpoints without a
// scheme get http://.
func ParseEndpoint(ep string) (kind, target string, err error) {
	kind, target, ok := strings.Cut(ep, ":")
	if !ok || target == "" {
		return "", "", fmt.Errorf("service_request_endpoint %q: write CUSTOM:<name>, HTTP:<url> or TCP:<host:port>", ep)
	}
	switch strings.ToUpper(kind) {
	case EndpointCustom:
		return EndpointCustom, target, nil
	case EndpointHTTP:
		if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
			target = "http://" + target
		}
		return EndpointHTTP, target, nil
	case EndpointTCP:
		if _, _, err := net.SplitHostPort(target); err != nil {
			return "", "", fmt.Errorf("service_request_endpoint %q: TCP endpoints are TCP:<host:port>: %v", ep, err)
		}
		return EndpointTCP, target, nil
	}
	return "", "", fmt.Errorf("service_request_endpoint %q: unknown kind %q; use CUSTOM:<name>, HTTP:<url> or TCP:<host:port>", ep, kind)
}
