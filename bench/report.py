#!/usr/bin/env python3
"""Turn `scons bench`'s results.json into a Markdown report with PNG plots.

    report.py RESULTS.json [-o REPORT.md] [--img-dir DIR] [--img-prefix P] [--note TEXT]

Writes REPORT.md (default: beside RESULTS.json) and its plots bench-*.png into --img-dir
(default: the report's folder; the Markdown links them relative to the report). Run at
the end of `scons bench` (site_scons/splitcore/bench.py); run by hand to make the committed
snapshot docs/benchmarks.md:

    python3 bench/report.py build/bench/results.json -o docs/benchmarks.md --img-dir docs/img \
        --note "machine, date, load"

Rows are DESIGN.md's {"bench","case","metric","unit","ours","peer","peer_value"}: the
peer's figure is taken in the same run. A metric ending in _us, _ns, _instr, _bytes or
_pct is lower-is-better, any other higher-is-better. Each table row gives ours / peer
and whether ours is the better of the two. Plots (matplotlib; without it the report has
the tables only and says so):
  bench-p2p.png          one-way latency (ping-pong) and throughput vs message size:
                         pg_shm, pg_pthread vs ck_ring and a mutex+condvar queue
  bench-collectives.png  latency vs message size per collective: pg_pthread, pg_mpi vs MPI
  bench-pipeline.png     pipeline step time: measured vs simulated vs ideal, and vs torch
  bench-pipeline_sweep.png  pipeline efficiency (ideal / step) per schedule across
                         microbatch counts: measured vs pp_simulate vs the schedule's bound
  bench-dtensor.png      redistribute vs the bare collective vs the same by hand with MPI
  bench-graph.png        data-parallel MLP train step: samples/s on 2 ranks vs 1, and the
                         speedups (wall clock, thread CPU time) against the 1.7x target
A plot whose rows are absent is left out with a note; nothing here judges a time."""
import argparse
import json
import math
import os
import re
import statistics
import sys

LOWER = ("_us", "_ns", "_instr", "_bytes", "_pct")
SIZE = re.compile(r"\b(\d+)(B|KB|MB)\b")
UNITS = {"B": 1, "KB": 1024, "MB": 1024 * 1024}


def lower_is_better(metric):
    return metric.endswith(LOWER)


def size_of(case):
    """Message size in bytes named in a case ("... f32 16KB ..."), or None."""
    m = SIZE.search(case)
    return int(m.group(1)) * UNITS[m.group(2)] if m else None


