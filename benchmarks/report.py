#!/usr/bin/env python3
"""Turns selgraph_bench's Google Benchmark JSON into markdown tables and a plot.

    report.py RESULTS.json [--md report.md] [--png performance.png]

Every figure is a median over the run's repetitions. Ratios are taken within
the run (same machine state, same buffers):
  limit      best of limit_stream / limit_stream_nt (Select's byte mix over
             dst's size; cache-resident for S1)
  % limit    selgraph GB/s / limit GB/s
  vs peer    selgraph GB/s / peer GB/s (> 1: selgraph is faster)
GB/s for Select is effective: (cond + src_0 + src_1 as stored + dst) / time.
"""

import argparse
import json
import math
import sys
from collections import defaultdict

ISAS = ["avx512", "avx2", "ref"]
SG = ["selgraph_" + i for i in ISAS]
ISA_NAMES = {"avx512": "AVX-512", "avx2": "AVX2", "ref": "ref"}
PEERS = ["loop_rt", "loop_ct", "eigen", "onednn"]
LIMITS = ["limit_stream", "limit_stream_nt"]
TYPES = ["f32", "bf16", "f16", "f64", "s8"]

# Targets (docs/performance.md).
T_LIMIT = 0.85       # selgraph AVX-512 >= 85% of the same-run limit
T_AVX2 = 0.75        # AVX2 within 25% of AVX-512 on memory-bound cases
T_LAT_NS = 1000.0    # 1024-element execute < 1 us
T_WARM_US = 5.0      # cache-hit compile < 5 us
T_COLD_US = 200.0    # cold compile < 200 us
MEMORY_BOUND = {"S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9"}
T_LOOP = 0.95        # selgraph >= the plain loop (5% noise margin)
# Layout cases: one layout shared by every operand vs one operand transposed
# against dst (ratio of selgraph's GB/s to the dense case of the same shape).
SHARED_LAYOUTS = {"L1", "L2", "L3", "L21", "L27", "L30", "L31"}
T_SHARED = 0.85
T_TRANSPOSED = 0.5


def base_name(run_name):
    """Drops Google Benchmark's /min_time:.../repeats:.../real_time parts."""
    return "/".join(p for p in run_name.split("/")
                    if ":" not in p and p != "real_time")


def read_doc(path):
    """A run's JSON. Where the run was cut short (its process killed while
    writing, as a device run's time limit does), the context and every
    benchmark entry written whole, with a note on stderr."""
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    dec = json.JSONDecoder()
    doc = {"benchmarks": []}
    at = text.find('"context"')
    if at >= 0:
        try:
            doc["context"], _ = dec.raw_decode(text, text.index("{", at))
        except (ValueError, json.JSONDecodeError):
            pass
    at = text.find('"benchmarks"')
    pos = text.find("[", at) + 1 if at >= 0 else len(text)
    while 0 < pos < len(text):
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            entry, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        doc["benchmarks"].append(entry)
    print(f"{path}: cut short; read its {len(doc['benchmarks'])} whole "
          "entries", file=sys.stderr)
    return doc


def load(path, stat="median"):
    doc = read_doc(path)
    med = {}      # name -> benchmark entry (median aggregate)
    errors = {}   # name -> message
    for b in doc.get("benchmarks", []):
        name = base_name(b.get("run_name", b["name"]))
        if b.get("error_occurred"):
            errors[name] = b.get("error_message", "error")
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == stat:
                med[name] = b
        elif name not in med:
            med[name] = b  # a run without repetitions
    return doc.get("context", {}), med, errors


def to_us(b):
    t = b["real_time"]
    unit = b.get("time_unit", "ns")
    return t * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[unit]


def gbps(b):
    return b["bytes"] / (to_us(b) * 1e3)


def widest(g, what="selgraph"):
    """(isa, value) of the widest JIT ISA that ran in a row's entries
    `what`_avx512 / `what`_avx2: AVX-512 where the CPU has it, else AVX2.
    The headline ratios (to the limit, the peers, the plain loop, oneDNN's
    path) use it, so that a CPU without AVX-512 is held to the same
    targets. (None, None) where neither ran."""
    for isa in ISAS[:2]:
        v = g.get(f"{what}_{isa}")
        if v is not None:
            return isa, v
    return None, None


def fmt(x, spec="{:.1f}"):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) \
        else spec.format(x)


