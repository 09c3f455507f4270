#!/usr/bin/env python3
"""dtensor_graph.h's dt_graph_analyze against torch _spmd's batch-dim analysis.

torch 2.1-2.2's torch/distributed/_spmd (data_parallel.py build_data_parallel_strategies
with batch_dim_utils.py BatchDimAnalyzer, "replicate" mode) is re-derived here in plain
Python on random train-step graphs (no PyTorch code is copied; Debian's torch 1.13 has no
_spmd). What it follows:
  - placeholders: parameters PARAM (Replicate), activations ACT with batch dim 0, the first
    one's dim-0 size the batch size (init_batch_dim_size), whatever the others' sizes;
  - the gradients: from each optimizer op's gradient operand (where tag_grad sits) back
    through non_compute_ops (clone, detach, ones_like, reshape, t, view, tag_grad,
    getitem) to the first compute op, all GRAD (Partial);
  - forward: a non-compute op takes its operand's type (ACT: its batch dim computed); a
    compute op pre-filled GRAD stays so; with a GRAD operand its other operands' one type
    (PARAM); PARAM operands with an ACT one: ACT; PARAM operands only: its first operand's
    type; otherwise ACT;
  - compute_batch_dim of an ACT node: an op of dim_rule_map (squeeze, view, reshape,
    _unsafe_view, unsqueeze, expand, permute, repeat, transpose.int: not t) follows
    _tensor/ops/view_ops.py's dim map (view_groups, dim_squeeze, dim_unsqueeze, expand,
    permute, dim_transpose: the first output dim whose input dims hold the operand's batch
    dim, which also sets the tracked batch size to that dim's size); else the first dim of
    the tracked batch size; else a factory is Replicate (-1); else the last operand with a
    batch dim decides: < 0 kept, a 0-d output keeps it (full reduction), otherwise Partial
    (-2); get_batch_dim of an operand without one, or no batch size yet, raises.
splitcore's graph ops map to aten as traced: view/reshape/flatten -> aten.view /
aten.reshape (flatten is the view it decomposes to), transpose -> aten.transpose.int, t ->
aten.t, linear -> t + addmm (one compute op for the analysis), full -> a factory, sgd ->
the optimizer's add_(param, grad) with tag_grad on the grad. Each graph goes to dt_driver
"graph"; every node's type and placement (and an ACT node's batch dim) must be torch's, and
a graph torch raises on must fail. Exit 0 when there is no mismatch.
"""
import sys

import dt_drive

ACT, PARAM, GRAD = 0, 1, 2
DIM_ALL = -(1 << 31)  # DT_DIM_ALL
NONCOMPUTE = {"view", "reshape", "flatten", "t", "ones_like"}  # as aten: view, reshape, view, t, ones_like
DIM_RULE = {"view", "reshape", "flatten", "squeeze", "unsqueeze", "expand", "permute", "transpose"}
LEAVES = {"input", "param", "full"}


class Raise(Exception):
    """torch raises: the analysis must fail in splitcore too."""


# ---- view_ops.py's dim maps: for each output dim, the input dims it reads --------------------

def take(sizes, i, group):
    """The size at index i of sizes (1 past the end) with i appended to group; the next index."""
    if i >= len(sizes):
        return 1, i
    group.append(i)
    return sizes[i], i + 1


def view_groups(frm, to):
    """view_groups: per output dim the set of input dims (Flatten / Split inputs)."""
    res = []
    fi = ti = 0
    while fi < len(frm) or ti < len(to):
        fg, tg = [], []
        f, fi = take(frm, fi, fg)
        t, ti = take(to, ti, tg)
        if f == 1 and t != 1:
            ti -= 1
            tg = []
        elif f != 1 and t == 1:
            fi -= 1
            fg = []
        else:
            while f != t:
                if f < t:
                    s, fi = take(frm, fi, fg)
                    f *= s
                else:
                    s, ti = take(to, ti, tg)
                    t *= s
        flat = {d for d in fg if frm[d] > 1}  # Flatten.new: size-1 dims dropped
        for j in tg:
            # Split.new: a piece is the flattened dims; a size-1 piece of several a Singleton
            res.append(set() if len(tg) > 1 and to[j] == 1 else set(flat))
    return res


