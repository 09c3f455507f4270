"""Which external programs are present, and what happens when one is not.

Outside CI a missing compiler or QEMU skips that part of the job with one
visible "SKIPPED: ..." line per missing program. Under CI=true it is a hard
failure: nothing is silently left out of what CI claims to have tested.
"""
import atexit
import shutil
import sys

from .targets import PACKAGE_OF


class Tools:
    def __init__(self, ci, requested_aliases):
        self.ci = ci
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

    def report(self):
        """Call after every have(). Under CI a missing program stops the
        build here; otherwise the SKIPPED lines come after the build's own
        output, where they are seen."""
        if self.ci and self.skipped:
            self._lines("ERROR")
            print("ERROR: CI=true and %d required program(s) are missing; "
                  ".ci/run installs them." % len(self.skipped))
            sys.exit(1)
        if self.skipped:
            atexit.register(self._lines, "SKIPPED")
