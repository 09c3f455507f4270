"""`scons test`: runs that must FAIL in a prescribed way (fault injection).

tests/test_faults_mpi.c kills one MPI rank on purpose. Its run passes when the job ends
with a non-zero exit well inside the time limit (it did not hang: coreutils `timeout`
reports 124 otherwise), and its output holds every line the program prints only after a
checked phase passed (e.g. "faults_mpi: stall ok") plus at least one line saying how the
survivors learned of the death (pg_mpi's own timeout: "error after the kill")."""
import time

from .runners import run_and_log


def expect_failure_action(label, command_of, required, any_of=(), limit_s=60):
    """An SCons action: run command_of(source) under `timeout limit_s`; pass iff it exits
    non-zero (not 124), within limit_s, and its output contains every string of `required`
    and (if given) one of `any_of`."""
    def action(target, source, env):
        t0 = time.monotonic()
        status = run_and_log(label, command_of(source), str(target[0]), timeout_s=limit_s,
                             failure_expected=True)
        took = time.monotonic() - t0
        with open(str(target[0]), encoding="utf-8", errors="replace") as log:
            text = log.read()
        problems = []
        if status == 0:
            problems.append("exited 0: the injected fault went unnoticed")
        if status == 124:
            problems.append("hung: still running after %d s" % limit_s)
        problems += ["no line %r" % s for s in required if s not in text]
        if any_of and not any(s in text for s in any_of):
            problems.append("none of %s" % ", ".join(repr(s) for s in any_of))
        verdict = ("FAILED: %s" % "; ".join(problems)) if problems else \
            "ok: error exit %d after %.1f s, no hang (limit %d s)" % (status, took, limit_s)
        print("===== %s: %s =====" % (label, verdict))
        with open(str(target[0]), "a") as log:
            log.write("[%s]\n" % verdict)
        return 1 if problems else 0
    action.__name__ = "expect_failure"
    return action
