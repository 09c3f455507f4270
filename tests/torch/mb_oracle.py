#!/usr/bin/env python3
"""microbatch.h against PyTorch's microbatching rules on randomized argument lists.

The expected results come from torch itself: PyTorch's rules in
torch/distributed/pipelining/microbatch.py (split_args_kwargs_into_chunks, merge_chunks),
re-derived here on the installed torch's tensor_split, cat, maximum and its type promotion
(Debian's torch 1.13 has no torch.distributed.pipelining), or, with --microbatch-py, PyTorch's
own microbatch.py loaded from that path and run unchanged (two shims for torch 1.13: a
BlockMask class and the pytree functions' is_leaf argument). The cases go to mb_driver
(tests/torch/mb_driver.c) on stdin; its answers are compared value by value (floats bit for
bit, any NaN equal to any NaN).

Every case ends in one of:
  agree       splitcore gives PyTorch's result (or both fail);
  ext         a splitcore-only option (MB_CEIL, MB_STRICT, MB_KEEP_COUNT, mean / max / min,
              an integer sum into its integer dtype, out[] too small), checked against the
              rule README documents for it, computed with torch;
  diff:<tag>  a difference README's "Differences from PyTorch" table lists, where splitcore
              gives exactly the result that row documents;
  MISMATCH    anything else: the run fails.
The summary prints the counts of each. Exit 0 when there is no mismatch and at least --cases
cases ran.
"""
import argparse
import importlib.util
import math
import os
import random
import struct
import subprocess
import sys
import types

import torch

MB_F32, MB_F64, MB_I8, MB_U8, MB_I16, MB_I32 = range(6)
TORCH_DT = [torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32]
DT_OF = {d: i for i, d in enumerate(TORCH_DT)}
ES = [4, 8, 1, 1, 2, 4]
FMT = ["f", "d", "b", "B", "h", "i"]
MB_BALANCED, MB_CEIL, MB_STRICT, MB_KEEP_COUNT, MB_DEBUG_MASK = 0, 1, 2, 4, 8
MB_RED_SUM, MB_RED_MEAN, MB_RED_MAX, MB_RED_MIN = range(4)
MAXC = 40  # mb_driver's chunk capacity

# error codes (enum mb_err), for the summary only: any error matches a torch exception
ERR = {-1: "NULL", -2: "NDIM", -3: "DIM", -4: "DTYPE", -5: "SHAPE", -6: "CHUNKS", -7: "CHUNK_COUNT",
       -8: "TOO_SMALL", -9: "SPEC", -10: "SPLIT_SIZE", -11: "NOT_REPLICATED", -12: "RANGE", -13: "ALIGN",
       -14: "OVERLAP"}


class Fail(Exception):
    """torch raised (or would): the case must fail in splitcore too."""


# ---- values -----------------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, float("inf"), float("-inf"), float("nan"), 1e-45, 3.4e38, 2.0 ** 24 + 1,
           1e300, -7.25, 16777217.0]


def rand_elem(rng, dt):
    if dt in (MB_F32, MB_F64):
        r = rng.random()
        if r < 0.25:
            x = rng.choice(SPECIAL)
        elif r < 0.6:
            x = float(rng.randint(-8, 8))
        else:
            x = rng.uniform(-100, 100)
        if dt == MB_F32:
            x = struct.unpack("f", struct.pack("f", x if abs(x) < 3.4e38 or math.isinf(x) or x != x else math.copysign(float("inf"), x)))[0]
        return x
    lo, hi = {MB_I8: (-128, 127), MB_U8: (0, 255), MB_I16: (-32768, 32767), MB_I32: (-2 ** 31, 2 ** 31 - 1)}[dt]
    r = rng.random()
    if r < 0.5:
        return rng.randint(max(lo, -10), min(hi, 10))
    if r < 0.6 and dt == MB_I32:
        return rng.choice([2 ** 24 + 1, -(2 ** 24) - 3, 2 ** 31 - 1, -(2 ** 31)])
    return rng.randint(lo, hi)


class Tensor:
    """A view into its own base storage: what mb_driver gets and what torch gets."""

    def __init__(self, dt, shape, strides, offset, base_vals):
        self.dt, self.shape, self.strides, self.offset, self.base_vals = dt, list(shape), list(strides), offset, base_vals
        base = torch.tensor(base_vals, dtype=TORCH_DT[dt]) if base_vals else torch.zeros(0, dtype=TORCH_DT[dt])
        self.t = torch.as_strided(base, self.shape, self.strides, offset) if base_vals or 0 in shape else \
            torch.zeros(self.shape, dtype=TORCH_DT[dt])
        self.base = base

    def wire(self):
        raw = struct.pack("<%d%s" % (len(self.base_vals), FMT[self.dt]), *self.base_vals)
        return "T %d %d %s %s %d %s" % (self.dt, len(self.shape), " ".join(map(str, self.shape)),
                                        " ".join(map(str, self.strides)), self.offset, raw.hex() or "00")


