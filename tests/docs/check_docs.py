#!/usr/bin/env python3
"""Every example and link in the docs works; run by `scons test` (site_scons/splitcore/consume.py).

    check_docs.py --repo R --build B

Markdown files: every *.md of the repository outside build/ and hidden folders.

Code blocks. Each fenced ```c block of README.md and docs/*.md is compiled
with gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -I<repo>/include (the include directory a user
gets from CMake or pkg-config: #include <splitcore/pipeline.h>) and -Itests/docs/stubs (stand-in vendor headers):
  - a block with `main(` is a program: compiled, linked (-pthread -lm) and run; it must exit 0;
  - any other block is a translation unit: compiled to an object.
An HTML comment on the line before the fence changes that:
    <!-- doctest: body -->          leading preprocessor lines stay at file scope, the rest is
                                    the body of a function; tests/docs/prelude.h declares the
                                    helpers such snippets call (my_layer, ...)
    <!-- doctest: excerpt PATH -->  the block is a quote of PATH (any language): its lines
                                    must appear in PATH in order, consecutively (whitespace
                                    inside a line is normalised), so the quote stays true
    <!-- doctest: cross=CPU -->     also compile for Cortex-M CPU with arm-none-eabi-gcc (when
                                    installed)
    <!-- doctest: max-lines=N -->   the block has at most N lines
    <!-- doctest: output -->        the block (any language) is what the file's previous
                                    program printed (trailing spaces ignored), so pictures of
                                    schedules and results stay true
Blocks in other languages are checked only when they are excerpts.

Header preambles. Each library header (*.h, ports/*.h) opens with its name and what it is, an
example, its contents, its configuration macros and its error codes.

Header examples. The "Example:" of each header's preamble (*.h, ports/*.h, ports/platform/*.h)
is compiled the same way, with the header included first when the example does not include it.
One with `main(` is a program (run, except under MPI: compiled with mpicc, skipped without
it); otherwise the example is split where its last top-level function definition ends: what
comes before stays at file scope, the statements after it form the body of a function.
tests/docs/prelude.h declares the names the examples take as given (`me`, `region`, ...), and
unused variables and parameters are not errors there (the sketches name results they do not test).

Declarations. Every public function declaration of a library header (a line starting with
the header's *_API macro and ending in ';') is documented where it is declared: a comment on
its own lines, or a comment directly above it or above the run of declarations it belongs to
(a group such as pg_slot_acquire/commit/peek/release shares one comment).

Error contract. Every public function of a library header (*.h, ports/*.h) that returns
int, int32_t or int64_t (an error code) has a row in docs/error-contract.md (generated from
the table in tests/test_bad_input.c, which fails when they differ) or is in that document's
list of functions without a row, with the reason (no_rows[] in the same test).

Links. Every relative link or image ([text](path), [text](path#anchor), [ref]: path) must
name an existing file or folder; an anchor must be a heading of the target Markdown file
(GitHub's slugs). http(s) and mailto links are not fetched.

Prints one line per check and a summary; exits 1 when any check failed."""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "site_scons"))
from splitcore.checks import Checks  # noqa: E402

WARN = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
# Header examples are ten-line sketches: a result they name but do not test is not an error.
SKETCH = ["-Wno-unused-variable", "-Wno-unused-but-set-variable", "-Wno-unused-parameter"]
CODE_FILES = re.compile(r"^(README\.md|docs/[^/]+\.md)$")
FENCE = re.compile(r"^( {0,3})(```+|~~~+)\s*([^\s`]*)")
DIRECTIVE = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")


def markdown_files(repo):
    out = []
    for d, dirs, files in os.walk(repo):
        rel = os.path.relpath(d, repo)
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and not (rel == "." and x == "build"))
        out += [os.path.normpath(os.path.join(rel, f)) for f in sorted(files) if f.endswith(".md")]
    return out


def blocks(text):
    """(first line number, language, directive, code lines) of each fenced block."""
    lines = text.split("\n")
    i, out = 0, []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(2), m.group(3).lower(), i
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        d = DIRECTIVE.match(lines[j]) if j >= 0 else None
        i += 1
        body = []
        while i < len(lines) and not lines[i].lstrip().startswith(fence[0] * len(fence)):
            body.append(lines[i])
            i += 1
        out.append((start + 1, lang, d.group(1) if d else "", body))
        i += 1
    return out


