#!/usr/bin/env python3
"""Draws docs/img/grafana-dashboard.png: the layout of capgraph-dashboard.json
(its rows and panels, in the same grid) filled with the values of one
/metrics scrape, as HTML that headless Chromium screenshots. It is not a
Grafana screenshot: one scrape has no history, so each time-series panel
shows its values at the scrape as bars.

    CAPGRAPH_METRICS_SAMPLE=/tmp/metrics.txt go test ./telemetry/metrics -run MixedLoad
    python3 docs/grafana/picture.py /tmp/metrics.txt out.html
    chromium --headless --screenshot=docs/img/grafana-dashboard.png --window-size=1440,1180 out.html
"""
import html, json, re, sys
from collections import defaultdict

text = open(sys.argv[1]).read()
samples = []  # (name, labels dict, value)
for line in text.splitlines():
    if not line.startswith("capgraph_"):
        continue
    m = re.match(r'([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
    labels = dict(re.findall(r'([a-z_]+)="([^"]*)"', m.group(2) or ""))
    samples.append((m.group(1), labels, float(m.group(3))))

def by(name, *keys):
    out = defaultdict(float)
    for n, ls, v in samples:
        if n == name:
            out[" ".join(ls.get(k, "") for k in keys)] += v
    return dict(out)

def total(name, **match):
    return sum(v for n, ls, v in samples if n == name and all(ls.get(k) == w for k, w in match.items()))

def quantile(name, q, **match):
    buckets = sorted(((float("inf") if ls["le"] == "+Inf" else float(ls["le"])), v) for n, ls, v in samples
                     if n == name + "_bucket" and all(ls.get(k) == w for k, w in match.items()))
    if not buckets or buckets[-1][1] == 0:
        return 0
    rank, prev_le, prev_c = q * buckets[-1][1], 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_c) / max(c - prev_c, 1e-12)
        prev_le, prev_c = le, c
    return prev_le

def fmt_s(v):
    return f"{v*1000:.2f} ms" if v < 1 else f"{v:.1f} s"

def bars(values, unit=lambda v: f"{v:g}"):
    if not values:
        return '<div class="empty">no data</div>'
    top = max(values.values()) or 1
    rows = []
    for k, v in sorted(values.items(), key=lambda kv: -kv[1]):
        rows.append(f'<div class="bar"><span class="k">{html.escape(k)}</span><span class="track"><span class="fill" style="width:{100*v/top:.1f}%"></span></span><span class="v">{unit(v)}</span></div>')
    return "".join(rows)

def stat(v, unit=""):
    return f'<div class="stat">{v}<small>{unit}</small></div>'

nodes_mean = {k: by("capgraph_node_duration_seconds_sum", "node")[k] / c for k, c in by("capgraph_node_duration_seconds_count", "node").items() if c}
content = {
    "Turns per minute by outcome": bars(by("capgraph_runs_total", "outcome"), lambda v: f"{v:g} runs"),
    "Active runs": stat(f'{total("capgraph_runs_active"):g}'),
    "Active threads (15 min)": stat(f'{total("capgraph_threads_active"):g}'),
    "Approvals waiting": stat(f'{total("capgraph_approvals_pending"):g}'),
    "Error reports (1 h)": stat(f'{total("capgraph_runs_total", outcome="error_report"):g}'),
    "Failed runs (1 h)": stat(f'{total("capgraph_runs_total", outcome="failed"):g}'),
    "Approval wait p90": stat(fmt_s(quantile("capgraph_approval_wait_seconds", 0.9))),
    "Node latency p95 by node": bars({n: quantile("capgraph_node_duration_seconds", 0.95, node=n) for n in nodes_mean}, fmt_s),
    "Mean time per node": bars(nodes_mean, fmt_s),
    "LLM call latency p95 by role": bars({r: quantile("capgraph_llm_call_duration_seconds", 0.95, role=r) for r in by("capgraph_llm_calls_total", "role")}, fmt_s),
    "Failures by severity and recovery": bars({k.replace(" ", " → "): v for k, v in by("capgraph_failures_total", "severity", "recovery").items()}),
    "Retries by node (1 h)": bars(by("capgraph_retries_total", "node")),
    "Limits and budgets exhausted (1 h)": bars(by("capgraph_limits_exhausted_total", "limit")),
    "Side effects by outcome (1 h)": bars(by("capgraph_side_effects_total", "capability", "outcome")),
    "Approvals asked by kind": bars(by("capgraph_approvals_requested_total", "kind")),
    "LLM tokens per minute by role": bars(by("capgraph_llm_tokens_total", "role", "direction")),
    "LLM errors per minute by role and provider": bars(by("capgraph_llm_errors_total", "role", "provider")),
    "Store commit latency": bars({"p50": quantile("capgraph_store_commit_duration_seconds", 0.5), "p99": quantile("capgraph_store_commit_duration_seconds", 0.99)}, fmt_s),
    "HTTP requests per minute by route and status": bars(by("capgraph_http_requests_total", "route", "status"), lambda v: f"{v:g} requests"),
}

dash = json.load(open(sys.argv[0].rsplit("/", 1)[0] + "/capgraph-dashboard.json"))
cell = 56  # px per grid unit of height; width in 24ths
out = []
for p in dash["panels"]:
    g = p["gridPos"]
    style = f'left:{g["x"]/24*100:.4f}%;top:{g["y"]*cell/2}px;width:calc({g["w"]/24*100:.4f}% - 8px);height:{g["h"]*cell/2 - 8}px'
    if p["type"] == "row":
        out.append(f'<div class="row" style="{style}">{html.escape(p["title"])}</div>')
        continue
    out.append(f'<div class="panel" style="{style}"><div class="title">{html.escape(p["title"])}</div>{content.get(p["title"], "")}</div>')
height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dash["panels"]) * cell / 2
page = f"""<!doctype html><meta charset="utf-8"><style>
body{{margin:0;background:#111217;color:#ccccdc;font:13px Inter,'DejaVu Sans',sans-serif}}
header{{padding:10px 16px;font-size:16px;color:#fff;border-bottom:1px solid #2a2d35}}
header small{{color:#8e8e9a;font-size:12px;margin-left:12px}}
.grid{{position:relative;margin:8px 12px;height:{height}px}}
.panel,.row{{position:absolute;box-sizing:border-box}}
.panel{{background:#181b1f;border:1px solid #24272e;border-radius:3px;padding:6px 10px;overflow:hidden}}
.row{{color:#fff;font-weight:600;padding-top:6px}}
.title{{font-weight:500;color:#d8d9da;margin-bottom:6px}}
.stat{{font-size:34px;color:#73bf69;font-weight:500;margin-top:8px}}
.bar{{display:flex;align-items:center;gap:6px;margin:3px 0;font-size:12px}}
.k{{width:42%;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}}
.track{{flex:1;height:10px;background:#22252b}}
.fill{{display:block;height:10px;background:linear-gradient(90deg,#3274d9,#8ab8ff)}}
.v{{width:88px;text-align:right;color:#fff}}
.empty{{color:#6e6e7a;margin-top:20px;text-align:center}}
</style><header>capgraph <small>layout of docs/grafana/capgraph-dashboard.json with the values of one /metrics scrape of a test run (not a Grafana screenshot)</small></header>
<div class="grid">{''.join(out)}</div>"""
open(sys.argv[2], "w").write(page)
