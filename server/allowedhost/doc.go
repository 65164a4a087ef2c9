// Package allowedhost holds the one rule of the names a server answers to:
// the Host header of every request must be a loopback name (localhost,
// 127.0.0.0/8, [::1], any port) or match an entry of server.allowed_hosts,
// so that a web page whose host name an attacker re-points at the server
// (DNS rebinding) reaches nothing. The YAML file's validation and the
// server both use it; it imports only the standard library, so the
// configuration loader can use it without importing the server.
package allowedhost
