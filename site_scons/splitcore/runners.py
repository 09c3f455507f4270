"""SCons actions that run programs: tests on the host or under QEMU, the
demo, benchmarks. Each run is wrapped in coreutils `timeout`, so a hung
program or simulator fails the build instead of blocking it; its output is
printed in one block (readable under scons -j) and kept in a .log file."""
import os
import subprocess
import sys
import threading

_print_lock = threading.Lock()

# Every program run of this scons invocation: (label, verdict) with verdict "passed",
# "failed" or "expected failure"; summary() turns it into the run's last line.
RESULTS = []

# A hung QEMU (a crash that never reaches the exit path) fails after this.
DEFAULT_TIMEOUT_S = int(os.environ.get("SPLITCORE_RUN_TIMEOUT", "300"))
# `scons soak`'s long runs (minutes each on 2 cores).
SOAK_TIMEOUT_S = int(os.environ.get("SPLITCORE_RUN_TIMEOUT", "3600"))


def run_and_log(label, command, log_path, timeout_s=DEFAULT_TIMEOUT_S, failure_expected=False):
    """Run command (a list) with stdin closed; print its output under a
    header line; write it to log_path. Returns the exit status
    (124 = timed out, as coreutils timeout reports it). failure_expected:
    a non-zero exit is reported as such, not as FAILED (the caller judges)."""
    wrapped = ["timeout", "--kill-after=10", str(timeout_s)] + list(command)
    proc = subprocess.run(wrapped, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = proc.stdout.decode("utf-8", "replace")
    status = proc.returncode
    if status == 124:
        verdict = "TIMEOUT after %d s" % timeout_s
    elif status == 0:
        verdict = "exit 0"
    elif failure_expected:
        verdict = "exit %d (a failure was expected)" % status
    else:
        verdict = "FAILED: exit %d" % status
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as log:
        log.write("$ %s\n%s\n[%s]\n" % (" ".join(command), output, verdict))
    RESULTS.append((label, "passed" if status == 0 else "expected failure" if failure_expected and status != 124
                    else "failed"))
    with _print_lock:
        sys.stdout.write("\n===== %s =====\n$ %s\n%s" % (label, " ".join(command), output))
        if output and not output.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.write("===== %s: %s =====\n" % (label, verdict))
        sys.stdout.flush()
    return status


def run_action(label, command_of, timeout_s=None):
    """An SCons action: target[0] is the log; command_of(source) gives the
    command line. The build step fails when the program does not exit 0."""
    def action(target, source, env):
        status = run_and_log(label, command_of(source), str(target[0]), timeout_s or DEFAULT_TIMEOUT_S)
        return 0 if status == 0 else 1
    action.__name__ = "run"
    return action


def summary(alias, skipped):
    """The run's last line: how many programs ran, passed and failed, and what was
    skipped and why (`skipped`: Tools.skipped_summary())."""
    failed = [label for label, verdict in RESULTS if verdict == "failed"]
    passed = sum(1 for _, verdict in RESULTS if verdict != "failed")
    line = "scons %s: %d run(s), %d passed, %d failed%s; %s" % (
        alias, len(RESULTS), passed, len(failed), " (%s)" % ", ".join(failed) if failed else "", skipped)
    # A build step that failed stops SCons (without -k) before the runs after it: say so, or
    # the counts read as a whole run.
    from SCons.Script import GetBuildFailures
    broken = [str(f.node) for f in GetBuildFailures() if not str(f.node).endswith(".log")]
    if broken:
        line += "; STOPPED by %d build error(s) (%s): the runs after it did not happen" % (
            len(broken), ", ".join(broken[:3]) + (", ..." if len(broken) > 3 else ""))
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
