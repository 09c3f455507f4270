#!/usr/bin/python3
"""The exporter's checks: tools/onnx2c.py and tools/model/runner.h against PyTorch (f32) and
the numpy int8 reference (int8), on 1, 2 and 4 ranks in tensor and pipeline mode, and its
refusals of models it cannot take.

    check.py quick --work build/onnx_test      (scons test: seeded untrained models and ResNet-8
                                                trained on 60 batches, a few test images)
    check.py full --models build/models --work build/models/check   (scons models: the trained
                                                examples on the 10,000 test images, accuracy,
                                                the 2-rank speedup)

Each check prints one line, `ok ...` or `FAIL ...`; the exit status is the number of failures
(capped at 100). f32 is compared as max |c - torch| / max |torch| (the relative error of the
output tensor); int8 bit for bit."""
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "examples", "onnx_models"))
sys.path.insert(0, HERE)

from splitcore_onnx import build, ref  # noqa: E402

PY = sys.executable
ONNX2C = os.path.join(ROOT, "tools", "onnx2c.py")
CONFIGS = [(1, "tensor"), (2, "tensor"), (4, "tensor"), (2, "pipeline"), (4, "pipeline")]
F32_TOL = 1e-5
failures = []


def line(ok, msg):
    print("%s %s" % ("ok  " if ok else "FAIL", msg), flush=True)
    if not ok:
        failures.append(msg)
    return ok


