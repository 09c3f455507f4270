"""Host builds around an export: the library and runner implementation (tools/model/impl.c)
compiled once per set of sources and compiler into a cache, then each model's own small
translation unit (its tables and tools/model/host.c or plan.c) linked against it."""
import glob
import hashlib
import json
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


def _sources_hash(compiler, flags, main_c):
    srcs = sorted(glob.glob(os.path.join(ROOT, "*.h")) + glob.glob(os.path.join(ROOT, "ports", "*.h")) +
                  [os.path.join(MODEL, "runner.h"), os.path.join(MODEL, main_c)])
    h = hashlib.sha1()
    ver = subprocess.run([compiler, "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    h.update((" ".join([compiler] + flags) + ver).encode())
    for s in srcs:
        with open(s, "rb") as f:
            h.update(s.encode() + f.read())
    return h.hexdigest()[:16]


def impl_object(cache=None):
    """tools/model/impl.c as an object, rebuilt when a header or the compiler changes."""
    cache = cache or default_cache()
    obj = os.path.join(cache, "impl-%s.o" % _sources_hash(cc(), CFLAGS, "impl.c"))
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


def tool(main_c, cache=None):
    """A model-independent helper (tools/model/<main_c>) linked to impl.o, kept in the cache."""
    obj = impl_object(cache)
    with open(os.path.join(MODEL, main_c), "rb") as f:
        tag = hashlib.sha1(f.read() + obj.encode()).hexdigest()[:16]
    exe = os.path.join(os.path.dirname(obj), "%s-%s" % (os.path.splitext(main_c)[0], tag))
    if not os.path.exists(exe):
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(obj))
        os.close(fd)
        try:
            _run([cc()] + CFLAGS + ["-pthread"] + INCLUDES + [os.path.join(MODEL, main_c), obj, "-o", tmp, "-lm",
                                                              "-pthread"])
            os.chmod(tmp, 0o755)
            os.replace(tmp, exe)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return exe


# The compilers and size tools of the targets whose code tools/model/code_probe.c measures.
PROBE = {
    "host": (None, ["-no-pie"], "size"),
    "rv64imac": ("riscv64-unknown-elf-gcc", ["--specs=picolibc.specs", "-march=rv64imac", "-mabi=lp64",
                                             "-mcmodel=medany"], "riscv64-unknown-elf-size"),
    "cortex-m33": ("arm-none-eabi-gcc", ["-mcpu=cortex-m33+nodsp", "-mfloat-abi=soft", "-mthumb"],
                   "arm-none-eabi-size"),
}
PROBE_FLAGS = ["-std=c99", "-Os", "-ffunction-sections", "-fdata-sections", "-nostdlib", "-nostartfiles", "-static",
               "-Wl,--gc-sections", "-Wl,-e,mr_code_probe", "-Wl,--unresolved-symbols=ignore-all"]


def code_bytes(target, cache=None):
    """Flash bytes of the code every core runs (the runner and the library code it calls:
    text + data of tools/model/code_probe.c linked for `target` with -Os and unused sections
    dropped; the port and the C library not counted), measured once per sources and compiler."""
    return target_sizes(target, cache)["code"]


def target_sizes(target, cache=None):
    """{code: as code_bytes, state: sizeof(mr_rank), node: sizeof(mr_node), tensor:
    sizeof(mr_tensor)} on `target`, from tools/model/code_probe.c linked for it."""
    cache = cache or default_cache()
    compiler, flags, size = PROBE[target]
    compiler = compiler or cc()
    key = _sources_hash(compiler, PROBE_FLAGS + flags, "code_probe.c")
    memo = os.path.join(cache, "code-%s-%s.json" % (target, key))
    if os.path.exists(memo):
        with open(memo) as f:
            return json.load(f)
    os.makedirs(cache, exist_ok=True)
    fd, elf = tempfile.mkstemp(dir=cache)
    os.close(fd)
    try:
        _run([compiler] + flags + PROBE_FLAGS + INCLUDES + [os.path.join(MODEL, "code_probe.c"), "-o", elf])
        p = subprocess.run([size, elf], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if p.returncode:
            raise BuildError("%s %s: %s" % (size, elf, p.stdout))
        text, data = [int(v) for v in p.stdout.splitlines()[1].split()[:2]]
        res = dict(code=text + data)
        p = subprocess.run([size.replace("size", "nm"), "-S", elf], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        for ln in p.stdout.splitlines():
            f = ln.split()
            for key, sym in (("state", "mr_probe_rank"), ("node", "mr_probe_node"), ("tensor", "mr_probe_tensor")):
                if len(f) == 4 and f[3].split(".")[0] == sym:
                    res[key] = int(f[1], 16)
        if len(res) != 4:
            raise BuildError("nm -S %s: the probe's sizes are missing: %s" % (elf, p.stdout[-500:]))
    except OSError as e:
        raise BuildError("%s: %s" % (compiler, e))
    finally:
        os.remove(elf)
    with open(memo + ".tmp", "w") as f:
        json.dump(res, f)
    os.replace(memo + ".tmp", memo)
    return res
