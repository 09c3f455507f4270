"""numpy runs of the exported graph: f32 (the calibration of int8 scales, and a check of the
graph against the ONNX model) and int8 with the exact integer arithmetic of the C kernels
(dtensor_quant.h's requantization, dtensor_qconv.h's conv, the int8 add / mul / LUT /
softmax / LayerNorm), so that the C runner's int8 output can be compared bit for bit."""
import math

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


# ---- the integer helpers, as dtensor_quant.h has them ------------------------------------------


def quantize_multiplier(real):
    """dt_quantize_multiplier: real = mult * 2^(shift - 31), mult in [2^30, 2^31)."""
    real = float(real)
    if not 0.0 <= real < 1073741824.0:
        raise ValueError("requantization multiplier %r out of range" % real)
    if real < 2.2250738585072014e-308:
        return 0, 0
    mant, shift = math.frexp(real)
    m = (int(mant * (1 << 53)) + (1 << 21)) >> 22
    if m == 1 << 31:
        m >>= 1
        shift += 1
    if shift > 30:
        raise ValueError("requantization multiplier %r out of range" % real)
    if shift < -31:
        return 0, 0
    return m, shift


def q8_scale(amax):
    """dt_q8_scale: max(amax / 127.5, FLT_EPSILON) in float32."""
    s = np.float32(amax) / np.float32(127.5)
    return float(max(s, np.float32(1.1920928955078125e-7)))


def multiplier(sa, sb, sy):
    """dt_qmm_multipliers' real value: float32 sa * sb / sy."""
    return quantize_multiplier(float(np.float32(np.float32(sa) * np.float32(sb)) / np.float32(sy)))


def quantize(x, scale):
    """dt_quantize_i8 elementwise (float32 arithmetic, ties to even)."""
    x = np.asarray(x, np.float32)
    inv = np.float32(1.0) / np.float32(scale)
    v = (x * inv).astype(np.float32)
    t = (v + np.float32(12582912.0)).astype(np.float32) - np.float32(12582912.0)
    t = np.where(np.isnan(v), 0, t)
    t = np.where(v >= 127.5, 127, np.where(v <= -128.5, -128, t))
    return np.clip(t, -128, 127).astype(np.int8)