def parse_directive(text):
    opts = {}
    for word in text.split():
        if "=" in word:
            k, v = word.split("=", 1)
            opts[k] = v
        elif "excerpt" not in opts and word == "excerpt":
            opts["excerpt"] = None
        elif "excerpt" in opts and opts["excerpt"] is None:
            opts["excerpt"] = word
        else:
            opts[word] = True
    return opts


def norm(line):
    return " ".join(line.split())


def is_excerpt(body, path):
    want = [norm(x) for x in body]
    with open(path, encoding="utf-8") as f:
        have = [norm(x) for x in f.read().split("\n")]
    n = len(want)
    return any(have[k:k + n] == want for k in range(len(have) - n + 1))


def last_function_end(code):
    """Index after the last top-level function definition (0 when there is none): a line at
    brace depth 0 that opens a parenthesised declarator, through its closing brace."""
    depth, end, in_fn = 0, 0, False
    for k, line in enumerate(code):
        text = re.sub(r"//.*|/\*.*?\*/|\"(\\.|[^\"])*\"", "", line)
        if depth == 0 and re.match(r"^\s*[A-Za-z_][\w\s\*]*\([^;]*\)\s*\{?\s*$", text) and \
                not text.lstrip().startswith(("if", "for", "while", "switch", "return")):
            in_fn = True
        depth += text.count("{") - text.count("}")
        if in_fn and depth == 0 and "}" in text:
            end, in_fn = k + 1, False
    return end


def as_body(code):
    """Leading preprocessor lines (with comments and blank lines among them), and everything up
    to the end of the last top-level function definition, at file scope; the rest inside a
    function."""
    head, k = [], 0
    while k < len(code) and (code[k].lstrip().startswith("#") or not code[k].strip() or
                             code[k].lstrip().startswith(("/*", "//"))):
        head.append(code[k])
        k += 1
    split = max(k, last_function_end(code))
    return head + ['#include "prelude.h"'] + code[k:split] + \
        ["void doc_example(void);", "void doc_example(void)", "{"] + ["    " + x for x in code[split:]] + ["}"]


def compile_block(c, repo, build, name, code, opts, stubs, here, cc="gcc", run=True, extra=()):
    """Compile (and run) one block; returns (passed, the program's output or None)."""
    src = os.path.join(build, name + ".c")
    program = any(re.search(r"\bmain\s*\(", x) for x in code)
    lines = as_body(code) if opts.get("body") else code
    if opts.get("prelude") and not opts.get("body"):
        k = 0
        while k < len(lines) and (lines[k].lstrip().startswith("#") or not lines[k].strip()):
            k += 1
        lines = lines[:k] + ['#include "prelude.h"'] + lines[k:]
    with open(src, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    inc = ["-I" + os.path.join(repo, "include"), "-I" + stubs, "-I" + here]
    run = run and program
    what = "%s compiles%s" % (name, " and runs" if run else "")
    if run:
        exe = os.path.join(build, name)
        cmd = [cc] + WARN + list(extra) + inc + [src, "-o", exe, "-pthread", "-lm"]
    else:
        cmd = [cc] + WARN + list(extra) + inc + ["-c", src, "-o", os.path.join(build, name + ".o")]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode != 0:
        return c.ok(False, what, "$ %s\n%s" % (" ".join(cmd), p.stdout)), None
    if run:
        try:
            r = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                               timeout=120, cwd=build)
            out, rc = r.stdout, r.returncode
        except subprocess.TimeoutExpired:
            out, rc = "timed out after 120 s", -1
        if out.strip():
            sys.stdout.write("".join("    | " + x + "\n" for x in out.strip().split("\n")[-12:]))
        return c.ok(rc == 0, what, "exit %d" % rc), out
    return c.ok(True, what), None


def cross_compile(c, repo, build, name, cpu, stubs):
    if not shutil.which("arm-none-eabi-gcc"):
        print("[ SKIPPED  ] %s for %s: arm-none-eabi-gcc not found" % (name, cpu))
        return
    cmd = ["arm-none-eabi-gcc", "-mcpu=" + cpu, "-mthumb", "-Os"] + WARN + \
        ["-I" + os.path.join(repo, "include"), "-I" + stubs, "-c", os.path.join(build, name + ".c"),
         "-o", os.path.join(build, name + "." + cpu + ".o")]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    c.ok(p.returncode == 0, "%s compiles for %s (arm-none-eabi-gcc)" % (name, cpu),
         "$ %s\n%s" % (" ".join(cmd), p.stdout))


