#!/usr/bin/env python3
"""A newcomer's first hour, replayed; run by `scons test` (site_scons/splitcore/consume.py).

    check_newcomer.py --repo R --build B

README's two commands run in order on a fresh machine: the demo's line (which does not
install the test packages), then the test line (which does). A newcomer once got a
`scons test` that reused the demo run's cached "cmocka: no", skipped every host suite and
exited 0; and a bench built before libck-dev was installed never measured its ck_ring peer.
This replays that order on a copy of R's tracked files in B/repo:

 1. before the install: in a private mount namespace where <cmocka.h> and <ck_ring.h>
    and the libraries read as empty files (the packages "not installed yet"), `scons test` must stop before
    running anything, naming libcmocka-dev and PARTIAL=1, and the p2p bench's object is
    compiled without its ck_ring peer (-DHAVE_CK=0);
 2. after the install: in the same tree and build folder, with the headers back, a host
    suite builds and passes, and the p2p bench's object is rebuilt with the peer
    (-DHAVE_CK=1).

Needs root (unshare -m, mount --bind) and git; without them the script says SKIPPED and
exits 77 (a failure under CI=true). Prints one line per check; exits 1 when one failed."""
import argparse
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "site_scons"))
from splitcore.checks import Checks  # noqa: E402

# The packages' headers and development libraries (libcmocka-dev, libck-dev) read as a file the
# compiler and the linker cannot use (an empty file would pass as an empty linker script), as
# before `apt-get install`.
HIDDEN = ["/usr/include/cmocka.h", "/usr/include/ck_ring.h"] + \
    sorted(glob.glob("/usr/lib/*/libcmocka.so") + glob.glob("/usr/lib/*/libck.so") + glob.glob("/usr/lib/*/libck.a"))
SUITE = "build/host/tests/test_microbatch"
P2P_OBJ = "build/bench/obj/bench/p2p/main.o"


def copy_tracked(repo, dest):
    files = subprocess.run(["git", "-C", repo, "ls-files", "-z"], stdout=subprocess.PIPE, check=True).stdout
    shutil.rmtree(dest, ignore_errors=True)
    for rel in filter(None, files.decode().split("\0")):
        src = os.path.join(repo, rel)
        if not os.path.isfile(src):  # deleted in the working tree but still tracked
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, rel))


NOT_INSTALLED = None  # the file bound over them: set in main()


def hidden(argv):
    """argv run where the test packages' headers and libraries are unusable."""
    mounts = " && ".join("mount --bind %s %s" % (NOT_INSTALLED, h) for h in HIDDEN)
    return ["unshare", "-m", "sh", "-c", mounts + ' && exec "$@"', "sh"] + argv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    global NOT_INSTALLED
    c = Checks()
    os.makedirs(args.build, exist_ok=True)
    NOT_INSTALLED = os.path.join(os.path.abspath(args.build), "not-installed")
    with open(NOT_INSTALLED, "w") as f:
        f.write("this package is not installed\n")
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("git") or \
            not all(os.path.exists(h) for h in HIDDEN) or \
            subprocess.run(hidden(["true"]), stderr=subprocess.DEVNULL).returncode != 0:
        print("SKIPPED: the newcomer replay needs root (unshare -m, mount --bind), git, "
              "libcmocka-dev and libck-dev")
        return 77
    tree = os.path.join(os.path.abspath(args.build), "repo")
    copy_tracked(os.path.abspath(args.repo), tree)
    env = dict(os.environ)
    env.pop("CI", None)  # a newcomer's shell; PARTIAL unset
    env.pop("PARTIAL", None)
    scons = ["scons", "-Q"]

    # 1. before the install
    ok, out = c.run(hidden(scons + ["test"]), "before the install: scons test refuses to run", cwd=tree, env=env,
                    expect_ok=False)
    c.ok("libcmocka-dev" in out and "PARTIAL=1" in out, "... naming the package and PARTIAL=1",
         out[-1500:])
    c.ok("RUN " not in out, "... before running anything", out[-1500:])
    ok, out = c.run(hidden(scons + ["VERBOSE=1", P2P_OBJ]), "before the install: the p2p bench compiles", cwd=tree,
                    env=env)
    c.ok("-DHAVE_CK=0" in out, "... without its ck_ring peer (-DHAVE_CK=0)", out[-1500:])

    # 2. after the install (the headers visible again), same tree, same build folder
    ok, out = c.run(scons + [SUITE], "after the install: a host suite builds (no stale 'cmocka: no')", cwd=tree,
                    env=env)
    if ok:
        ok, out = c.run([os.path.join(tree, SUITE)], "... and passes", cwd=tree, env=env)
        c.ok("PASSED" in out, "... printing cmocka's summary", out[-800:])
    ok, out = c.run(scons + ["VERBOSE=1", P2P_OBJ], "after the install: the p2p bench is rebuilt", cwd=tree, env=env)
    c.ok("-DHAVE_CK=1" in out, "... with its ck_ring peer (-DHAVE_CK=1)", out[-1500:])
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
