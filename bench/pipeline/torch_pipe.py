"""bench/pipeline/torch_pipe.py — the peers of bench/pipeline/main.c (Debian's python3-torch
1.13), started by the bench program in the same `scons bench` run. Two modes:

`torch_pipe.py [--mlp NAME=B0,B1,..]...`: torch.distributed.pipeline.sync.Pipe on CPU. Pipe
runs every partition of a device on that device's one worker thread, so on CPU all
partitions take turns on one thread (intra-op threads and BLAS threads as the environment
gives them: printed). Prints one JSON object per line:
  {"torch": "1.13.0", "case": ..., "step_us": ..., "samples_s": ..., "blas": ..., ...}
Cases (same shapes as main.c):
  noop  4 partitions of nn.Identity, chunks 8, one 8x1 float per microbatch: forward +
        backward of y.sum(); Pipe's own cost per step (per microbatch = step / chunks)
  noop_2stages  the same with 2 partitions
  mlp   784-256-128-64-10 MLP, balance [2,2,2,1] on cpu, chunks 8, batch 64,
        checkpoint="never": zero_grad, forward, cross-entropy, backward, SGD step
  --mlp NAME=B0,B1,..  the same MLP with another balance (main.c passes its automatic
        balance for its 2-rank layout), printed as case NAME
Each figure is the median of REPEATS blocks; the no-op cases take the best of NOOP_BLOCKS
blocks (as main.c does for ours), in wall time (step_us) and in process CPU time (cpu_us,
every thread). Without torch: one SKIPPED line, exit 0.

`torch_pipe.py --plain THREADS`: plain single-process torch training of the same MLP (no
Pipe, no microbatches: nn.Sequential on the whole batch), the way torch trains it at its
best, served to main.c so that its blocks alternate with ours in one run. THREADS is the
intra-op thread count and the BLAS's: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are set before
torch loads (Debian's torch is built with BLAS_INFO=generic: it calls the libblas.so.3 the
BLAS alternatives select, e.g. OpenBLAS's pthread build, whose threads torch.set_num_threads
does not control), and with 2 threads OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep
instead of spinning on a machine whose CPUs other processes hold). stdin: the model and the
batch as main.c has them, little-endian float32 (int32 labels): wt0 [784][256], b0 [256],
wt1 [256][128], b1, wt2 [128][64], b2, wt3 [64][10], b3, x [64][784], labels [64]; then one
line per block, the number of steps to time. stdout: a first line
  {"case": "plain", "ready": 1, "blas": ..., "threads": ..., "blas_threads": ..., "loss0": ...}
(loss0: the cross-entropy of the first step, before any update: the same model and data as
ours), then per block {"case": "plain", "step_us": ..., "cpu_us": ...}. Each step: zero_grad,
forward, cross-entropy (mean over the batch), backward, SGD step (lr 0.01, no momentum), as
main.c's. Without torch: one SKIPPED line, exit 0."""
import ctypes
import json
import os
import re
import struct
import sys
import time

REPEATS = 5
NOOP_BLOCKS = 21  # no-op cases: the best of 21 blocks, as bench/pipeline/main.c does


def median_step_us(step, steps, warmup, repeats=REPEATS, best=False):
    for _ in range(warmup):
        step()
    blocks, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step()
        blocks.append((time.perf_counter() - t0) / steps * 1e6)
        cpu.append((time.process_time() - c0) / steps * 1e6)
    blocks.sort()
    cpu.sort()
    if best:
        return blocks[0], cpu[0]
    return blocks[len(blocks) // 2]


def mlp_step_us(torch, nn, Pipe, balance):
    """The demo's MLP cut into len(balance) partitions of balance[i] layers (Linear and
    ReLU count one each), chunks 8, batch 64: zero_grad, forward, cross-entropy, backward,
    SGD step; median step us."""
    layers = [nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
              nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)]
    parts, at = [], 0
    for n in balance:
        parts.append(nn.Sequential(*layers[at:at + n]))
        at += n
    pipe = Pipe(nn.Sequential(*parts), chunks=8, checkpoint="never")
    opt = torch.optim.SGD(pipe.parameters(), lr=0.01)
    lossf = nn.CrossEntropyLoss()
    x = torch.randn(64, 784)
    y = torch.randint(0, 10, (64,))

    def mlp_step():
        opt.zero_grad()
        lossf(pipe(x).local_value(), y).backward()
        opt.step()
    return median_step_us(mlp_step, 40, 5)


def blas_of(torch):
    """Which BLAS this torch calls: BLAS_INFO from torch.__config__.show() and the library
    the process mapped for it (Debian: libblas.so.3 through the BLAS alternatives), with
    OpenBLAS's own version, kernel set and thread count when it is OpenBLAS."""
    m = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    info = "BLAS_INFO=%s" % (m.group(1) if m else "?")
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))  # the BLAS is mapped by now
    lib = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if re.search(r"/lib(open)?blas[^/]*\.so", path):
                lib = path
                break
    if lib is None:
        return "%s, no BLAS library mapped" % info, 0
    real = os.path.realpath(lib)
    try:
        so = ctypes.CDLL(lib)
        so.openblas_get_config.restype = ctypes.c_char_p
        so.openblas_get_corename.restype = ctypes.c_char_p
        cfg = so.openblas_get_config().decode().split()
        return "%s %s (%s kernels; %s, %s)" % (cfg[0], cfg[1], so.openblas_get_corename().decode(), info,
                                                os.path.basename(real)), so.openblas_get_num_threads()
    except (OSError, AttributeError, IndexError):
        kind = "reference BLAS" if "/blas/" in real else os.path.basename(os.path.dirname(real))
        return "%s (%s, %s)" % (kind, info, real), 1


