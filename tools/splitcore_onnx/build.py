"""Host builds around an export: the library and runner implementation (tools/model/impl.c)
compiled once per set of sources and compiler into a cache, then each model's own small
translation unit (its tables and tools/model/host.c or plan.c) linked against it."""
import glob
import hashlib
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(ROOT, "tools", "model")
# No fused multiply-add: a host run and a bare-metal run of one f32 model give the same bits
# where the code is the same (libm's functions aside).
CFLAGS = ["-std=c99", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
INCLUDES = ["-I" + ROOT, "-I" + os.path.join(ROOT, "ports"), "-I" + os.path.join(ROOT, "include")]  # <splitcore/...>


class BuildError(Exception):
    pass


def cc():
    return os.environ.get("CC", "cc")


def default_cache():
    return os.environ.get("SPLITCORE_ONNX2C_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "splitcore-onnx2c")


def _run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode:
        raise BuildError("%s\n%s" % (" ".join(cmd), p.stdout[-4000:]))


def impl_object(cache=None):
    """tools/model/impl.c as an object, rebuilt when a header or the compiler changes."""
    cache = cache or default_cache()
    srcs = sorted(glob.glob(os.path.join(ROOT, "*.h")) + glob.glob(os.path.join(ROOT, "ports", "*.h")) +
                  [os.path.join(MODEL, "runner.h"), os.path.join(MODEL, "impl.c")])
    h = hashlib.sha1()
    ver = subprocess.run([cc(), "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    h.update((" ".join([cc()] + CFLAGS) + ver).encode())
    for s in srcs:
        with open(s, "rb") as f:
            h.update(s.encode() + f.read())
    obj = os.path.join(cache, "impl-%s.o" % h.hexdigest()[:16])
    if not os.path.exists(obj):
        os.makedirs(cache, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".o", dir=cache)
        os.close(fd)
        try:
            _run([cc()] + CFLAGS + ["-pthread"] + INCLUDES + ["-c", os.path.join(MODEL, "impl.c"), "-o", tmp])
            os.replace(tmp, obj)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return obj


def program(main_c, gen_dir, exe, cache=None, extra=()):
    """main_c (host.c or plan.c) with the model tables of gen_dir, linked to impl.o."""
    _run([cc()] + CFLAGS + ["-pthread"] + INCLUDES + ["-I" + gen_dir] + list(extra) +
         [os.path.join(MODEL, main_c), impl_object(cache), "-o", exe, "-lm", "-pthread"])
    return exe
