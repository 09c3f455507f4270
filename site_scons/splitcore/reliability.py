"""Reliability checks of `scons test` and `scons fuzz` (issue #8 items 1-3).

- ThreadSanitizer: the threaded suites built with clang -fsanitize=thread and
  run with halt_on_error=1: one data race or lock-order report fails the run.
- libFuzzer: every tests/fuzz/fuzz_<name>.c built with clang
  -fsanitize=fuzzer,address,undefined, run for N seconds from its committed
  seed corpus tests/fuzz/corpus/<name>/ (read only: new inputs go to
  build/fuzz/<name>/corpus/, a crash to build/fuzz/<name>/crash-*). Every
  committed input runs first, so a crash once found and committed there is a
  regression test.
- spin: a Promela model is verified exhaustively (safety: assertions and
  invalid end states, i.e. deadlocks; then every `ltl` property in
  acceptance mode with weak fairness). Any error fails the step.
"""
import glob
import os
import re
import subprocess
import time

from .runners import run_and_log

TSAN_FLAGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-fsanitize=thread"]
TSAN_OPTIONS = "halt_on_error=1 second_deadlock_stack=1"
FUZZ_FLAGS = ["-O1", "-g", "-fno-omit-frame-pointer",
              "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all"]


def tsan_command(source):
    return ["env", "TSAN_OPTIONS=" + TSAN_OPTIONS, os.path.abspath(str(source[0]))]


def have_libfuzzer(cc="clang"):
    """clang's libFuzzer runtime (Debian: libclang-rt-<v>-dev) is installed."""
    try:
        out = subprocess.run([cc, "-print-runtime-dir"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True).stdout.strip()
    except OSError:
        return False
    return bool(glob.glob(os.path.join(out, "libclang_rt.fuzzer*.a")))


def fuzz_targets(folder="tests/fuzz"):
    """[(name, source)] for every <folder>/fuzz_<name>.c."""
    out = []
    for src in sorted(glob.glob(os.path.join(folder, "fuzz_*.c"))):
        out.append((os.path.splitext(os.path.basename(src))[0][len("fuzz_"):], src))
    return out


def _stat(output, key):
    m = re.search(r"stat::%s:\s*(\d+)" % key, output)
    return int(m.group(1)) if m else None


def fuzz_action(name, seconds, seeds, work):
    """Run the fuzzer target[0] <- source[0] for `seconds` from the seed corpus."""
    def action(target, source, env):
        corpus = os.path.join(work, "corpus")
        os.makedirs(corpus, exist_ok=True)
        prog = os.path.abspath(str(source[0]))
        cmd = [prog, "-max_total_time=%d" % seconds, "-timeout=10", "-rss_limit_mb=2048",
               "-print_final_stats=1", "-artifact_prefix=%s/" % os.path.abspath(work),
               corpus, os.path.abspath(seeds)]
        t0 = time.time()
        status = run_and_log("fuzz " + name, cmd, str(target[0]), timeout_s=seconds + 120)
        elapsed = time.time() - t0
        with open(str(target[0])) as log:
            text = log.read()
        print("fuzz %s: %.0f s, %s inputs run, %s seeds, %s" % (
            name, elapsed, _stat(text, "number_of_executed_units"),
            len(os.listdir(seeds)) if os.path.isdir(seeds) else 0,
            "no crash" if status == 0 else "FAILED (see %s)" % target[0]))
        return 0 if status == 0 else 1
    action.__name__ = "fuzz"
    return action


STEP = re.compile(r"/\*\s*STEP\s+(\w+)")


def steps_of(path):
    """The step names a file declares in /* STEP name */ comments."""
    with open(path) as f:
        return set(STEP.findall(f.read()))


def spin_action(model, code, work, depth=200000, siblings=(), defines=()):
    """First: the model names only steps of its C code (/* STEP name */ in both), and the
    model with its siblings (the other models of the same code) names every step of the
    code. Then spin -a [defines] model (defines: -DNAME=VALUE for the model's preprocessor,
    another configuration of the same model); a safety run (assertions, invalid end states
    = deadlocks) compiled with -DNOCLAIM; then every ltl property with ./pan -a -f -N <name>
    (none when the configuration's defines include -DBUSYPOLL: polling cores loop forever,
    which only safety can judge)."""
    def action(target, source, env):
        os.makedirs(work, exist_ok=True)
        src = os.path.abspath(str(source[0]))
        in_model, in_code = steps_of(src), steps_of(str(source[1]))
        in_models = set(in_model)
        for other in siblings:
            in_models |= steps_of(other)
        if not in_model or not in_model <= in_code or in_models != in_code:
            print("spin %s: the models' steps and %s's differ: only in the models %s, only in the "
                  "code %s" % (model, code, sorted(in_models - in_code), sorted(in_code - in_models)))
            return 1
        with open(src) as f:
            claims = [] if "-DBUSYPOLL" in defines else re.findall(r"^\s*ltl\s+(\w+)", f.read(), re.M)
        steps = [["spin", "-a"] + list(defines) + [src],
                 ["gcc", "-O2", "-DNOCLAIM", "-DSAFETY", "-o", "pan_safety", "pan.c"],
                 ["./pan_safety", "-m%d" % depth]]
        if claims:
            steps.append(["gcc", "-O2", "-DNFAIR=4", "-o", "pan", "pan.c"])
            steps += [["./pan", "-a", "-f", "-m%d" % depth, "-N", c] for c in claims]
        log = open(str(target[0]), "w")
        failed = 0
        for i, cmd in enumerate(steps):
            part = "%s.%d" % (target[0], i)
            # env -C: the steps run in work/ (no os.chdir: scons -j runs actions in threads)
            status = run_and_log("spin %s: %s" % (model, " ".join(cmd)),
                                 ["env", "-C", os.path.abspath(work)] + cmd, part)
            with open(part) as p:
                text = p.read()
            log.write(text)
            errors = re.search(r"errors:\s*(\d+)", text)
            truncated = "max search depth too small" in text  # an incomplete search proves nothing
            if status != 0 or truncated or (errors and int(errors.group(1)) != 0):
                failed = 1
                break
        log.close()
        print("spin %s%s: %s (%d steps named as in %s; safety and deadlock; %d ltl properties: %s)" % (
            model, (" " + " ".join(defines)) if defines else "", "FAILED" if failed else "verified, 0 errors",
            len(in_model), code, len(claims), ", ".join(claims)))
        return failed
    action.__name__ = "spin"
    return action