def dim_map(op, attrs, xshape, oshape):
    n = len(xshape)
    if op in ("view", "reshape", "flatten"):
        return view_groups(xshape, oshape)
    if op == "squeeze":
        dim = None if attrs["dim"] == DIM_ALL else attrs["dim"] % n
        return [{i} for i, s in enumerate(xshape) if s > 1 or (dim is not None and i != dim)]
    if op == "unsqueeze":
        d = attrs["dim"] + n + 1 if attrs["dim"] < 0 else attrs["dim"]
        dims = [{i} for i in range(n)]
        return dims[:d] + [set()] + dims[d:]
    if op == "expand":
        pad = len(oshape) - n
        return [set() if i < pad else {i - pad} for i in range(len(oshape))]  # Broadcast keeps its input
    if op == "permute":
        return [{p % n} for p in attrs["shape"][:n]]
    if op == "transpose":
        m = [{i} for i in range(n)]
        a, b = attrs["dim"] % n, attrs["dim2"] % n
        m[a], m[b] = m[b], m[a]
        return m
    raise AssertionError(op)


# ---- the analysis --------------------------------------------------------------------------------

def analyze(nodes):
    """nodes: [(op, ins, attrs, shape)]. Returns [(type, bd)] (bd None for PARAM / GRAD)."""
    types, bd = [None] * len(nodes), {}
    state = {"bsize": -1}
    for i in reversed(range(len(nodes))):  # tag_grad on each optimizer op's gradient
        if nodes[i][0] != "sgd":
            continue
        j = nodes[i][1][1]
        types[j] = GRAD
        while nodes[j][0] in NONCOMPUTE:
            j = nodes[j][1][0]
            types[j] = GRAD

    def batch_dim(i):
        if i in bd:
            return bd[i]
        if state["bsize"] == -1:
            raise Raise("batch dim size is not initialized")
        op, ins, attrs, shape = nodes[i]
        if op in DIM_RULE:
            if ins[0] not in bd:
                raise Raise("batch dim analysis failed on an operand")
            obd = bd[ins[0]]
            for od, ids in enumerate(dim_map(op, attrs, nodes[ins[0]][3], shape)):
                if obd in ids:
                    bd[i] = od
                    state["bsize"] = shape[od]
                    return od
        for d, s in enumerate(shape):
            if s == state["bsize"]:
                bd[i] = d
                return d
        if not ins:
            bd[i] = -1
            return -1
        obd = -1
        for x in ins:
            if x in bd:
                obd = bd[x]
        bd[i] = obd if obd < 0 or len(shape) == 0 else -2
        return bd[i]

    for i, (op, ins, attrs, shape) in enumerate(nodes):
        if op == "input":
            if state["bsize"] == -1:
                state["bsize"] = shape[0]
            bd[i] = 0
            types[i] = ACT
        elif op == "param":
            types[i] = PARAM
        elif op in NONCOMPUTE:
            types[i] = types[ins[0]]
            if types[i] == ACT:
                batch_dim(ins[0])
                batch_dim(i)
        elif types[i] == GRAD:
            pass
        else:
            its = [types[x] for x in ins]
            if GRAD in its:
                rest = [t for t in its if t != GRAD]
                if not rest or any(t != rest[0] for t in rest) or rest[0] != PARAM:
                    raise Raise("a gradient with something other than parameters")
                types[i] = PARAM
            elif PARAM in its:
                types[i] = ACT if ACT in its else types[ins[0]]
                if types[i] == ACT:
                    batch_dim(i)
            else:
                types[i] = ACT
                batch_dim(i)
    return [(t, bd.get(i) if t == ACT else None) for i, t in enumerate(types)]


# ---- random graphs ------------------------------------------------------------------------------

def numel(s):
    n = 1
    for d in s:
        n *= d
    return n