def case_table(med, errors):
    """rows[(threads, case, type)] = {impl: GB/s, ...} plus derived."""
    rows = {}
    for name, b in med.items():
        parts = name.split("/")
        if len(parts) != 4 or parts[0][:1] not in ("S", "M"):
            continue
        case, typ, thr, impl = parts
        key = (int(thr[1:]), case, typ)
        r = rows.setdefault(key, {"gbps": {}, "us": {}, "label": {}})
        r["gbps"][impl] = gbps(b)
        r["us"][impl] = to_us(b)
        r["label"][impl] = b.get("label", "")
    for name, msg in errors.items():
        parts = name.split("/")
        if len(parts) == 4 and parts[0][:1] in ("S", "M"):
            key = (int(parts[2][1:]), parts[0], parts[1])
            rows.setdefault(key, {"gbps": {}, "us": {}, "label": {}})
            rows[key].setdefault("errors", {})[parts[3]] = msg
    for r in rows.values():
        g = r["gbps"]
        lims = [g[k] for k in LIMITS if k in g]
        r["limit"] = max(lims) if lims else None
        peers = {k: g[k] for k in PEERS if k in g}
        r["best_peer"] = max(peers, key=peers.get) if peers else None
    return rows


def case_key(c):
    n = int(c[1:]) if c[1:].isdigit() else 99
    return n + (100 if c[:1] == "M" else 0)


def type_key(t):
    return TYPES.index(t) if t in TYPES else 9


def markdown_cases(rows, threads):
    keys = sorted((k for k in rows if k[0] == threads),
                  key=lambda k: (case_key(k[1]), type_key(k[2])))
    out = []
    out.append(f"#### {threads} thread{'s' if threads > 1 else ''}\n")
    hdr = ["case", "type", "limit", "memcpy", "top µs", "AVX-512", "AVX2",
           "ref", "loop_rt", "loop_ct", "eigen", "onednn", "AVX-512 % lim",
           "AVX2 % lim", "ref % lim", "top × best peer", "AVX2 / AVX-512"]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "---|" * len(hdr))
    for k in keys:
        r = rows[k]
        g = r["gbps"]
        a5 = g.get("selgraph_avx512")
        a2 = g.get("selgraph_avx2")
        isa, top = widest(g)
        lim = r["limit"]
        bp = r["best_peer"]
        cells = [k[1], k[2], fmt(lim), fmt(g.get("memcpy")),
                 fmt(r["us"].get(f"selgraph_{isa}"), "{:.0f}"), fmt(a5),
                 fmt(a2), fmt(g.get("selgraph_ref"))]
        for p in PEERS:
            v = g.get(p)
            cells.append(fmt(v) if v is not None else
                         ("n/a" if p in r.get("errors", {}) else "—"))
        for impl in SG:
            v = g.get(impl)
            cells.append(fmt(100 * v / lim, "{:.0f}%") if v and lim else "—")
        pb = top / g[bp] if top and bp else None
        p2 = a2 / a5 if a2 and a5 else None
        cells.append((fmt(pb, "{:.2f}") + f" ({bp})") if pb else "—")
        cells.append(fmt(100 * p2, "{:.0f}%") if p2 else "—")
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return "\n".join(out)


def markdown_peer_ratios(rows):
    """Every selgraph figure / every peer's, per case, type and threads."""
    short = {"loop_rt": "rt", "loop_ct": "ct", "eigen": "eigen",
             "onednn": "onednn"}
    hdr = ["case", "type", "threads"]
    for impl in SG:
        for p in PEERS:
            hdr.append(f"{impl.replace('selgraph_', '')} / {short[p]}")
    out = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for k in sorted(rows, key=lambda k: (case_key(k[1]), type_key(k[2]),
                                         k[0])):
        g = rows[k]["gbps"]
        cells = [k[1], k[2], str(k[0])]
        for impl in SG:
            v = g.get(impl)
            for p in PEERS:
                cells.append(fmt(v / g[p], "{:.2f}") if v and g.get(p)
                             else "n/a")
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return "\n".join(out)


