#!/usr/bin/env python3
"""pipeline.h's schedules, lowering and CSV against PyTorch's, pinned.

schedules_pytorch.jsonl.xz holds PyTorch's schedule orders for every schedule pipeline.h
builds over ranks {2,3,4,8} x stages per rank {1,2,3} x microbatches 1-16 and 32, as
torch/distributed/pipelining/schedules.py's order-building code made them (its first line
names the commit) and _dump_csv writes them. For each combination pp_driver
(tests/torch/pp_driver.c) builds pipeline.h's plan; checked:
  - a combination PyTorch's constructor refuses, pp_schedule_build refuses, and the reverse;
  - the compute table, as pp_csv_write writes it, is PyTorch's CSV byte for byte (GPipe and
    1F1B: the table their _get_pipeline_order builds, see the differences below);
  - pp_lower_mode(PP_LOWER_TORCH) is PyTorch's lowered order (pipeline_order_with_comms)
    byte for byte;
  - PyTorch's CSVs (compute and lowered) load with pp_csv_read, validate, simulate without a
    deadlock and are written back byte for byte;
  - splitcore's CSVs (compute, both lowerings) read as PyTorch's _load_csv reads them
    (csv.reader, _Action.from_str's pattern, _validate_schedule's counts, no empty cell in a
    compute_comms table).
Differences pinned here (README, "Differences from PyTorch"):
  - GPipe / 1F1B: PyTorch's pipeline_order is the table with its idle slots dropped and a
    REDUCE_GRAD after each stage's last backward (_add_reduce_grad); splitcore keeps the idle
    slots and no REDUCE_GRAD (the "raw" table is equal);
  - 1F1B: PyTorch's table numbers the last rank's forwards 1..M (its runtime runs 0..M-1);
    splitcore's is the order that runs;
  - ForwardOnly: PyTorch's _ScheduleForwardOnly has no table; splitcore's is GPipe's forward
    half (each rank's forwards 0..M-1 after its rank-many idle slots); PyTorch's _load_csv
    refuses it and its lowerings (_validate_schedule wants M backwards per stage).
Exit 0 when every combination matches.
"""
import argparse
import csv
import io
import json
import lzma
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ACTION = re.compile(r"(\d+)(F|I|B|W|UNSHARD|RESHARD|REDUCE_GRAD|SEND_F|RECV_F|SEND_B|RECV_B)(\d*)")


class Driver:
    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _line(self):
        line = self.p.stdout.readline().decode()
        if not line:
            raise SystemExit("pp_driver: no answer (exit %s)" % self.p.poll())
        return line.split()

    def _csv(self):
        w = self._line()
        n = int(w[1])
        if n < 0:
            return None
        text = self.p.stdout.read(n).decode()
        self.p.stdout.readline()
        return text

    def build(self, name, P, V, M):
        self.p.stdin.write(("build %s %d %d %d\n" % (name, P, V, M)).encode())
        self.p.stdin.flush()
        rc = int(self._line()[1])
        if rc:
            return rc, None, None, None
        compute = self._csv()
        lowered = self._csv() if int(self._line()[1]) == 0 else None
        rounds = self._csv() if int(self._line()[1]) == 0 else None
        return 0, compute, lowered, rounds

    def read(self, P, S, M, text):
        raw = text.encode()
        self.p.stdin.write(("read %d %d %d %d\n" % (P, S, M, len(raw))).encode() + raw)
        self.p.stdin.flush()
        rc = int(self._line()[1])
        if rc:
            return dict(rc=rc)
        out = dict(rc=0)
        for key in ("validate", "lowered", "simulate"):
            w = self._line()
            out[w[0]] = int(w[1])
        out["csv"] = self._csv()
        return out


def rows(text):
    return list(csv.reader(io.StringIO(text, newline="")))


def parse(cell):
    """_Action.from_str: (stage, type, microbatch or None), or None for an empty cell."""
    cell = cell.strip()
    if cell == "":
        return None
    m = ACTION.match(cell)
    if not m:
        raise ValueError("invalid action string %r" % cell)
    return int(m.group(1)), m.group(2), int(m.group(3)) if m.group(3) else None


def torch_reads(text, P, S, M, fmt):
    """What PyTorch's _load_csv accepts: every cell an action string or empty (compute_comms:
    none empty), and _validate_schedule (rows = ranks, a stage on one rank, F before B/I, I
    before W, F == M, I == W, B + I == M per stage). Returns None or the reason."""
    try:
        table = [[parse(c) for c in row] for row in rows(text)]
    except ValueError as e:
        return str(e)
    if len(table) != P:
        return "%d rows for %d ranks" % (len(table), P)
    if fmt == "compute_comms" and any(a is None for row in table for a in row):
        return "empty cell in a compute_comms table"
    seen = {s: {t: set() for t in "FBIW"} for s in range(S)}
    owner = {}
    for r, row in enumerate(table):
        for a in row:
            if a is None:
                continue
            s, t, m = a
            if t in "BI" and m not in seen[s]["F"]:
                return "%s before F" % t
            if t == "W" and m not in seen[s]["I"]:
                return "W before I"
            if t in "FBIW":
                seen[s][t].add(m)
            if owner.setdefault(s, r) != r:
                return "stage on two ranks"
    for s in range(S):
        f, b, i, w = (len(seen[s][t]) for t in "FBIW")
        if f != M or i != w or b + (i + w) // 2 != M:
            return "counts of stage %d" % s
    return None


def write_rows(table):
    buf = io.StringIO()
    w = csv.writer(buf)
    for row in table:
        w.writerow(row)
    return buf.getvalue()