class Graph:
    def __init__(self, rng):
        self.rng = rng
        self.nodes = []

    def add(self, op, ins, out, **attrs):
        """Append op(ins) of output shape out; attrs: dt_op_attrs' dim, dim2, keepdim, ndim, shape."""
        a = {"dim": 0, "dim2": 0, "keepdim": 0, "shape": [], "scalar": 0.0}
        a.update(attrs)
        self.nodes.append((op, list(ins), a, list(out)))
        return len(self.nodes) - 1

    def shape(self, i):
        return self.nodes[i][3]

    def pick(self, pred=lambda s: True):
        c = [i for i, n in enumerate(self.nodes) if pred(n[3])]
        return self.rng.choice(c) if c else None


def factor_split(rng, n):
    """A random list of sizes whose product is n."""
    out = []
    while n > 1 and rng.random() < 0.7:
        ds = [d for d in range(2, n + 1) if n % d == 0]
        d = rng.choice(ds)
        out.append(d)
        n //= d
    if n > 1 or not out:
        out.append(n)
    if rng.random() < 0.2:
        out.insert(rng.randrange(len(out) + 1), 1)
    rng.shuffle(out)
    return out


def random_op(g):
    rng = g.rng
    k = rng.random()
    nd = lambda s: len(s)  # noqa: E731
    if k < 0.10:  # mm
        a = g.pick(lambda s: nd(s) == 2)
        if a is None:
            return
        m, kk = g.shape(a)
        b = g.pick(lambda s: nd(s) == 2 and s[0] == kk)
        if b is None:
            b = g.add("param", [], [kk, rng.randint(1, 6)], ndim=2)
        g.add("mm", [a, b], [m, g.shape(b)[1]])
    elif k < 0.14:  # addmm / linear with fresh parameters
        a = g.pick(lambda s: nd(s) == 2)
        if a is None:
            return
        m, kk = g.shape(a)
        n = rng.randint(1, 6)
        if rng.random() < 0.5:
            w = g.add("param", [], [n, kk])
            b = g.add("param", [], [n])
            g.add("linear", [a, w, b] if rng.random() < 0.7 else [a, w], [m, n])
        else:
            w = g.add("param", [], [kk, n])
            b = g.add("param", [], rng.choice([[n], [1, n], [m, n]]))
            g.add("addmm", [b, a, w], [m, n])
    elif k < 0.26:  # unary pointwise
        a = g.pick()
        op = rng.choice(["neg", "relu", "exp", "tanh", "sigmoid", "mul.Scalar", "add.Scalar"])
        g.add(op, [a], g.shape(a), scalar=0.5)
    elif k < 0.34:  # binary pointwise of one shape
        a = g.pick()
        same = [i for i, n in enumerate(g.nodes) if n[3] == g.shape(a)]
        b = rng.choice(same)
        op = rng.choice(["add", "sub", "mul", "div", "threshold_backward", "sigmoid_backward"])
        g.add(op, [a, b], g.shape(a))
    elif k < 0.42:  # sum / mean
        a = g.pick(lambda s: nd(s) >= 1)
        if a is None:
            return
        s = g.shape(a)
        op = rng.choice(["sum", "mean"])
        if rng.random() < 0.3:
            keep = rng.random() < 0.3
            g.add(op, [a], [1] * len(s) if keep else [], dim=DIM_ALL, keepdim=int(keep))
        else:
            d = rng.randrange(len(s))
            keep = rng.random() < 0.5
            o = list(s)
            if keep:
                o[d] = 1
            else:
                del o[d]
            g.add(op, [a], o, dim=d - (len(s) if rng.random() < 0.3 else 0), keepdim=int(keep))
    elif k < 0.52:  # view / reshape
        a = g.pick(lambda s: nd(s) >= 1)
        if a is None:
            return
        o = factor_split(rng, numel(g.shape(a)))[:6]
        if numel(o) != numel(g.shape(a)):
            return
        g.add(rng.choice(["view", "reshape"]), [a], o, ndim=len(o), shape=o)
    elif k < 0.57:  # flatten
        a = g.pick(lambda s: nd(s) >= 2)
        if a is None:
            return
        s = g.shape(a)
        d = rng.randrange(len(s))
        e = rng.randrange(d, len(s))
        g.add("flatten", [a], s[:d] + [numel(s[d:e + 1])] + s[e + 1:], dim=d, dim2=e)
    elif k < 0.66:  # t / transpose
        if rng.random() < 0.5:
            a = g.pick(lambda s: nd(s) <= 2)
            if a is None:
                return
            s = g.shape(a)
            g.add("t", [a], s[::-1])
        else:
            a = g.pick(lambda s: nd(s) >= 1)
            if a is None:
                return
            s = list(g.shape(a))
            d1, d2 = rng.randrange(len(s)), rng.randrange(len(s))
            s[d1], s[d2] = s[d2], s[d1]
            g.add("transpose", [a], s, dim=d1, dim2=d2)
    elif k < 0.71:  # permute
        a = g.pick(lambda s: nd(s) >= 1)
        if a is None:
            return
        s = g.shape(a)
        p = list(range(len(s)))
        rng.shuffle(p)
        g.add("permute", [a], [s[i] for i in p], ndim=len(p), shape=p)
    elif k < 0.78:  # squeeze / unsqueeze
        a = g.pick(lambda s: nd(s) >= 1)
        if a is None:
            return
        s = g.shape(a)
        if rng.random() < 0.5 and len(s) < 6:
            d = rng.randrange(len(s) + 1)
            g.add("unsqueeze", [a], s[:d] + [1] + s[d:], dim=d)
        elif rng.random() < 0.5:
            g.add("squeeze", [a], [x for x in s if x != 1], dim=DIM_ALL)
        else:
            d = rng.randrange(len(s))
            g.add("squeeze", [a], [x for i, x in enumerate(s) if i != d or x != 1], dim=d)
    elif k < 0.83:  # expand a size-1 dim (or add leading dims)
        a = g.pick(lambda s: 1 in s or len(s) < 3)
        if a is None:
            return
        s = g.shape(a)
        lead = [rng.randint(1, 6) for _ in range(rng.randint(0, 2 if len(s) < 4 else 0))]
        o = lead + [rng.randint(1, 6) if x == 1 else x for x in s]
        g.add("expand", [a], o, ndim=len(o), shape=o)
    elif k < 0.87:  # ones_like
        a = g.pick()
        g.add("ones_like", [a], g.shape(a))
    elif k < 0.90:  # a factory
        s = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
        g.add("full", [], s, ndim=len(s), shape=s, scalar=1.0)
    else:  # an mm contracting over the batch (a weight gradient), maybe through t
        a = g.pick(lambda s: nd(s) == 2)
        if a is None:
            return
        b = g.pick(lambda s: nd(s) == 2 and s[0] == g.shape(a)[0])
        ta = g.add("t", [a], g.shape(a)[::-1]) if rng.random() < 0.5 else \
            g.add("transpose", [a], g.shape(a)[::-1], dim=0, dim2=1)
        g.add("mm", [ta, b], [g.shape(a)[1], g.shape(b)[1]])