def make_tensor(rng, dt=None, shape=None, layout=True):
    dt = rng.randrange(6) if dt is None else dt
    if shape is None:
        nd = rng.choice([0, 1, 1, 2, 2, 3, 4])
        shape = [rng.choice([0, 1, 1, 2, 3, 4, 5, 7]) for _ in range(nd)]
        while math.prod(shape) > 200:  # small: mb_driver's buffers, and speed
            shape[rng.randrange(nd)] = rng.choice([1, 2])
    nd = len(shape)
    numel = math.prod(shape)
    # layout: contiguous, transposed, stepped, with an offset, a broadcast (stride 0) dim
    perm = list(range(nd))
    step = 1
    offset = 0
    if layout and nd and rng.random() < 0.4:
        rng.shuffle(perm)
        step = rng.choice([1, 1, 2])
        offset = rng.choice([0, 0, 1, 3])
    strides = [0] * nd
    acc = step
    for d in reversed(perm):
        strides[d] = acc
        acc *= max(shape[d], 1)
    if layout and nd and rng.random() < 0.08:
        strides[rng.randrange(nd)] = 0
    extent = offset + (sum((s - 1) * st for s, st in zip(shape, strides)) + 1 if numel else 0)
    vals = [rand_elem(rng, dt) for _ in range(extent)]
    return Tensor(dt, shape, strides, offset if numel else 0, vals)


def contiguous_tensor(dt, t):
    """A Tensor whose base is torch tensor t (made contiguous, converted to dt)."""
    t = t.to(TORCH_DT[dt]).contiguous()
    shape = list(t.shape)
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.insert(0, acc)
        acc *= max(s, 1)
    return Tensor(dt, shape, strides, 0, t.reshape(-1).tolist())


def make_scalar(rng):
    return rng.choice([0.0, -0.0, 1.5, -2.0, float("nan"), float("inf"), 3.0, 1e16, 0.1, 7.0])


def wire_value(v):
    return v.wire() if isinstance(v, Tensor) else "S %s" % float(v).hex()


# ---- comparison ---------------------------------------------------------------------------

def elems_hex(t):
    """torch tensor t's elements in row-major order as mb_driver prints them."""
    t = t.contiguous().reshape(-1)
    if t.numel() == 0:
        return "-"
    dt = DT_OF[t.dtype]
    return struct.pack("<%d%s" % (t.numel(), FMT[dt]), *t.tolist()).hex()


def same_hex(a, b, dt):
    """Element bytes equal, any NaN equal to any NaN."""
    if a == b:
        return True
    if dt not in (MB_F32, MB_F64) or len(a) != len(b) or a == "-" or b == "-":
        return False
    es = ES[dt] * 2
    for i in range(0, len(a), es):
        x, y = a[i:i + es], b[i:i + es]
        if x != y:
            fx = struct.unpack("<" + FMT[dt], bytes.fromhex(x))[0]
            fy = struct.unpack("<" + FMT[dt], bytes.fromhex(y))[0]
            if not (fx != fx and fy != fy):
                return False
    return True


def same_scalar(a, b):
    return (a != a and b != b) or (a == b and math.copysign(1, a) == math.copysign(1, b))


# ---- PyTorch's rules, re-derived ------------------------------------------------------------

class Rules:
    """split_args_kwargs_into_chunks / merge_chunks of PyTorch main (after pytorch/pytorch#164111):
    the chunk count is the smallest of the requested count and every split tensor's size; a
    value whose spec is _Replicate (the default for non-tensors) is repeated; a non-tensor with a
    TensorChunkSpec raises; tensors are split with torch.tensor_split; merge concatenates with
    torch.cat, reduces from the reducer's init value in chunk order, or checks `chunk == chunk 0`."""

    name = "re-derived rules"

    def __init__(self):
        self.debug_mask = False

    def split(self, leaves, specs, chunks):
        """leaves: values (torch tensors or floats); specs: ('split', dim) | ('rep',).
        Returns a list of chunks, each a list of values."""
        sizes = []
        for v, s in zip(leaves, specs):
            if s[0] == "rep":
                sizes.append(chunks)
            elif isinstance(v, torch.Tensor):
                try:
                    sizes.append(v.size(s[1]))
                except (IndexError, RuntimeError) as e:
                    raise Fail(str(e))
            else:
                raise Fail("Unsupported chunk spec for a non-tensor")
        n = min(sizes + [chunks]) if leaves else chunks
        out = [[] for _ in range(max(n, 0))]
        for v, s in zip(leaves, specs):
            if s[0] == "rep":
                parts = [v] * max(n, 0)
            else:
                if n <= 0:
                    raise Fail("tensor_split needs sections > 0")
                parts = list(torch.tensor_split(v, n, s[1]))
                if self.debug_mask:
                    parts = mask_parts(v, parts, s[1])
            for c in range(len(out)):
                out[c].append(parts[c])
        return out

    def merge(self, chunks, specs):
        """chunks: [chunk][value]; specs: ('cat', dim) | ('rep',) | ('sum',) | ('custom', init, fn)."""
        res = []
        for i, s in enumerate(specs):
            vals = [c[i] for c in chunks]
            if s[0] == "cat":
                if self.debug_mask and vals and all(isinstance(v, torch.Tensor) for v in vals):
                    shape = vals[0].shape
                    if any(v.shape != shape for v in vals):
                        raise Fail("masked chunks differ in shape")
                    try:
                        meta = torch.tensor_split(torch.empty(*shape, device="meta"), len(vals), s[1])
                    except (IndexError, RuntimeError) as e:
                        raise Fail(str(e))
                    at, cut = 0, []
                    for v, m in zip(vals, meta):
                        cut.append(v.narrow(s[1], at, m.size(s[1])))
                        at += m.size(s[1])
                    vals = cut
                try:
                    res.append(torch.cat(vals, dim=s[1]))
                except (RuntimeError, TypeError, IndexError) as e:
                    raise Fail(str(e))
            elif s[0] in ("sum", "custom"):
                acc = torch.tensor(0.0) if s[0] == "sum" else s[1]
                fn = (lambda a, b: a + b) if s[0] == "sum" else s[2]
                for v in vals:
                    try:
                        acc = fn(acc, v)
                    except RuntimeError as e:
                        raise Fail(str(e))
                res.append(acc)
            else:
                if not vals:
                    raise Fail("chunks[0] of no chunks")
                for v in vals[1:]:
                    try:
                        if not (v == vals[0]):
                            raise Fail("not replicated")
                    except RuntimeError as e:  # Boolean value of Tensor with more than one value
                        raise Fail(str(e))
                res.append(vals[0])
        return res


