"""`scons size`, second table: what linked firmware images hold, and splitcore's share.

Per-header objects (size.py) say what one header's code weighs alone; a firmware image also
holds what that code calls from libgcc and libc (memcpy, division and float helpers), and
only what the linker kept (--gc-sections). This measures linked ELF files:

- total: the ELF's .text (code and read-only data), .data and .bss, by the target's
  Berkeley `size`;
- splitcore's share, from the ELF's symbol table (`nm -S`): every symbol named like the
  library (pp_, pg_, mb_, dt_, splitcore_ and their double-underscore private helpers; an
  image may name more, e.g. its pg_shm hook set), plus every symbol those reach through the
  code (`objdump -d`: call and branch targets, and literal-pool words that hold a symbol's
  address), the helpers of libgcc and libc included (a helper counts when splitcore code
  calls it, even if the application calls it too). Symbols of the application itself
  (defined in its own objects, not named like the library) stop the walk: a layer that the
  executor calls through a pointer is the application's.

Unnamed data (string literals, switch tables) has no symbol and is counted in the total
only. The step fails when an image's share exceeds a budget."""
import os
import re
import subprocess

LIBRARY = re.compile(r"^(pp|pg|mb|dt|splitcore)_")

NOTE = ("Linked images: total .text (code + read-only data) / .data / .bss of the ELF, and "
        "splitcore's share of it from the symbol table: the library's symbols plus what they "
        "call or reference (libgcc/libc helpers included), without the application's own code "
        "and data. Unnamed data (string literals) counts in the total only.")


def _run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout


def _symbols(nm_tool, elf):
    """{name: (addr, size, kind)} of the defined, sized symbols; kind t (text), r (rodata),
    d (data), b (bss)."""
    syms = {}
    for line in _run([nm_tool, "-S", "--defined-only", elf]).splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        addr, size, kind, name = parts
        kind = kind.lower()
        if kind not in "trdb" or int(size, 16) == 0:
            continue
        syms[name] = (int(addr, 16), int(size, 16), kind)
    return syms


def _defined(nm_tool, objects):
    names = set()
    for obj in objects:
        for line in _run([nm_tool, "--defined-only", obj]).splitlines():
            parts = line.split()
            if len(parts) == 3:
                names.add(parts[2])
    return names


_FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_REF = re.compile(r"<([^>+]+)(?:\+0x[0-9a-f]+)?>")
_WORD = re.compile(r"\.word\s+0x([0-9a-f]+)")
_INSN = re.compile(r"^\s*[0-9a-f]+:\t")


def _references(objdump_tool, elf, by_addr):
    """{function: set of symbols its code names or whose address its literal pool holds}."""
    refs, cur = {}, None
    for line in _run([objdump_tool, "-d", "--no-show-raw-insn", elf]).splitlines():
        m = _FUNC.match(line)
        if m:
            cur = m.group(1)
            refs.setdefault(cur, set())
            continue
        if cur is None or not _INSN.match(line):
            continue
        body = line.split(":", 1)[-1]
        for name in _REF.findall(body):
            if name != cur:
                refs[cur].add(name)
        w = _WORD.search(body)
        if w and int(w.group(1), 16) in by_addr:
            refs[cur].add(by_addr[int(w.group(1), 16)])
    return refs


def measure(image):
    """image: dict name, elf, size_tool, nm_tool, objdump_tool, app_objects, also (regexes
    of further symbols that count as splitcore's). Returns totals, the share and its parts."""
    out = _run([image["size_tool"], image["elf"]]).splitlines()
    text, data, bss = (int(x) for x in out[1].split()[:3])
    syms = _symbols(image["nm_tool"], image["elf"])
    app = _defined(image["nm_tool"], image["app_objects"])
    also = [re.compile(p) for p in image.get("also", ())]

    def library(name):
        return bool(LIBRARY.match(name)) or any(p.match(name) for p in also)

    by_addr = {}
    for name, (addr, size, kind) in syms.items():
        by_addr.setdefault(addr, name)
    refs = _references(image["objdump_tool"], image["elf"], by_addr)
    share = {n for n in syms if library(n)}
    todo = list(share)
    while todo:  # what the library reaches, up to the application's own symbols
        for ref in refs.get(todo.pop(), ()):
            if ref in syms and ref not in share and (ref not in app or library(ref)):
                share.add(ref)
                todo.append(ref)
    parts = {"text": 0, "data": 0, "bss": 0}
    helpers = []
    for name in share:
        addr, size, kind = syms[name]
        parts["text" if kind in "tr" else "data" if kind == "d" else "bss"] += size
        if not library(name) and name not in app:
            helpers.append((size, name))
    return dict(total={"text": text, "data": data, "bss": bss}, share=parts,
                helpers=sorted(helpers, reverse=True),
                biggest=sorted(((syms[n][1], n) for n in share if syms[n][2] in "tr"), reverse=True))


def report(images):
    """The table's markdown lines and the list of problems (as stack.report)."""
    problems = []
    lines = ["", "## Linked firmware images", "",
             "| image | target | .text | .data | .bss | splitcore .text | splitcore .data | "
             "splitcore .bss | libgcc/libc helpers splitcore calls | budget |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for image in images:
        if "missing" in image:
            lines.append("| %s | %s | %s | | | | | | | - |" % (image["name"], image["target"], image["missing"]))
            continue
        if not os.path.exists(image["elf"]):
            problems.append("%s: %s was not built" % (image["name"], image["elf"]))
            continue
        m = measure(image)
        verdicts = []
        for budget in image.get("budgets", ()):
            ok = m["share"][budget.metric] <= budget.limit
            verdicts.append("splitcore %s <= %d %s" % (budget.metric, budget.limit, "ok" if ok else "EXCEEDED"))
            if not ok:
                problems.append("%s: splitcore's %s is %d, budget %d" % (
                    image["name"], budget.metric, m["share"][budget.metric], budget.limit))
        helpers = ", ".join("%s %d" % (n, s) for s, n in m["helpers"]) or "-"
        lines.append("| %s | %s | %d | %d | %d | %d | %d | %d | %s | %s |" % (
            image["name"], image["target"], m["total"]["text"], m["total"]["data"], m["total"]["bss"],
            m["share"]["text"], m["share"]["data"], m["share"]["bss"], helpers, "; ".join(verdicts) or "-"))
    return lines + ["", NOTE, ""], problems
