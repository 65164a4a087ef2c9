// Package sqlrow is what the SQL checkpoint stores (sqlite, postgres) do alike
// and that does not depend on the SQL dialect: metadata and next-node lists
// as JSON columns (empty is NULL, and NULL or an empty value comes back as
// nil, which the conformance suite pins down), and reading all rows of a query.
// Each store keeps its own SQL and its own column types; Collect is tested
// through the stores' conformance suites on real databases.
package sqlrow