def mask_parts(v, parts, dim):
    out, at = [], 0
    for p in parts:
        z = torch.zeros_like(v)
        z.narrow(dim, at, p.size(dim)).copy_(p)
        out.append(z)
        at += p.size(dim)
    return out


class RealMicrobatch(Rules):
    """PyTorch's own microbatch.py, loaded from a path and run unchanged."""

    def __init__(self, path):
        super().__init__()
        import torch.utils._pytree as pytree
        # torch 1.13 shims: flex_attention's BlockMask (never passed here), pytree's is_leaf
        fa = types.ModuleType("torch.nn.attention.flex_attention")
        fa.BlockMask = type("BlockMask", (), {})
        att = types.ModuleType("torch.nn.attention")
        att.flex_attention = fa
        sys.modules.setdefault("torch.nn.attention", att)
        sys.modules.setdefault("torch.nn.attention.flex_attention", fa)
        for fname in ("tree_flatten", "tree_map"):
            f = getattr(pytree, fname)
            if "is_leaf" not in f.__code__.co_varnames:
                setattr(pytree, fname, (lambda f: lambda *a, is_leaf=None: f(*a))(f))
        spec = importlib.util.spec_from_file_location("pytorch_microbatch", path)
        self.m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.m)
        self.name = "PyTorch's microbatch.py (%s)" % path

    def split(self, leaves, specs, chunks, structure=None):
        m = self.m
        m._debug_mask_minibatches = self.debug_mask
        args, kwargs, args_spec, kwargs_spec = structure
        try:
            a, k = m.split_args_kwargs_into_chunks(args, kwargs, chunks, args_spec, kwargs_spec)
        except Exception as e:  # whatever PyTorch's code raises
            raise Fail(str(e))
        import torch.utils._pytree as pytree
        return [pytree.tree_flatten(list(ac) + [kc])[0] for ac, kc in zip(a, k)]

    def merge(self, chunks, specs):
        m = self.m
        m._debug_mask_minibatches = self.debug_mask
        tspecs = []
        for s in specs:
            if s[0] == "cat":
                tspecs.append(m.TensorChunkSpec(s[1]))
            elif s[0] == "sum":
                tspecs.append(m.sum_reducer)
            elif s[0] == "custom":
                tspecs.append(m._CustomReducer(s[1], s[2]))
            else:
                tspecs.append(m._Replicate())
        try:
            return list(m.merge_chunks([tuple(c) for c in chunks], tuple(tspecs)))
        except Exception as e:  # whatever PyTorch's code raises
            raise Fail(str(e))


# ---- the driver -----------------------------------------------------------------------------

class Driver:
    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, text, nlines):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()
        first = self.p.stdout.readline()
        if not first.startswith("rc "):
            raise SystemExit("mb_driver: unexpected answer %r (exit %s)" % (first, self.p.poll()))
        rc = int(first.split()[1])
        lines = [self.p.stdout.readline().split() for _ in range(nlines(rc))]
        return rc, lines


# ---- cases ------------------------------------------------------------------------------------

class Cross:
    """--cross-check: the re-derived rules beside PyTorch's microbatch.py on every case."""

    def __init__(self):
        self.ref = Rules()
        self.n = {}

    def count(self, kind, same):
        k = (kind, same)
        self.n[k] = self.n.get(k, 0) + 1

    def report(self):
        for kind in ("split", "merge"):
            yes, no = self.n.get((kind, True), 0), self.n.get((kind, False), 0)
            print("  cross-check %s: the re-derived rules agree with microbatch.py on %d of %d" % (kind, yes, yes + no))
        return sum(v for (k, same), v in self.n.items() if not same)


CROSS = None


def same_result(a, b):
    if isinstance(a, Fail) or isinstance(b, Fail):
        return isinstance(a, Fail) and isinstance(b, Fail)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype and
                a.shape == b.shape and (a.numel() == 0 or same_hex(elems_hex(a), elems_hex(b), DT_OF.get(a.dtype, 0))))
    return same_scalar(float(a), float(b))


def same_split(a, b):
    if a is None or b is None:
        return a is None and b is None
    return len(a) == len(b) and all(len(x) == len(y) and all(same_result(u, v) for u, v in zip(x, y))
                                    for x, y in zip(a, b))


