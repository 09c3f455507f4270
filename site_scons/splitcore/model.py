"""Bring your own model: `scons model`, `scons models` and the exporter's checks in `scons test`
(tools/onnx2c.py, tools/model/, tests/onnx/, examples/onnx_models/).

  scons model ONNX=<file> INPUT=<.npy> [RANKS=<n>] [PARALLEL=pipeline|tensor|auto] [QUANT=int8]
              [CALIB=<.npy>] [BATCH=<b>] [MICROBATCHES=<m>] [RAM=<bytes>] [FLASH=<bytes>]
              [TARGET=host|rv64imac|sse200]
      exports the model (build/model/gen/, with report.txt), builds the runner for the target
      (host threads: pg_pthread; rv64imac: RANKS bare-metal harts of QEMU virt over pg_shm;
      sse200: both Cortex-M33 cores of the SSE-200, QEMU mps2-an521, over pg_shm, RANKS 1 or 2),
      runs INPUT through it and writes build/model/out.npy.
  scons models
      trains the two worked examples with Debian's torch on Debian's Fashion-MNIST (cached in
      build/models/ until their scripts change), then tests/onnx/check.py full (1, 2 and 4
      ranks, pipeline and tensor, f32 against torch, int8 against numpy bit for bit, top-1 on
      the 10,000 test images, the 2-rank speedup) and ResNet-8 on 4 RISC-V harts against the
      host's run of the same export.
  scons test
      tests/onnx/check.py quick (seeded untrained models, ResNet-8 trained on 60 batches, the
      operator zoo, refusals of broken models), two 4-hart RISC-V runs and a 2-core Cortex-M33
      run (a pipeline cut inside a residual block) against the host's."""
import glob
import os
import subprocess

from SCons.Script import Action, Alias, AlwaysBuild, Exit, Value

from . import runners

PY = "/usr/bin/python3"
CACHE = "build/onnx2c-cache"
RISCV_BOARD = "tests/target/riscv_smp"
# Debian's picolibc-riscv64-unknown-elf: its libc.a holds libm's functions (dtensor_ops.h's
# kernels call expf, erff, tanhf, logf, sqrtf), linked after the firmware's own C library
PICOLIBC = "/usr/lib/picolibc/riscv64-unknown-elf/lib"
FIRMWARE_DIR = "tools/model/riscv_smp"
M33_BOARD = "tests/target/sse200_smp"
M33_DIR = "tools/model/sse200_smp"
# RISC-V runs of `scons models`: ResNet-8 on 4 harts, each against the host's run of the export.
MODELS_RISCV = [("resnet8", "int8", "tensor", 100), ("resnet8", "int8", "pipeline", 100),
                ("resnet8", "f32", "tensor", 32)]
# ... and of `scons test` (untrained models, a few images)
TEST_RISCV = [("resnet8", "int8", "tensor", 4), ("encoder", "f32", "pipeline", 4)]
# ... and on the SSE-200's two Cortex-M33 cores: a 2-stage pipeline cut inside a residual block
TEST_M33 = [("resnet8", "f32", "pipeline", 4)]
EPOCHS = {"resnet8": 2, "encoder": 6}
# Training and the full check on 2 shared cores take long: their own bounds (SPLITCORE_RUN_TIMEOUT
# bounds the other runs)
TRAIN_TIMEOUT_S = int(os.environ.get("SPLITCORE_TRAIN_TIMEOUT", "14400"))
CHECK_TIMEOUT_S = int(os.environ.get("SPLITCORE_TRAIN_TIMEOUT", "14400"))


def _sources():
    return sorted(["tools/onnx2c.py"] + glob.glob("tools/splitcore_onnx/*.py") + glob.glob("tools/model/*.[ch]") +
                  glob.glob("*.h") + glob.glob("ports/*.h"))