def _trunc_div(v, d):
    return np.where(v >= 0, v // d, -((-v) // d))


def mul_qmul(x, mult, shift):
    """dt_mul_qmul elementwise: x int32 values, mult/shift broadcastable."""
    x = np.asarray(x, np.int64)
    mult = np.asarray(mult, np.int64)
    shift = np.asarray(shift, np.int64)
    left = np.where(shift > 0, np.minimum(shift, 31), 0)
    x = np.clip(x * (np.int64(1) << left), INT32_MIN, INT32_MAX)
    ab = x * mult
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    hm = _trunc_div(ab + nudge, np.int64(1 << 31))
    hm = np.where((x == INT32_MIN) & (mult == INT32_MIN), INT32_MAX, hm)
    r = np.minimum(np.where(shift < 0, -shift, 0), 31)
    mask = (np.int64(1) << r) - 1
    rem = hm & mask
    thr = (mask >> 1) + (hm < 0)
    return (hm >> r) + (rem > thr)


def requant(acc, mult, shift):
    return np.clip(mul_qmul(acc, mult, shift), -128, 127).astype(np.int8)


def div_round(s, count):
    """Round half away from zero of integer sums by count, clamped to int8 (avg pool, mean)."""
    s = np.asarray(s, np.int64)
    count = np.asarray(count, np.int64)
    q = np.where(s >= 0, (s + count // 2) // count, -((-s + count // 2) // count))
    return np.clip(q, -128, 127).astype(np.int8)


# ---- windows ---------------------------------------------------------------------------------


def _windows(x, k, stride, pad, dil, fill):
    """(N, C, KH, KW, OH, OW) windows of a padded NCHW x."""
    n, c, h, w = x.shape
    xp = np.full((n, c, h + 2 * pad[0], w + 2 * pad[1]), fill, dtype=x.dtype)
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w] = x
    oh = (h + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
    s = xp.strides
    return np.lib.stride_tricks.as_strided(
        xp, (n, c, k[0], k[1], oh, ow),
        (s[0], s[1], s[2] * dil[0], s[3] * dil[1], s[2] * stride[0], s[3] * stride[1]), writeable=False)


def conv(x, w, stride, pad, dil, groups, acc_dtype):
    """Conv2d sums (no bias): float32 for f32, exact float64 sums of ints for int8."""
    n = x.shape[0]
    m, cg = w.shape[0], w.shape[1]
    win = _windows(x.astype(acc_dtype), w.shape[2:], stride, pad, dil, 0)
    mg = m // groups
    outs = []
    for gi in range(groups):
        xw = win[:, gi * cg:(gi + 1) * cg]
        wg = w[gi * mg:(gi + 1) * mg].astype(acc_dtype)
        outs.append(np.tensordot(xw, wg, axes=([1, 2, 3], [1, 2, 3])))  # N, OH, OW, Mg
    y = np.concatenate(outs, axis=3)
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2))


def _pool_count(shape, k, stride, pad, count_pad):
    ones = np.ones((1, 1) + tuple(shape[2:]), np.float64)
    if count_pad:
        hp, wp = shape[2] + 2 * pad[0], shape[3] + 2 * pad[1]
        ones = np.ones((1, 1, hp, wp), np.float64)
        return _windows(ones, k, stride, [0, 0], [1, 1], 0).sum(axis=(2, 3))
    return _windows(ones, k, stride, pad, [1, 1], 0).sum(axis=(2, 3))


def _bshape(g, name, x):
    """name's shape with the batch of x (the graph is run on any number of samples)."""
    return (x.shape[0],) + tuple(g.t[name].shape[1:])


def _layout(g, n, ins):
    """reshape, transpose, concat: the same for every dtype."""
    if n.op == "reshape":
        return ins[0].reshape(_bshape(g, n.out, ins[0]))
    if n.op == "transpose":
        return np.ascontiguousarray(ins[0].transpose(n.a["perm"]))
    return np.concatenate(ins, axis=n.a["axis"])


# ---- f32 ---------------------------------------------------------------------------------------


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(np.float32)


def run_f32(g, x, keep=False):
    """The f32 graph on x; keep: every tensor (name -> array), else the output."""
    v = {g.input: np.asarray(x, np.float32)}
    for name, t in g.t.items():
        if t.const is not None:
            v[name] = t.const
    for n in g.nodes:
        a = n.a
        ins = [v[i] for i in n.ins]
        xx = ins[0]
        op = n.op
        if op == "conv":
            y = conv(xx, ins[1], a["stride"], a["pad"], a["dil"], a["groups"], np.float32)
            if len(ins) > 2:
                y = y + ins[2].reshape(1, -1, 1, 1)
            if a.get("relu"):
                y = np.maximum(y, 0)
        elif op == "maxpool":
            y = _windows(xx, a["kernel"], a["stride"], a["pad"], a["dil"], -np.inf).max(axis=(2, 3))
        elif op == "avgpool":
            s = _windows(xx, a["kernel"], a["stride"], a["pad"], [1, 1], 0).sum(axis=(2, 3))
            y = s / _pool_count(xx.shape, a["kernel"], a["stride"], a["pad"], a["count_pad"]).astype(np.float32)
        elif op == "mean":
            y = xx.mean(axis=tuple(a["axes"]), dtype=np.float32).reshape(_bshape(g, n.out, xx))
        elif op == "linear":
            y = xx @ ins[1].T
            if len(ins) > 2:
                y = y + ins[2]
            if a.get("relu"):
                y = np.maximum(y, 0)
        elif op == "matmul":
            y = np.matmul(xx, ins[1])
        elif op == "relu":
            y = np.maximum(xx, 0)
        elif op == "clip":
            y = np.clip(xx, a["lo"], a["hi"])
        elif op == "sigmoid":
            y = 1 / (1 + np.exp(-xx))
        elif op == "tanh":
            y = np.tanh(xx)
        elif op == "gelu":
            y = 0.5 * xx * (1 + _erf(xx / np.float32(math.sqrt(2))))
        elif op == "fakequant":
            y = quantize(xx, a["scale"]).astype(np.float32) * np.float32(a["scale"])
        elif op == "scalar":
            c = np.float32(a["c"])
            y = {"add": xx + c, "sub": xx - c, "mul": xx * c, "div": xx / c, "rsub": c - xx, "rdiv": c / xx}[a["fn"]]
        elif op == "binary":
            b = ins[1]
            y = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[a["fn"]](xx, b)
        elif op == "softmax":
            e = np.exp(xx - xx.max(axis=a["axis"], keepdims=True))
            y = e / e.sum(axis=a["axis"], keepdims=True)
        elif op == "layernorm":
            axes = tuple(range(a["axis"], xx.ndim))
            mu = xx.mean(axis=axes, keepdims=True)
            var = ((xx - mu) ** 2).mean(axis=axes, keepdims=True)
            y = (xx - mu) / np.sqrt(var + np.float32(a["eps"])) * ins[1] + ins[2]
        elif op in ("reshape", "transpose", "concat"):
            y = _layout(g, n, ins)
        else:
            raise ValueError("f32 reference: no %s" % op)
        v[n.out] = np.asarray(y, np.float32)
    return v if keep else v[g.output]


# ---- int8 ----------------------------------------------------------------------------------------


def isqrt64(v):
    return np.array([math.isqrt(int(e)) for e in np.asarray(v).reshape(-1)], np.int64).reshape(np.shape(v))


def run_q8(q, x8):
    """The int8 graph q (quant.QGraph) on int8 input x8: every value exact, as the C kernels."""
    v = {q.input: np.asarray(x8, np.int8)}
    for name, t in q.t.items():
        if t.const is not None:
            v[name] = t.const
    for n in q.nodes:
        a, op = n.a, n.op
        ins = [v[i] for i in n.ins]
        xx = ins[0]
        if op == "conv":
            acc = conv(xx, ins[1], a["stride"], a["pad"], a["dil"], a["groups"], np.float64).astype(np.int64)
            if len(ins) > 2:
                acc = np.clip(acc + ins[2].astype(np.int64).reshape(1, -1, 1, 1), INT32_MIN, INT32_MAX)
            y = requant(acc, a["mult"].reshape(1, -1, 1, 1), a["shift"].reshape(1, -1, 1, 1))
            if a.get("relu"):
                y = np.maximum(y, 0)
        elif op == "linear":
            acc = (xx.astype(np.float64) @ ins[1].astype(np.float64).T).astype(np.int64)
            if len(ins) > 2:
                acc = np.clip(acc + ins[2].astype(np.int64), INT32_MIN, INT32_MAX)
            y = requant(acc, a["mult"], a["shift"])
            if a.get("relu"):
                y = np.maximum(y, 0)
        elif op == "matmul":
            acc = np.matmul(xx.astype(np.float64), ins[1].astype(np.float64)).astype(np.int64)
            y = requant(acc, a["mult"], a["shift"])
        elif op == "maxpool":
            y = _windows(xx.astype(np.int16), a["kernel"], a["stride"], a["pad"], a["dil"], -1000).max(axis=(2, 3))
            y = y.astype(np.int8)
        elif op == "avgpool":
            s = _windows(xx.astype(np.int64), a["kernel"], a["stride"], a["pad"], [1, 1], 0).sum(axis=(2, 3))
            y = div_round(s, _pool_count(xx.shape, a["kernel"], a["stride"], a["pad"], a["count_pad"]).astype(np.int64))
        elif op == "mean":
            axes = tuple(a["axes"])
            s = xx.astype(np.int64).sum(axis=axes)
            y = div_round(s, int(np.prod([xx.shape[i] for i in axes]))).reshape(_bshape(q, n.out, xx))
        elif op == "relu":
            y = np.maximum(xx, 0)
        elif op == "clip":
            y = np.clip(xx, a["lo_q"], a["hi_q"]).astype(np.int8)
        elif op == "lut":
            y = a["table"][xx.astype(np.int64) + 128]
        elif op == "requant":
            y = requant(xx.astype(np.int64), a["mult"], a["shift"])
        elif op == "add":
            b = np.broadcast_to(ins[1], xx.shape)
            sa = mul_qmul(xx.astype(np.int64) << 20, a["mult"][0], a["shift"][0])
            sb = mul_qmul(b.astype(np.int64) << 20, a["mult"][1], a["shift"][1])
            y = requant(sa + sb, a["mult"][2], a["shift"][2])
        elif op == "mul":
            b = np.broadcast_to(ins[1], xx.shape)
            y = requant(xx.astype(np.int64) * b.astype(np.int64), a["mult"], a["shift"])
        elif op == "softmax":
            d = xx.max(axis=-1, keepdims=True).astype(np.int64) - xx.astype(np.int64)
            e = a["table"][d].astype(np.int64)
            s = e.sum(axis=-1, keepdims=True)
            y = ((e * 254 + s) // (2 * s)).astype(np.int8)
        elif op == "layernorm":
            d = xx.shape[-1]
            xi = xx.astype(np.int64)
            s1 = xi.sum(axis=-1, keepdims=True)
            s2 = (xi * xi).sum(axis=-1, keepdims=True)
            r = np.maximum(isqrt64(d * s2 - s1 * s1 + a["epsq"]), 1)
            c = d * xi - s1
            num = c * ins[1].astype(np.int64) + ins[2].astype(np.int64) * r
            den = r << 16
            qv = np.where(num >= 0, (num + den // 2) // den, -((-num + den // 2) // den))
            y = np.clip(qv, -128, 127).astype(np.int8)
        elif op in ("reshape", "transpose", "concat"):
            y = _layout(q, n, ins)
        else:
            raise ValueError("int8 reference: no %s" % op)
        v[n.out] = np.asarray(y, np.int8)
    return v[q.output]