def split_case(rng, rules, drv, stats):
    nargs_a = rng.choice([0, 1, 1, 2, 2, 3])
    nargs_k = rng.choice([0, 0, 0, 1, 2])
    flags = rng.choice([MB_BALANCED] * 8 + [MB_CEIL, MB_STRICT, MB_KEEP_COUNT, MB_CEIL | MB_KEEP_COUNT, MB_CEIL | MB_STRICT])
    masked = rng.random() < 0.2
    chunks = rng.choice([-1, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 9])
    base_n = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 12])
    leaves, specs, wire_specs = [], [], []
    explicit = rng.random() < 0.5  # an args_chunk_spec (else PyTorch's defaults)

    def value():
        r = rng.random()
        if r < 0.22:
            return make_scalar(rng)
        t = make_tensor(rng)
        if t.shape and rng.random() < 0.6:  # a batch-like leading dim shared by most tensors
            t = make_tensor(rng, t.dt, [base_n + rng.choice([0, 0, 0, 1, -1])] + t.shape[1:])
        return t

    def spec_for(v):
        if not explicit or rng.random() < 0.3:
            return "D", ("rep",) if not isinstance(v, Tensor) else ("split", 0)
        r = rng.random()
        if r < 0.25:
            return "R", ("rep",)
        nd = len(v.shape) if isinstance(v, Tensor) else 0
        d = rng.randint(-nd - 1, nd) if rng.random() < 0.15 else (rng.randint(-nd, nd - 1) if nd else 0)
        return "P %d" % d, ("split", d)

    structure_args, structure_aspec = [], []
    for _ in range(nargs_a):
        if rng.random() < 0.15:  # a nested argument: a list of 2 leaves
            vs = [value(), value()]
            ss = [spec_for(v) for v in vs]
            structure_args.append(vs)
            structure_aspec.append(ss)
        else:
            v = value()
            structure_args.append(v)
            structure_aspec.append(spec_for(v))
    structure_kwargs = {}
    for j in range(nargs_k):
        v = value()
        structure_kwargs["k%d" % j] = (v, ("D", ("rep",) if not isinstance(v, Tensor) else ("split", 0)))

    def flat(x, s):
        if isinstance(x, list):
            for xx, ss in zip(x, s):
                flat(xx, ss)
        else:
            leaves.append(x)
            wire_specs.append(s[0])
            specs.append(s[1])

    for x, s in zip(structure_args, structure_aspec):
        flat(x, s)
    for k, (v, s) in structure_kwargs.items():
        flat(v, s)
    if len(leaves) > 8:
        return
    max_chunks = MAXC if rng.random() < 0.9 else rng.randint(0, 4)

    tl = [v.t if isinstance(v, Tensor) else v for v in leaves]
    ext = flags != MB_BALANCED or max_chunks < MAXC

    def expect(r):
        try:
            if flags == MB_BALANCED:
                r.debug_mask = masked
                if isinstance(r, RealMicrobatch):  # the nested arguments and kwargs as they are
                    def tv(x):
                        return [tv(y) for y in x] if isinstance(x, list) else (x.t if isinstance(x, Tensor) else x)

                    def ts(x, s):
                        if isinstance(x, list):
                            return [ts(y, z) for y, z in zip(x, s)]
                        return r.m._Replicate() if s[1][0] == "rep" else r.m.TensorChunkSpec(s[1][1])
                    args = tuple(tv(x) for x in structure_args)
                    aspec = tuple(ts(x, s) for x, s in zip(structure_args, structure_aspec)) if explicit else None
                    kwargs = {k: tv(v) for k, (v, s) in structure_kwargs.items()}
                    e = r.split(tl, specs, chunks, (args, kwargs, aspec, None))
                else:
                    e = r.split(tl, specs, chunks)
            else:
                e = ext_split(tl, specs, chunks, flags, masked)
            if len(e) > max_chunks:
                raise Fail("out[] too small")
            return e
        except Fail:
            return None

    exp = expect(rules)
    if CROSS and flags == MB_BALANCED:
        CROSS.count("split", same_split(exp, expect(CROSS.ref)))
    wire = "split %d %d %d %d %d\n%s\n%s" % (len(leaves), chunks, flags, max_chunks, int(masked),
                                             "\n".join(wire_specs), "\n".join(wire_value(v) for v in leaves))
    rc, lines = drv.ask(wire, lambda rc: max(rc, 0) * len(leaves))
    tag = "ext" if ext else "agree"
    ok = check_split(exp, rc, lines, leaves, masked)
    record(stats, "split", tag, ok, wire, exp, rc, lines)


def ext_split(tl, specs, chunks, flags, masked):
    """MB_CEIL (torch.chunk's sizes), MB_STRICT (a split dim below the count is an error),
    MB_KEEP_COUNT (the count stays; trailing chunks empty) over PyTorch's rules."""
    sizes = []
    for v, s in zip(tl, specs):
        if s[0] == "rep":
            continue
        if not isinstance(v, torch.Tensor):
            raise Fail("spec")
        try:
            sizes.append(v.size(s[1]))
        except (IndexError, RuntimeError):
            raise Fail("dim")
    if sizes and chunks <= 0:
        raise Fail("chunks")
    n = chunks
    if not flags & MB_KEEP_COUNT:
        for sz in sizes:
            if sz < chunks and (flags & MB_STRICT or sz == 0):
                raise Fail("split size")
        n = min(sizes + [chunks])
    counts = []
    parts_of = []
    for v, s in zip(tl, specs):
        if s[0] == "rep":
            parts_of.append(None)
            continue
        if flags & MB_CEIL:
            size = v.size(s[1])
            parts = list(torch.chunk(v, n, s[1])) if size else [v.narrow(s[1], 0, 0)] * n
        else:
            parts = list(torch.tensor_split(v, n, s[1]))
        if masked:
            parts = mask_parts(v, parts, s[1])
        counts.append(len(parts))
        parts_of.append(parts)
    if len(set(counts)) > 1:
        raise Fail("chunk count")
    count = counts[0] if counts else max(n, 0)
    return [[(p[c] if p is not None else v) for v, p in zip(tl, parts_of)] for c in range(count)]


