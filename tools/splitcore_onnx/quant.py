"""int8 lowering of the f32 graph, as dtensor_quant.h's int8 ops do it: weights symmetric
per output channel (torch's PerChannelMinMaxObserver, per_channel_symmetric), activations
symmetric per tensor with scales from a calibration run (MinMaxObserver,
per_tensor_symmetric: max(|x|) / 127.5), zero points 0, int32 biases in input scale x
weight scale, and TFLite's fixed-point requantization (dt_quantize_multiplier) for every
product. Operators without a product use TFLite's int8 forms: ADD (inputs rescaled with a
left shift of 20), MUL, a 256-entry table for sigmoid / tanh / GELU, pools and means on
the input's scale. Softmax and LayerNorm are integer-only here (tables and integer square
root, see dt_softmax_q8 / dt_layer_norm_q8). A QuantizeLinear / DequantizeLinear pair in
the model fixes its tensor's scale; int8 weights given through DequantizeLinear are kept."""
import math

import numpy as np

from . import ref
from .graph import ExportError, Graph, Node, Tensor, node_error

SOFTMAX_SCALE = 1.0 / 127.0  # softmax, sigmoid: [0, 1]; tanh: [-1, 1]
ADD_LEFT_SHIFT = 20          # TFLite's int8 ADD


def _qm(real):
    try:
        return ref.quantize_multiplier(real)
    except ValueError as e:
        raise ExportError(str(e))


def _arr(pairs):
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


def calibrate(g, x, batch=64):
    """max |value| of every tensor over the calibration inputs x (f32 graph)."""
    amax = {}
    for i in range(0, len(x), batch):
        vals = ref.run_f32(g, x[i:i + batch], keep=True)
        for k, v in vals.items():
            if g.t[k].const is None:
                amax[k] = max(amax.get(k, 0.0), float(np.max(np.abs(v))) if v.size else 0.0)
    return amax


def _per_channel(w):
    """Symmetric per-output-channel int8 of w along axis 0: (q, scales)."""
    flat = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    scales = np.array([ref.q8_scale(a) for a in flat], np.float32)
    return _quantize_rows(w, scales), scales


def _quantize_rows(w, scales):
    shp = (-1,) + (1,) * (w.ndim - 1)
    inv = (np.float32(1.0) / scales.astype(np.float32)).reshape(shp)
    v = (w.astype(np.float32) * inv).astype(np.float32)
    t = (v + np.float32(12582912.0)).astype(np.float32) - np.float32(12582912.0)
    t = np.where(v >= 127.5, 127, np.where(v <= -128.5, -128, t))
    return np.clip(t, -128, 127).astype(np.int8)


def _bias(b, s_in, sw):
    bs = (np.float32(s_in) * sw.astype(np.float32)).astype(np.float64)
    v = np.asarray(b, np.float64) / bs
    v = np.sign(v) * np.floor(np.abs(v) + 0.5)
    if np.any(np.abs(v) > 2 ** 31 - 1):
        raise ExportError("a bias does not fit int32 at its scale")
    return v.astype(np.int32)