def read_exact(n):
    buf = sys.stdin.buffer.read(n)
    if len(buf) != n:
        raise EOFError("stdin: %d of %d bytes" % (len(buf), n))
    return buf


def plain(threads):
    """Serve timed blocks of plain torch training steps (see the module comment)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    if threads > 1:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    dims = [784, 256, 128, 64, 10]
    blobs = []
    for k in range(4):  # read before torch loads: the writer never waits on a failed import
        blobs.append((read_exact(4 * dims[k] * dims[k + 1]), read_exact(4 * dims[k + 1])))
    xb, yb = read_exact(4 * 64 * 784), read_exact(4 * 64)
    try:
        import torch
        import torch.nn as nn
    except Exception as exc:
        print("SKIPPED plain torch peer: %s" % exc, flush=True)
        return 0
    torch.set_num_threads(threads)
    layers = []
    for k in range(4):
        lin = nn.Linear(dims[k], dims[k + 1])
        with torch.no_grad():  # main.c keeps wt[in][out]; torch's weight is [out][in]
            wt = torch.frombuffer(bytearray(blobs[k][0]), dtype=torch.float32).view(dims[k], dims[k + 1])
            lin.weight.copy_(wt.t())
            lin.bias.copy_(torch.frombuffer(bytearray(blobs[k][1]), dtype=torch.float32))
        layers += [lin, nn.ReLU()] if k < 3 else [lin]
    model = nn.Sequential(*layers)
    x = torch.frombuffer(bytearray(xb), dtype=torch.float32).view(64, 784)
    y = torch.tensor(struct.unpack("<64i", yb), dtype=torch.int64)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lossf = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        return loss
    blas, blas_threads = blas_of(torch)
    loss0 = float(step())
    for _ in range(20):
        step()
    print(json.dumps({"torch": torch.__version__, "case": "plain", "ready": 1, "blas": blas,
                      "threads": torch.get_num_threads(), "blas_threads": blas_threads, "loss0": loss0}), flush=True)
    for line in sys.stdin:
        n = int(line)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            step()
        print(json.dumps({"case": "plain", "step_us": (time.perf_counter() - t0) / n * 1e6,
                          "cpu_us": (time.process_time() - c0) / n * 1e6}), flush=True)
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--plain":
        return plain(int(sys.argv[2]))
    # --mlp NAME=B0,B1,...: one more MLP case with that balance (repeatable)
    extra, args = [], sys.argv[1:]
    while len(args) >= 2 and args[0] == "--mlp":
        name, _, bal = args[1].partition("=")
        extra.append((name, [int(b) for b in bal.split(",")]))
        args = args[2:]
    try:
        import torch
        import torch.nn as nn
        from torch.distributed import rpc
        from torch.distributed.pipeline.sync import Pipe
    except Exception as exc:  # torch absent or without Pipe
        print("SKIPPED torch Pipe peer: %s" % exc)
        return 0
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    rpc.init_rpc("worker", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        blas, blas_threads = blas_of(torch)
        # framework overhead: partitions that do nothing
        noop = Pipe(nn.Sequential(nn.Identity(), nn.Identity(), nn.Identity(), nn.Identity()),
                    chunks=8, checkpoint="never")
        x0 = torch.zeros(8, 1, requires_grad=True)

        def noop_step():
            noop(x0).local_value().sum().backward()
        us, cpu = median_step_us(noop_step, 100, 20, NOOP_BLOCKS, True)
        print(json.dumps({"torch": torch.__version__, "case": "noop", "step_us": us, "cpu_us": cpu,
                          "threads": torch.get_num_threads(), "blas": blas, "blas_threads": blas_threads}))
        noop2 = Pipe(nn.Sequential(nn.Identity(), nn.Identity()), chunks=8, checkpoint="never")

        def noop2_step():
            noop2(x0).local_value().sum().backward()
        us, cpu = median_step_us(noop2_step, 100, 20, NOOP_BLOCKS, True)
        print(json.dumps({"torch": torch.__version__, "case": "noop_2stages", "step_us": us, "cpu_us": cpu,
                          "threads": torch.get_num_threads(), "blas": blas, "blas_threads": blas_threads}))

        # the demo's MLP training step: torch's 4 partitions [2,2,2,1], then each balance
        # main.c passes (its layouts' automatic balance, from measured layer costs)
        for name, balance in [("mlp", [2, 2, 2, 1])] + extra:
            us = mlp_step_us(torch, nn, Pipe, balance)
            print(json.dumps({"torch": torch.__version__, "case": name, "balance": balance, "step_us": us,
                              "samples_s": 64 / us * 1e6, "threads": torch.get_num_threads(), "blas": blas,
                              "blas_threads": blas_threads}))
    finally:
        rpc.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