def markdown_stores(rows):
    """The AVX-512 kernel with its stores forced regular / non-temporal."""
    out = ["| case | type | threads | dispatcher picks | AVX-512 | forced "
           "regular | forced NT | best / AVX-512 |",
           "|---|---|---|---|---|---|---|---|"]
    for k in sorted(rows, key=lambda k: (k[0], case_key(k[1]),
                                         type_key(k[2]))):
        g = rows[k]["gbps"]
        reg, nt = g.get("diag_avx512_regular"), g.get("diag_avx512_nt")
        a5 = g.get("selgraph_avx512")
        if reg is None and nt is None:
            continue
        label = rows[k]["label"].get("selgraph_avx512", "")
        picks = "measured" if "stores=auto" in label else "regular"
        best = max(v for v in (reg, nt) if v is not None)
        out.append("| " + " | ".join([
            k[1], k[2], str(k[0]), picks, fmt(a5), fmt(reg), fmt(nt),
            fmt(best / a5, "{:.2f}") if a5 else "—"]) + " |")
    out.append("")
    return "\n".join(out)


def layout_table(med, errors):
    """rows[(threads, case, type)] = {impl: GB/s} for the layout cases (L1, L2, ...)."""
    rows = {}
    for name, b in med.items():
        parts = name.split("/")
        if len(parts) != 4 or not parts[0].startswith("L"):
            continue
        case, typ, thr, impl = parts
        r = rows.setdefault((int(thr[1:]), case, typ),
                            {"gbps": {}, "label": {}})
        r["gbps"][impl] = gbps(b)
        r["label"][impl] = b.get("label", "")
    return rows


def code_cell(s):
    """s as code in a table cell: '|' escaped, which a code span does not
    protect in a table row."""
    return "`" + s.replace("|", "\\|") + "`"


def x_reorder_dense(g):
    """selgraph against oneDNN's reorder of the odd operand followed by the
    dense Select, both in the widest ISA that ran: a ratio of times, since
    every entry of a case counts the same bytes; None without a reorder."""
    isa, a = widest(g)
    d, r = g.get(f"dense_{isa}"), g.get("reorder_onednn")
    if not (a and d and r):
        return None
    return a * (1.0 / r + 1.0 / d)


def markdown_layouts(rows):
    out = ["| case | type | threads | AVX-512 GB/s | dense AVX-512 | "
           "x dense | AVX2 GB/s | dense AVX2 | x dense | loop_nd | "
           "x loop (top) | reorder_onednn | x (reorder + dense) (top) | "
           "kernel (top) |",
           "|" + "---|" * 14]
    for k in sorted(rows, key=lambda k: (k[0], case_key(k[1]),
                                         type_key(k[2]))):
        g = rows[k]["gbps"]
        a5, d5 = g.get("selgraph_avx512"), g.get("dense_avx512")
        a2, d2 = g.get("selgraph_avx2"), g.get("dense_avx2")
        lp = g.get("loop_nd")
        xr = x_reorder_dense(g)
        isa, top = widest(g)
        label = rows[k]["label"].get(f"selgraph_{isa}", "")
        kernel = label.split(" ")[1] if " " in label else label
        out.append("| " + " | ".join([
            k[1], k[2], str(k[0]), fmt(a5), fmt(d5),
            fmt(a5 / d5, "{:.2f}") if a5 and d5 else "—", fmt(a2), fmt(d2),
            fmt(a2 / d2, "{:.2f}") if a2 and d2 else "—", fmt(lp),
            fmt(top / lp, "{:.2f}") if top and lp else "—",
            fmt(g.get("reorder_onednn")),
            fmt(xr, "{:.2f}") if xr else "—",
            code_cell(kernel)]) + " |")
    out.append("")
    return "\n".join(out)


def markdown_transpose(med):
    """tr<c>/e<w>/b<blocks>/<impl>: the transposing kernel alone against
    memcpy of the same source blocks of c channels into the same scratch
    (GB/s of source)."""
    rows, mb = {}, {}
    for name, b in med.items():
        parts = name.split("/")
        if len(parts) != 4 or not parts[0].startswith("tr"):
            continue
        key = (int(parts[0][2:]), int(parts[1][1:]), int(parts[2][1:]))
        rows.setdefault(key, {})[parts[3]] = gbps(b)
        mb[key] = b["bytes"] / 1e6
    if not rows:
        return None
    out = ["| channels | element bytes | blocks (MB of source) | AVX-512 GB/s "
           "| AVX2 GB/s | memcpy GB/s | AVX-512 / memcpy | AVX2 / memcpy |",
           "|" + "---|" * 8]
    for (c, w, n) in sorted(rows, key=lambda k: (-k[0], -k[1], k[2])):
        g = rows[(c, w, n)]
        a5, a2, mc = (g.get("transpose_avx512"), g.get("transpose_avx2"),
                      g.get("memcpy"))
        out.append("| " + " | ".join([
            str(c), str(w), f"{n} ({mb[(c, w, n)]:.1f})", fmt(a5), fmt(a2),
            fmt(mc), fmt(a5 / mc, "{:.2f}") if a5 and mc else "—",
            fmt(a2 / mc, "{:.2f}") if a2 and mc else "—"]) + " |")
    out.append("")
    return "\n".join(out)


