#!/usr/bin/python3
"""The bare-metal runs' input and output (`scons model TARGET=...`, `scons models`):

    fwio.py input IN.npy GEN/model.h OUT/model_input.h [--limit N]
        the samples as a C array (float32, padded with zeros to whole steps)
    fwio.py output RUN.log GEN/model.h OUT.npy
        the firmware's `out <i>: <hex words>` lines back into a float32 .npy
    fwio.py compare HOST_OUT.npy RUN.log GEN/model.h [--exact]
        the firmware's outputs against the host run's (exit status 1 when they differ)"""
import re
import sys

import numpy as np


def defines(model_h):
    d = {}
    with open(model_h) as f:
        for line in f:
            m = re.match(r"#define (MODEL_\w+) (-?\d+)$", line.strip())
            if m:
                d[m.group(1)] = int(m.group(2))
            m = re.match(r"#define (MODEL_(IN|OUT)_SHAPE) \{(.*)\}$", line.strip())
            if m:
                d[m.group(1)] = [int(v) for v in m.group(3).split(",") if v.strip()]
    return d


def write_input(npy, model_h, out, limit=None):
    d = defines(model_h)
    x = np.load(npy).astype(np.float32)
    if limit:
        x = x[:limit]
    if int(np.prod(x.shape[1:])) != d["MODEL_IN_NUMEL"]:
        sys.exit("%s: %s per sample, the model takes %s" % (npy, list(x.shape[1:]), d["MODEL_IN_SHAPE"]))
    step = d["MODEL_STEP_SAMPLES"]
    n = len(x)
    pad = (-n) % step
    flat = np.concatenate([x.reshape(n, -1), np.zeros((pad, d["MODEL_IN_NUMEL"]), np.float32)]).reshape(-1)
    with open(out, "w") as f:
        f.write("/* %d samples of %s (padded to whole steps of %d): tools/model/fwio.py */\n" % (n, npy, step))
        f.write("#define MODEL_INPUT_SAMPLES %d\n" % n)
        f.write("static const float model_input[%d] = {\n" % max(1, len(flat)))
        for i in range(0, len(flat), 8):
            f.write("    " + ", ".join("%.9ef" % v for v in flat[i:i + 8]) + ",\n")
        f.write("};\n")


def read_output(log, model_h, out):
    d = defines(model_h)
    rows = {}
    with open(log, errors="replace") as f:
        for line in f:
            m = re.match(r"out (\d+):((?: [0-9a-f]{8})+)\s*$", line)
            if m:
                rows[int(m.group(1))] = np.array([int(w, 16) for w in m.group(2).split()], np.uint32).view(np.float32)
    if not rows or sorted(rows) != list(range(len(rows))):
        sys.exit("%s: no complete `out <i>:` lines" % log)
    y = np.stack([rows[i] for i in range(len(rows))]).reshape([len(rows)] + d["MODEL_OUT_SHAPE"])
    np.save(out, y)
    print("wrote %s: %s" % (out, list(y.shape)))


def compare(host_npy, log, model_h, exact):
    """The firmware's outputs against the host run's: predictions identical, outputs bit for
    bit (exact) or within 1e-5 relative (f32 through two libms)."""
    d = defines(model_h)
    tmp = log + ".npy"
    read_output(log, model_h, tmp)
    fw = np.load(tmp)
    host = np.load(host_npy)[:len(fw)]
    p_h, p_f = host.reshape(len(fw), -1).argmax(1), fw.reshape(len(fw), -1).argmax(1)
    same_pred = bool(np.array_equal(p_h, p_f))
    bits = bool(np.array_equal(host.view(np.uint32), fw.view(np.uint32)))
    rel = float(np.abs(host - fw).max() / max(np.abs(host).max(), 1e-30))
    ok = same_pred and (bits if exact else rel <= 1e-5)
    print("%s: bare-metal predictions %s host for %d/%d samples; outputs %s (max relative difference %.2e)%s" % (
        "ok" if ok else "FAILED", "identical to" if same_pred else "differ from", int((p_h == p_f).sum()), len(fw),
        "bit-identical" if bits else "not bit-identical", rel,
        "" if exact or bits else " (f32 through picolibc's and glibc's expf/erff)"))
    del d
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "input":
        lim = int(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[5] == "--limit" else None
        write_input(sys.argv[2], sys.argv[3], sys.argv[4], lim)
    elif len(sys.argv) == 5 and sys.argv[1] == "output":
        read_output(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 5 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4], "--exact" in sys.argv[5:]))
    else:
        sys.exit(__doc__)
