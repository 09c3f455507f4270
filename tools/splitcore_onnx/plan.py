"""Plans for N cores: where every tensor lies (tensor mode: DTensor placements on a 1-D mesh,
redistributions inserted where a node needs another), or where the model is cut (pipeline
mode: one segment per rank, cut at any node boundary, skip connections for the tensors
live across a cut but the chain); then every rank's tensor table
(local shapes, views of the weights, arena offsets) and the cost estimates.

Tensor mode rules, per node (torch.chunk pieces, no rank ever empty); the input starts
Shard(0) (the batch, --shard batch) or as the first conv wants it (spatial), auto: the plan of
the two with the smaller estimated busy time (the largest rank's piece of every node):
  conv      input Shard(N) -> local on each rank's samples, output Shard(N); input Shard(H) -> spatial (halo exchange), output Shard(H); a replicated input
            with enough output rows (>= 2 per rank) is narrowed to Shard(H) first; else
            output channels: weight Shard(0), output Shard(C); else replicated
  pools     follow Shard(H) (halo) or Shard(C); mean over a sharded dim: local sums
            all-reduced
  linear    replicated input -> colwise (weight Shard(0), output Shard(-1)) when the output
            splits evenly; input Shard(-1) -> rowwise (weight Shard(1), the Partial sum
            all-reduced); input sharded on another dim -> local
  matmul    both operands sharded on one batch dim, or rows of the first -> local
  softmax, layernorm, reshape, transpose, concat, elementwise: follow the shard where it
            stays valid (not the normalized dim; reshapes that keep each rank's piece
            contiguous), else gather
  output    gathered to Replicate."""
import numpy as np

from .graph import ExportError

DTYPES = {"f32": 4, "i8": 1, "i32": 4}