def markdown_sweep(rows):
    """Per thread count: the worst ratio to the limit and to the plain loop
    over the memory-bound cases in f32 and bf16 (the widest ISA)."""
    out = ["| threads | worst x limit (case) | worst x loop (case) |",
           "|---|---|---|"]
    for t in sorted({k[0] for k in rows}):
        lim, loop = [], []
        for k, r in rows.items():
            if k[0] != t or k[1] not in MEMORY_BOUND or k[2] == "f16":
                continue
            g = r["gbps"]
            _, a5 = widest(g)
            if not a5:
                continue
            name = f"{k[1]} {k[2]}"
            if r["limit"]:
                lim.append((a5 / r["limit"], name))
            peers = [g[p] for p in ("loop_rt", "loop_ct") if p in g]
            if peers:
                loop.append((a5 / max(peers), name))
        w = lambda v: f"{min(v)[0]:.2f} ({min(v)[1]})" if v else "—"
        out.append(f"| {t} | {w(lim)} | {w(loop)} |")
    out.append("")
    return "\n".join(out)


def markdown_latency(med):
    lat = defaultdict(dict)
    for name, b in med.items():
        parts = name.split("/")
        if parts[0] != "lat" or len(parts) != 5:
            continue
        _, typ, n, thr, impl = parts
        lat[(int(n[1:]), int(thr[1:]))][impl] = to_us(b) * 1e3
    out = ["| elements | threads | AVX-512 ns | AVX2 ns | ref ns | "
           "plain loop ns (no API) | AVX-512 − loop ns |",
           "|---|---|---|---|---|---|---|"]
    loops = {n: v.get("loop_serial") for (n, t), v in lat.items() if t == 1}
    for (n, t) in sorted(lat):
        v = lat[(n, t)]
        lp = loops.get(n)
        a5 = v.get("selgraph_avx512")
        out.append("| " + " | ".join([
            str(n), str(t), fmt(a5, "{:.0f}"),
            fmt(v.get("selgraph_avx2"), "{:.0f}"),
            fmt(v.get("selgraph_ref"), "{:.0f}"), fmt(lp, "{:.0f}"),
            fmt(a5 - lp if a5 is not None and lp is not None else None,
                "{:.0f}")]) + " |")
    out.append("")
    return "\n".join(out), lat


def markdown_compile(med):
    comp = defaultdict(dict)
    for name, b in med.items():
        parts = name.split("/")
        if parts[0] != "compile" or len(parts) != 5:
            continue
        _, case, typ, impl, mode = parts
        comp[(case, typ, impl)][mode] = to_us(b)
        comp[(case, typ, impl)]["label"] = b.get("label", "")
    out = ["| case | type | ISA | cold µs (JIT) | warm µs (cache hit) | "
           "kernels |", "|---|---|---|---|---|---|"]
    for k in sorted(comp, key=lambda k: (case_key(k[0]), k[2])):
        v = comp[k]
        label = v.get("label", "").split(" [")[0]
        out.append("| " + " | ".join([
            k[0], k[1], k[2].replace("selgraph_", ""),
            fmt(v.get("cold"), "{:.1f}"), fmt(v.get("warm"), "{:.2f}"),
            code_cell(label)]) + " |")
    out.append("")
    return "\n".join(out), comp


