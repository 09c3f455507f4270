"""`scons bench`: run each benchmark program and collect its rows.

A benchmark is a host program in bench/ that prints one JSON object per
line for each measurement (other lines are shown as they are):
  {"bench": ..., "case": ..., "metric": ..., "unit": ..., "ours": ...,
   "peer": ..., "peer_value": ...}
with the peer's figure measured in the same run. Rows from every
benchmark go to build/bench/results.json as one JSON array. Benchmarks
are not tests: nothing here asserts a time. Then the report script (bench/report.py)
turns the rows into REPORT.md with PNG plots beside results.json.
"""
import json
import os
import subprocess
import sys

from .runners import run_and_log

FIELDS = ("bench", "case", "metric", "unit", "ours", "peer", "peer_value")


def rows_of(log_path):
    rows = []
    with open(log_path) as log:
        for line in log:
            line = line.strip()
            if line.startswith("{"):
                row = json.loads(line)
                missing = [f for f in FIELDS if f not in row]
                if missing:
                    raise ValueError("%s: row without %s: %s" % (log_path, missing, line))
                rows.append(row)
    return rows


def skipped_of(log_path):
    """The lines where a benchmark says a peer or row was not measured ("SKIPPED ...")."""
    with open(log_path) as log:
        return [line.strip() for line in log if line.startswith("SKIPPED")]


def collect(programs, results_path, report=None):
    """programs: list of (name, path) or (name, [path, arguments...]). Runs each, writes the JSON array,
    prints a table, then runs the `report` script (if given) on the array.
    What a benchmark could not measure (its SKIPPED lines: a peer's package
    missing, no valgrind, ...) goes to skipped.json beside the rows, is
    printed after the table and listed by the report: never a quiet omission.
    Returns 0, or 1 if a benchmark or the report failed."""
    rows, skipped, status = [], [], 0
    for name, program in programs:
        log = os.path.join(os.path.dirname(results_path), name + ".log")
        command = list(program) if isinstance(program, list) else [program]
        if run_and_log("bench " + name, [os.path.abspath(command[0])] + command[1:], log) != 0:
            status = 1
            skipped.append({"bench": name, "line": "FAILED: the benchmark exited non-zero (%s)" % log})
            continue
        rows.extend(rows_of(log))
        skipped.extend({"bench": name, "line": line} for line in skipped_of(log))
    os.makedirs(os.path.dirname(results_path), exist_ok=True)
    with open(results_path, "w") as out:
        json.dump(rows, out, indent=1)
        out.write("\n")
    with open(os.path.join(os.path.dirname(results_path), "skipped.json"), "w") as out:
        json.dump(skipped, out, indent=1)
        out.write("\n")
    if not programs:
        print("bench: no benchmarks yet (add them to BENCHES in SConstruct); "
              "wrote [] to %s" % results_path)
    else:
        order = ("bench", "case", "metric", "ours", "peer", "peer_value", "unit")
        print("\n%-16s %-20s %-16s %12s %-12s %12s %s" % order)
        for r in rows:
            print("%-16s %-20s %-16s %12s %-12s %12s %s" % tuple(
                str(r[f]) for f in order))
        print("wrote %d row(s) to %s" % (len(rows), results_path))
        for s in skipped:
            print("NOT MEASURED in this run: %s: %s" % (s["bench"], s["line"]))
    if report:
        # REPORT.md and bench-*.png beside results.json (tables only without matplotlib)
        if subprocess.call([sys.executable, report, results_path]) != 0:
            status = 1
    return status
