#!/usr/bin/env python3
"""dtensor_ops.h's strategy choice for mm, bmm, addmm and linear against PyTorch DTensor's.

Debian's torch 1.13 has no DTensor, so PyTorch's rules are re-derived here in plain Python
(no PyTorch code is copied; each function names what it follows, in
torch/distributed/tensor/, PyTorch main of late 2025; _matrix_ops.py as at pytorch/pytorch@012bff71,
where aten.mm is still registered with _mm_like_strategy, not the single-dim strategy later main uses):
  - _ops/_einsum_strategy.py gen_einsum_strategies: per mesh dim [all Replicate] + batch
    dims + contracting dims (output Partial(sum)) + lhs-only + rhs-only dims, in sorted
    order of the einsum letters, combined by itertools.product over mesh dims;
  - _ops/_matrix_ops.py _mm_like_strategy / _addmm_like_strategy: is_tensor_shardable on
    the two matrices, the bias following the output through infer_broadcast_dims_map and
    map_placements_after_broadcast, redistribute costs per input in argument order
    (addmm: self, mat1, mat2); linear is what aten::linear decomposes to for a 2-D input:
    addmm(bias, x, w.t()) or mm(x, w.t()), w.t()'s placements from transpose_strategy;
  - _collective_utils.py redistribute_cost: comm_bytes_gb = bytes / num_shards / 1024^3,
    the steps of _redistribute.py _gen_transform_infos, each step's cost by
    _compute_placement_transition_cost with allgather_cost / allreduce_cost /
    reduce_scatter_cost, MeshTopoInfo of one host (0.6 us a hop, 87.7 GB/s: a mesh within
    num_devices_per_host; DT_LINK_TORCH's figures), all in Python floats;
  - _sharding_prop.py _select_min_cost_strategy: the sum of an OpSpec's costs; a strategy of
    cost 0 that needs no redistribution (the last such), else the first of cost 0, else the
    first of minimum cost.
Each case goes to dt_driver (tests/torch/dt_driver.c) "prop" and must give PyTorch's chosen
input and output placements and, bit for bit, its cost (a float in us); its index and count
are among the strategies dt_propagate keeps (it drops those PyTorch costs as inf, which
PyTorch never picks while a finite one exists: R,R -> R always is). The summary also counts
the cases where costs in whole ns (the old model) or exact rational arithmetic would choose
differently from PyTorch's floats. Exit 0 when there is no mismatch.
"""
import itertools
import sys
from fractions import Fraction

import dt_drive

MM, ADDMM, BMM, LINEAR = "mm", "addmm", "bmm", "linear"  # dt_op_name


def R():
    return ("R",)


def S(dim):
    return ("S", dim)


def P(op=0):
    return ("P", op)


def is_r(p):
    return p[0] == "R"


def is_s(p):
    return p[0] == "S"


def is_p(p):
    return p[0] == "P"


# ---- torch's cost model -------------------------------------------------------------------

def num_shards(mesh, pl):
    n = 1
    for i, p in enumerate(pl):
        if is_s(p):
            n *= mesh[i]
    return n


def gen_transform_infos(mesh, src, dst):
    """_gen_transform_infos_non_cached: the (mesh_dim, current, target) steps."""
    if len(mesh) == 1:
        return [(0, src[0], dst[0])]
    steps = []
    cur = list(src)
    if num_shards(mesh, src) > 1:
        for md in reversed(range(len(cur))):
            c, t = cur[md], dst[md]
            if is_s(t):
                cs = [i for i in range(md) if is_s(cur[i]) and cur[i][1] == t[1]]
                ts = [i for i in range(md) if is_s(dst[i]) and dst[i][1] == t[1]]
                if cs != ts:
                    t = R()
            if c != t:
                steps.append((md, c, t))
                cur[md] = t
    for md in range(len(cur)):
        if cur[md] != dst[md]:
            steps.append((md, cur[md], dst[md]))
            cur[md] = dst[md]
    return steps


def ring_cost(gb, n, hops, num):
    """allgather_cost / allreduce_cost / reduce_scatter_cost (one host: 0.6 us, 87.7 GB/s)."""
    if num is Fraction:
        return Fraction(66, 10) + hops * Fraction(6, 10) + gb * hops / n / Fraction(877, 10) * 10 ** 6
    latency = 6.6 + hops * 0.6
    bw = (gb * hops / n) / 87.7
    return latency + bw * 1e6


def transition_cost(c, t, n, gb, num):
    """_compute_placement_transition_cost -> (cost, comm_bytes_gb)."""
    if c == t:
        return num(0), gb
    if is_s(c) and is_r(t):
        gb *= n
        return ring_cost(gb, n, n - 1, num), gb
    if is_s(c) and is_s(t):
        return ring_cost(gb, n, n - 1, num) + num(1), gb
    if is_p(c) and is_r(t):
        return ring_cost(gb, n, 2 * (n - 1), num), gb
    if is_p(c) and is_s(t):
        cost = ring_cost(gb, n, n - 1, num)
        return cost, gb / n
    if is_s(c) and is_p(t):
        return None, gb
    if is_p(c) and is_p(t):
        return None, gb
    if is_r(c) and is_s(t):
        return num(0), gb / n
    return num(0), gb