def python_ok(modules):
    """/usr/bin/python3 imports these (Debian's python3-onnx, -numpy, -torch)?"""
    return os.path.exists(PY) and subprocess.run([PY, "-c", "import " + ", ".join(modules)],
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def _export_cmd(onnx, gen, ranks, mode, batch, quant, calib, extra=()):
    cmd = [PY, "tools/onnx2c.py", onnx, "-o", gen, "--ranks", str(ranks), "--parallel", mode, "--batch", str(batch),
           "--cache", CACHE]
    if quant == "int8":
        cmd += ["--quant", "int8", "--calib", calib]
    return cmd + list(extra)


def _logged(label, command, log, timeout_s=None):
    """An SCons action running command, its output printed and kept in log."""
    def action(target, source, env):
        return 0 if runners.run_and_log(label, command, log, timeout_s or runners.DEFAULT_TIMEOUT_S) == 0 else 1
    action.__name__ = "run"
    return action


class Model:
    def __init__(self, sc):
        self.sc = sc
        self.env = sc["host_env"]

    def export(self, alias, onnx, gen, ranks, mode, batch, quant, calib, deps=(), extra=()):
        cmd = _export_cmd(onnx, gen, ranks, mode, batch, quant, calib, extra)
        outs = [gen + "/" + f for f in ("model.h", "model_weights.h", "model_plan.h", "report.txt")]
        step = self.env.Command(outs, [onnx] + ([calib] if quant == "int8" else []) + _sources() + list(deps) +
                                [Value(" ".join(cmd))],
                                Action(_logged("%s export %s" % (alias, gen), cmd, gen + ".log"), "EXPORT %s" % gen))
        # a refused export writes nothing: SCons must not delete the previous export's files first
        self.env.Precious(step)
        return step

    def host(self, gen, exports, out):
        """The host runner of gen's tables (tools/model/host.c + impl.c), at out."""
        env = self.env.Clone()
        env.Append(CCFLAGS=["-O2", "-ffp-contract=off", "-pthread", "-Wall", "-Wextra", "-Wpedantic", "-Werror"],
                   LINKFLAGS=["-pthread"], LIBS=["pthread"])
        impl = self.sc.get("_impl")
        if impl is None:
            impl = self.sc["_impl"] = env.Object("build/model/obj/impl", "tools/model/impl.c")
        e2 = env.Clone()
        e2.Append(CPPPATH=["#" + gen])
        obj = e2.Object(out + ".o", "tools/model/host.c")
        e2.Depends(obj, exports)
        return e2.Program(out, [obj, impl])

    def _input(self, gen, exports, npy, limit, inc):
        """model_input.h: the samples of npy (at most limit) for gen's firmware."""
        return self.env.Command(inc + "/model_input.h", [npy] + exports, Action(
            lambda target, source, env: subprocess.run(
                [PY, "tools/model/fwio.py", "input", str(source[0]), gen + "/model.h", str(target[0]), "--limit",
                 str(limit)]).returncode, "INPUT  $TARGET"))

    def m33(self, gen, exports, npy, limit, out):
        """Firmware of gen's tables (1 or 2 ranks) for both Cortex-M33 cores of the SSE-200,
        with the board of tests/target/sse200_smp and newlib."""
        t = self.sc["TARGETS"]["sse200"]
        inc = out + "_in"
        hdr = self._input(gen, exports, npy, limit, inc)
        env = self.sc["firmware_env"](dict(folder=M33_BOARD), t)
        env.Append(CPPPATH=["#" + gen, "#" + inc])
        return _image(env, M33_DIR, M33_BOARD, exports + hdr, out)

    def riscv(self, gen, exports, npy, limit, out):
        """Firmware of gen's tables for RANKS harts with the samples of npy (model_input.h)."""
        sc = self.sc
        t = sc["TARGETS"]["rv64imac"]
        inc = out + "_in"
        hdr = self._input(gen, exports, npy, limit, inc)
        env = sc["firmware_env"](dict(folder=RISCV_BOARD), t)
        multi = subprocess.run([t.cc] + t.arch + ["-print-multi-directory"], stdout=subprocess.PIPE,
                               universal_newlines=True).stdout.strip()
        libc = os.path.join(PICOLIBC, multi, "libc.a")
        env.Append(CPPPATH=["#" + gen, "#" + inc], CCFLAGS=["-isystem", FIRMWARE_DIR + "/libc", "-ffunction-sections",
                                                            "-fdata-sections"],
                   LINKFLAGS=["-Wl,--gc-sections"])
        env.Replace(LIBS=[File_(libc), "gcc"])  # libm's functions live in picolibc's libc.a
        return _image(env, FIRMWARE_DIR, RISCV_BOARD, exports + hdr, out)

    def qemu(self, alias, label, img, ranks, target="rv64imac"):
        """The firmware under QEMU: -smp ranks harts of virt, or (sse200) both cores of
        mps2-an521 whatever the ranks (a 1-rank export leaves CPU1 idle)."""
        t = self.sc["TARGETS"][target]
        smp = 2 if target == "sse200" else ranks
        return self.sc["run"](self.env, alias, label, img,
                              lambda source, t=t, r=smp: t.qemu + ["-smp", str(r), "-kernel", str(source[0])])

    def compare(self, alias, host_npy, fw_log, gen, exact, out):
        """The firmware's outputs against the host's: identical predictions, and the outputs
        bit for bit (exact: int8, or f32 without libm's functions) or within 1e-5 relative."""
        cmd = [PY, "tools/model/fwio.py", "compare", host_npy, str(fw_log), gen + "/model.h"] + (
            ["--exact"] if exact else [])
        same = self.env.Command(out, [host_npy, fw_log], Action(_logged("host vs bare metal: " + gen, cmd, out),
                                                                "CHECK  host vs bare-metal outputs"))
        AlwaysBuild(same)
        Alias(alias, same)
        return same

    def host_run(self, alias, label, exe, npy, out_npy, extra=()):
        log = str(exe[0]) + ".run.log"
        cmd = [exe[0].abspath, os.path.abspath(npy), os.path.abspath(out_npy)] + list(extra)
        step = self.env.Command([log, out_npy], [exe, npy], Action(_logged(label, cmd, log), "RUN    %s" % label))
        AlwaysBuild(step)
        Alias(alias, step)
        return step


def _image(env, main_dir, board, deps, out):
    """main_dir/main.c with the board's start-up (its other sources) and link.ld, at out."""
    srcs = [main_dir + "/main.c"] + sorted(glob.glob(board + "/*.S")) + sorted(
        x for x in glob.glob(board + "/*.c") if not x.endswith("/main.c"))
    objs = [env.Object("%s/obj/%s" % (out, os.path.splitext(x)[0]), x) for x in srcs]
    env.Depends(objs, deps)
    img = env.Program(out, objs)
    env.Depends(img, board + "/link.ld")
    return img


def File_(path):
    from SCons.Script import File
    return File(path)


def declare(sc):
    requested, tools, args = sc["requested"], sc["tools"], sc["ARGUMENTS"]
    m = Model(sc)
    env = m.env
    if "model" in requested:
        _model_alias(sc, m, args)
    if any(str(t).startswith("build/models/") for t in requested) and "models" not in requested:
        for n in ("resnet8", "encoder"):  # one step of `scons models` by its path (the training)
            _train(env, "build/models", n, False)
        _data(env, "build/models")
    if requested & {"models", "test", "onnx"}:
        alias = "test" if "test" in requested else "models" if "models" in requested else "onnx"
        ok = tools.have("python3-onnx", "the ONNX exporter's checks (tests/onnx)", alias,
                        found=python_ok(["onnx", "numpy", "torch"]))
        if not ok:
            return
        if requested & {"test", "onnx"}:
            log = "build/onnx_test/check.log"
            cmd = [PY, "tests/onnx/check.py", "quick", "--work", "build/onnx_test", "--cache", CACHE]
            step = env.Command(log, _sources() + glob.glob("tests/onnx/*.py") + glob.glob("examples/onnx_models/*.py"),
                               Action(_logged("onnx exporter checks (tests/onnx/check.py quick)", cmd, log),
                                      "RUN    tests/onnx/check.py quick"))
            AlwaysBuild(step)
            Alias(["test", "onnx"], step)
            _fw_checks(sc, m, ["test", "onnx"], "build/onnx_test/fw", TEST_RISCV, untrained=True)
            _fw_checks(sc, m, ["test", "onnx"], "build/onnx_test/fw", TEST_M33, untrained=True, board="m33")
        if "models" in requested:
            _models_alias(sc, m)


_declared = {}


def _once(key, make):
    """A step declared once however many checks need it."""
    if key not in _declared:
        _declared[key] = make()
    return _declared[key]


def _train(env, out, name, untrained):
    return _once(("train", out, name, untrained), lambda: _train_step(env, out, name, untrained))


def _train_step(env, out, name, untrained):
    files = [out + "/" + name + ext for ext in (".onnx", ".pt", ".json")]
    cmd = [PY, "examples/onnx_models/train.py", name, "--out", out] + (
        ["--untrained"] if untrained else ["--epochs", str(EPOCHS[name])])
    return env.Command(files, ["examples/onnx_models/train.py", "examples/onnx_models/models.py"],
                       Action(_logged("train %s%s" % (name, " (untrained)" if untrained else ""), cmd,
                                      out + "/" + name + ".train.log", None if untrained else TRAIN_TIMEOUT_S),
                              "TRAIN  %s" % files[0]))


def _data(env, out):
    return _once(("data", out), lambda: _data_step(env, out))


def _data_step(env, out):
    files = [out + "/" + f for f in ("test_x.npy", "test_y.npy", "calib.npy")]
    cmd = [PY, "examples/onnx_models/train.py", "data", "--out", out]
    return env.Command(files, ["examples/onnx_models/train.py", "examples/onnx_models/models.py"],
                       Action(_logged("Fashion-MNIST as .npy", cmd, out + "/data.log"), "DATA   %s" % out))


# The boards the exports' firmware checks run on: (SCons target, ranks, label, out folder)
FW_BOARDS = {"rv64imac": ("rv64imac", 4, "4 RISC-V harts (QEMU virt, bare metal)", "-4"),
             "m33": ("sse200", 2, "2 Cortex-M33 cores (QEMU mps2-an521, bare metal)", "-2-m33")}


def _fw_checks(sc, m, aliases, root, cases, untrained, board="rv64imac"):
    """Each case exported for the board's ranks, run on the host and on the board's cores:
    the same predictions and output bits (compared by tools/model/fwio.py)."""
    tools = sc["tools"]
    target, ranks, where, suffix = FW_BOARDS[board]
    t = sc["TARGETS"][target]
    what = "the exported models on " + where
    if not (tools.have(t.cc, what, aliases[0]) and tools.have(t.qemu[0], what, aliases[0])):
        return
    env = m.env
    data = _data(env, root + "/data")
    for name, dtype, mode, n in cases:
        model = _train(env, root + "/models", name, untrained) if untrained else None
        onnx = (root + "/models/" if untrained else "build/models/") + name + ".onnx"
        calib = (root + "/data/" if untrained else "build/models/") + "calib.npy"
        tag = "%s-%s-%s%s" % (name, dtype, mode, suffix)
        gen = "%s/%s/gen" % (root, tag)
        # tensor mode over rows, the halo exchanges between cores: what a batch of one gets
        exp = m.export(aliases[0], onnx, gen, ranks, mode, 4, dtype, calib, deps=(model or []) + data,
                       extra=["--target", "cortex-m33" if board == "m33" else "rv64imac"] +
                       (["--shard", "spatial"] if mode == "tensor" else []))
        xin = root + "/" + tag + "/x.npy"
        sub = env.Command(xin, data[0], Action(lambda target, source, env, n=n: subprocess.run(
            [PY, "-c", "import numpy as np, sys; np.save(sys.argv[2], np.load(sys.argv[1])[:%d])" % n,
             str(source[0]), str(target[0])]).returncode, "SLICE  $TARGET"))
        exe = m.host(gen, exp, "%s/%s/model_host" % (root, tag))
        hrun = m.host_run(aliases[0], "%s on host threads" % tag, exe, xin, "%s/%s/out.npy" % (root, tag))
        build = m.m33 if board == "m33" else m.riscv
        img = build(gen, exp, xin, n, "build/%s/firmware/%s/%s" % (target, os.path.basename(root), tag))
        env.Depends(img, sub)
        frun = m.qemu(aliases[0], "%s on %s" % (tag, where), img, ranks, target)
        cmp_ = m.compare(aliases[0], "%s/%s/out.npy" % (root, tag), frun[0], gen, dtype == "int8" or name == "resnet8",
                         "%s/%s/compare.txt" % (root, tag))
        env.Depends(cmp_, hrun)
        for a in aliases[1:]:
            Alias(a, [hrun, frun, cmp_])


def _models_alias(sc, m):
    env = m.env
    out = "build/models"
    trained = [_train(env, out, n, False) for n in ("resnet8", "encoder")]
    data = _data(env, out)
    log = out + "/check/check.log"
    cmd = [PY, "tests/onnx/check.py", "full", "--models", out, "--work", out + "/check", "--cache", CACHE]
    step = env.Command(log, _sources() + glob.glob("tests/onnx/*.py") + [t[0] for t in trained] + data,
                       Action(_logged("the worked examples (tests/onnx/check.py full)", cmd, log, CHECK_TIMEOUT_S),
                              "RUN    tests/onnx/check.py full"))
    AlwaysBuild(step)
    Alias("models", step)
    env.Depends(step, trained)
    _fw_checks(sc, m, ["models"], out + "/riscv", MODELS_RISCV, untrained=False)


def _model_alias(sc, m, args):
    tools = sc["tools"]
    onnx, npy = args.get("ONNX"), args.get("INPUT")
    if not onnx or not npy:
        print("ERROR: scons model needs ONNX=<model.onnx> INPUT=<samples.npy> "
              "[RANKS=n] [PARALLEL=pipeline|tensor|auto] [QUANT=int8 CALIB=<.npy>] [BATCH=b] [TARGET=host|rv64imac|sse200]")
        Exit(2)
    for f in (onnx, npy):
        if not os.path.exists(f):
            print("ERROR: %s does not exist" % f)
            Exit(2)
    if not tools.have("python3-onnx", "scons model", "model", found=python_ok(["onnx", "numpy"])):
        return
    ranks = int(args.get("RANKS", "1"))
    mode = args.get("PARALLEL", "auto")
    quant = args.get("QUANT", "none")
    target = args.get("TARGET", "host")
    batch = int(args.get("BATCH", "8"))
    calib = args.get("CALIB", npy)
    extra = []
    for k, opt in (("MICROBATCHES", "--microbatches"), ("RAM", "--ram"), ("FLASH", "--flash")):
        if args.get(k):
            extra += [opt, args[k]]
    if target not in ("host", "rv64imac", "sse200"):
        print("ERROR: scons model TARGET=%s: the runner's boards are host (pg_pthread threads), rv64imac (the "
              "bare-metal harts of QEMU virt) and sse200 (both Cortex-M33 cores of the SSE-200, QEMU "
              "mps2-an521)" % target)
        Exit(2)
    if target == "sse200" and ranks > 2:
        print("ERROR: scons model TARGET=sse200: the SSE-200 has 2 cores (RANKS=1 or 2)")
        Exit(2)
    gen = "build/model/gen"
    exp = m.export("model", onnx, gen, ranks, mode, batch, quant, calib,
                   extra=extra + ["--target", "cortex-m33" if target == "sse200" else target, "--name",
                                  os.path.splitext(os.path.basename(onnx))[0]])
    Alias("model", exp)
    if target == "host":
        exe = m.host(gen, exp, "build/model/model_host")
        m.host_run("model", "model on %d host thread%s" % (ranks, "s" if ranks > 1 else ""), exe, npy,
                   "build/model/out.npy")
        return
    t = sc["TARGETS"][target]
    if not (tools.have(t.cc, "scons model TARGET=" + target, "model") and
            tools.have(t.qemu[0], "scons model TARGET=" + target, "model")):
        return
    if target == "sse200":
        img = m.m33(gen, exp, npy, 1 << 30, "build/sse200/firmware/model/model")
        frun = m.qemu("model", "model on %d Cortex-M33 core%s (QEMU mps2-an521)" % (ranks, "s" if ranks > 1 else ""),
                      img, ranks, "sse200")
    else:
        img = m.riscv(gen, exp, npy, 1 << 30, "build/rv64imac/firmware/model/model")
        frun = m.qemu("model", "model on %d RISC-V hart%s (QEMU virt)" % (ranks, "s" if ranks > 1 else ""), img,
                      ranks)
    out = m.env.Command("build/model/out.npy", frun, Action(lambda target, source, env: subprocess.run(
        [PY, "tools/model/fwio.py", "output", str(source[0]), gen + "/model.h", str(target[0])]).returncode,
        "OUTPUT $TARGET"))
    AlwaysBuild(out)
    Alias("model", out)