def quantize_graph(g, calib):
    """The int8 graph of f32 graph g (a new Graph: int8 activations with .scale)."""
    if calib is None or len(calib) == 0:
        raise ExportError("--quant int8 needs calibration inputs (--calib <.npy>)")
    amax = calibrate(g, calib)
    q = Graph()
    q.input, q.output, q.batch, q.opset = g.input, g.output, g.batch, g.opset
    scale = {}
    forced = {}
    for n in g.nodes:  # a fake quantization fixes the scale of what it reads and writes
        if n.op == "fakequant":
            forced[n.ins[0]] = forced[n.out] = n.a["scale"]

    def act(name, s):
        t = Tensor(name, g.t[name].shape, dtype="i8")
        t.scale = float(s)
        q.t[name] = t
        scale[name] = float(s)

    def from_amax(name):
        return forced.get(name, ref.q8_scale(amax.get(name, 0.0)))

    def const(name, value, dtype):
        nm = q.fresh(name)
        q.t[nm] = Tensor(nm, np.shape(value), const=np.asarray(value), dtype=dtype)
        return nm

    def weight(n, name):
        if name in g.prequant and g.prequant[name][2] in (0, -1):
            wq, sc, axis = g.prequant[name]
            sc = np.broadcast_to(np.asarray(sc, np.float32), (wq.shape[0],)).copy()
            return wq, sc
        return _per_channel(np.asarray(g.const(name), np.float32))

    def requant_to(name, s_to, at):
        """name rescaled to s_to by a requant node (or name itself)."""
        if abs(scale[name] - s_to) == 0:
            return name
        out = q.fresh(name + ".rq")
        m, sh = _qm(np.float32(scale[name]) / np.float32(s_to))
        q.nodes.append(Node("requant", at.name, [name], out, {"mult": np.array([m]), "shift": np.array([sh])},
                            at.onnx + "(rescale)"))
        q.t[out] = Tensor(out, g.t[name].shape, dtype="i8")
        q.t[out].scale = s_to
        scale[out] = s_to
        return out

    act(g.input, from_amax(g.input))
    for n in g.nodes:
        a, op = dict(n.a), n.op
        x = n.ins[0]
        sx = scale[x]
        if op in ("conv", "linear"):
            wq, sw = weight(n, n.ins[1])
            so = from_amax(n.out)
            ins = [x, const(n.ins[1] + ".q", wq, "i8")]
            if len(n.ins) > 2:
                ins.append(const(n.ins[2] + ".q", _bias(g.const(n.ins[2]), sx, sw), "i32"))
            a["mult"], a["shift"] = _arr([_qm(float(np.float32(np.float32(sx) * s) / np.float32(so))) for s in sw])
            q.nodes.append(Node(op, n.name, ins, n.out, a, n.onnx))
            act(n.out, so)
        elif op == "matmul":
            so = from_amax(n.out)
            a["mult"], a["shift"] = _arr([ref.multiplier(sx, scale[n.ins[1]], so)])
            q.nodes.append(Node("matmul", n.name, n.ins, n.out, a, n.onnx))
            act(n.out, so)
        elif op in ("maxpool", "avgpool", "mean", "relu", "reshape", "transpose"):
            q.nodes.append(Node(op, n.name, n.ins, n.out, a, n.onnx))
            act(n.out, sx)
        elif op == "clip":
            lo = -128 if a["lo"] == -math.inf else int(np.clip(np.round(a["lo"] / sx), -128, 127))
            hi = 127 if a["hi"] == math.inf else int(np.clip(np.round(a["hi"] / sx), -128, 127))
            q.nodes.append(Node("clip", n.name, n.ins, n.out, {"lo_q": lo, "hi_q": hi}, n.onnx))
            act(n.out, sx)
        elif op in ("sigmoid", "tanh", "gelu"):
            so = SOFTMAX_SCALE if op != "gelu" else from_amax(n.out)
            xs = np.arange(-128, 128, dtype=np.float64) * sx
            f = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
                 "gelu": lambda v: 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))}[op](xs)
            q.nodes.append(Node("lut", n.name, n.ins, n.out, {"table": ref.quantize(f.astype(np.float32), so),
                                                            "fn": op}, n.onnx))
            act(n.out, so)
        elif op == "softmax":
            if a["axis"] != len(g.t[x].shape) - 1:
                raise node_error(n, "int8 softmax is over the last axis only")
            table = np.floor(65536.0 * np.exp(-sx * np.arange(256, dtype=np.float64)) + 0.5).astype(np.int64)
            q.nodes.append(Node("softmax", n.name, n.ins, n.out, {"table": table}, n.onnx))
            act(n.out, SOFTMAX_SCALE)
        elif op == "layernorm":
            d = g.t[x].shape[-1]
            if a["axis"] != len(g.t[x].shape) - 1:
                raise node_error(n, "int8 LayerNorm normalizes the last axis only")
            so = from_amax(n.out)
            gq = np.floor(np.asarray(g.const(n.ins[1]), np.float64) / so * 65536.0 + 0.5)
            bq = np.floor(np.asarray(g.const(n.ins[2]), np.float64) / so * 65536.0 + 0.5)
            if np.any(np.abs(gq) >= 2 ** 31) or np.any(np.abs(bq) >= 2 ** 31):
                raise node_error(n, "LayerNorm weights do not fit int32 at the output scale")
            epsq = int(math.floor(a["eps"] * d * d / (sx * sx) + 0.5))
            ins = [x, const(n.ins[1] + ".q", gq.astype(np.int32), "i32"), const(n.ins[2] + ".q", bq.astype(np.int32),
                                                                                  "i32")]
            q.nodes.append(Node("layernorm", n.name, ins, n.out, {"epsq": epsq, "axis": a["axis"]}, n.onnx))
            act(n.out, so)
        elif op == "scalar":
            if a["fn"] in ("mul", "div") and a["c"] > 0:  # a positive factor only changes the scale
                f = a["c"] if a["fn"] == "mul" else 1.0 / a["c"]
                q.nodes.append(Node("reshape", n.name, n.ins, n.out, {}, n.onnx + "(scale)"))
                act(n.out, float(np.float32(sx) * np.float32(f)))
            else:
                raise node_error(n, "int8: %s by a scalar is not supported (only multiplying or dividing by a "
                                 "positive constant, which changes the scale)" % a["fn"])
        elif op == "fakequant":
            q.nodes.append(Node("reshape", n.name, n.ins, n.out, {}, n.onnx))
            act(n.out, sx)
        elif op == "binary":
            fn = a["fn"]
            if fn not in ("add", "mul"):
                raise node_error(n, "int8: %s of tensors is not supported (Add and Mul are)" % fn)
            b = n.ins[1]
            if g.const(b) is not None:
                c = np.asarray(g.const(b), np.float32)
                sb = ref.q8_scale(float(np.max(np.abs(c))) if c.size else 0.0)
                b = const(b + ".q", ref.quantize(c, sb), "i8")
            else:
                sb = scale[b]
            so = from_amax(n.out)
            if fn == "add":
                twice = 2.0 * max(sx, sb)
                mult = [_qm(sx / twice), _qm(sb / twice), _qm(twice / ((1 << ADD_LEFT_SHIFT) * so))]
            else:
                mult = [_qm(sx * sb / so)]
            am, ash = _arr(mult)
            q.nodes.append(Node(fn, n.name, [x, b], n.out, {"mult": am, "shift": ash}, n.onnx))
            act(n.out, so)
        elif op == "concat":
            so = max(scale[i] for i in n.ins)
            ins = [requant_to(i, so, n) for i in n.ins]
            q.nodes.append(Node("concat", n.name, ins, n.out, a, n.onnx))
            act(n.out, so)
        else:
            raise node_error(n, "int8: no int8 form of %s" % op)
    q.in_scale, q.out_scale = scale[g.input], scale[g.output]
    return q