def targets(rows, lat, comp):
    """Lines naming each missed target and by how much."""
    miss = []
    for k in sorted(rows, key=lambda k: (k[0], case_key(k[1]), k[2])):
        thr, case, typ = k
        r = rows[k]
        g = r["gbps"]
        isa, top = widest(g)
        a5, a2, lim = (g.get("selgraph_avx512"), g.get("selgraph_avx2"),
                       r["limit"])
        name = ISA_NAMES.get(isa, "")
        tag = f"{case} {typ} {thr}t"
        if top and lim and top < T_LIMIT * lim:
            miss.append(f"- {tag}: {name} {top:.1f} GB/s = "
                        f"{100 * top / lim:.0f}% of the limit {lim:.1f} "
                        f"(target 85%)")
        for p in PEERS:
            if top and g.get(p) and top < g[p]:
                miss.append(f"- {tag}: {name} {top:.1f} GB/s is slower than "
                            f"{p} {g[p]:.1f} ({top / g[p]:.2f}×)")
        if case in MEMORY_BOUND and a5 and a2 and a2 < T_AVX2 * a5:
            miss.append(f"- {tag}: AVX2 {a2:.1f} GB/s = {100 * a2 / a5:.0f}% "
                        f"of AVX-512 (target ≥ 75%)")
    for (n, t), v in sorted(lat.items()):
        isa, ns = widest(v)
        if n == 1024 and ns and ns > T_LAT_NS:
            miss.append(f"- execute of 1024 f32 at {t}t: {ISA_NAMES[isa]} "
                        f"{ns:.0f} ns (target < 1000 ns)")
    for k, v in sorted(comp.items()):
        if k[2] == "selgraph_ref":
            continue
        if v.get("warm", 0) > T_WARM_US:
            miss.append(f"- warm compile {k[0]} {k[2]}: {v['warm']:.2f} µs "
                        f"(target < 5 µs)")
        if v.get("cold", 0) > T_COLD_US:
            miss.append(f"- cold compile {k[0]} {k[2]}: {v['cold']:.1f} µs "
                        f"(target < 200 µs)")
    return miss


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib missing, no plot", file=sys.stderr)
        return False
    threads = sorted({k[0] for k in rows})
    types = [t for t in TYPES if any(k[2] == t for k in rows)]
    impls = SG + PEERS
    colors = {"selgraph_avx512": "#1f4e9c", "selgraph_avx2": "#5b8fd9",
              "selgraph_ref": "#a9c4ec", "loop_rt": "#c9a227",
              "loop_ct": "#e07b00", "eigen": "#7a9a3a", "onednn": "#b0413e"}
    fig, axes = plt.subplots(len(types), len(threads),
                             figsize=(5.5 * len(threads), 2.6 * len(types)),
                             squeeze=False, sharey="row")
    width = 0.8 / len(impls)
    for i, typ in enumerate(types):
        for j, thr in enumerate(threads):
            ax = axes[i][j]
            cases = sorted({k[1] for k in rows
                            if k[0] == thr and k[2] == typ}, key=case_key)
            for n, impl in enumerate(impls):
                xs, ys = [], []
                for x, c in enumerate(cases):
                    v = rows[(thr, c, typ)]["gbps"].get(impl)
                    if v is not None:
                        xs.append(x - 0.4 + (n + 0.5) * width)
                        ys.append(v)
                ax.bar(xs, ys, width, label=impl.replace("selgraph_", "sg "),
                       color=colors[impl])
            for x, c in enumerate(cases):
                lim = rows[(thr, c, typ)]["limit"]
                if lim:
                    ax.hlines(lim, x - 0.45, x + 0.45, colors="black",
                              linewidth=1.5,
                              label="limit" if x == 0 else None)
            ax.set_xticks(range(len(cases)))
            ax.set_xticklabels(cases, fontsize=8)
            ax.tick_params(axis="y", labelsize=8)
            ax.set_title(f"{typ}, {thr} thread{'s' if thr > 1 else ''}",
                         fontsize=9)
            if j == 0:
                ax.set_ylabel("effective GB/s", fontsize=8)
            ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels),
               fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=72)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--md", help="markdown output (default: stdout)")
    ap.add_argument("--png", help="plot output")
    ap.add_argument("--stat", default="median", choices=["median", "min"],
                    help="which aggregate of the repetitions (min: the best "
                    "repetition's time, for a busy machine)")
    args = ap.parse_args()
    ctx, med, errors = load(args.json, args.stat)
    rows = case_table(med, errors)
    md = []
    md.append(f"Run: {ctx.get('date', '?')}, {ctx.get('cpu_model', '?')}, "
              f"{ctx.get('num_cpus', '?')} CPUs, oneDNN {ctx.get('onednn')}, "
              f"Eigen {ctx.get('eigen')}, {ctx.get('compiler')}, "
              f"{ctx.get('reps')} repetitions of ≥ {ctx.get('min_time_s')} s, "
              f"{'medians' if args.stat == 'median' else 'best repetition'}"
              ".\n")
    md.append("### Select suite, effective GB/s\n")
    md.append("Effective GB/s, median. `limit`: best of the stream kernel "
              "with regular and non-temporal stores (moved GB/s); `memcpy`: "
              "read + write GB/s of a dst-sized memcpy; `% lim`: selgraph / "
              "limit; `top`: the widest ISA the CPU ran (AVX-512, else "
              "AVX2); `× best peer`: selgraph's top / the fastest peer; "
              "n/a: the peer cannot run this type.\n")
    for t in sorted({k[0] for k in rows}):
        md.append(markdown_cases(rows, t))
    md.append("### Every selgraph figure vs every peer (GB/s ratio, > 1: "
              "selgraph faster)\n")
    md.append(markdown_peer_ratios(rows))
    md.append("### Store choice (diagnostic): the AVX-512 kernel with "
              "regular vs non-temporal stores\n")
    md.append("`picks`: `measured` where the plan carries both store kinds "
              "and the store policy times them (store_policy.hpp), "
              "`regular` below its floor; `best / AVX-512`: the faster forced "
              "kind over what the policy reached.\n")
    md.append(markdown_stores(rows))
    md.append("### Thread sweep: worst ratios over S2-S9, f32 and bf16, "
              "the widest ISA\n")
    md.append(markdown_sweep(rows))
    lrows = layout_table(med, errors)
    if lrows:
        md.append("### Layouts: GB/s against the dense case of the same "
                  "shape, the plain loop over the same strides, and "
                  "oneDNN's reorder of the odd operand plus the dense "
                  "Select\n")
        md.append("`(top)`: of the widest ISA the CPU ran (AVX-512, else "
                  "AVX2).\n")
        scale = ctx.get("layout_scale", "1")
        if scale != "1":
            md.append(f"Shapes scaled by --sg_layout_scale={scale}: the "
                      "outermost dim of every operand not broadcast along "
                      f"it is {scale}x the default's (the activations' N, "
                      "the rows of the [2048, 2048] matrices, the scores' "
                      "batch).\n")
        md.append(markdown_layouts(lrows))
    tr_md = markdown_transpose(med)
    if tr_md:
        md.append("### Transposing kernel alone (diagnostic, 1 thread)\n")
        md.append("Each block is one image of L4's channels-last operand, "
                  "[3136, 64] elements transposed into a [64, 3136] scratch "
                  "as a panel's transpose runs; memcpy copies the same "
                  "blocks into the same scratch. GB/s of source bytes.\n")
        md.append(tr_md)
    lat_md, lat = markdown_latency(med)
    md.append("### Latency: execute of tiny f32 tensors (median per call)\n")
    md.append(lat_md)
    comp_md, comp = markdown_compile(med)
    md.append("### Compile time (partition::compile, median)\n")
    md.append(comp_md)
    miss = targets(rows, lat, comp)
    for k, r in sorted(lrows.items()):
        g = r["gbps"]
        for isa in ("avx512", "avx2"):
            a, d = g.get("selgraph_" + isa), g.get("dense_" + isa)
            want = T_SHARED if k[1] in SHARED_LAYOUTS else T_TRANSPOSED
            if a and d and a < want * d:
                miss.append(f"- {k[1]} {k[2]} t{k[0]} {isa}: {a / d:.2f} of "
                            f"the dense case (target {want})")
            lp = g.get("loop_nd")
            # The peers are held against the widest ISA only.
            is_top = isa == widest(g)[0]
            if is_top and a and lp and a < T_LOOP * lp:
                miss.append(f"- {k[1]} {k[2]} t{k[0]} {isa}: {a / lp:.2f} of "
                            "the plain loop")
            xr = x_reorder_dense(g)
            if is_top and xr and xr < T_LOOP:
                miss.append(f"- {k[1]} {k[2]} t{k[0]} {isa}: {xr:.2f} of "
                            "oneDNN's reorder plus the dense Select")
    md.append("### Targets missed in this run\n")
    md.append("\n".join(miss) if miss else "None.")
    md.append("")
    if errors:
        md.append("### Not measured\n")
        for name, msg in sorted(errors.items()):
            md.append(f"- `{name}`: {msg}")
        md.append("")
    text = "\n".join(md)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    else:
        print(text)
    # A run of the layout cases alone has no dense suite rows to plot.
    if args.png and rows:
        plot(rows, args.png)


if __name__ == "__main__":
    main()