def size_label(n, _pos=None):
    for unit, k in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= k and n % k == 0:
            return "%d%s" % (n // k, unit)
    return "%dB" % n


def size_axis(ax, label):
    """Log2 x axis of message sizes labelled 64B, 1KB, ..."""
    from matplotlib.ticker import FuncFormatter
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.set_xlabel(label)


def ratio(row):
    try:
        ours, peer = float(row["ours"]), float(row["peer_value"])
    except (TypeError, ValueError):
        return None
    return ours / peer if peer > 0 and ours >= 0 else None


def better(row):
    r = ratio(row)
    if r is None:
        return None
    return r < 1 if lower_is_better(row["metric"]) else r > 1


def fmt(v):
    if isinstance(v, float):
        return ("%.4g" % v) if abs(v) < 1e6 else ("%.3e" % v)
    return str(v)


def md_escape(s):
    return str(s).replace("|", "\\|")


# ---- plots -----------------------------------------------------------------------------

def lines(ax, pts, ours, ylabel, title, legend_size=6.5):
    """pts {name: {size: value}}: one line per name on log2 sizes x log values; a name
    for which ours(name) is false (a peer) is dashed."""
    for name, p in sorted(pts.items()):
        xs = sorted(p)
        ax.plot(xs, [p[x] for x in xs], marker="o", markersize=3, label=name,
                linestyle="-" if ours(name) else "--")
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", color="#e6e6e6", linewidth=0.5)
    ax.legend(fontsize=legend_size)


def save(plt, fig, path, title):
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_p2p(plt, rows, path):
    rows = [r for r in rows if r["bench"] == "p2p"]
    lat = [r for r in rows if r["metric"].endswith(("_ns", "_us")) and size_of(r["case"])]
    thr = [r for r in rows if not lower_is_better(r["metric"]) and size_of(r["case"])]
    if not lat and not thr:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))

    def series(subset):
        """{name: {size: value}} for our ports (first word of the case) and each peer."""
        out = {}
        for r in subset:
            s = size_of(r["case"])
            out.setdefault(r["case"].split()[0], {})[s] = float(r["ours"])
            out.setdefault(r["peer"], {})[s] = float(r["peer_value"])
        return out

    for ax, subset, title in ((axes[0], lat, "one-way latency (ping-pong), lower is better"),
                              (axes[1], thr, "stream throughput, higher is better")):
        if not subset:
            ax.set_visible(False)
            continue
        if len({size_of(r["case"]) for r in subset}) == 1:   # one size: bars, not a line
            pts = sorted(series(subset).items(), key=lambda kv: list(kv[1].values())[0])
            ax.clear()
            ax.barh([n for n, _ in pts], [list(v.values())[0] for _, v in pts],
                    color=["#c44e52" if n.startswith("pg_") else "#8c8c8c" for n, _ in pts])
            for i, (_, v) in enumerate(pts):
                ax.text(list(v.values())[0], i, " %.4g" % list(v.values())[0], va="center", fontsize=7)
            ax.set_xscale("log")
            ax.set_xlabel("%s (%s), %s message" % (subset[0]["metric"], subset[0]["unit"],
                                                   size_label(size_of(subset[0]["case"]))))
            ax.set_title(title, fontsize=9)
            continue
        size_axis(ax, "message size")
        lines(ax, series(subset), lambda n: n.startswith("pg_"),
              "%s (%s)" % (subset[0]["metric"], subset[0]["unit"]), title, 7)
    return save(plt, fig, path,
                "p2p: our ports vs ck_ring (lock-free SPSC ring) and a mutex+condvar queue")


def plot_collectives(plt, rows, path):
    rows = [r for r in rows if r["bench"] == "pg_collectives" and size_of(r["case"])]
    ops = []
    for r in rows:
        op = next((w for w in r["case"].split() if w in
                   ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all",
                    "gather", "scatter")), None)
        if op and op not in ops:
            ops.append(op)
    if not ops:
        return None
    fig, axes = plt.subplots(1, len(ops), figsize=(4.2 * len(ops), 4), squeeze=False)
    for ax, op in zip(axes[0], ops):
        pts = {}
        for r in rows:
            words = r["case"].split()
            if op not in words:
                continue
            s = size_of(r["case"])
            ours = " ".join(words[:words.index(op)])     # "pg_mpi no-check"
            pts.setdefault(ours, {})[s] = float(r["ours"])
            peer = "MPI (%s)" % op
            pts.setdefault(peer, {}).setdefault(s, float(r["peer_value"]))
        size_axis(ax, "message size")
        lines(ax, pts, lambda n: not n.startswith("MPI"), "latency (us), lower is better", op)
    return save(plt, fig, path,
                "collectives, 2 ranks: our ports (pg_pthread, pg_shm: threads; pg_mpi: processes) vs Open MPI (dashed), same run")