def export(onnx, out, ranks, mode, batch, quant="none", calib=None, extra=(), cache=None):
    cmd = [PY, ONNX2C, onnx, "-o", out, "--ranks", str(ranks), "--parallel", mode, "--batch", str(batch),
           "--quant", quant] + (["--calib", calib] if calib else []) + (["--cache", cache] if cache else []) + list(
        extra)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def run(gen, x_npy, out_npy, cache, repeat=1):
    exe = os.path.join(gen, "model_host")
    if not os.path.exists(exe):
        build.program("host.c", gen, exe, cache)
    p = subprocess.run([exe, x_npy, out_npy, "--repeat", str(repeat)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode:
        raise RuntimeError("%s failed: %s" % (exe, p.stdout[-2000:]))
    return p.stdout


def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def torch_out(kind, pt, x):
    import torch
    if kind == "zoo":
        import zoo
        m = zoo.Zoo()
    else:
        import models
        m = models.MODELS[kind]()
    m.load_state_dict(torch.load(pt))
    m.eval()
    outs = []
    with torch.no_grad():
        for i in range(0, len(x), 500):
            outs.append(m(torch.from_numpy(x[i:i + 500])).numpy())
    return np.concatenate(outs)


def q8_ref(gen, x):
    import pickle
    with open(os.path.join(gen, "graph.pkl"), "rb") as f:
        q = pickle.load(f)
    outs = []
    for i in range(0, len(x), 256):
        o = ref.run_q8(q, ref.quantize(x[i:i + 256], q.in_scale))
        outs.append(o.astype(np.float32) * np.float32(q.out_scale))
    return np.concatenate(outs)


def matrix(kind, onnx, pt, x, calib, work, cache, batch, configs=CONFIGS, dtypes=("f32", "int8"), label="",
           extra=()):
    """Every config on x: f32 within F32_TOL of torch, int8 equal to numpy's int8 run and to
    each other bit for bit. Returns {(dtype, ranks, mode): out}."""
    t = torch_out(kind, pt, x)
    xp = os.path.join(work, "x_%s.npy" % len(x))
    np.save(xp, x)
    res, q8 = {}, None
    for dtype in dtypes:
        for ranks, mode in configs:
            tag = "%s%s %s %d rank%s %s" % (kind, label, dtype, ranks, "s" if ranks > 1 else "", mode)
            gen = os.path.join(work, "%s%s-%s-%d-%s" % (kind, label, dtype, ranks, mode))
            p = export(onnx, gen, ranks, mode, batch, "int8" if dtype == "int8" else "none", calib, extra=extra,
                       cache=cache)
            if not line(p.returncode == 0, "%s: export%s" % (tag, "" if not p.returncode else ": " + p.stderr[-800:])):
                continue
            o = os.path.join(gen, "out.npy")
            try:
                run(gen, xp, o, cache)
            except (RuntimeError, build.BuildError) as e:
                line(False, "%s: run: %s" % (tag, e))
                continue
            y = np.load(o)
            res[(dtype, ranks, mode)] = y
            if dtype == "f32":
                e = rel(y, t)
                line(e <= F32_TOL, "%s: equal to torch 1.13 within %.1e relative (%.2e) on %d samples" % (
                    tag, F32_TOL, e, len(x)))
            else:
                if q8 is None:
                    q8 = q8_ref(gen, x)
                same = np.array_equal(y, q8)
                line(same, "%s: bit-identical to the numpy int8 reference on %d samples%s" % (
                    tag, len(x), "" if same else " (%d values differ)" % int((y != q8).sum())))
    return res, t


def quick(work, cache):
    import models
    import zoo
    import torch
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    x, _ = models.load_fmnist("t10k")
    xt, _ = models.load_fmnist("train")
    x = x[:8]
    calib = os.path.join(work, "calib.npy")
    np.save(calib, xt[:64])
    for kind in ("resnet8", "encoder"):  # untrained, seeded, BatchNorm statistics randomized
        d = os.path.join(work, "m13")
        subprocess.run([PY, os.path.join(ROOT, "examples", "onnx_models", "train.py"), kind, "--untrained", "--out",
                        d], check=True, stdout=subprocess.DEVNULL)
        matrix(kind, os.path.join(d, kind + ".onnx"), os.path.join(d, kind + ".pt"), x, calib, work, cache, 4)
    cut_inside(work, "resnet8")
    # tensor mode splits these batches over the ranks (the cheaper estimate); --shard spatial
    # takes the other plan, the rows with halo exchanges, which a batch too small to split gets
    rep = open(os.path.join(work, "resnet8-f32-2-tensor", "report.txt")).read()
    line("9 conv batch (Shard(N))" in rep and "batch chosen" in rep,
         "resnet8 2 ranks tensor: the batch split over the ranks, every conv local (%s)" % [
             x.strip() for x in rep.splitlines() if "placements" in x or "shard:" in x])
    d = os.path.join(work, "m13")
    matrix("resnet8", os.path.join(d, "resnet8.onnx"), os.path.join(d, "resnet8.pt"), x, calib, work, cache, 4,
           configs=[(2, "tensor"), (4, "tensor")], label="-spatial", extra=["--shard", "spatial"])
    # ResNet-8 trained briefly here (60 batches of Fashion-MNIST): weights and folded BatchNorm
    # as training leaves them, on the test images
    d = os.path.join(work, "brief")
    subprocess.run([PY, os.path.join(ROOT, "examples", "onnx_models", "train.py"), "resnet8", "--steps", "60", "--out",
                    d], check=True, stdout=subprocess.DEVNULL)
    xb, yb = models.load_fmnist("t10k")
    res, t = matrix("resnet8", os.path.join(d, "resnet8.onnx"), os.path.join(d, "resnet8.pt"), xb[:64], calib, work,
                    cache, 8, dtypes=("f32",), label="-trained")
    line(all(np.array_equal(o.argmax(1), t.argmax(1)) for o in res.values()) and len(res) == len(CONFIGS),
         "resnet8-trained: the same 64 predictions as torch on every config (torch top-1 %.1f %%)" % (
             100 * float((t.argmax(1) == yb[:64]).mean())))
    d = os.path.join(work, "m17")  # opset 17: LayerNormalization as one op
    subprocess.run([PY, os.path.join(ROOT, "examples", "onnx_models", "train.py"), "encoder", "--untrained", "--opset",
                    "17", "--out", d], check=True, stdout=subprocess.DEVNULL)
    matrix("encoder", os.path.join(d, "encoder.onnx"), os.path.join(d, "encoder.pt"), x, calib, work, cache, 4,
           configs=[(1, "tensor"), (2, "tensor")], label="-opset17")
    zp = os.path.join(work, "zoo.onnx")
    m = zoo.make(zp)
    torch.save(m.state_dict(), os.path.join(work, "zoo.pt"))
    matrix("zoo", zp, os.path.join(work, "zoo.pt"), x, calib, work, cache, 4,
           configs=[(1, "tensor"), (2, "tensor"), (2, "pipeline")])
    input_skip(work, cache)
    refusals(work, os.path.join(work, "m13", "resnet8.onnx"), zp, cache)


def cut_inside(work, kind):
    """The pipeline exports of the matrix above cut inside a residual block: a tensor other
    than the chain crosses a stage (a skip connection), and the runs that matched torch and
    the int8 reference carried it."""
    for dtype in ("f32", "int8"):
        for ranks in (2, 4):
            gen = os.path.join(work, "%s-%s-%d-pipeline" % (kind, dtype, ranks))
            try:
                rep = json.load(open(os.path.join(gen, "report.json")))
            except (OSError, ValueError) as e:
                line(False, "%s %s %d ranks pipeline: report: %s" % (kind, dtype, ranks, e))
                continue
            sk = rep.get("skips", [])
            cuts = [s["end"] - 1 for s in rep["segments"][:-1]]
            line(len(sk) > 0 and rep["plan"].get("routes") == len(sk) and len(rep["segments"]) == ranks,
                 "%s %s %d ranks pipeline: cut inside a residual block (after nodes %s), %d skip connection(s) "
                 "between stages %s" % (kind, dtype, ranks, cuts, len(sk), [(x["src"], x["dst"]) for x in sk]))


def input_skip(work, cache):
    """A residual from the model's input: stage 0 stashes its own input for the stage that
    adds it (on 3 ranks past the middle one); the output equals torch's."""
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16), torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.c(torch.relu(self.b(torch.relu(self.a(x)))) + x)

    torch.manual_seed(24)
    m = M().eval()
    x = torch.randn(8, 16)
    d = os.path.join(work, "input_skip")
    os.makedirs(d, exist_ok=True)
    onnx_path, xp = os.path.join(d, "m.onnx"), os.path.join(d, "x.npy")
    torch.onnx.export(m, x[:4], onnx_path, opset_version=13)
    np.save(xp, x.numpy())
    with torch.no_grad():
        t = m(x).numpy()
    for ranks in (2, 3):
        gen = os.path.join(d, "p%d" % ranks)
        p = export(onnx_path, gen, ranks, "pipeline", 4, extra=["--microbatches", "1"], cache=cache)
        if not line(p.returncode == 0, "input skip %d ranks: export%s" % (ranks, "" if not p.returncode else
                                                                         ": " + p.stderr[-600:])):
            continue
        sk = json.load(open(os.path.join(gen, "report.json")))["skips"]
        try:
            run(gen, xp, os.path.join(gen, "out.npy"), cache)
            e = rel(np.load(os.path.join(gen, "out.npy")), t)
        except (RuntimeError, build.BuildError) as err:
            line(False, "input skip %d ranks: run: %s" % (ranks, err))
            continue
        line(e <= F32_TOL and [(x["src"], x["dst"]) for x in sk] == [(0, ranks - 1)],
             "input skip %d ranks: the model input stashed by stage 0 for stage %d (%s), equal to torch within "
             "%.1e relative (%.2e)" % (ranks, ranks - 1, [(x["tensor"], x["src"], x["dst"]) for x in sk], F32_TOL, e))


# ---- refusals ----------------------------------------------------------------------------------


def refusals(work, resnet, zoo_path, cache):
    import onnx
    from onnx import helper
    bad = os.path.join(work, "bad")
    os.makedirs(bad, exist_ok=True)
    out = os.path.join(bad, "out")
    os.makedirs(out, exist_ok=True)
    marker = os.path.join(out, "marker")
    with open(marker, "w") as f:
        f.write("an earlier export")

    def untouched():
        return sorted(os.listdir(out)) == ["marker"] and not [e for e in os.listdir(bad) if e.startswith(".onnx2c")]

    def refused(name, data, want=(), ranks=1):
        path = os.path.join(bad, name + ".onnx")
        with open(path, "wb") as f:
            f.write(data)
        p = export(path, out, ranks, "tensor", 1, cache=cache)
        msg = p.stderr.strip().splitlines()[0] if p.stderr.strip() else ""
        ok = p.returncode == 2 and msg.startswith("onnx2c: error:") and "Traceback" not in p.stderr and \
            all(w in p.stderr for w in want) and untouched()
        return line(ok, "refused %s: %s" % (name, msg[:300] if ok else "exit %d, %r" % (p.returncode, p.stderr[-500:])))

    m = onnx.load(resnet)
    raw = m.SerializeToString()
    refused("not-protobuf", b"this is not an ONNX file\n" * 4, ["does not parse"])
    refused("truncated", raw[:len(raw) // 3], ["onnx2c: error:"])
    m2 = onnx.load(resnet)
    node = [n for n in m2.graph.node if n.op_type == "Relu"][0]
    node.op_type = "Elu"
    refused("unknown-op", m2.SerializeToString(), [node.name, "Elu", "not supported", "supported:"])
    m2 = onnx.load(resnet)
    m2.graph.node[0].op_type = "NoSuchOp"
    refused("unregistered-op", m2.SerializeToString(), [m2.graph.node[0].name, "NoSuchOp"])
    m2 = onnx.load(resnet)
    m2.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"
    refused("dynamic-shape", m2.SerializeToString(), ["dynamic shape", "dim 2"])
    m2 = onnx.load(resnet)
    for init in m2.graph.initializer:
        if init.name == "fc.weight":
            w = onnx.numpy_helper.to_array(init)[:, :63].copy()
            init.CopyFrom(onnx.numpy_helper.from_array(w, "fc.weight"))
    gemm = [n for n in m2.graph.node if n.op_type == "Gemm"][0]
    refused("shape-mismatch", m2.SerializeToString(), [gemm.name, "Gemm", "shape mismatch"])
    m2 = onnx.load(resnet)
    m2.opset_import[0].version = 11
    refused("opset-11", m2.SerializeToString(), ["opset 11"])
    m2 = onnx.load(resnet)
    m2.graph.input.append(helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3]))
    refused("two-inputs", m2.SerializeToString(), ["2 inputs"])
    m2 = onnx.load(resnet)
    conv = [n for n in m2.graph.node if n.op_type == "Conv"][1]
    m2.graph.input.append(helper.make_tensor_value_info(conv.input[1], onnx.TensorProto.FLOAT, [16, 16, 3, 3]))
    m2.graph.initializer.remove([i for i in m2.graph.initializer if i.name == conv.input[1]][0])
    refused("weight-as-input", m2.SerializeToString(), ["2 inputs"])
    # plans over a per-core flash or RAM budget: refused with the plan that would fit (the
    # search plans every rank count 1-8 in both modes), nothing written; flash counts the
    # code every core runs (measured for the target), so the budget is that plus 50,000 B
    code = build.code_bytes("host", cache)
    for what, budget, ranks in (("--flash", code + 50000, 4), ("--ram", 100000, 1)):
        p = export(resnet, out, ranks, "tensor", 1, extra=[what, str(budget)], cache=cache)
        fit = [x for x in p.stderr.splitlines() if x.startswith("would fit")]
        ok = p.returncode == 2 and "does not fit the budget" in p.stderr and "would fit: --parallel" in p.stderr and \
            "Traceback" not in p.stderr and untouched()
        line(ok, "refused over budget (%s %d on %d rank%s, code %d B): %s" % (
            what, budget, ranks, "s" if ranks > 1 else "", code, fit if ok else p.stderr[-600:]))
        if not ok or not fit:
            continue
        # the plan it names fits: exported with that budget, its report within it
        arg = fit[0].split("would fit: ")[1].split(" (")[0].split()
        mode, nr = arg[1], int(arg[3])
        dst = os.path.join(bad, "fits")
        p = export(resnet, dst, nr, mode, 1, extra=[what, str(budget)], cache=cache)
        ok = p.returncode == 0
        if ok:
            rep = json.load(open(os.path.join(dst, "report.json")))
            key = "flash" if what == "--flash" else "ram"
            worst = max(c[key] for c in rep["cores"])
            ok = worst <= budget
        line(ok, "the suggested plan (%s, %d ranks) exports within %s %d%s" % (
            mode, nr, what, budget, " (worst core %d B)" % worst if ok else ": " + p.stderr[-400:]))
        import shutil
        shutil.rmtree(dst, ignore_errors=True)
    # fuzzed protobufs: bytes of the node section of a small model flipped (seeded); each is
    # refused with a clear error and nothing written, or (where the flip is harmless) exported
    zraw = open(zoo_path, "rb").read()
    rng = np.random.default_rng(24)
    ok = n_refused = 0
    for i in range(30):
        data = bytearray(zraw)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, min(len(data), 2500)))] = int(rng.integers(0, 256))
        path = os.path.join(bad, "fuzz.onnx")
        with open(path, "wb") as f:
            f.write(bytes(data))
        dst = os.path.join(bad, "fuzz_out")
        p = export(path, dst, 1, "tensor", 1, cache=cache)
        if p.returncode == 0:
            ok += 1
        elif p.returncode == 2 and p.stderr.startswith("onnx2c: error:") and "Traceback" not in p.stderr and \
                not os.path.exists(dst) and not [e for e in os.listdir(bad) if e.startswith(".onnx2c")]:
            n_refused += 1
        else:
            line(False, "fuzzed model %d: exit %d: %r" % (i, p.returncode, p.stderr[-600:]))
        if os.path.isdir(dst):
            import shutil
            shutil.rmtree(dst)
    line(ok + n_refused == 30, "30 fuzzed protobufs: %d refused with an error and nothing written, %d exported" % (
        n_refused, ok))