def gen_graph(rng):
    g = Graph(rng)
    B = rng.randint(1, 6)
    nin = rng.choice([0, 1, 1, 1, 2, 2, 3])
    if nin == 0 and rng.random() < 0.5:  # parameters only, or a factory with no batch size
        g.add("full", [], [2, B], ndim=2, shape=[2, B], scalar=1.0)
    for i in range(nin):
        s = [B if i == 0 or rng.random() < 0.7 else rng.randint(1, 8)] + \
            [rng.randint(1, 6) for _ in range(rng.choice([0, 1, 1, 1, 2, 3]))]
        g.add("input", [], s, ndim=len(s), shape=s)
    for _ in range(rng.randint(0 if g.nodes else 1, 3)):
        s = [rng.randint(1, 6) for _ in range(rng.randint(1, 2))]
        g.add("param", [], s, ndim=len(s), shape=s)
    for _ in range(rng.randint(2, 30)):
        if g.nodes:
            random_op(g)
    # optimizer steps: sgd(param, a node of its shape), maybe through t / transpose / view
    params = [i for i, n in enumerate(g.nodes) if n[0] == "param"]
    for p in params:
        if rng.random() < 0.5:
            continue
        s = g.shape(p)
        c = [i for i, n in enumerate(g.nodes) if i != p and n[0] != "sgd" and
             (n[3] == s or (len(s) == 2 and n[3] == s[::-1]) or numel(n[3]) == numel(s))]
        if not c:
            continue
        x = rng.choice(c)
        if g.shape(x) != s:
            if len(s) == 2 and g.shape(x) == s[::-1] and rng.random() < 0.7:
                x = g.add("t", [x], s) if rng.random() < 0.5 else g.add("transpose", [x], s, dim=0, dim2=1)
            else:
                x = g.add(rng.choice(["view", "reshape"]), [x], s, ndim=len(s), shape=s)
        g.add("sgd", [p, x], s, scalar=0.1)
    # the leaves' shapes travel as attrs
    fixed = []
    for op, ins, a, s in g.nodes:
        if op in LEAVES:
            a["ndim"], a["shape"] = len(s), list(s)
        fixed.append((op, ins, a, s))
    g.nodes = fixed
    return g.nodes