def check_split(exp, rc, lines, leaves, masked):
    if exp is None:
        return rc < 0
    if rc != len(exp):
        return False
    k = 0
    for c in range(rc):
        for i, v in enumerate(leaves):
            w = lines[k]
            k += 1
            e = exp[c][i]
            if not isinstance(e, torch.Tensor):
                if w[0] != "S" or not same_scalar(float.fromhex(w[1]), float(e)):
                    return False
                continue
            if w[0] != "T":
                return False
            dt, nd = int(w[1]), int(w[2])
            shape = [int(x) for x in w[3:3 + nd]]
            strides = [int(x) for x in w[3 + nd:3 + 2 * nd]]
            off, data = int(w[3 + 2 * nd]), w[4 + 2 * nd]
            if dt != DT_OF[e.dtype] or shape != list(e.shape):
                return False
            if not same_hex(data, elems_hex(e), dt):
                return False
            if not masked and e.numel() and isinstance(v, Tensor):
                # a view of the input: torch's strides and storage offset
                if strides != list(e.stride()) or off != e.storage_offset():
                    return False
    return True


def merge_case(rng, rules, drv, stats):
    nvals = rng.choice([1, 1, 2, 3])
    nchunks = rng.choice([0, 1, 2, 2, 3, 3, 4, 5])
    masked = rng.random() < 0.12
    chunks = [[None] * nvals for _ in range(nchunks)]
    wire_specs, specs = [], []
    for i in range(nvals):
        kind = rng.choices(["cat", "rep", "red", "custom", "default"], [30, 15, 30, 10, 15])[0]
        scalar = kind != "cat" and rng.random() < 0.2
        dt = rng.randrange(6)
        mixed = rng.random() < 0.3
        nd = rng.choice([0, 1, 1, 2, 2, 3]) if kind in ("rep", "red", "custom") else rng.choice([1, 1, 2, 3])
        shape = [rng.choice([0, 1, 2, 3, 4]) for _ in range(nd)]
        if kind in ("cat", "default"):
            dim = rng.randint(-nd, nd - 1) if kind == "cat" else 0
            wire_specs.append("C %d" % dim if kind == "cat" else "D")
            specs.append(("cat", dim))
            for c in range(nchunks):
                sh = list(shape)
                if not masked:
                    sh[dim] = rng.choice([0, 1, 2, 3])
                if scalar:
                    v = make_scalar(rng)
                elif rng.random() < 0.05:  # another rank (1-D empty ones: torch.cat's legacy skip)
                    v = make_tensor(rng, dt, rng.choice([sh + [1], [0]]))
                else:
                    v = make_tensor(rng, rng.randrange(6) if mixed else dt, sh)
                chunks[c][i] = v
        elif kind == "rep":
            wire_specs.append("R")
            specs.append(("rep",))
            base = make_scalar(rng) if scalar else make_tensor(rng, dt, shape)
            for c in range(nchunks):
                if scalar:
                    v = base if rng.random() < 0.8 else make_scalar(rng)
                else:
                    cd = rng.randrange(6) if mixed and rng.random() < 0.5 else dt
                    tt = base.t.clone()
                    if rng.random() < 0.15 and tt.numel():  # one element differs, or only its zero's sign
                        flat = tt.reshape(-1).clone()
                        flat[rng.randrange(flat.numel())] = rng.choice([-0.0, 0.0, 1.0, float("nan")]) if dt < 2 else 1
                        tt = flat.reshape(tt.shape)
                    v = contiguous_tensor(cd, tt)
                chunks[c][i] = v
        elif kind == "red":
            op = rng.choice([MB_RED_SUM, MB_RED_SUM, MB_RED_MEAN, MB_RED_MAX, MB_RED_MIN])
            wire_specs.append("X %d" % op)
            specs.append(("red", op))
            for c in range(nchunks):
                chunks[c][i] = make_scalar(rng) if scalar else make_tensor(rng, rng.randrange(6) if mixed else dt, shape)
        else:
            fdt = rng.choice([MB_F32, MB_F64])
            init_kind = "scalar" if scalar else rng.choice(["0d", "full", "scalar"])
            if init_kind == "0d":
                init = make_tensor(rng, rng.choice([MB_F32, fdt]), [])
            elif init_kind == "full":
                init = make_tensor(rng, fdt, shape)
            else:
                init = rng.choice([0.0, 1.0, -2.5])
            wire_specs.append("U\n" + wire_value(init))
            specs.append(("custom", init))
            for c in range(nchunks):
                chunks[c][i] = make_scalar(rng) if scalar else make_tensor(rng, fdt, shape)
    tvals = [[(x.t if isinstance(x, Tensor) else x) for x in ch] for ch in chunks]
    rules.debug_mask = masked
    if CROSS:
        CROSS.ref.debug_mask = masked
    outs, wire_outs = [], []
    results = []
    for i, s in enumerate(specs):
        vals = [ch[i] for ch in tvals]
        torch_res = torch_merge_value(rules, s, vals)
        if CROSS and torch_res is not None:
            CROSS.count("merge", same_result(torch_res, torch_merge_value(CROSS.ref, s, vals)))
        alias_c = 0 if not nchunks or rng.random() < 0.4 else rng.randrange(nchunks)
        scalar_out = (vals and not isinstance(vals[0], torch.Tensor)) or \
            (not vals and s[0] == "custom" and not isinstance(s[1], Tensor))
        # the output: a scalar, one of the chunks, or torch's shape and dtype (sometimes not)
        if scalar_out:
            out = ("S",)
            wire_outs.append("S")
        elif s[0] in ("red", "custom", "rep") and vals and rng.random() < 0.2 and not any(
                st == 0 and sz > 1 for st, sz in zip(chunks[alias_c][i].strides, chunks[alias_c][i].shape)):
            c = alias_c  # never a view with repeated elements: writing it is undefined
            out = ("A", c)
            wire_outs.append("A %d" % c)
        else:
            ref = torch_res if isinstance(torch_res, torch.Tensor) else None
            if s[0] == "red" and vals and isinstance(vals[0], torch.Tensor) and s[1] != MB_RED_SUM:
                ref = ext_reduce_ref(s[1], vals)
            if ref is not None and ref.dtype in DT_OF:
                dt, shape = DT_OF[ref.dtype], list(ref.shape)
            else:
                dt, shape = rng.randrange(6), [rng.choice([1, 2, 3])]
            if s[0] == "red" and s[1] == MB_RED_SUM and vals and all(isinstance(v, torch.Tensor) and v.dtype in
                                                                    TORCH_DT[2:] for v in vals) and rng.random() < 0.3:
                dt = DT_OF[promote([v.dtype for v in vals])]  # an integer sum into its integer dtype
            if s[0] == "custom" and rng.random() < 0.3 and vals:
                shape = list(vals[0].shape)
            if rng.random() < 0.08:
                dt = rng.randrange(6)
            if rng.random() < 0.05 and shape:
                shape[0] += 1
            out = ("T", dt, shape)
            wire_outs.append("T %d %d %s" % (dt, len(shape), " ".join(map(str, shape))))
        outs.append(out)
        results.append((torch_res, sc_merge_value(s, vals, tvals, i, out, masked), vals))
    wire = "merge %d %d %d\n%s\n%s\n%s" % (nchunks, nvals, MB_DEBUG_MASK if masked else 0, "\n".join(wire_specs),
                                           "\n".join(wire_value(chunks[c][i]) for c in range(nchunks) for i in range(nvals)),
                                           "\n".join(wire_outs))
    rc, lines = drv.ask(wire, lambda rc: nvals)
    ok, tag = judge_merge(specs, results, rc, lines)
    record(stats, "merge", tag, ok, wire, results, rc, lines)