def check_code(c, repo, build, md):
    here = os.path.dirname(os.path.abspath(__file__))
    stubs = os.path.join(here, "stubs")
    with open(os.path.join(repo, md), encoding="utf-8") as f:
        text = f.read()
    stem = re.sub(r"[^A-Za-z0-9]+", "_", md[:-3]).strip("_")
    output = None
    for line, lang, directive, code in blocks(text):
        opts = parse_directive(directive)
        name = "%s_L%d" % (stem, line)
        label = "%s:%d" % (md, line)
        if "max-lines" in opts:
            c.ok(len(code) <= int(opts["max-lines"]), "%s has at most %s lines (%d)" % (label, opts["max-lines"],
                                                                                     len(code)))
        if opts.get("excerpt"):
            path = os.path.join(repo, opts["excerpt"])
            c.ok(os.path.isfile(path) and is_excerpt(code, path),
                 "%s is a verbatim excerpt of %s" % (label, opts["excerpt"]))
            continue
        if opts.get("output"):
            got = [x.rstrip() for x in (output or "").rstrip().split("\n")]
            want = [x.rstrip() for x in "\n".join(code).rstrip().split("\n")]
            c.ok(output is not None and got == want, "%s is the output of the program above it" % label,
                 "the program printed:\n" + (output or "(no program ran)"))
            continue
        if lang not in ("c", "h") or not CODE_FILES.match(md):
            continue
        passed, out = compile_block(c, repo, build, name, code, opts, stubs, here)
        if out is not None:
            output = out
        if passed and "cross" in opts:
            cross_compile(c, repo, build, name, opts["cross"], stubs)


# ---- links ------------------------------------------------------------------------------
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)


def slugs(text):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', -1, -2 ..."""
    seen, out = {}, set()
    in_code = False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_code = not in_code
        if in_code:
            continue
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # link text only
        s = re.sub(r"[^\w\- ]", "", title.lower().replace("`", "")).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def strip_code(text):
    """Text without fenced blocks and inline code spans (links there are not links)."""
    out, in_code = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_code = not in_code
            out.append("")
            continue
        out.append("" if in_code else re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def check_links(c, repo, md):
    with open(os.path.join(repo, md), encoding="utf-8") as f:
        text = f.read()
    body = strip_code(text)
    targets = LINK.findall(body) + REFDEF.findall(body)
    for t in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I):
            continue  # http:, https:, mailto: ...
        path, _, anchor = t.partition("#")
        full = os.path.normpath(os.path.join(repo, os.path.dirname(md), path)) if path else os.path.join(repo, md)
        what = "%s links to %s" % (md, t)
        if not c.ok(os.path.exists(full) and os.path.abspath(full).startswith(repo), what,
                    "no such file: %s" % os.path.relpath(full, repo)):
            continue
        if anchor and full.endswith(".md"):
            with open(full, encoding="utf-8") as f:
                c.ok(anchor in slugs(f.read()), what + " (the heading exists)",
                     "headings: %s" % ", ".join(sorted(slugs(open(full, encoding="utf-8").read()))))


def preambles(c, repo):
    """Each library header (*.h, ports/*.h) opens with what it is, an example, its contents,
    its configuration macros and where its error codes are (DESIGN.md's rule)."""
    for path in sorted(glob.glob(os.path.join(repo, "*.h")) + glob.glob(os.path.join(repo, "ports", "*.h"))):
        rel = os.path.relpath(path, repo)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        pre = text[:text.find("*/")]
        missing = [what for what, pattern in [("an Example", r"^\s*Example\b.*:\s*$"), ("Contents", r"Contents:"),
                                              ("Configuration", r"Configuration\b"),
                                              ("the error codes", r"Errors (are|:)")]
                   if not re.search(pattern, pre, re.M)]
        c.ok(text.startswith("/* %s " % os.path.basename(rel)) and not missing,
             "%s's preamble: name and one paragraph, example, contents, configuration, errors" % rel,
             "missing: " + ", ".join(missing or ["the opening '/* %s — ...' line" % os.path.basename(rel)]))


API_DECL = re.compile(r"^[A-Z][A-Z0-9_]*_API\b")