def reduce_grad_table(text, M):
    """_add_reduce_grad of a table: idle slots dropped, REDUCE_GRAD after a stage's M-th B or W."""
    out = []
    for row in rows(text):
        cnt, new = {}, []
        for cell in row:
            a = parse(cell)
            if a is None:
                continue
            new.append(cell)
            if a[1] in "BW":
                cnt[a[0]] = cnt.get(a[0], 0) + 1
                if cnt[a[0]] == M:
                    new.append("%dREDUCE_GRAD" % a[0])
        out.append(new)
    return write_rows(out)


def renumber_last_forwards(text, P, delta):
    out = []
    for r, row in enumerate(rows(text)):
        if r == P - 1:
            row = [("%dF%d" % (a[0], a[2] + delta)) if a and a[1] == "F" else cell
                   for cell, a in ((c, parse(c)) for c in row)]
        out.append(row)
    return write_rows(out)


def forward_half(raw, P):
    """GPipe's table up to its last forward on each rank."""
    out = []
    for row in rows(raw):
        last = max(i for i, c in enumerate(row) if parse(c) and parse(c)[1] == "F")
        out.append(row[:last + 1])
    return write_rows(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--data", default=os.path.join(HERE, "schedules_pytorch.jsonl.xz"))
    a = ap.parse_args()
    lines = lzma.decompress(open(a.data, "rb").read()).decode().splitlines()
    meta, combos = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
    drv = Driver(a.driver)
    n = {"combinations": 0, "refused by both": 0, "compute tables equal": 0, "lowered orders equal": 0,
         "PyTorch CSVs read back": 0, "splitcore CSVs PyTorch reads": 0, "pinned differences": 0}
    bad = []
    gpipe_raw = {}

    def fail(e, what):
        bad.append("%s P=%d V=%d M=%d: %s" % (e["s"], e["P"], e["V"], e["M"], what))

    for e in combos + [dict(s="ForwardOnly", P=P, V=V, M=M) for P in (2, 3, 4, 8) for V in (1, 2, 3)
                       for M in list(range(1, 17)) + [32]]:
        name, P, V, M = e["s"], e["P"], e["V"], e["M"]
        n["combinations"] += 1
        if name == "ForwardOnly":  # no table in PyTorch: GPipe's forward half
            g = gpipe_raw.get((P, V, M))
            e = dict(e, ok=g is not None, compute=forward_half(g, P) if g else None)
            n["pinned differences"] += 1
        rc, compute, lowered, rounds = drv.build(name, P, V, M)
        if not e["ok"]:
            if rc == 0:
                fail(e, "PyTorch refuses (%s), pp_schedule_build builds it" % e.get("error"))
            else:
                n["refused by both"] += 1
            continue
        if rc:
            fail(e, "pp_schedule_build refuses (%d), PyTorch builds it" % rc)
            continue
        S = P * V
        want = e["compute"]
        if name in ("GPipe", "1F1B"):
            want = e["raw"] if name == "GPipe" else renumber_last_forwards(e["raw"], P, -1)
            # PyTorch's own pipeline_order: the same with idles dropped and REDUCE_GRAD added
            theirs = e["compute"] if name == "GPipe" else renumber_last_forwards(e["compute"], P, -1)
            if reduce_grad_table(compute, M) != theirs:
                fail(e, "PyTorch's pipeline_order is not splitcore's table + _add_reduce_grad")
            else:
                n["pinned differences"] += 1
            if name == "1F1B" and renumber_last_forwards(compute, P, +1) != e["raw"]:
                fail(e, "1F1B: the last rank's numbering differs otherwise too")
            if name == "GPipe":
                gpipe_raw[(P, V, M)] = e["raw"]
        if compute != want:
            fail(e, "compute table differs:\n  torch:     %r\n  splitcore: %r" % (want, compute))
        else:
            n["compute tables equal"] += 1
        if "lowered" in e:
            if lowered != e["lowered"]:
                fail(e, "lowered order differs:\n  torch:     %r\n  splitcore: %r" % (e["lowered"], lowered))
            else:
                n["lowered orders equal"] += 1
        # PyTorch's CSVs into pipeline.h (PyTorch's own 1F1B table is not valid: F1..FM)
        for key in ("compute", "raw", "lowered"):
            if key not in e or (name == "1F1B" and key != "lowered") or name == "ForwardOnly":
                continue
            got = drv.read(P, S, M, e[key])
            if got["rc"] or got["validate"] or got["simulate"] or got["csv"] != e[key] or \
                    got["lowered"] != (key == "lowered"):
                fail(e, "PyTorch's %s CSV through pp_csv_read: %r" % (key, got))
            else:
                n["PyTorch CSVs read back"] += 1
        # splitcore's CSVs as PyTorch's _load_csv reads them (a forward-only table has no
        # backward, which _validate_schedule refuses)
        for text, fmt in ((compute, "compute_only"), (lowered, "compute_comms"), (rounds, "compute_comms")):
            if name == "ForwardOnly":
                if torch_reads(text, P, S, M, fmt) is None:
                    fail(e, "PyTorch's _load_csv would now take a forward-only %s table" % fmt)
                n["pinned differences"] += 1
                continue
            why = torch_reads(text, P, S, M, fmt) if text is not None else "no CSV"
            if why:
                fail(e, "PyTorch would not load splitcore's %s CSV: %s" % (fmt, why))
            else:
                n["splitcore CSVs PyTorch reads"] += 1
    drv.p.stdin.close()
    drv.p.wait()
    print("check_schedules: %s" % meta["meta"][:160] + "...")
    for k, v in n.items():
        print("  %-32s %5d" % (k, v))
    print("  %-32s %5d" % ("mismatches", len(bad)))
    for b in bad[:10]:
        print("MISMATCH " + b)
    sys.exit(1 if bad or drv.p.returncode else 0)


if __name__ == "__main__":
    main()