def promote(dts):
    r = dts[0]
    for d in dts[1:]:
        r = torch.promote_types(r, d)
    return r


def round_to(x, dt):
    """float64 tensor x stored as dt and read back: float32 rounding, integers wrapping."""
    if dt == MB_F32:
        return x.to(torch.float32).to(torch.float64)
    if dt == MB_F64:
        return x
    bits = ES[dt] * 8
    i = x.to(torch.int64) & ((1 << bits) - 1)
    if dt != MB_U8:
        i = torch.where(i >= (1 << (bits - 1)), i - (1 << bits), i)
    return i.to(torch.float64)


def double_reduce(op, vals, dt):
    """splitcore's reductions: each chunk's values exact in double, every step stored in the
    output dtype dt (integers wrap); sum and mean start from 0.0 + the first chunk; max / min:
    NaN wins, ties keep the earlier value; mean divides the sum by the count."""
    acc = None
    for v in vals:
        x = v.to(torch.float64)
        if acc is None:
            acc = x + 0.0 if op <= MB_RED_MEAN else x
        elif op <= MB_RED_MEAN:
            acc = acc + x
        else:
            take = (acc < x) if op == MB_RED_MAX else (acc > x)
            acc = torch.where(torch.isnan(x) | take, x, acc)
        acc = round_to(acc, dt)
    if op == MB_RED_MEAN:
        acc = round_to(acc / len(vals), dt)
    return acc.to(TORCH_DT[dt])


class Res:
    """splitcore's documented result for one value: `fail` (the merge returns an error) or the
    output's expected elements (`val`, in dtype `dt`, or a scalar), and `tag`: None where the
    rule is PyTorch's, "ext" for a splitcore-only feature, "diff:<row>" for a listed difference,
    "refused" for an output view that is not torch's result's dtype and shape."""

    def __init__(self, val=None, dt=None, fail=None, tag=None):
        self.val, self.dt, self.fail, self.tag = val, dt, fail, tag


def torch_merge_value(rules, s, vals):
    """PyTorch's merge_chunks result for one value: a value, Fail, or None (no such PyTorch spec)."""
    if s[0] == "red" and s[1] != MB_RED_SUM:
        return None
    if s[0] == "red":
        ts = ("sum",)
    elif s[0] == "custom":
        ts = ("custom", s[1].t if isinstance(s[1], Tensor) else s[1], lambda a, b: 2 * a + b)
    elif s[0] == "cat":
        ts = s
    else:
        ts = ("rep",)
    try:
        return rules.merge([[v] for v in vals], [ts])[0]
    except Fail as e:
        return e


def ext_reduce_ref(op, vals):
    """Output dtype and shape of mean / max / min (splitcore's own): mean as sum_reducer's
    dtype, max / min the promoted dtype of the chunks."""
    p = promote([v.dtype for v in vals])
    if op == MB_RED_MEAN:
        p = torch.float64 if p == torch.float64 else torch.float32
    return torch.empty(vals[0].shape, dtype=p)


def out_of(out, tvals, i):
    """(dtype, shape) of the output view."""
    if out[0] == "A":
        t = tvals[out[1]][i]
        return DT_OF[t.dtype], list(t.shape)
    return out[1], out[2]


