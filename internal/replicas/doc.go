// Package replicas holds the test of several `capgraph serve` replicas on
// one PostgreSQL: three processes of replicaapp, two hundred conversations
// spread across them, one replica killed with SIGKILL mid-way, and a
// cancel sent to a replica that does not run the run. See
// docs/deployment.md.
package replicas