def bars(ax, rows, cases, title):
    """Grouped bars per case: ours ("measured") then each peer the case names."""
    peers = []
    for r in rows:
        if r["case"] in cases and r["peer"] not in peers:
            peers.append(r["peer"])
    names = ["measured (ours)"] + peers
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        xs, ys = [], []
        for i, c in enumerate(cases):
            rs = [r for r in rows if r["case"] == c]
            v = float(rs[0]["ours"]) if k == 0 else next(
                (float(r["peer_value"]) for r in rs if r["peer"] == name), None)
            if v is not None:
                xs.append(i + (k - (len(names) - 1) / 2) * width)
                ys.append(v)
        drawn = ax.bar(xs, ys, width=width, label=name)
        for b, y in zip(drawn, ys):
            ax.text(b.get_x() + b.get_width() / 2, y, "%.0f" % y, ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([re.sub(r"_(\d+r_)", r"\n\1", c.split(" (")[0]).replace("_per_", "\nper_")
                        .replace("_cpu", "\ncpu") for c in cases], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("us (log), lower is better", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", color="#e6e6e6", linewidth=0.5)
    ax.set_axisbelow(True)
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def plot_pipeline(plt, rows, path):
    rows = [r for r in rows if r["bench"] == "pipeline" and r["metric"].endswith("_us")
            and float(r["peer_value"]) > 0]
    groups = ((lambda m: m == "step_us", "step time: measured vs pp_simulate vs ideal, and vs torch Pipe"),
              (lambda m: m != "step_us", "executor overhead per microbatch (no-op stages) vs torch Pipe"))
    panels = []
    for want, title in groups:
        cases = []
        for r in rows:
            if want(r["metric"]) and r["case"] not in cases:
                cases.append(r["case"])
        if cases:
            panels.append((cases, title))
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 3.6 * len(panels)), squeeze=False)
    for ax, (cases, title) in zip(axes[:, 0], panels):
        bars(ax, rows, cases, title)
    return save(plt, fig, path, "pipeline.h executor, 4 stages, 8 microbatches, pg_pthread")


SWEEP = re.compile(r"^sweep_(\w+?)_(\w+)_m(\d+)\b")


def plot_pipeline_sweep(plt, rows, path):
    """One panel per schedule: efficiency (ideal / step time) vs microbatch count, measured
    (ours), pp_simulate's prediction (peer "simulator") and the schedule's own bound (peer
    "schedule_bound": its bubble, no overhead); 1.0 = no bubble, no overhead."""
    data, layout = {}, None
    for r in rows:
        m = SWEEP.match(r["case"]) if r["bench"] == "pipeline" and r["metric"] == "efficiency" else None
        if not m:
            continue
        layout, sched, nmb = m.group(1), m.group(2), int(m.group(3))
        d = data.setdefault(sched, {})
        d.setdefault("measured", {})[nmb] = float(r["ours"])
        d.setdefault(r["peer"], {})[nmb] = float(r["peer_value"])
    if not data:
        return None
    n = len(data)
    fig, axes = plt.subplots(1, n, figsize=(2.6 * n + 1, 3.2), squeeze=False, sharey=True)
    styles = (("measured", "measured", "C0", "-", "o"), ("simulator", "pp_simulate", "C1", "--", "s"),
              ("schedule_bound", "schedule bound (bubble only)", "C2", ":", "^"))
    for ax, (sched, d) in zip(axes[0], data.items()):
        for key, label, color, ls, mk in styles:
            pts = sorted(d.get(key, {}).items())
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, linestyle=ls, marker=mk,
                        markersize=4, label=label)
        ax.axhline(1.0, color="#999999", linewidth=0.8, label="ideal (no bubble)")
        ax.set_xscale("log", base=2)
        ticks = sorted(d.get("measured", {}))
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks], fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_title(sched, fontsize=9)
        ax.set_xlabel("microbatches", fontsize=8)
        ax.grid(True, color="#e6e6e6", linewidth=0.5)
    axes[0][0].set_ylabel("efficiency = ideal / step", fontsize=8)
    axes[0][-1].legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save(plt, fig, path, "pipeline schedules on %s (pg_pthread): efficiency vs microbatches"
                % (layout or "?").replace("r", " ranks", 1))