def fmt(nodes):
    out = ["graph %d" % len(nodes)]
    for op, ins, a, s in nodes:
        shp = a.get("shape", [])
        out.append("%s %d %s %d %d %d %d %s 0" % (op, len(ins), " ".join(map(str, ins)), a["dim"], a["dim2"],
                                                   a["keepdim"], a.get("ndim", 0), " ".join(map(str, shp))))
    return " ".join(out)


def main():
    a, seed, rng = dt_drive.options(__doc__, 3000)
    graphs = [gen_graph(rng) for _ in range(a.cases)]
    answers = dt_drive.ask(a.driver, [fmt(g) for g in graphs], "batch_dims")
    bad = raised = nodes_checked = unequal = t_by_size = transpose_grad = 0
    for nodes, ans in zip(graphs, answers):
        f = [int(v) for v in ans.split()]
        try:
            want = analyze(nodes)
        except Raise:
            want = None
        if want is not None:  # how often the cases exercise torch's rules where splitcore differed before
            unequal += len({n[3][0] for n in nodes if n[0] == "input"}) > 1
            t_by_size += sum(n[0] == "t" and len(n[3]) == 2 and w[0] == ACT and want[n[1][0]][1] in (0, 1) and
                             w[1] != 1 - want[n[1][0]][1] for n, w in zip(nodes, want))
            transpose_grad += sum(n[0] == "transpose" and w[0] == GRAD for n, w in zip(nodes, want))
        if want is None:
            raised += 1
            ok = f[0] != 0
        else:
            got = [(f[1 + 3 * i], f[2 + 3 * i], f[3 + 3 * i]) for i in range(len(nodes))] if f[0] == 0 else None
            ok = got is not None and all(
                gt == t and (t != ACT or (gb == b and gp == b)) and
                (t == ACT or gp == (-1 if t == PARAM else -2)) for (t, b), (gt, gb, gp) in zip(want, got))
            nodes_checked += len(nodes)
        if not ok:
            bad += 1
            if bad <= 5:
                print("MISMATCH: %s\n  splitcore %s\n  torch     %s" % (fmt(nodes), ans, want))
    print("batch_dims: seed %d: %d graphs (%d nodes; %d that torch's analysis raises on), %d mismatches with "
          "torch's types, batch dims and placements; among them %d graphs with inputs of different batch sizes, "
          "%d aten.t nodes whose batch dim a transpose rule would move elsewhere, %d aten.transpose.int gradients"
          % (seed, len(graphs), nodes_checked, raised, bad, unequal, t_by_size, transpose_grad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
