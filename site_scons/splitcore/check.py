"""`scons check`: static analysis of the headers.

cppcheck (with its MISRA C:2012 addon) and clang-tidy run on each header's implementation
(the hygiene TU that includes it, with <PREFIX>_IMPLEMENTATION defined and, as in the hygiene
builds, SPLITCORE_SEPARATE_IMPLEMENTATIONS: one configuration).
Findings are counted by rule / check id per header into build/check.md. The step fails on
 - a MISRA rule that fires in a header without a row in docs/misra-deviations.md's deviation
   table (rule, headers it applies to, reason), and
 - any other cppcheck or clang-tidy finding without a row in its accepted-findings table.
Deviation rows whose rule no longer fires are reported (so the list can shrink). MISRA rule
texts are not shipped with cppcheck: findings are reported by rule id only."""
import collections
import concurrent.futures
import os
import re
import subprocess

CLANG_TIDY_CHECKS = ",".join([
    "-*", "clang-analyzer-*", "bugprone-*", "cert-*", "misc-*", "portability-*", "performance-*",
    # two adjacent parameters of one type are the API (counts, ranks): not a defect class here
    "-bugprone-easily-swappable-parameters",
])
# each header's implementation alone: the implementations it calls are linked from other files
SEPARATE = "-DSPLITCORE_SEPARATE_IMPLEMENTATIONS"
_CPPCHECK_LINE = re.compile(r"^(.*?):(\d+):(\w+):([\w.\-]+):(.*)$")
_TIDY_LINE = re.compile(r"^(.*?):(\d+):\d+: (warning|error): (.*) \[([\w.,\-]+)\]$")


def _rel(path):
    path = os.path.relpath(path) if os.path.isabs(path) else path
    return path[2:] if path.startswith("./") else path


def cppcheck(tu, prefix, includes):
    cmd = ["cppcheck", "--addon=misra", "--std=c99", "--quiet", "-D%s_IMPLEMENTATION" % prefix, SEPARATE,
           "-USPLITCORE_CONFIG_FILE", "--enable=warning,style,performance,portability",
           "--template={file}:{line}:{severity}:{id}:{message}", "-I.", "-Iports"] + \
        ["-I" + i for i in includes] + [tu]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True).stdout
    found = []
    for line in out.splitlines():
        m = _CPPCHECK_LINE.match(line)
        if m and not m.group(1).startswith("/usr/"):
            rule = m.group(4)
            found.append(dict(tool="misra" if rule.startswith("misra-c2012-") else "cppcheck",
                              file=_rel(m.group(1)), line=int(m.group(2)),
                              id=rule.replace("misra-c2012-", ""), msg=m.group(5)))
    return found


def clang_tidy(tu, prefix, includes):
    cmd = ["clang-tidy", tu, "--quiet", "--header-filter=.*", "--checks=" + CLANG_TIDY_CHECKS, "--",
           "-std=c99", "-D%s_IMPLEMENTATION" % prefix, SEPARATE, "-I.", "-Iports"] + ["-I" + i for i in includes]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True).stdout
    found = []
    for line in out.splitlines():
        m = _TIDY_LINE.match(line)
        if m and not m.group(1).startswith("/usr/"):
            found.append(dict(tool="clang-tidy", file=_rel(m.group(1)), line=int(m.group(2)),
                              id=m.group(5).split(",")[0], msg=m.group(4)))
    return found


def parse_tables(md_path):
    """Rows of the markdown tables in md_path: {first cell: [cells]} per table, in order.
    Table 1: | rule | headers | reason |; table 2: | tool | finding | headers | reason |."""
    tables, cur = [], None
    with open(md_path, encoding="utf-8") as md:
        for line in md:
            if not line.startswith("|"):
                cur = None
                continue
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if cur is None:
                cur = []
                tables.append(cur)
                continue                     # header row
            if set(cells[0]) <= set("-: "):
                continue                     # separator
            cur.append(cells)
    return tables


def _applies(headers_cell, path):
    return headers_cell == "all" or any(h.strip().strip("`") == path for h in headers_cell.split(","))