def sc_merge_value(s, vals, tvals, i, out, masked):
    n = len(vals)
    tensors = all(isinstance(v, torch.Tensor) for v in vals)
    if s[0] == "cat":
        d = s[1]
        if n == 0 or not tensors:
            return Res(fail="cat of nothing or of scalars")
        nd = vals[0].dim()
        legacy = "diff:cat-legacy-empty" if any(v.dim() == 1 and v.numel() == 0 for v in vals) else None
        if any(v.dim() != nd for v in vals):
            return Res(fail="ranks differ", tag=legacy)
        if not -nd <= d < nd:
            return Res(fail="dim", tag=legacy)
        d %= nd
        if masked:
            if any(v.shape != vals[0].shape for v in vals):
                return Res(fail="masked shapes")
            meta = torch.tensor_split(torch.empty(*vals[0].shape, device="meta"), n, d)
            at, cut = 0, []
            for v, m in zip(vals, meta):
                cut.append(v.narrow(d, at, m.size(d)))
                at += m.size(d)
            vals = cut
        if any(v.shape[:d] + v.shape[d + 1:] != vals[0].shape[:d] + vals[0].shape[d + 1:] for v in vals):
            return Res(fail="shapes")
        res = torch.cat(vals, d)
        dt, shape = out_of(out, tvals, i)
        if out[0] != "T" or dt != DT_OF[res.dtype] or shape != list(res.shape):
            return Res(fail="output", tag="refused")
        return Res(res, dt)
    if s[0] == "rep":
        if n == 0:
            return Res(fail="no chunks")
        if any(isinstance(v, torch.Tensor) != isinstance(vals[0], torch.Tensor) for v in vals):
            return Res(fail="kinds differ")
        if not tensors:
            if any(not (v == vals[0]) for v in vals[1:]):
                return Res(fail="not replicated")
            return Res(vals[0])
        if any(v.shape != vals[0].shape for v in vals):
            return Res(fail="shapes differ", tag="diff:replicate-shape")
        for v in vals[1:]:  # by value, exactly (torch compares in the promoted dtype)
            if not bool((v.double() == vals[0].double()).all()):
                return Res(fail="not replicated")
        dt, shape = out_of(out, tvals, i)
        if dt != DT_OF[vals[0].dtype] or shape != list(vals[0].shape):
            return Res(fail="output", tag="refused")
        tag = "diff:replicate-many" if n > 1 and vals[0].numel() != 1 else None
        return Res(vals[0], dt, tag=tag)
    if s[0] == "custom":
        init = s[1].t if isinstance(s[1], Tensor) else s[1]
        if out[0] == "S":  # scalar chunks (or none with a scalar init): a scalar output
            if isinstance(init, torch.Tensor):
                return Res(fail="tensor init, scalar values")
            acc = init
            for v in vals:
                acc = 2 * acc + v
            return Res(acc, tag="diff:zero-chunks" if n == 0 and isinstance(init, torch.Tensor) else None)
        if out[0] == "A":
            return Res(fail="output is a chunk", tag="diff:custom-overlap")
        dt, shape = out_of(out, tvals, i)
        if n and any(list(v.shape) != list(vals[0].shape) for v in vals):
            return Res(fail="chunk shapes")
        if isinstance(init, torch.Tensor) and init.dim() and list(init.shape) != shape:
            return Res(fail="init shape", tag="refused")
        if n and shape != list(vals[0].shape):
            return Res(fail="output (the test's reducer takes the chunks' shape)", tag="refused")
        if n and dt not in (MB_F32, MB_F64) and math.prod(shape):
            return Res(fail="the test's reducer returns MB_ERR_DTYPE", tag="ext")
        src = init.to(torch.float64) if isinstance(init, torch.Tensor) else torch.tensor(float(init), dtype=torch.float64)
        acc = round_to(torch.broadcast_to(src, shape).clone(), dt)
        for v in vals:
            acc = round_to(2 * acc + v.to(torch.float64), dt)
        t = init if isinstance(init, torch.Tensor) else torch.tensor(float(init))
        for v in vals:
            t = 2 * t + v
        tag = "diff:zero-chunks" if n == 0 and list(t.shape) != shape else None
        if t.dtype != TORCH_DT[dt]:
            tag = "ext"  # the caller's output dtype, not torch's: the reducer stores in it
        return Res(acc.to(TORCH_DT[dt]), dt, tag=tag)
    # built-in reductions
    op = s[1]
    ext = op != MB_RED_SUM
    if n == 0:
        if op != MB_RED_SUM:
            return Res(fail="no chunks")
        if out[0] == "S":
            return Res(0.0, tag="diff:zero-chunks")
        dt, shape = out_of(out, tvals, i)
        return Res(torch.zeros(shape, dtype=TORCH_DT[dt]), dt, tag="diff:zero-chunks")
    if not tensors:
        if any(isinstance(v, torch.Tensor) for v in vals):
            return Res(fail="kinds differ")
        acc = 0.0 + vals[0] if op <= MB_RED_MEAN else vals[0]
        for v in vals[1:]:
            if op <= MB_RED_MEAN:
                acc = acc + v
            elif v != v:
                acc = v
            elif (op == MB_RED_MAX and acc < v) or (op == MB_RED_MIN and acc > v):
                acc = v
        if op == MB_RED_MEAN:
            acc = acc / n
        return Res(acc, tag="ext" if ext else "diff:scalar-sum")
    if any(v.shape != vals[0].shape for v in vals):
        return Res(fail="shapes differ")
    dt, shape = out_of(out, tvals, i)
    p = DT_OF[promote([v.dtype for v in vals])]
    if op <= MB_RED_MEAN:
        want = p if p < 2 else (p if op == MB_RED_SUM and dt >= 2 else MB_F32)
    else:
        want = p
    if dt != want or shape != list(vals[0].shape):
        return Res(fail="output", tag="refused")
    order = list(vals)
    tag = "ext" if ext or dt >= 2 else None
    if out[0] == "A" and out[1] > 0:
        order = [vals[out[1]]] + vals[:out[1]] + vals[out[1] + 1:]
        if op <= MB_RED_MEAN and tag is None:
            tag = "diff:inplace-order"
    return Res(double_reduce(op, order, dt), dt, tag=tag)