def plot_dtensor(plt, rows, path):
    rows = [r for r in rows if r["bench"] == "dtensor" and r["metric"] == "latency_us"
            and size_of(r["case"])]
    kinds = []
    for r in rows:
        k = r["case"].split(" f32")[0].split(",")[0]   # "redistribute S(0)->R"
        if k not in kinds:
            kinds.append(k)
    if not kinds:
        return None
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * len(kinds), 4), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        pts = {}
        for r in rows:
            if not r["case"].startswith(kind + " "):
                continue
            s = size_of(r["case"])
            pts.setdefault("dt_redistribute (pg_pthread)", {})[s] = float(r["ours"])
            peer = r["peer"].replace(" (same run)", "").replace("the same by hand with ", "by hand: ")
            pts.setdefault(peer, {})[s] = float(r["peer_value"])
        size_axis(ax, "tensor size")
        lines(ax, pts, lambda n: n.startswith("dt_"), "latency (us), lower is better", kind)
    return save(plt, fig, path,
                "dtensor: redistribute vs the bare collective it runs vs MPI by hand, 2 ranks")


def plot_graph(plt, rows, path):
    rows = [r for r in rows if r["bench"] == "graph"]
    rate = [r for r in rows if r["metric"] == "samples_per_s"]
    speed = [r for r in rows if r["metric"] in ("speedup", "cpu_speedup")]
    if not rate and not speed:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    if rate:
        r = rate[0]
        axes[0].bar(["1 rank", "2 ranks (data parallel)"], [float(r["peer_value"]), float(r["ours"])],
                    color=["#999999", "#1f77b4"])
        axes[0].set_ylabel("samples/s, higher is better")
        axes[0].set_title("train step throughput", fontsize=9)
    names = {"speedup": "wall clock", "cpu_speedup": "thread CPU time"}
    if speed:
        axes[1].bar([names[r["metric"]] for r in speed], [float(r["ours"]) for r in speed], color="#1f77b4")
        axes[1].axhline(float(speed[0]["peer_value"]), color="#d62728", linestyle="--",
                        label="target %.2gx" % float(speed[0]["peer_value"]))
        axes[1].set_ylabel("2 ranks / 1 rank")
        axes[1].set_title("speedup", fontsize=9)
        axes[1].legend(fontsize=7)
    return save(plt, fig, path, "graph: data-parallel MLP train step, 2 pg_pthread ranks vs 1")


