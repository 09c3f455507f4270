"""Which external programs are present, and what happens when one is not.

A missing compiler, library or QEMU is a hard failure of `scons test` (and of
every alias under CI=true): nothing README promises is silently left out of what a
passing run claims to have tested. `scons test PARTIAL=1` asks for a partial run
on purpose: then each missing program leaves out its part with one visible
"SKIPPED: ..." line, and the run's last line counts what was skipped and why.
Other aliases (scons demo, scons bench, ...) skip with the same lines outside CI.
"""
import atexit
import shutil
import sys

from .targets import PACKAGE_OF


class Tools:
    def __init__(self, ci, requested_aliases, partial=False):
        self.ci = ci
        self.partial = partial
        self.requested = set(requested_aliases)
        self.skipped = {}      # program -> [what was not done], in order

    def have(self, program, what, alias, found=None):
        """True if `program` is on PATH (or `found`, for a library checked
        by the caller). Otherwise remember that `what` is not done -- only
        when `alias` is being built, so that `scons size` does not talk
        about QEMU."""
        if found if found is not None else shutil.which(program):
            return True
        if alias in self.requested:
            whats = self.skipped.setdefault(program, [])
            if what not in whats:
                whats.append(what)
        return False

    def _lines(self, tag):
        for program, whats in self.skipped.items():
            print("%s: %s not found \u2014 %s not done (apt-get install %s)" % (
                tag, program, ", ".join(whats), PACKAGE_OF.get(program, program)))
        sys.stdout.flush()

    def strict(self):
        """Missing programs fail the build: under CI, or for `scons test` unless PARTIAL=1."""
        return self.ci or ("test" in self.requested and not self.partial)

    def skipped_summary(self):
        """'<n> parts skipped (<program>: <what>; ...)' or '0 parts skipped'."""
        parts = ["%s not found: %s" % (p, ", ".join(w)) for p, w in self.skipped.items()]
        return "%d part(s) skipped%s" % (sum(len(w) for w in self.skipped.values()),
                                         " (%s)" % "; ".join(parts) if parts else "")

    def report(self):
        """Call after every have(). When strict() a missing program stops the build
        here, before anything runs; otherwise the SKIPPED lines come after the
        build's own output, where they are seen."""
        if self.strict() and self.skipped:
            self._lines("ERROR")
            if self.ci:
                print("ERROR: CI=true and %d required program(s) are missing; "
                      ".ci/run installs them." % len(self.skipped))
            else:
                print("ERROR: scons test would leave out what README promises: install the "
                      "packages above (README's test command does), or ask for a partial run "
                      "with `scons test PARTIAL=1`.")
            sys.exit(1)
        if self.skipped:
            atexit.register(self._lines, "SKIPPED")