def redistribute_cost(mesh, shape, cur, dst, num=float):
    """redistribute_cost in us (None: torch's inf). num: float (torch) or Fraction (exact)."""
    if all(is_r(p) for p in cur):
        return num(0)
    if tuple(cur) == tuple(dst):
        return num(0)
    nbytes = 4
    for d in shape:
        nbytes *= d
    gb = num(nbytes) / num_shards(mesh, cur) / 1024 / 1024 / 1024
    cost = num(0)
    for md, c, t in gen_transform_infos(mesh, cur, dst):
        step, gb = transition_cost(c, t, mesh[md], gb, num)
        if step is None:
            return None
        cost += step
    return cost


# ---- torch's strategies ----------------------------------------------------------------------

def einsum_options(eq):
    """gen_einsum_strategies' list over one mesh dim: [out, in0, in1] placements."""
    ins, out = eq.split("->")
    ins = ins.split(",")
    letters = sorted(set("".join(ins)))
    batch = [c for c in letters if c in out and all(c in i for i in ins)]
    contract = [c for c in letters if c not in out]
    lhs = [c for c in letters if c in out and c not in batch and c in ins[0]]
    rhs = [c for c in letters if c in out and c not in batch and c in ins[1]]
    opts = [[R(), R(), R()]]
    for c in batch:
        opts.append([S(out.index(c))] + [S(i.index(c)) for i in ins])
    for c in contract:
        opts.append([P(0)] + [S(i.index(c)) for i in ins])
    for c in lhs:
        opts.append([S(out.index(c)), S(ins[0].index(c)), R()])
    for c in rhs:
        opts.append([S(out.index(c)), R(), S(ins[1].index(c))])
    return opts


def is_tensor_shardable(mesh, shape, pl):
    shards = [1] * len(shape)
    for i, p in enumerate(pl):
        if is_s(p):
            if p[1] >= len(shape):
                return False
            shards[p[1]] *= mesh[i]
    return all(not (k > 1 and d < k) for d, k in zip(shape, shards))


def broadcast_placements(out_pl, out_shape, bias_shape):
    """infer_broadcast_dims_map + map_placements_after_broadcast."""
    nd, bd = len(out_shape), len(bias_shape)
    bmap = [-1] * nd
    for idx in range(-1, -1 - bd, -1):
        if bias_shape[idx] == out_shape[idx]:
            bmap[nd + idx] = bd + idx
    res = []
    for p in out_pl:
        if is_s(p):
            res.append(S(bmap[p[1]]) if bmap[p[1]] != -1 else R())
        else:
            res.append(p)
    return res


def torch_choice(mesh, op, args, num=float, whole_ns=False):
    """args: [(shape, placements)] in dt_propagate's order. Returns (index among the
    strategies dt_propagate keeps, cost, out placements, [input placements in dt_propagate's
    order], how many it keeps). num=Fraction: exact arithmetic instead of torch's floats;
    whole_ns: every input's cost truncated to whole ns (the old cost model's resolution)."""
    if op in (MM, ADDMM, LINEAR):
        eq = "mk,kn->mn"
    else:
        eq = "bmk,bkn->bmn"
    if op == LINEAR:  # addmm(bias, x, w.t()) / mm(x, w.t())
        (xs, xp), (ws, wp) = args[0], args[1]
        wts, wtp = [ws[1], ws[0]], [S(1 - p[1]) if is_s(p) else p for p in wp]
        mats = [(xs, xp), (wts, wtp)]
        bias = args[2] if len(args) == 3 else None
    elif op == ADDMM:
        bias, mats = args[0], [args[1], args[2]]
    else:
        bias, mats = None, list(args)
    out_shape = mats[0][0][:-1] + [mats[1][0][-1]]
    opts = einsum_options(eq)
    strategies = []
    for comb in itertools.product(opts, repeat=len(mesh)):
        out = [c[0] for c in comb]
        targets = [[c[1] for c in comb], [c[2] for c in comb]]
        if not (is_tensor_shardable(mesh, mats[0][0], targets[0]) and
                is_tensor_shardable(mesh, mats[1][0], targets[1])):
            continue
        specs = list(zip(mats, targets))
        if bias is not None:
            specs = [(bias, broadcast_placements(out, out_shape, bias[0]))] + specs
        costs = [redistribute_cost(mesh, a[0], a[1], t, num) for a, t in specs]
        if whole_ns:
            costs = [None if c is None else float(int(c * 1000)) for c in costs]
        strategies.append((out, specs, costs))
    # _select_min_cost_strategy
    sums, noredist, zero = [], -1, -1
    for i, (out, specs, costs) in enumerate(strategies):
        total = None if any(c is None for c in costs) else sum(costs)
        sums.append(total)
        if total == 0:
            if all(tuple(a[1]) == tuple(t) for a, t in specs):
                noredist = i
            elif zero == -1:
                zero = i
    if noredist != -1:
        pick = noredist
    elif zero != -1:
        pick = zero
    else:
        finite = [(c, i) for i, c in enumerate(sums) if c is not None]
        pick = min(finite)[1]
    out, specs, _ = strategies[pick]
    targets = [t for _, t in specs]
    if op == LINEAR:
        b = [targets[0]] if bias is not None else []
        xt, wtt = targets[-2], targets[-1]
        wt = [S(1 - p[1]) if is_s(p) else p for p in wtt]
        ins = [xt, wt] + b
    elif op == ADDMM:
        ins = targets
    else:
        ins = targets
    # the index among the strategies dt_propagate keeps (torch keeps those with an inf cost)
    kept = [i for i, c in enumerate(sums) if c is not None]
    return kept.index(pick), sums[pick], out, ins, len(kept)


