#!/usr/bin/env python3
"""Draw pipeline plans as a Gantt chart per rank (PNG), one panel per input, stacked.

    gantt.py PLAN [PLAN ...] -o OUT.png [--title T] [--label NAME ...]

PLAN is either
  - a CSV plan in torch's _dump_csv layout (pipeline.h's pp_csv_write): one row per rank,
    one action string per cell ("0F3", "1B0", "2I5", "1SEND_F2", "" = idle). Every cell is
    one time step, so an empty cell is a step the rank waits;
  - a Chrome trace JSON (pipeline.h's pp_trace_json: the demo's build/demo/ trace or a
    simulated plan): "X" events with pid = rank, ts/dur in microseconds.
F (forward) is blue, B (full backward) red, I (backward for inputs) orange, W (backward
for weights) green, communication grey; the white gaps are the bubbles. Each box is
labelled stage:microbatch when it is wide enough. Panels share the time axis when they
come from the same kind of input, so their makespans compare at a glance.

Needs matplotlib (Debian: apt-get install python3-matplotlib)."""
import argparse
import csv
import json
import os
import re
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLOURS = {"F": "#4c72b0", "B": "#c44e52", "I": "#dd8452", "W": "#55a868"}
COMM = "#b0b0b0"
ACTION = re.compile(r"^\s*(\d*)([A-Z_]+?)(\d*)\s*$")


def parse_action(s):
    """'0F3' -> ('F', 0, 3); '' -> None; raises ValueError on anything else."""
    if s.strip() == "":
        return None
    m = ACTION.match(s)
    if not m or m.group(2) not in ("F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B",
                                   "UNSHARD", "RESHARD", "REDUCE_GRAD"):
        raise ValueError("not an action string: %r" % s)
    return (m.group(2), int(m.group(1)) if m.group(1) else None,
            int(m.group(3)) if m.group(3) else None)


def load_csv(path):
    """[(rank, start, dur, action)], time unit = one step."""
    boxes = []
    with open(path, newline="") as f:
        for rank, row in enumerate(csv.reader(f)):
            for step, cell in enumerate(row):
                a = parse_action(cell)
                if a:
                    boxes.append((rank, float(step), 1.0, a))
    return boxes, "step"


def load_trace(path):
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    boxes = []
    for e in events:
        if e.get("ph", "X") != "X" or "dur" not in e:
            continue
        try:
            a = parse_action(e["name"])
        except ValueError:
            continue  # other events a trace may carry (metadata, user spans)
        if a:
            boxes.append((int(e["pid"]), float(e["ts"]), float(e["dur"]), a))
    if boxes:  # start the clock at the first action
        t0 = min(b[1] for b in boxes)
        boxes = [(r, t - t0, d, a) for r, t, d, a in boxes]
    return boxes, "time (trace units, us)"


def load(path):
    return load_csv(path) if path.endswith(".csv") else load_trace(path)


def bubble(boxes):
    """(makespan, idle fraction over ranks x makespan) counting compute only."""
    if not boxes:
        return 0.0, 0.0
    ranks = max(b[0] for b in boxes) + 1
    end = max(t + d for _, t, d, _ in boxes)
    busy = sum(d for _, _, d, a in boxes if a[0] in COLOURS)
    return end, 1.0 - busy / (ranks * end) if end else 0.0


def draw(ax, boxes, title, xmax):
    ranks = max(b[0] for b in boxes) + 1 if boxes else 1
    for rank, t, d, (kind, stage, mb) in boxes:
        colour = COLOURS.get(kind, COMM)
        height = 0.8 if kind in COLOURS else 0.35
        ax.barh(rank, d, left=t, height=height, color=colour, edgecolor="white", linewidth=0.6)
        if kind in COLOURS and mb is not None and d >= 0.018 * xmax:
            label = "%d" % mb if stage is None else "%d:%d" % (stage, mb)
            ax.text(t + d / 2, rank, label, ha="center", va="center", fontsize=6.5, color="white")
    end, idle = bubble(boxes)
    ax.set_ylim(ranks - 0.5, -0.5)
    ax.set_yticks(range(ranks))
    ax.set_yticklabels(["rank %d" % r for r in range(ranks)], fontsize=8)
    ax.set_xlim(0, xmax)
    ax.set_facecolor("white")
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.5)
    ax.set_axisbelow(True)
    ax.set_title("%s   makespan %g, bubble %.1f %%" % (title, end, 100 * idle), fontsize=9, loc="left")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plans", nargs="+", help="CSV plans or Chrome trace JSON files")
    ap.add_argument("-o", "--out", required=True, help="PNG to write")
    ap.add_argument("--title", default=None, help="figure title")
    ap.add_argument("--label", action="append", default=[], help="panel titles, in order")
    args = ap.parse_args(argv)
    loaded = [load(p) for p in args.plans]
    for (boxes, _), p in zip(loaded, args.plans):
        if not boxes:
            sys.exit("gantt.py: no actions in %s" % p)
    shared = len({unit for _, unit in loaded}) == 1
    xmax_all = max(bubble(b)[0] for b, _ in loaded)
    top, bottom = (0.4 if args.title else 0.1), 0.35     # inches for the title, the legend
    height = 1.25 * len(loaded) + 0.3 + top + bottom
    fig, axes = plt.subplots(len(loaded), 1, figsize=(11, height), squeeze=False)
    for i, ((boxes, unit), path) in enumerate(zip(loaded, args.plans)):
        ax = axes[i][0]
        title = args.label[i] if i < len(args.label) else os.path.basename(path)
        draw(ax, boxes, title, xmax_all if shared else bubble(boxes)[0])
        if i == len(loaded) - 1 or not shared:
            ax.set_xlabel(unit, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    legend = [Patch(color=COLOURS[k], label=n) for k, n in
              (("F", "F forward"), ("B", "B backward"), ("I", "I backward (input)"),
               ("W", "W backward (weight)"))] + [Patch(color=COMM, label="send/recv")]
    fig.legend(handles=legend, loc="lower center", ncol=5, fontsize=8, frameon=False)
    if args.title:
        fig.suptitle(args.title, x=0.01, ha="left", fontsize=10)
    fig.tight_layout(rect=(0, bottom / height, 1, 1 - top / height))
    fig.savefig(args.out, dpi=110)
    print("gantt.py: wrote %s (%d panel(s))" % (args.out, len(loaded)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
