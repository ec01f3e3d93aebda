// Package sockhttp is the small ducc's HTTP/1.1 client for the agent's Unix
// socket: one request per connection ("Connection: close"), a response
// whose body is delimited by Content-Length, chunked transfer coding or
// the end of the connection. It exists so that the CLI does not link
// net/http, whose initialization and the pages it touches (crypto/tls,
// x509, http2 tables) cost every ducc call about as much CPU as the rest of
// a short `ducc run --detach` (docs/performance.md, "A CLI without
// net/http"). It speaks only to the agent's own API, which net/http serves:
// no redirects, proxies, TLS, compression, keep-alive or 1xx handling beyond
// skipping interim responses.
package sockhttp
