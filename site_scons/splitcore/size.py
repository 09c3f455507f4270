"""`scons size`: flash/RAM of each header's implementation, per target.

Each header's implementation is compiled alone (-Os, one section per
function/object) and measured with the target's Berkeley `size`, which sums
the object's own sections: text = code + read-only data, data = initialised
RAM, bss = zeroed RAM (nanoprintf's method). Helpers the code calls from
libgcc or libc (__aeabi_*, memcpy, ...) are not counted. The step fails
when an object references malloc/calloc/realloc/free, or a declared budget
is exceeded.
"""
import os
import subprocess

FORBIDDEN = ("malloc", "calloc", "realloc", "free")

NOTE = ("Object sizes in bytes of each header's implementation alone "
        "(-Os -ffunction-sections -fdata-sections; text includes read-only data). "
        "libgcc/libc helpers it calls (__aeabi_*, memcpy, ...) are not counted.")


class Budget:
    """metric: "text", "data", "bss" or "data+bss"; targets: None = all."""

    def __init__(self, metric, limit, targets=None):
        self.metric, self.limit, self.targets = metric, limit, targets

    def applies(self, target):
        return self.targets is None or target in self.targets

    def describe(self):
        where = "all targets" if self.targets is None else ", ".join(self.targets)
        return "%s <= %d (%s)" % (self.metric, self.limit, where)


class SizeVariant:
    """A further row for a header: its implementation compiled with extra defines
    (e.g. PP_NO_PLANNER), named "<header> <label>", object "<stem>_<name>"."""

    def __init__(self, label, name, defines, budgets=()):
        self.label, self.defines, self.budgets = label, list(defines or []), list(budgets)
        self.suffix = "_" + name if name else ""

    def row_name(self, header):
        return header + " " + self.label if self.label else header


def measure(size_tool, obj):
    out = subprocess.run([size_tool, obj], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.splitlines()
    text, data, bss = (int(x) for x in out[1].split()[:3])
    return {"text": text, "data": data, "bss": bss, "data+bss": data + bss}


def undefined(nm_tool, obj):
    out = subprocess.run([nm_tool, "-u", obj], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return sorted({line.split()[-1] for line in out.splitlines() if line.strip()})


def report(rows, md_path):
    """rows: dicts header, target, obj, size_tool, nm_tool, budgets.
    Prints the table, writes it as markdown, returns the list of problems."""
    problems = []
    lines = ["| header | target | .text | .data | .bss | budget |",
             "|---|---|---:|---:|---:|---|"]
    for row in rows:
        sizes = measure(row["size_tool"], row["obj"])
        verdicts = []
        for budget in row["budgets"]:
            if not budget.applies(row["target"]):
                continue
            ok = sizes[budget.metric] <= budget.limit
            verdicts.append("%s %s" % (budget.describe().split(" (")[0], "ok" if ok else "EXCEEDED"))
            if not ok:
                problems.append("%s on %s: %s is %d, budget %s" % (
                    row["header"], row["target"], budget.metric,
                    sizes[budget.metric], budget.describe()))
        heap = [s for s in undefined(row["nm_tool"], row["obj"]) if s in FORBIDDEN]
        if heap:
            problems.append("%s on %s references %s (no malloc, anywhere)" % (
                row["header"], row["target"], ", ".join(heap)))
            verdicts.append("uses " + ", ".join(heap))
        lines.append("| %s | %s | %d | %d | %d | %s |" % (
            row["header"], row["target"], sizes["text"], sizes["data"], sizes["bss"],
            "; ".join(verdicts) or "-"))
    text = "\n".join(lines + ["", NOTE, ""])
    os.makedirs(os.path.dirname(md_path), exist_ok=True)
    with open(md_path, "w") as md:
        md.write("# splitcore size\n\n" + text)
    print("\n" + text)
    for p in problems:
        print("SIZE FAILURE: " + p)
    return problems