# ---- full (scons models) -----------------------------------------------------------------------


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def top1(y, labels):
    return float((y.argmax(1) == labels).mean())


def speedup(kind, onnx, x, work, cache, dtype, calib):
    """1 and 2 ranks, tensor mode, batch 32, run alternately; median throughputs."""
    xp = os.path.join(work, "x_bench.npy")
    np.save(xp, x)
    gens = {}
    for ranks in (1, 2):
        gen = os.path.join(work, "bench-%s-%s-%d" % (kind, dtype, ranks))
        p = export(onnx, gen, ranks, "tensor", 32, "int8" if dtype == "int8" else "none", calib, cache=cache)
        if not line(p.returncode == 0, "bench export %s %d ranks" % (kind, ranks)):
            return None
        gens[ranks] = gen
    rows = {1: [], 2: []}
    cpu = {1: [], 2: []}
    loads = [loadavg()]
    for rnd in range(5):
        for ranks in (1, 2) if rnd % 2 == 0 else (2, 1):
            out = run(gens[ranks], xp, os.path.join(gens[ranks], "out.npy"), cache)
            sps = float(out.split(" samples/s")[0].split(":")[-1].strip())
            rows[ranks].append(sps)
            cpu[ranks].append([float(l.split("thread CPU ")[1].split(" ms")[0]) for l in out.splitlines()
                               if "thread CPU" in l])
        loads.append(loadavg())
    med = {r: float(np.median(v)) for r, v in rows.items()}
    return dict(model=kind, dtype=dtype, samples=len(x), batch=32, rounds=5, samples_per_s=rows, median=med,
                speedup=med[2] / med[1], thread_cpu_ms=cpu, loadavg=loads,
                cpu_speedup=float(np.median([c[0] for c in cpu[1]]) / np.median([max(c) for c in cpu[2]])))