def plot_dtensor_ops(plt, rows, path):
    """Dispatch overhead per op on a cache hit vs PyTorch's DTensor figure (log scale), and
    tensor-parallel mm 512x512: time on 1 and 2 ranks beside OpenMP and OpenBLAS."""
    rows = [r for r in rows if r["bench"] == "dtensor_ops"]
    disp = [r for r in rows if r["metric"] == "dispatch_ns" and "PyTorch" in r["peer"]]
    mm = [r for r in rows if r["metric"] == "time_us" and "512x512" in r["case"]]
    if not disp and not mm:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), squeeze=False)
    ax = axes[0][0]
    if disp:
        names = [r["case"].split(" ")[1] for r in disp] + ["PyTorch DTensor"]
        vals = [float(r["ours"]) for r in disp] + [float(disp[0]["peer_value"])]
        ax.bar(range(len(vals)), vals, color=["C0"] * len(disp) + ["C3"])
        ax.set_yscale("log")
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(names, fontsize=8)
        ax.set_ylabel("ns per op, cache hit, no compute (log)")
        ax.set_title("dt_op dispatch vs PyTorch (issue #6's ~90 us)", fontsize=9)
    ax = axes[0][1]
    if mm:
        bars = {}
        for r in mm:
            c = r["case"]
            if "reference kernel" in c and "2 ranks" in c:
                bars["2 ranks, ours"] = float(r["ours"])
                if "1 rank" in r["peer"]:
                    bars["1 rank, ours"] = float(r["peer_value"])
                elif "OpenMP" in r["peer"]:
                    bars["OpenMP, 2 threads"] = float(r["peer_value"])
            elif "OpenBLAS" in c:
                bars["2 ranks, OpenBLAS kernel" if "2 ranks" in c else "1 rank, OpenBLAS kernel"] = float(r["ours"])
                bars["OpenBLAS, 2 threads"] = float(r["peer_value"])
        order = [k for k in ("1 rank, ours", "2 ranks, ours", "OpenMP, 2 threads", "1 rank, OpenBLAS kernel",
                             "2 ranks, OpenBLAS kernel", "OpenBLAS, 2 threads") if k in bars]
        ax.barh(range(len(order)), [bars[k] / 1000.0 for k in order],
                color=["C0" if "ours" in k or "kernel" in k else "C3" for k in order])
        ax.set_yticks(range(len(order)))
        ax.set_yticklabels(order, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("ms per 512x512 f32 mm (median), lower is better")
        ax.set_title("tensor-parallel mm: 1 vs 2 ranks (pg_pthread)", fontsize=9)
    return save(plt, fig, path, "dtensor ops: dispatch overhead and tensor-parallel speedup")


# Text under a plot in the report (the rows alone do not say what the plot compares).
CAPTIONS = {
    "pipeline": "The torch peers name what they ran on. `Pipe` on CPU runs every partition on that device's one "
                "worker thread; plain torch (`torch 1.13 plain ...`, the `mlp_train_*` samples/s rows) trains the "
                "same MLP on the whole batch in one process, at 1 thread and at 2 (`OMP_WAIT_POLICY=PASSIVE`), "
                "its blocks alternating with ours; the better setting is the peer row. Debian's torch is built "
                "with `BLAS_INFO=generic`: it calls whatever `libblas.so.3` the BLAS alternatives select "
                "(OpenBLAS once `libopenblas0-pthread` is installed, the reference BLAS before), named in the "
                "peer with its thread count.",
    "pipeline_sweep": "Pipeline schedules across microbatch counts (the `sweep_*` rows): the same 4-layer model "
                      "(F = I = W busy work per layer) on 2 pg_pthread ranks, as 2 stages (GPipe, 1F1B) or 4 "
                      "stages, 2 per rank (Interleaved1F1B, ZB1P, ZBV). Efficiency = ideal / step time, ideal = "
                      "the work spread evenly over the ranks (1.0: no bubble, no overhead). Measured (median "
                      "step) vs `pp_simulate`'s prediction from the layers' measured time, the executor's time "
                      "per action and the hand-off latency, vs the schedule's own bound (`pp_simulate` from the "
                      "layers' time alone: its bubble only). The text lines of the bench print how much of the "
                      "2 CPUs the ranks got: on a loaded machine the measured curve falls with it.",
}

PLOTS = (("p2p", "Point to point", plot_p2p),
         ("collectives", "Collectives", plot_collectives),
         ("pipeline", "Pipeline", plot_pipeline),
         ("pipeline_sweep", "Pipeline schedules", plot_pipeline_sweep),
         ("dtensor", "DTensor redistribute", plot_dtensor),
         ("graph", "Data-parallel graph", plot_graph),
         ("dtensor_ops", "DTensor ops", plot_dtensor_ops))


# ---- report ----------------------------------------------------------------------------

def summary(rows):
    """Per (bench, peer): rows, rows where ours is better, median ours/peer."""
    groups = {}
    for r in rows:
        rt = ratio(r)
        if rt is None:
            continue
        g = groups.setdefault((r["bench"], r["peer"], r["metric"]), [])
        g.append((rt, better(r)))
    out = []
    for (b, peer, metric), vals in groups.items():
        out.append((b, peer, metric, len(vals), sum(1 for _, w in vals if w),
                    statistics.median(v for v, _ in vals)))
    return out


def table(rows):
    lines = ["| case | metric | ours | peer | peer value | ours / peer | ours better |",
             "|---|---|--:|---|--:|--:|:-:|"]
    for r in rows:
        rt, w = ratio(r), better(r)
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            md_escape(r["case"]), "%s (%s)" % (r["metric"], md_escape(r["unit"])), fmt(r["ours"]),
            md_escape(r["peer"]), fmt(r["peer_value"]),
            "%.3g" % rt if rt is not None else "-", "-" if w is None else ("yes" if w else "no")))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("-o", "--out")
    ap.add_argument("--img-dir")
    ap.add_argument("--img-prefix", default="bench-")
    ap.add_argument("--note", action="append", default=[],
                    help="a paragraph under the title (machine, date, load)")
    args = ap.parse_args(argv)
    with open(args.results) as f:
        rows = json.load(f)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.results)), "REPORT.md")
    img_dir = args.img_dir or os.path.dirname(os.path.abspath(out))
    os.makedirs(img_dir, exist_ok=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None

    md = ["# splitcore benchmarks", "",
          "Generated by `bench/report.py` from `%s` (%d rows) of `scons bench`. Each peer's "
          "figure was measured in the same run. `ours / peer` below 1 means a smaller number "
          "for us; whether that is better depends on the metric: `_us`, `_ns`, `_instr`, "
          "`_bytes` and `_pct` are lower-is-better, the others (throughput, samples/s) "
          "higher-is-better." % (os.path.basename(args.results), len(rows)), ""]
    for note in args.note:
        md += [note, ""]
    md += ["## Summary", "",
           "Per benchmark and peer: the rows, how many ours wins, and the median of ours / peer.", "",
           "| bench | peer | metric | rows | ours better | median ours / peer |",
           "|---|---|---|--:|--:|--:|"]
    for b, peer, metric, n, wins, med in summary(rows):
        md.append("| %s | %s | %s | %d | %d | %.3g |" % (b, md_escape(peer), metric, n, wins, med))
    md.append("")
    skipped_path = os.path.join(os.path.dirname(os.path.abspath(args.results)), "skipped.json")
    if os.path.exists(skipped_path):
        with open(skipped_path) as f:
            skipped = json.load(f)
        md += ["## Not measured in this run", ""]
        if skipped:
            md += ["What a benchmark said it could not measure (a peer's package or a tool missing): these "
                   "rows are absent above, not won.", ""]
            md += ["- %s: %s" % (s["bench"], md_escape(s["line"])) for s in skipped]
        else:
            md += ["Nothing: every peer and row of every benchmark was measured."]
        md.append("")
    benches = []
    for r in rows:
        if r["bench"] not in benches:
            benches.append(r["bench"])
    plotted = {}
    for key, title, fn in PLOTS:
        if plt is None:
            break
        path = os.path.join(img_dir, "%s%s.png" % (args.img_prefix, key))
        try:
            plotted[key] = fn(plt, rows, path)
        except (ValueError, KeyError, TypeError) as e:   # a row shape this script does not know
            print("report.py: plot %s skipped: %s" % (key, e), file=sys.stderr)
            plotted[key] = None
    section_of = {"p2p": ["p2p"], "pg_collectives": ["collectives"], "pipeline": ["pipeline", "pipeline_sweep"],
                  "dtensor": ["dtensor"], "graph": ["graph"], "dtensor_ops": ["dtensor_ops"]}
    for b in benches:
        md += ["## %s" % b, ""]
        keys = section_of.get(b, [])
        if plt is None:
            md += ["(no plot: matplotlib is not installed; `apt-get install python3-matplotlib`)", ""]
        elif keys and not any(plotted.get(k) for k in keys):
            md += ["(no plot: this run has no rows of the shape the plot needs)", ""]
        for key in keys:
            if plt is not None and plotted.get(key):
                rel = os.path.relpath(plotted[key], os.path.dirname(os.path.abspath(out)))
                md += ["![%s](%s)" % (b if key == keys[0] else key, rel.replace(os.sep, "/")), ""]
                if key in CAPTIONS:
                    md += [CAPTIONS[key], ""]
        md += table([r for r in rows if r["bench"] == b]) + [""]
    with open(out, "w") as f:
        f.write("\n".join(md))
    print("report.py: wrote %s (%d rows, %d plot(s))" % (
        out, len(rows), sum(1 for v in plotted.values() if v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
