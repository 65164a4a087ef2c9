// The npm openai SDK retrying against the capgraph server, run by
// server/retry_test.go (TestNodeOpenAIRetriesJoinTheFirstRun), which
// starts the server over a scripted agent whose "slow" run finishes only
// after three chat requests have arrived, and checks afterwards that one
// run answered them all.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";

const url = process.env.CAPGRAPH_URL;
const key = process.env.CAPGRAPH_KEY;
assert.ok(url && key, "CAPGRAPH_URL and CAPGRAPH_KEY must be set (run through go test)");

test("openai: retries after timeouts join the first run", async () => {
  // Each attempt times out after 300 ms; the SDK retries the same request.
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 6, timeout: 300 });
  const r = await client.chat.completions.create({ model: "capgraph", messages: [{ role: "user", content: "slow please" }] });
  assert.equal(r.choices[0].message.content, "Done after waiting.");
});