def analyse(units, deviations_md, out_md, jobs=2):
    """units: [(header path, prefix, tu path, includes)]. Returns the problem list."""
    tables = parse_tables(deviations_md)
    misra_dev = tables[0] if tables else []
    accepted = tables[1] if len(tables) > 1 else []

    def run(unit):
        path, prefix, tu, inc = unit
        return path, cppcheck(tu, prefix, inc) + clang_tidy(tu, prefix, inc)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(run, units))
    counts = collections.OrderedDict()      # (tool, id) -> {header: n}
    problems, seen_dev = [], set()
    paths = [u[0] for u in units]
    for header, findings in results:
        for f in findings:
            if f["file"] != header:           # a finding in an included header counts there once
                if f["file"] in paths:
                    continue
            key = (f["tool"], f["id"])
            counts.setdefault(key, collections.Counter())[header] += 1
            if f["tool"] == "misra":
                ok = [r for r in misra_dev if r[0] == f["id"] and _applies(r[1], header)]
            else:
                ok = [r for r in accepted if r[0] == f["tool"] and r[1] == f["id"] and _applies(r[2], header)]
            if ok:
                seen_dev.add((f["tool"] if f["tool"] != "misra" else "misra", f["id"]))
            else:
                problems.append("%s:%d: %s %s not in %s: %s" % (f["file"], f["line"], f["tool"], f["id"],
                                                                 deviations_md, f["msg"]))
    stale = [r[0] for r in misra_dev if ("misra", r[0]) not in seen_dev] + \
        ["%s %s" % (r[0], r[1]) for r in accepted if (r[0], r[1]) not in seen_dev]
    lines = ["# splitcore static analysis", "",
             "`scons check`: cppcheck %s with the MISRA C:2012 addon, and clang-tidy (%s), on each "
             "header's implementation. Findings by rule / check id and header; every one is a "
             "documented deviation or accepted finding in `%s` (else the step fails)." % (
                 _version("cppcheck"), CLANG_TIDY_CHECKS[3:], deviations_md), "",
             "| tool | rule / check | " + " | ".join("`%s`" % p for p in paths) + " | total |",
             "|---|---|" + "---:|" * (len(paths) + 1)]
    for (tool, rid), per in sorted(counts.items(), key=lambda kv: (kv[0][0], _rule_key(kv[0][1]))):
        lines.append("| %s | %s | %s | %d |" % (tool, rid, " | ".join(str(per.get(p, 0)) for p in paths),
                                                sum(per.values())))
    if stale:
        lines += ["", "No longer firing (rows that can go): " + ", ".join(stale)]
    text = "\n".join(lines) + "\n"
    with open(out_md, "w") as out:
        out.write(text)
    print(text)
    for p in problems:
        print("CHECK FAILURE: " + p)
    return problems


def _rule_key(rid):
    return tuple(int(x) if x.isdigit() else 0 for x in rid.split(".")) if rid[0].isdigit() else (999, rid)


def _version(tool):
    try:
        return subprocess.run([tool, "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout.split()[-1]
    except OSError:
        return "?"


def format_differences(files, clang_format="clang-format"):
    """The files (repository-relative C sources and headers) whose text differs from what
    the committed .clang-format makes of it: [(path, first differing line)]."""
    out = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        formatted = subprocess.run([clang_format, "--style=file", "--assume-filename=" + path], input=text,
                                   stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
        if formatted != text:
            a, b = text.splitlines(), formatted.splitlines()
            line = next((i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)) + 1)
            out.append((path, line))
    return out


def format_action(files):
    """An SCons action: fails when a file is not formatted as .clang-format says, naming each
    file and its first differing line (the fix: clang-format -i FILE)."""
    def action(target, source, env):
        diffs = format_differences(files)
        with open(str(target[0]), "w") as log:
            for path, line in diffs:
                log.write("%s:%d: not formatted as .clang-format says (clang-format -i %s)\n" % (path, line, path))
        for path, line in diffs:
            print("FORMAT %s:%d: differs from clang-format's output (clang-format -i %s)" % (path, line, path))
        print("format: %d C file(s) checked against .clang-format, %d differ" % (len(files), len(diffs)))
        return 1 if diffs else 0
    action.__name__ = "format"
    return action