def undocumented(text):
    """Names of the public declarations of a header without a comment at their declaration."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        if not API_DECL.match(lines[i]):
            i += 1
            continue
        j = i  # the declaration spans lines i..j
        while j < len(lines) and not re.search(r"[;{]\s*(/\*.*\*/\s*)?$", lines[j]):
            j += 1
        decl = "\n".join(lines[i:j + 1])
        if "{" not in decl.split("*/")[-1]:  # a definition is not a declaration
            documented = "/*" in decl
            k = i - 1
            while not documented and k >= 0:
                prev = lines[k].strip()
                if prev.endswith("*/"):
                    documented = True
                elif API_DECL.match(lines[k]) or (prev and not prev.startswith("/*") and k > 0 and
                                                  API_DECL.match(lines[k - 1]) and prev.endswith(";")):
                    k -= 1  # a run of declarations under one comment
                    continue
                elif prev and re.match(r"^[A-Za-z_].*[,(]$|^\s+\S.*;$", lines[k]):
                    k -= 1  # a continuation line of the previous declaration
                    continue
                break
            if not documented:
                m = re.search(r"(\w+)\s*\(", decl)
                out.append(m.group(1) if m else decl.split("\n")[0])
        i = j + 1
    return out


def declarations(c, repo):
    """Every public function is documented at its declaration."""
    for path in sorted(glob.glob(os.path.join(repo, "*.h")) + glob.glob(os.path.join(repo, "ports", "*.h"))):
        rel = os.path.relpath(path, repo)
        with open(path, encoding="utf-8") as f:
            missing = undocumented(f.read())
        c.ok(not missing, "%s: every public declaration has its comment" % rel, "undocumented: " + ", ".join(missing))


CODE_RETURN = re.compile(r"^[A-Z][A-Z0-9_]*_API\s+(int|int32_t|int64_t)\s+(\w+)\s*\(", re.M)


def error_contract(c, repo):
    """Every public function returning an error code has a bad-input row or a stated exemption."""
    path = os.path.join(repo, "docs", "error-contract.md")
    if not os.path.exists(path):
        c.ok(False, "docs/error-contract.md exists", "generate it: test_bad_input --markdown docs/error-contract.md")
        return
    with open(path, encoding="utf-8") as f:
        covered = set(re.findall(r"^\| (?:`[^`]*` \| )?`(\w+)` \|", f.read(), re.M))
    for path in sorted(glob.glob(os.path.join(repo, "*.h")) + glob.glob(os.path.join(repo, "ports", "*.h"))):
        rel = os.path.relpath(path, repo)
        with open(path, encoding="utf-8") as f:
            names = sorted({m.group(2) for m in CODE_RETURN.finditer(f.read())})
        missing = [n for n in names if n not in covered]
        c.ok(not missing, "%s: every function returning a code is in docs/error-contract.md (%d)" % (rel, len(names)),
             "no row and no exemption: %s (add rows to tests/test_bad_input.c, or a reason to its no_rows[])"
             % ", ".join(missing))


def header_examples(c, repo, build):
    """Compile (and run) the Example of every header's preamble."""
    here = os.path.dirname(os.path.abspath(__file__))
    stubs = os.path.join(here, "stubs")
    headers = sorted(glob.glob(os.path.join(repo, "*.h")) + glob.glob(os.path.join(repo, "ports", "*.h")) +
                     glob.glob(os.path.join(repo, "ports", "platform", "*.h")))
    for path in headers:
        rel = os.path.relpath(path, repo)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        preamble = text[:text.find("*/")].split("\n")
        for i, line in enumerate(preamble):
            if not re.match(r"^\s*Example\b.*:\s*$", line):
                continue
            indent = len(line) - len(line.lstrip())
            code = []
            for m in preamble[i + 1:]:
                if m.strip() and len(m) - len(m.lstrip()) <= indent:
                    break
                code.append(m)
            code = textwrap.dedent("\n".join(code)).rstrip().split("\n")
            if not any(re.search(r'#include\s+<splitcore/%s>' % re.escape(rel), x) for x in code):
                code = ['#include <splitcore/%s>' % rel] + code
            name = "header_" + re.sub(r"[^A-Za-z0-9]+", "_", rel) + "_L%d" % (i + 2)
            program = any(re.search(r"\bmain\s*\(", x) for x in code)
            mpi = "mpi.h" in text and "pg_mpi" in rel
            if mpi and not shutil.which("mpicc"):
                print("[ SKIPPED  ] %s: mpicc not found" % name)
                continue
            compile_block(c, repo, build, name, code, {"body": not program, "prelude": True}, stubs, here,
                          cc="mpicc" if mpi else "gcc", run=not mpi, extra=SKETCH)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    build = os.path.abspath(args.build)
    shutil.rmtree(build, ignore_errors=True)
    os.makedirs(build)
    c = Checks()
    for md in markdown_files(repo):
        check_code(c, repo, build, md)
        check_links(c, repo, md)
    preambles(c, repo)
    declarations(c, repo)
    error_contract(c, repo)
    header_examples(c, repo, build)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
