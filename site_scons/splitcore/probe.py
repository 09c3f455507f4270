"""Feature probes that never go stale.

SCons' Configure caches a check's result under build/.sconf_temp and only runs it
again when the check's own inputs change; a system header or library that appears
later (`apt-get install libcmocka-dev` after a first `scons demo`) is not one of
them, so the cached "no" survived the install and `scons test` skipped every host
suite. These probes compile (and link) a tiny program in a fresh temporary folder on
every run instead: about 0.1 s each, and always the truth about this machine.
"""
import os
import shutil
import subprocess
import tempfile


def compiles(cc, source, libs=(), link=True, flags=()):
    """True if `source` (C text) compiles with `cc` (and links with `libs`)."""
    if not shutil.which(cc):
        return False
    folder = tempfile.mkdtemp(prefix="splitcore-probe-")
    try:
        src = os.path.join(folder, "probe.c")
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(folder, "probe" if link else "probe.o")
        cmd = [cc] + list(flags) + ([] if link else ["-c"]) + [src, "-o", out] + \
            (["-l" + lib for lib in libs] if link else [])
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def have_cmocka(cc="gcc"):
    """Debian's libcmocka-dev: its header compiles and the library links."""
    return compiles(cc, "#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <setjmp.h>\n"
                        "#include <cmocka.h>\nstatic void t(void **s) { (void)s; }\n"
                        "int main(void) { const struct CMUnitTest ts[] = {cmocka_unit_test(t)};\n"
                        "  return cmocka_run_group_tests(ts, NULL, NULL); }\n", libs=["cmocka"],
                    flags=["-Werror=implicit-function-declaration"])


def have_ck(cc="gcc"):
    """Concurrency Kit's SPSC ring (Debian libck-dev), the p2p bench's peer."""
    return compiles(cc, "#include <ck_pr.h>\n#include <ck_ring.h>\nint probe(void) { ck_ring_t r;\n"
                        "  ck_ring_init(&r, 16); return (int)ck_ring_size(&r); }\n", link=False,
                    flags=["-Werror=implicit-function-declaration"])
