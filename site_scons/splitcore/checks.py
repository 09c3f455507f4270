"""Check reporting for the Python test scripts (tests/consume/check_consume.py,
tests/docs/check_docs.py): one gtest/cmocka-style line per check and a summary, so their
logs read like the cmocka suites'. Plain Python: the scripts import it without SCons."""
import subprocess
import sys


class Checks:
    def __init__(self):
        self.passed, self.failed = 0, []

    def ok(self, cond, what, detail=""):
        """Record one check; on failure print `detail` (a reason, a compiler's output)."""
        if cond:
            self.passed += 1
            print("[       OK ] %s" % what)
        else:
            self.failed.append(what)
            detail = detail.rstrip()
            print("[  FAILED  ] %s%s" % (what, ("\n" + detail if "\n" in detail else ": " + detail) if detail else ""))
        sys.stdout.flush()
        return bool(cond)

    def run(self, argv, what, cwd=None, env=None, expect_ok=True):
        """Run argv; the check passes when it exits 0 (or, expect_ok=False, when it does not).
        Its output is shown when the check fails or when it is short. Returns (passed, output)."""
        print("$ " + " ".join(argv))
        sys.stdout.flush()
        p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        out = p.stdout
        good = (p.returncode == 0) == expect_ok
        if not good or p.returncode == 0 and out.strip() and len(out) < 2000:
            sys.stdout.write(out if out.endswith("\n") or not out else out + "\n")
        return self.ok(good, what, "exit %d" % p.returncode), out

    def summary(self):
        """Print the totals; the script's exit status (1 when any check failed)."""
        print("[==========] %d check(s) run." % (self.passed + len(self.failed)))
        print("[  PASSED  ] %d check(s)." % self.passed)
        if self.failed:
            print("[  FAILED  ] %d check(s), listed below:" % len(self.failed))
            for f in self.failed:
                print("[  FAILED  ] %s" % f)
        return 1 if self.failed else 0