# ---- cases -----------------------------------------------------------------------------------

def rand_placement(rng, ndim, partial=True):
    r = rng.random()
    if r < 0.35:
        return R()
    if r < 0.85 or not partial:
        return S(rng.randrange(ndim))
    return P(rng.choice([0, 0, 0, 1, 2, 3]))


def gen_case(rng):
    mesh = rng.choice([[2], [3], [4], [8], [1], [2, 2], [2, 3], [4, 2], [1, 4], [2, 2, 2]])
    op = rng.choice([MM, MM, ADDMM, BMM, LINEAR, LINEAR])
    big = rng.random() < 0.3
    dim = (lambda: rng.choice([rng.randint(1, 9), rng.randint(1, 64), rng.randint(1000, 5000)])) if big else \
        (lambda: rng.randint(1, 9))
    m, k, n, b = dim(), dim(), dim(), rng.randint(1, 6)
    if op == BMM:
        shapes = [[b, m, k], [b, k, n]]
    elif op == LINEAR:
        shapes = [[m, k], [n, k]]
        if rng.random() < 0.5:
            shapes.append([n])
    else:
        shapes = [[m, k], [k, n]]
        if op == ADDMM:  # self broadcast to the (m, n) output
            shapes.insert(0, rng.choice([[n], [1, n], [m, n], [m, 1]]))
    return mesh, op, [(sh, [rand_placement(rng, len(sh)) for _ in mesh]) for sh in shapes]


def fmt_pl(pl):
    return " ".join(" ".join(map(str, p)) for p in pl)


def parse_pl(tok, nd):
    res = []
    while len(res) < nd:
        t = tok.pop(0)
        res.append((t,) if t == "R" else (t, int(tok.pop(0))))
    return res


def main():
    a, seed, rng = dt_drive.options(__doc__, 4000)
    cases = [([2], MM, [([2, 2], [S(0)]), ([2, 7], [S(1)])])]  # gathers 8 B apart
    cases += [gen_case(rng) for _ in range(a.cases - 1)]
    answers = dt_drive.ask(a.driver, ["prop %s %d %s %d %s" % (
        op, len(mesh), " ".join(map(str, mesh)), len(args),
        " ".join("%d %s %s" % (len(sh), " ".join(map(str, sh)), fmt_pl(pl)) for sh, pl in args))
        for mesh, op, args in cases], "dt_strategies")
    bad = whole_ns_differs = exact_differs = 0
    for (mesh, op, args), ans in zip(cases, answers):
        tok = ans.split()
        idx, cost, tout, tins, count = torch_choice(mesh, op, args)
        if tok[0] != "0":
            bad += 1
            print("MISMATCH %s %s %r: rc %s, torch picks %r <- %r" % (mesh, op, args, tok[0], tout, tins))
            continue
        gidx, gcount, gcost = int(tok[1]), int(tok[2]), float.fromhex(tok[3])
        rest = tok[4:]
        gout = parse_pl(rest, len(mesh))
        gins = [parse_pl(rest, len(mesh)) for _ in args]
        if (gidx, gcount, gcost, gout, gins) != (idx, count, cost, tout, tins):
            bad += 1
            if bad <= 10:
                print("MISMATCH mesh %s %s %r:\n  splitcore %d/%d %r %r <- %r\n  torch     %d/%d %r %r <- %r" % (
                    mesh, op, args, gidx, gcount, gcost, gout, gins, idx, count, cost, tout, tins))
        # how the choice would differ with whole-ns costs or exact (rational) arithmetic
        e = torch_choice(mesh, op, args, num=Fraction)
        exact_differs += (e[2], e[3]) != (tout, tins)
        w = torch_choice(mesh, op, args, whole_ns=True)
        whole_ns_differs += (w[2], w[3]) != (tout, tins)
    print("dt_strategies: seed %d: %d cases (mm, addmm, bmm, linear on 1-3-D meshes), %d mismatches with "
          "PyTorch's choice and cost; whole-ns costs would choose differently in %d, exact rational "
          "arithmetic in %d" % (seed, len(cases), bad, whole_ns_differs, exact_differs))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