def judge_merge(specs, results, rc, lines):
    """(ok, tag): the driver against splitcore's documented results; each value's result
    against PyTorch's, every difference explained."""
    fail = any(r.fail is not None for _, r, _ in results)
    if fail != (rc < 0):
        return False, "MISMATCH(rc %d)" % rc
    tags = set()
    for i, (t, r, _) in enumerate(results):
        if r.fail is None and not fail:
            w = lines[i]
            if isinstance(r.val, torch.Tensor):
                if w[0] != "T" or not same_hex(w[1], elems_hex(r.val.to(TORCH_DT[r.dt])), r.dt):
                    return False, "MISMATCH(value %d)" % i
            elif w[0] != "S" or not same_scalar(float.fromhex(w[1]), float(r.val)):
                return False, "MISMATCH(value %d)" % i
        # splitcore's result against PyTorch's
        if r.tag == "ext" or t is None:
            tags.add("ext")
        elif r.tag == "refused":
            tags.add("refused")
        elif r.tag:
            tags.add(r.tag)
        elif isinstance(t, Fail) != (r.fail is not None):
            if f32_rounding(specs[i], results, i):
                tags.add("diff:f32-rounding")
            else:
                return False, "MISMATCH(torch %s, splitcore %s)" % (t, r.fail)
        elif r.fail is None:
            tv = t
            if isinstance(r.val, torch.Tensor):
                if not (isinstance(tv, torch.Tensor) and tv.dtype == TORCH_DT[r.dt] and
                        same_hex(elems_hex(tv), elems_hex(r.val.to(TORCH_DT[r.dt])), r.dt)):
                    if f32_rounding(specs[i], results, i):
                        tags.add("diff:f32-rounding")
                    else:
                        return False, "MISMATCH(splitcore's rule differs from torch: %r vs %r)" % (r.val, tv)
            else:
                tv = float(tv) if isinstance(tv, torch.Tensor) and tv.numel() == 1 else tv
                if not same_scalar(float(tv), float(r.val)):
                    return False, "MISMATCH(scalar rule)"
    if fail:
        return True, ",".join(sorted(tags)) or "agree"
    return True, ",".join(sorted(tags)) or "agree"


def f32_rounding(spec, results, i):
    """torch's float32 arithmetic where splitcore's is exact in double: an int32 above 2^24
    meets float32 (sum_reducer's float32 result, == in the promoted float32), or float32
    chunks are summed before a float64 one."""
    vals = results[i][2]
    dts = {DT_OF[v.dtype] for v in vals if isinstance(v, torch.Tensor)}
    big = any(isinstance(v, torch.Tensor) and v.dtype == torch.int32 and bool((v.abs() > 2 ** 24).any()) for v in vals)
    if spec[0] == "red" and spec[1] == MB_RED_SUM:
        return big or (MB_F32 in dts and MB_F64 in dts)
    return spec[0] == "rep" and big and MB_F32 in dts


def record(stats, kind, tag, ok, wire, exp, rc, lines):
    """One case: stats[(kind, "cases" | "mismatches" | each tag)] counts."""
    stats[(kind, "cases")] = stats.get((kind, "cases"), 0) + 1
    for t in (tag.split(",") if ok else ["MISMATCH"]):
        stats[(kind, t)] = stats.get((kind, t), 0) + 1
    if not ok and stats.setdefault("shown", 0) < 5:
        stats["shown"] += 1
        sys.stderr.write("---- %s mismatch (%s)\n%s\nexpected: %r\nmb_driver: rc %d %r\n" % (
            kind, tag, wire, [(t, r.val, r.fail, r.tag) for t, r, _ in exp] if kind == "merge" else exp, rc, lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--cases", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--microbatch-py", default=os.environ.get("PYTORCH_MICROBATCH_PY", ""),
                    help="PyTorch's torch/distributed/pipelining/microbatch.py: run it instead of the re-derived rules")
    ap.add_argument("--cross-check", action="store_true",
                    help="with --microbatch-py: also run the re-derived rules on every case and count agreement")
    a = ap.parse_args()
    global CROSS
    if a.cross_check:
        if not a.microbatch_py:
            ap.error("--cross-check needs --microbatch-py")
        CROSS = Cross()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    rules = RealMicrobatch(a.microbatch_py) if a.microbatch_py else Rules()
    drv = Driver(a.driver)
    stats = {}
    k = 0
    while sum(v for key, v in stats.items() if key != "shown" and key[1] == "cases") < a.cases:
        (split_case if k % 2 == 0 else merge_case)(rng, rules, drv, stats)
        k += 1
    drv.p.stdin.close()
    drv.p.wait()
    stats.pop("shown", None)
    total = sum(v for (k, t), v in stats.items() if t == "cases")
    bad = sum(v for (k, t), v in stats.items() if t == "MISMATCH")
    print("mb_oracle: seed %d, %s: %d cases, %d mismatches" % (seed, rules.name, total, bad))
    for kind in ("split", "merge"):
        print("  %s: %d cases; " % (kind, stats.get((kind, "cases"), 0)) + ", ".join(
            "%s %d" % (t, v) for (k, t), v in sorted(stats.items()) if k == kind and t != "cases"))
    print("  (agree: PyTorch's result or both fail; ext: splitcore-only options checked against their rule; "
          "refused: an output view that is not torch's dtype or shape; diff:<row>: a difference README lists, "
          "pinned; a case may count under several)")
    if CROSS and CROSS.report():
        bad += 1
    sys.exit(1 if bad or total < a.cases or drv.p.returncode else 0)


if __name__ == "__main__":
    main()