def chunk(n, p, r):
    """torch.chunk piece r of n over p: (size, offset)."""
    c = -(-n // p)
    off = min(n, c * r)
    return max(0, min(c, n - off)), off


def splits(n, p):
    """n splits over p ranks without an empty piece."""
    return p == 1 or (-(-n // p)) * (p - 1) < n


class PT:
    """A tensor of the plan: an activation, an inserted one, or one use of a constant."""

    def __init__(self, name, shape, dtype, const=None, scale=None):
        self.name, self.shape, self.dtype, self.const, self.scale = name, tuple(shape), dtype, const, scale
        self.place = ("R",)
        self.alias = None  # tensor id this one is a view of (reshape without a copy)
        self.cslice = None  # constants: (axis, piece per rank) or None (whole)
        self.local, self.stride, self.kind, self.ref = {}, {}, {}, {}
        self.bound = False  # pipeline: a segment's input or output (the executor's slot)

    @property
    def esize(self):
        return DTYPES[self.dtype]

    def nbytes(self, r=None):
        shape = self.shape if r is None else self.local[r]
        return int(np.prod(shape, dtype=np.int64)) * self.esize


class PN:
    """A runner node: op (runner op name), fn, ins/out (tensor ids), ints, floats, table."""

    def __init__(self, op, src, ins, out, fn=0, i=(), f=(), tab=None, relu=0, tabkind=None):
        self.op, self.src, self.ins, self.out = op, src, list(ins), out
        self.fn, self.i, self.f, self.tab, self.relu, self.tabkind = fn, list(i), list(f), tab, relu, tabkind
        self.cost = 0.0   # estimated ns on one rank, this rank's share
        self.comm = 0.0   # estimated ns of its communication
        self.macs = 0


class Plan:
    def __init__(self, g, mode, ranks, rows, nmb, dtype):
        self.g, self.mode, self.ranks, self.rows, self.nmb, self.dtype = g, mode, ranks, rows, nmb, dtype
        self.t, self.ids, self.nodes = [], {}, []
        self.segments = []  # pipeline: dicts first, end, in, out, cost, act_bytes, param_bytes, arena, stash, pop
        self.skips = []  # pipeline: the tensors live across a cut but the chain
        self.notes = []

    def tensor(self, name, shape=None, dtype=None, const=None, scale=None):
        if name in self.ids:
            return self.ids[name]
        gt = self.g.t.get(name)
        pt = PT(name, shape if shape is not None else gt.shape, dtype or (gt.dtype if gt else self.dtype),
                const if const is not None else (gt.const if gt is not None else None),
                scale if scale is not None else (gt.scale if gt is not None else None))
        self.t.append(pt)
        self.ids[name] = len(self.t) - 1
        return self.ids[name]

    def use_const(self, name, axis=None, tag=""):
        """A use of constant `name`, whole or split along axis as torch.chunk over the ranks."""
        key = "%s#%s%s" % (name, "" if axis is None else axis, tag)
        if key in self.ids:
            return self.ids[key]
        gt = self.g.t[name]
        tid = self.tensor(key, gt.shape, gt.dtype, gt.const, gt.scale)
        self.t[tid].cslice = axis
        self.t[tid].place = ("R",) if axis is None else ("S", axis)
        return tid


# ---- cost model (host f32 / int8 kernels, pg_pthread; measured on the development machine) ----

NS_PER_MAC = {"f32": {"conv": 0.2, "linear": 0.35, "matmul": 0.5}, "i8": {"conv": 3.6, "linear": 0.3, "matmul": 0.6}}
NS_PER_ELEM = {"gelu": 8.0, "sigmoid": 6.0, "tanh": 6.0, "softmax": 8.0, "layernorm": 4.0, "lut": 1.0}
NS_ELEM_DEFAULT = 0.6
MSG_NS = 15000.0        # one point-to-point message between ranks (thread wake-up included)
NS_PER_BYTE = 0.5       # copied through a mailbox


def _node_cost(dtype, op, macs, elems):
    if op in NS_PER_MAC[dtype]:
        return macs * NS_PER_MAC[dtype][op]
    return elems * NS_PER_ELEM.get(op, NS_ELEM_DEFAULT)


def _macs(g, n):
    out = g.t[n.out]
    if n.op == "conv":
        w = g.t[n.ins[1]]
        return out.numel * int(np.prod(w.shape[1:]))
    if n.op == "linear":
        return out.numel * g.t[n.ins[1]].shape[1]
    if n.op == "matmul":
        return out.numel * g.t[n.ins[0]].shape[-1]
    return 0


def _comm_ns(nbytes, msgs):
    return msgs * MSG_NS + nbytes * NS_PER_BYTE


# ---- tensor mode ---------------------------------------------------------------------------------


def _groups(a, b):
    """Dim groups of a reshape from shape a to b: [(a0, a1, b0, b1)] with equal products."""
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        i0, j0, pa, pb = i, j, 1, 1
        if i < len(a):
            pa *= a[i]
            i += 1
        if j < len(b):
            pb *= b[j]
            j += 1
        while pa != pb:
            if pa < pb and i < len(a):
                pa *= a[i]
                i += 1
            elif j < len(b):
                pb *= b[j]
                j += 1
            else:
                break
        while i < len(a) and a[i] == 1 and pa == pb and (j >= len(b) or b[j] != 1):
            i += 1
        while j < len(b) and b[j] == 1 and pa == pb and (i >= len(a) or a[i] != 1):
            j += 1
        out.append((i0, i, j0, j))
    return out


def _reshape_shard(a, b, d, p):
    """The output shard dim of a reshape a -> b of a tensor sharded on dim d, or None when
    the ranks' contiguous pieces are not pieces of one output dim."""
    for a0, a1, b0, b1 in _groups(list(a), list(b)):
        if not a0 <= d < a1:
            continue
        if any(a[k] != 1 for k in range(a0, d)):
            return None
        for t in range(b0, b1):
            if b[t] != 1:
                break
        else:
            return None
        ra = int(np.prod(a[d + 1:a1], dtype=np.int64))
        rb = int(np.prod(b[t + 1:b1], dtype=np.int64))
        if not splits(b[t], p):
            return None
        for r in range(p):
            if chunk(a[d], p, r)[0] * ra != chunk(b[t], p, r)[0] * rb:
                return None
        return t
    return None


def _busy(pl):
    return sum(n.cost + n.comm for n in pl.nodes)


def plan_tensor(g, ranks, dtype, shard="auto"):
    """The tensor-mode plan. shard: where the input's split starts, "batch" (Shard(0): every
    sample's work on one rank, no halos; the batch must split over the ranks), "spatial"
    (the first conv's rows, Shard(H), halo exchanges), or "auto": the one with the smaller
    estimated busy time."""
    if shard == "auto":
        cands = [_plan_tensor(g, ranks, dtype, "spatial")]
        if ranks > 1 and splits(g.batch, ranks) and g.batch >= ranks:
            cands.append(_plan_tensor(g, ranks, dtype, "batch"))
        best = min(cands, key=_busy)
        if len(cands) > 1:
            best.notes.append("shard: predicted busy %s; %s chosen" % (
                ", ".join("%s %.2f ms" % (c.shard, _busy(c) / 1e6) for c in cands), best.shard))
        return best
    if shard == "batch" and not (splits(g.batch, ranks) and g.batch >= ranks):
        raise ExportError("--shard batch: a batch of %d does not split over %d ranks" % (g.batch, ranks))
    return _plan_tensor(g, ranks, dtype, shard)


def _plan_tensor(g, ranks, dtype, shard):
    P = ranks
    pl = Plan(g, "tensor", ranks, g.batch, 1, dtype)
    pl.shard = shard
    place = {}
    memo = {}
    base = {}  # a redistributed copy's graph tensor (same shape)

    def pid(name):
        return pl.tensor(name)

    def T(name):
        return g.t[base.get(name, name)]

    def redist(name, target, why):
        if place[name] == target:
            return name
        key = (name, target)
        if key in memo:
            return memo[key]
        new = "%s@%s" % (name, "R" if target == ("R",) else "S%d" % target[1])
        src = pl.t[pid(name)]
        tid = pl.tensor(new, src.shape, src.dtype, scale=src.scale)
        place[new] = target
        base[new] = base.get(name, name)
        pl.t[tid].place = target
        node = PN("redist", why, [pid(name)], tid)
        nb = src.nbytes()
        node.comm = 0.0 if place[name] == ("R",) else _comm_ns(nb * (P - 1) / P, P - 1)
        node.cost = _node_cost(dtype, "copy", 0, src.numel if hasattr(src, "numel") else nb // src.esize) / P
        pl.nodes.append(node)
        memo[key] = new
        return new

    def gather(name, why):
        return redist(name, ("R",), why)

    def sh(name):
        return place[name][1] if place[name][0] == "S" else None

    def share(name, shape=None):
        """The largest rank's part of tensor name's work (rank 0's torch.chunk piece)."""
        d = sh(name)
        if d is None:
            return 1.0
        n = (shape or T(name).shape)[d]
        return chunk(n, P, 0)[0] / n

    first = [n for n in g.nodes if g.input in n.ins]
    place[g.input] = ("R",)
    if shard == "batch" and P > 1:
        place[g.input] = ("S", 0)
    elif len(first) == 1 and first[0].op == "conv" and P > 1:
        oh = g.t[first[0].out].shape[2]
        if oh >= 2 * P and splits(g.t[g.input].shape[2], P) and splits(oh, P):
            place[g.input] = ("S", 2)
    pl.t[pid(g.input)].place = place[g.input]

    for n in g.nodes:
        a, op = n.a, n.op
        out = g.t[n.out]
        rank = len(out.shape)
        x = n.ins[0]
        node = None
        if op == "conv":
            oh, cout = out.shape[2], out.shape[1]
            mode = 0
            if sh(x) is not None and sh(x) not in (0, 2):
                x = gather(x, n.name)
            if sh(x) == 2 and not (splits(oh, P)):
                x = gather(x, n.name)
            if sh(x) == 0:
                mode = 0  # each rank's samples, the whole weight: no communication
            elif sh(x) == 2:
                mode = 1
            elif P > 1 and oh >= 2 * P and splits(T(x).shape[2], P) and splits(oh, P):
                x = redist(x, ("S", 2), n.name)
                mode = 1
            elif P > 1 and splits(cout, P) and n.a["groups"] == 1:
                mode = 2
            wid = pl.use_const(n.ins[1], 0 if mode == 2 else None)
            ins = [pid(x), wid]
            if len(n.ins) > 2:
                ins.append(pl.use_const(n.ins[2], 0 if mode == 2 else None))
            place[n.out] = ("S", 2) if mode == 1 else ("S", 1) if mode == 2 else ("S", 0) if sh(x) == 0 else ("R",)
            node = PN("conv", n.name, ins, pid(n.out), fn=mode, i=list(a["stride"]) + list(a["pad"]) + list(
                a["dil"]) + [a["groups"], mode], relu=a.get("relu", 0))
            node.tab = a.get("mult"), a.get("shift")
            node.tabkind = "qmul" if dtype == "i8" else None
            macs = _macs(g, n)
            node.cost = _node_cost(dtype, "conv", macs * (share(n.out, out.shape) if mode != 2 else 1.0 / P), 0)
            if mode == 1:
                kh = g.t[n.ins[1]].shape[2]
                halo = (kh - 1) * a["dil"][0] * T(x).shape[0] * T(x).shape[1] * T(x).shape[3] * pl.t[
                    pid(x)].esize
                node.comm = _comm_ns(halo, 2)
        elif op in ("maxpool", "avgpool"):
            oh = out.shape[2]
            if sh(x) == 2 and not splits(oh, P):
                x = gather(x, n.name)
            if sh(x) not in (None, 0, 1, 2):
                x = gather(x, n.name)
            place[n.out] = place[x]
            node = PN("pool", n.name, [pid(x)], pid(n.out), fn=0 if op == "maxpool" else 1,
                      i=list(a["kernel"]) + list(a["stride"]) + list(a["pad"]) + list(a["dil"]) + [a["count_pad"]])
            node.cost = _node_cost(dtype, op, 0, out.numel * a["kernel"][0] * a["kernel"][1]) * share(x)
            if sh(x) == 2:
                node.comm = _comm_ns(T(x).shape[0] * T(x).shape[1] * T(x).shape[3] * a["kernel"][0], 2)
        elif op == "mean":
            axes = a["axes"]
            d = sh(x)
            if d is not None and d not in axes and d > axes[-1] and len(out.shape) < len(T(x).shape):
                x = gather(x, n.name)  # a dim after the reduced ones renumbers: keep it simple
                d = None
            reduced = d is not None and d in axes
            place[n.out] = ("R",) if d is None or reduced else ("S", d)
            node = PN("mean", n.name, [pid(x)], pid(n.out), i=[axes[0], axes[-1], 1 if reduced else 0])
            node.cost = _node_cost(dtype, "mean", 0, T(x).numel) * share(x)
            if reduced:
                node.comm = _comm_ns(out.numel * 4 * 2, 2 * (P - 1))
        elif op == "linear":
            nout, k = g.t[n.ins[1]].shape
            d = sh(x)
            last = len(T(x).shape) - 1
            style = 0
            if d == last and splits(k, P):
                style = 2
            elif d is not None and d != last:
                style = 0
            else:
                if d is not None:
                    x = gather(x, n.name)
                if P > 1 and nout % P == 0 and nout // P >= 8:
                    style = 1
            wid = pl.use_const(n.ins[1], 0 if style == 1 else 1 if style == 2 else None)
            ins = [pid(x), wid]
            if len(n.ins) > 2:
                ins.append(pl.use_const(n.ins[2], 0 if style == 1 else None))
            place[n.out] = ("S", rank - 1) if style == 1 else ("R",) if style == 2 or d is None else ("S", d)
            n0 = 0
            node = PN("linear", n.name, ins, pid(n.out), fn=style, i=[n0], relu=a.get("relu", 0))
            node.tab = a.get("mult"), a.get("shift")
            node.tabkind = "qmul" if dtype == "i8" else None
            node.cost = _node_cost(dtype, "linear", _macs(g, n) / (P if style or d is not None else 1), 0)
            if style == 2:
                node.comm = _comm_ns(out.numel * 4 * 2, 2 * (P - 1))
        elif op == "matmul":
            b = n.ins[1]
            da, db = sh(x), sh(b)
            nd = len(out.shape)
            if da is not None and da == db and da < nd - 2:
                o = ("S", da)
            elif da == nd - 2 and db is None:
                o = ("S", da)
            elif da is None and db == nd - 1:
                o = ("S", db)
            else:
                x, b = gather(x, n.name), gather(b, n.name)
                o = ("R",)
            place[n.out] = o
            node = PN("matmul", n.name, [pid(x), pid(b)], pid(n.out))
            node.tab = a.get("mult"), a.get("shift")
            node.tabkind = "qmul" if dtype == "i8" else None
            node.cost = _node_cost(dtype, "matmul", _macs(g, n) / (P if o != ("R",) else 1), 0)
        elif op in ("relu", "clip", "sigmoid", "tanh", "gelu", "fakequant", "lut", "requant", "scalar"):
            place[n.out] = place[x]
            fnmap = {"relu": 0, "clip": 1, "sigmoid": 2, "tanh": 3, "gelu": 4, "fakequant": 5, "lut": 6, "requant": 7}
            if op == "scalar":
                node = PN("scalar", n.name, [pid(x)], pid(n.out),
                          fn=["add", "sub", "mul", "div", "rsub", "rdiv"].index(a["fn"]), f=[a["c"]])
            else:
                f = [a["lo"], a["hi"]] if op == "clip" and dtype == "f32" else [a["scale"]] if op == "fakequant" else []
                i = [a["lo_q"], a["hi_q"]] if op == "clip" and dtype == "i8" else []
                node = PN("unary", n.name, [pid(x)], pid(n.out), fn=fnmap[op], f=f, i=i)
                if op == "lut":
                    node.tab, node.tabkind = a["table"], "i8"
                    node.fn = 6
                elif op == "requant":
                    node.tab, node.tabkind = (a["mult"], a["shift"]), "qmul"
            node.cost = _node_cost(dtype, op if op != "lut" else "lut", 0, out.numel) / (P if sh(x) is not None else 1)
        elif op in ("binary", "add", "mul"):
            b = n.ins[1]
            fn = a.get("fn", op)
            d = sh(x)
            bc = g.t[b].const is not None
            if bc:
                bshape = g.t[b].shape
                bid = pl.use_const(b, d if d is not None and bshape[d] != 1 else None)
            else:
                db = sh(b)
                if db != d:
                    if d is not None and T(b).shape[d] == 1:
                        b = gather(b, n.name) if db is not None else b
                    elif d is not None:
                        b = redist(gather(b, n.name) if db is not None else b, ("S", d), n.name)
                    else:
                        x = redist(x, ("S", db), n.name) if T(x).shape[db] == T(b).shape[db] else x
                        if sh(x) != db:
                            b = gather(b, n.name)
                        d = sh(x)
                bid = pid(b)
            place[n.out] = place[x]
            node = PN("binary", n.name, [pid(x), bid], pid(n.out), fn=["add", "sub", "mul", "div"].index(fn))
            if dtype == "i8":
                node.tab, node.tabkind = (a["mult"], a["shift"]), "qmul"
            node.cost = _node_cost(dtype, "add", 0, out.numel) / (P if d is not None else 1)
        elif op == "softmax":
            axis = a.get("axis", rank - 1)
            if sh(x) == axis:
                x = gather(x, n.name)
            place[n.out] = place[x]
            node = PN("softmax", n.name, [pid(x)], pid(n.out), i=[axis])
            if dtype == "i8":
                node.tab, node.tabkind = a["table"], "i32"
            node.cost = _node_cost(dtype, "softmax", 0, out.numel) / (P if sh(x) is not None else 1)
        elif op == "layernorm":
            axis = a["axis"]
            if sh(x) is not None and sh(x) >= axis:
                x = gather(x, n.name)
            place[n.out] = place[x]
            ins = [pid(x), pl.use_const(n.ins[1]), pl.use_const(n.ins[2])]
            node = PN("layernorm", n.name, ins, pid(n.out), i=[rank - axis], f=[a.get("eps", 0.0)])
            if dtype == "i8":
                e = int(a["epsq"])
                node.tab, node.tabkind = np.array([e & 0xFFFFFFFF, (e >> 32) & 0xFFFFFFFF], np.uint32).view(
                    np.int32), "i32"
            node.cost = _node_cost(dtype, "layernorm", 0, out.numel) / (P if sh(x) is not None else 1)
        elif op == "reshape":
            d = sh(x)
            if d is not None:
                t = _reshape_shard(T(x).shape, out.shape, d, P)
                if t is None:
                    x = gather(x, n.name)
                    place[n.out] = ("R",)
                else:
                    place[n.out] = ("S", t)
            else:
                place[n.out] = ("R",)
            node = PN("reshape", n.name, [pid(x)], pid(n.out), i=[0])
        elif op == "transpose":
            d = sh(x)
            place[n.out] = ("R",) if d is None else ("S", a["perm"].index(d))
            node = PN("transpose", n.name, [pid(x)], pid(n.out), i=list(a["perm"]))
            node.cost = _node_cost(dtype, "copy", 0, out.numel) / (P if d is not None else 1)
        elif op == "concat":
            axis = a["axis"]
            ds = set(sh(i) for i in n.ins)
            ins = list(n.ins)
            if len(ds) != 1 or list(ds)[0] == axis:
                ins = [gather(i, n.name) for i in ins]
            if len(ins) > 8:
                raise ExportError("node '%s' (%s): Concat of %d tensors (the runner takes 8)" % (n.name, n.onnx,
                                                                                                len(ins)))
            place[n.out] = place[ins[0]]
            node = PN("concat", n.name, [pid(i) for i in ins], pid(n.out), i=[axis])
            node.cost = _node_cost(dtype, "copy", 0, out.numel)
        else:
            raise ExportError("node '%s' (%s): the planner has no rule for %s" % (n.name, n.onnx, op))
        node.macs = _macs(g, n) if op in ("conv", "linear", "matmul") else 0
        pl.t[pid(n.out)].place = place[n.out]
        pl.nodes.append(node)
    out = gather(g.output, "output")
    pl.output = pid(out)
    pl.input = pid(g.input)
    for name, p_ in place.items():
        pl.t[pid(name)].place = p_
    _layout_tensor(pl)
    return pl


def _local(pt, r, P):
    shape = list(pt.shape)
    p = pt.place
    if p[0] == "S":
        shape[p[1]] = chunk(shape[p[1]], P, r)[0]
    return shape


def _strides(shape):
    s, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        s[d] = acc
        acc *= shape[d]
    return s


def _const_views(pl):
    P = pl.ranks
    for pt in pl.t:
        if pt.const is None:
            continue
        gs = _strides(pt.shape)
        for r in range(P):
            if pt.cslice is None:
                pt.local[r], pt.ref[r] = list(pt.shape), 0
            else:
                n, off = chunk(pt.shape[pt.cslice], P, r)
                pt.local[r] = list(pt.shape)
                pt.local[r][pt.cslice] = n
                pt.ref[r] = off * gs[pt.cslice]
            pt.stride[r], pt.kind[r] = gs, "const"


def _arena(pl, order, r, bound=(), keep=()):
    """First-fit offsets for the activations of nodes `order` (indices into pl.nodes) on rank
    r; bound tensors live elsewhere, kept ones stay to the end (a pipeline segment's
    stashes). Returns the arena bytes."""
    P = pl.ranks
    nodes = [pl.nodes[k] for k in order]
    root = {}

    def rt(t):
        while pl.t[t].alias is not None:
            t = pl.t[t].alias
        return t
    span = {}
    for step, n in enumerate(nodes):
        if n.op == "reshape" and not n.i[0]:
            pl.t[n.out].alias = n.ins[0]
        for t in n.ins + [n.out]:
            if pl.t[t].const is not None:
                continue
            b = rt(t)
            lo, hi = span.get(b, (step, step))
            span[b] = (min(lo, step), max(hi, step))
    for t in keep:
        b = rt(t)
        if b in span:
            span[b] = (span[b][0], len(nodes))
    if pl.mode == "tensor":
        span[rt(pl.input)] = (-1, span.get(rt(pl.input), (-1, -1))[1])
        b = rt(pl.output)
        span[b] = (span.get(b, (len(nodes), len(nodes)))[0], len(nodes))
    live, end = [], 0
    for b in sorted(span, key=lambda t: (span[t][0], t)):
        if b in bound:
            continue
        lo, hi = span[b]
        size = (pl.t[b].nbytes(r) + 7) // 8 * 8
        live = [x for x in live if x[2] >= lo]
        off = 0
        for o, s, _ in sorted(live):
            if off + size <= o:
                break
            off = max(off, o + s)
        live.append((off, size, hi))
        pl.t[b].kind[r], pl.t[b].ref[r] = "arena", off
        end = max(end, off + size)
    for n in nodes:
        for t in n.ins + [n.out]:
            pt = pl.t[t]
            if pt.const is None and pt.alias is not None:
                pt.kind[r], pt.ref[r] = "alias", pt.alias
    return end


def _layout_tensor(pl):
    P = pl.ranks
    _const_views(pl)
    for pt in pl.t:
        if pt.const is None:
            for r in range(P):
                pt.local[r] = _local(pt, r, P)
                pt.stride[r] = _strides(pt.local[r])
                pt.kind[r], pt.ref[r] = "none", 0
    pl.arena = [_arena(pl, list(range(len(pl.nodes))), r) for r in range(P)]


# ---- pipeline mode -----------------------------------------------------------------------------


def cost_units(ns):
    """A cost in the plan's units (100 ns), at least 1, as pipeline.h's uint32 costs."""
    return int(min(2 ** 32 - 1, max(1, round(ns / 100.0))))


def plan_pipeline(g, ranks, nmb, dtype, balance):
    """One segment per rank, cut at any node boundary: `balance(costs, parts)` partitions the
    nodes' costs (pp_balance_by_cost). A segment hands its last node's output to the next;
    every other activation live across a cut is a skip connection, stashed by the segment
    that computes it (the model input: by segment 0) and popped by each later segment that
    reads it (fairscale's stash / pop, one name per popping segment)."""
    pl = Plan(g, "pipeline", ranks, g.batch, nmb, dtype)
    tp = plan_tensor(g, 1, dtype)  # the same nodes and rules on one rank
    pl.t, pl.ids, pl.nodes, pl.input, pl.output = tp.t, tp.ids, tp.nodes, tp.input, tp.output
    for pt in pl.t:
        pt.kind, pt.ref, pt.alias = {}, {}, None
    N = len(pl.nodes)
    if ranks > N:
        raise ExportError("a pipeline of %d ranks needs %d nodes to cut between; the model has %d: use --ranks %d "
                          "or --parallel tensor" % (ranks, ranks, N, N))
    if pl.nodes[-1].out != pl.output:
        raise ExportError("the model's output is not its last node's: the pipeline cannot end there")
    sizes = balance([cost_units(n.cost + n.comm) for n in pl.nodes], ranks)
    bounds = [0]
    for k in sizes:
        bounds.append(bounds[-1] + k)
    seg_of = {pl.input: 0}
    for s in range(ranks):
        for k in range(bounds[s], bounds[s + 1]):
            seg_of[pl.nodes[k].out] = s
    skips = []  # (tensor, stashing segment, popping segment)
    for s in range(ranks):
        first, end = bounds[s], bounds[s + 1]
        tin = pl.input if s == 0 else pl.nodes[first - 1].out
        for n in pl.nodes[first:end]:
            for t in n.ins:
                if pl.t[t].const is None and seg_of[t] < s and t != tin and (t, seg_of[t], s) not in skips:
                    skips.append((t, seg_of[t], s))
    if len(skips) > 16:
        raise ExportError("the cuts %s leave %d tensors live across stages (the executor carries 16 skip "
                          "connections): use --parallel tensor or fewer ranks" % (bounds[1:-1], len(skips)))
    crossing = set(t for t, _, _ in skips)
    for s in range(ranks):
        crossing.add(pl.nodes[bounds[s + 1] - 1].out)
    for n in pl.nodes:
        if n.op == "reshape" and n.out in crossing:
            n.i[0] = 1  # the executor's slot or a stash: written, not an alias
    _const_views(pl)
    for pt in pl.t:
        if pt.const is None:
            pt.local[0] = list(pt.shape)
            pt.stride[0] = _strides(pt.shape)
            pt.kind[0], pt.ref[0] = "none", 0
    for s in range(ranks):
        first, end = bounds[s], bounds[s + 1]
        tin = pl.input if s == 0 else pl.nodes[first - 1].out
        tout = pl.nodes[end - 1].out
        seg = dict(first=first, end=end, inp=tin, out=tout,
                   cost=sum(n.cost + n.comm for n in pl.nodes[first:end]),
                   act_bytes=pl.t[tout].nbytes(), param_bytes=0,
                   stash=[(t, d) for t, src, d in sorted(skips, key=lambda x: (x[2], x[0])) if src == s],
                   pop=[(t, src) for t, src, d in skips if d == s])
        params = set()
        for n in pl.nodes[first:end]:
            for t in n.ins:
                if pl.t[t].const is not None:
                    params.add(t)
        seg["param_bytes"] = sum(pl.t[t].nbytes() for t in params)
        seg["cost_units"] = cost_units(seg["cost"])
        seg["arena"] = _arena(pl, list(range(first, end)), 0, bound=[tin, tout] + [t for t, _ in seg["pop"]],
                              keep=[t for t, _ in seg["stash"]])
        for t in [tin, tout] + [t for t, _ in seg["pop"]]:
            if pl.t[t].kind.get(0) in (None, "none"):
                pl.t[t].kind[0], pl.t[t].ref[0] = "none", 0
        pl.segments.append(seg)
    pl.skips = [dict(tensor=pl.t[t].name, src=a, dst=b, bytes=pl.t[t].nbytes()) for t, a, b in skips]
    pl.notes.append("cut at any node boundary (nodes balanced by pp_balance_by_cost: %s per rank); %s" % (
        list(sizes), "%d skip connection%s cross stages, %d B per microbatch" % (
            len(skips), "" if len(skips) == 1 else "s", sum(x["bytes"] for x in pl.skips)) if skips else
        "no tensor but the chain crosses a cut"))
    return pl