def full(models_dir, work, cache):
    os.makedirs(work, exist_ok=True)
    x = np.load(os.path.join(models_dir, "test_x.npy"))
    y = np.load(os.path.join(models_dir, "test_y.npy"))
    calib = os.path.join(models_dir, "calib.npy")
    report = {"models": {}, "bench": []}
    for kind in ("resnet8", "encoder"):
        onnx = os.path.join(models_dir, kind + ".onnx")
        pt = os.path.join(models_dir, kind + ".pt")
        info = json.load(open(os.path.join(models_dir, kind + ".json")))
        t0 = time.time()
        one, t = matrix(kind, onnx, pt, x, calib, work, cache, 32, configs=[(1, "tensor")])
        sub = x[:512]
        res, _ = matrix(kind, onnx, pt, sub, calib, work, cache, 32, configs=CONFIGS[1:])
        for (dtype, ranks, mode), out in res.items():
            if dtype == "int8" and ("int8", 1, "tensor") in one:
                line(np.array_equal(out, one[("int8", 1, "tensor")][:512]),
                     "%s int8 %d ranks %s: the same bits as 1 rank on %d samples" % (kind, ranks, mode, len(sub)))
        acc = dict(torch_f32=top1(t, y))
        if ("f32", 1, "tensor") in one:
            acc["c_f32"] = top1(one[("f32", 1, "tensor")], y)
        if ("int8", 1, "tensor") in one:
            acc["c_int8"] = top1(one[("int8", 1, "tensor")], y)
            line(abs(acc["c_int8"] - acc["torch_f32"]) <= 0.005,
                 "%s: int8 top-1 %.2f %% within 0.5 point of f32's %.2f %% on the 10,000 test images" % (
                     kind, 100 * acc["c_int8"], 100 * acc["torch_f32"]))
        report["models"][kind] = dict(accuracy=acc, trained=info, seconds=time.time() - t0)
        print("%s: top-1 torch f32 %.2f %%, runner f32 %.2f %%, runner int8 %.2f %%" % (
            kind, 100 * acc["torch_f32"], 100 * acc.get("c_f32", 0), 100 * acc.get("c_int8", 0)), flush=True)
    for dtype in ("f32", "int8"):
        b = speedup("resnet8", os.path.join(models_dir, "resnet8.onnx"), x[:1024], work, cache, dtype, calib)
        if b:
            report["bench"].append(b)
            print("resnet8 %s batch 32, tensor mode: 2 ranks %.2fx the 1-rank throughput (median of 5 interleaved "
                  "runs: %.1f vs %.1f samples/s; thread CPU per pass %.2fx; load average %s)" % (
                      dtype, b["speedup"], b["median"][2], b["median"][1], b["cpu_speedup"],
                      " ".join("%.1f" % v for v in b["loadavg"])), flush=True)
    with open(os.path.join(work, "report.json"), "w") as f:
        json.dump(report, f, indent=1)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "quick"
    args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    cache = args.get("--cache") or build.default_cache()
    if mode == "quick":
        quick(args.get("--work", os.path.join(ROOT, "build", "onnx_test")), cache)
    else:
        full(args.get("--models", os.path.join(ROOT, "build", "models")),
             args.get("--work", os.path.join(ROOT, "build", "models", "check")), cache)
    print("onnx checks: %d failed" % len(failures))
    return min(len(failures), 100)


if __name__ == "__main__":
    sys.exit(main())
