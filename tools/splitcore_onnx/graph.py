"""ONNX in, splitcore's model graph out: read and check a model, bind its batch dim, infer
every shape, fold constants (shape arithmetic, BatchNorm into Conv, dequantized weights),
match the fused forms torch.onnx.export writes (Gemm / MatMul + Add as linear, the erf
form of GELU, LayerNorm decomposed at opsets below 17, Conv + Relu), and check that what
is left is an operator the runner has. Every refusal is an ExportError naming the node,
its op type and the operator list."""
import math
import re
import warnings

import numpy as np

try:
    import onnx
    from onnx import numpy_helper
except ImportError:  # reported by load(): the exporter needs Debian's python3-onnx
    onnx = None

OPSETS = (13, 17)
# What the exporter takes (the runner's operators and the forms that fold into them).
SUPPORTED = ["Add", "AveragePool", "BatchNormalization (after Conv, or per channel)", "Clip", "Concat", "Conv",
             "DequantizeLinear", "Dropout", "Flatten", "Gelu (erf form: Div, Erf, Add, Mul, Mul)", "Gemm",
             "GlobalAveragePool", "Identity", "LayerNormalization (or its ReduceMean, Sub, Pow, Sqrt, Div form)",
             "MatMul", "MaxPool", "Mul", "QuantizeLinear", "ReduceMean", "Relu", "Reshape", "Sigmoid", "Softmax",
             "Squeeze", "Sub", "Div", "Tanh", "Transpose", "Unsqueeze", "Pad (zeros, before Conv or AveragePool)",
             "and shape arithmetic on constants (Shape, Gather, Concat, Slice, Cast, Constant, ConstantOfShape)"]


class ExportError(Exception):
    """A clear refusal: the message names the node and op type where there is one."""


def supported_list():
    return "supported: " + ", ".join(SUPPORTED)


def node_error(node, msg):
    return ExportError("node '%s' (%s): %s" % (node.name, node.onnx, msg))


class Tensor:
    """A value of the graph: static shape, dtype 'f32' (activations; 'i8' / 'i32' after
    quantization), const (numpy array) for weights."""

    def __init__(self, name, shape, const=None, dtype="f32"):
        self.name, self.shape, self.const, self.dtype = name, tuple(int(d) for d in shape), const, dtype
        self.scale = None  # int8: the symmetric per-tensor scale

    @property
    def numel(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self):
        return "Tensor(%s, %s%s)" % (self.name, self.shape, ", const" if self.const is not None else "")


class Node:
    """One operator. op: the runner's operator (lower case) once lowered, the ONNX op type
    before; onnx: the ONNX op type(s) it came from (for messages and reports)."""

    def __init__(self, op, name, ins, out, attrs=None, onnx_op=None):
        self.op, self.name, self.ins, self.out = op, name, list(ins), out
        self.a = dict(attrs or {})
        self.onnx = onnx_op or op

    def __repr__(self):
        return "Node(%s %s %s -> %s)" % (self.op, self.name, self.ins, self.out)


class Graph:
    def __init__(self):
        self.t = {}        # name -> Tensor
        self.nodes = []    # topological order
        self.input = None  # name
        self.output = None
        self.batch = None
        self.opset = None
        self.prequant = {}  # const name -> (int8 array, scales, axis) from a DequantizeLinear

    def consumers(self, name):
        return [n for n in self.nodes if name in n.ins]

    def producer(self, name):
        for n in self.nodes:
            if n.out == name:
                return n
        return None

    def const(self, name):
        t = self.t.get(name)
        return None if t is None else t.const

    def add_const(self, name, value):
        value = np.asarray(value)
        self.t[name] = Tensor(name, value.shape, const=value)
        return name

    def fresh(self, base):
        i, name = 0, base
        while name in self.t:
            i += 1
            name = "%s_%d" % (base, i)
        return name


# ---- reading ----------------------------------------------------------------------------


def _attrs(node):
    out = {}
    for a in node.attribute:
        try:
            out[a.name] = onnx.helper.get_attribute_value(a)
        except Exception as e:  # a fuzzed attribute
            raise ExportError("node '%s' (%s): attribute %s cannot be read: %s" % (
                node.name or "?", node.op_type, a.name, e))
    return out


def _to_array(tensor_proto, what):
    if tensor_proto.data_location == onnx.TensorProto.EXTERNAL:
        raise ExportError("%s: external tensor data is not supported (save the model with its weights inside)" % what)
    try:
        arr = numpy_helper.to_array(tensor_proto)
    except Exception as e:
        raise ExportError("%s: tensor data cannot be read: %s" % (what, e))
    if arr.dtype == np.float64 or arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    return arr


def load(data, batch=None):
    """Graph from the bytes of an ONNX file; batch binds a symbolic first input dim."""
    if onnx is None:
        raise ExportError("python3-onnx is not installed (apt-get install python3-onnx)")
    m = onnx.ModelProto()
    try:
        with warnings.catch_warnings():  # protobuf warns about some damage: a refusal here
            warnings.simplefilter("error")
            m.ParseFromString(data)
    except Exception as e:
        raise ExportError("not an ONNX model: the protobuf does not parse (%s)" % (str(e) or type(e).__name__))
    if not m.HasField("graph") or not m.graph.node:
        raise ExportError("not an ONNX model: no graph or no nodes")
    opset = None
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = o.version
    if opset is None:
        raise ExportError("the model imports no ai.onnx opset")
    if not OPSETS[0] <= opset <= OPSETS[1]:
        raise ExportError("opset %d: supported are opsets %d-%d (torch.onnx.export(..., opset_version=13..17))"
                          % (opset, OPSETS[0], OPSETS[1]))
    try:
        onnx.checker.check_model(m)
    except Exception as e:
        text = str(e).strip()
        first = (text.splitlines() or [type(e).__name__])[0]
        where = re.search(r"Name: *(\S*) *OpType: *(\S+)", text)
        if where:
            raise ExportError("node '%s' (%s): %s; %s" % (where.group(1), where.group(2), first, supported_list()))
        raise ExportError("invalid ONNX model: %s" % first)
    return _build(m, opset, batch)


def _value_shape(vi, batch, what):
    t = vi.type
    if not t.HasField("tensor_type"):
        raise ExportError("%s '%s' is not a tensor" % (what, vi.name))
    if t.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        raise ExportError("%s '%s' has element type %s: the runner takes float32 in and out" % (
            what, vi.name, onnx.TensorProto.DataType.Name(t.tensor_type.elem_type)))
    if not t.tensor_type.HasField("shape"):
        raise ExportError("dynamic shape: %s '%s' has no shape" % (what, vi.name))
    shape = []
    for i, d in enumerate(t.tensor_type.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            v = d.dim_value
            if i == 0 and batch is not None and v != batch:
                raise ExportError("%s '%s' has a fixed batch of %d; --batch %d does not match it" % (
                    what, vi.name, v, batch))
            shape.append(v)
        elif i == 0:
            shape.append(batch if batch is not None else 1)
        else:
            raise ExportError("dynamic shape: %s '%s' dim %d is %s (only the batch dim 0 may be symbolic)" % (
                what, vi.name, i, repr(d.dim_param) if d.dim_param else "unknown"))
    if not shape:
        raise ExportError("%s '%s' is a scalar: the runner takes a batch of tensors" % (what, vi.name))
    return shape


def _build(m, opset, batch):
    g = Graph()
    g.opset = opset
    inits = set()
    for init in m.graph.initializer:
        g.add_const(init.name, _to_array(init, "initializer '%s'" % init.name))
        inits.add(init.name)
    ins = [i for i in m.graph.input if i.name not in inits]
    if len(ins) != 1:
        raise ExportError("the model has %d inputs (%s): the runner takes exactly one" % (
            len(ins), ", ".join(i.name for i in ins)))
    if len(m.graph.output) != 1:
        raise ExportError("the model has %d outputs (%s): the runner gives exactly one" % (
            len(m.graph.output), ", ".join(o.name for o in m.graph.output)))
    shape = _value_shape(ins[0], batch, "input")
    g.input = ins[0].name
    g.batch = shape[0]
    g.t[g.input] = Tensor(g.input, shape)
    g.output = m.graph.output[0].name
    declared_out = _value_shape(m.graph.output[0], g.batch, "output")
    for idx, n in enumerate(m.graph.node):
        name = n.name or "#%d:%s" % (idx, n.output[0] if n.output else "")
        if n.domain not in ("", "ai.onnx"):
            raise ExportError("node '%s' (%s): operator domain '%s' is not supported; %s" % (
                name, n.op_type, n.domain, supported_list()))
        node = Node(n.op_type, name, list(n.input), None, _attrs(n))
        node.outs = list(n.output)
        for i in node.ins:
            if i and i not in g.t:
                raise node_error(node, "input '%s' is not defined before it is used" % i)
        _infer(g, node)
    if g.output not in g.t:
        raise ExportError("the output '%s' is not computed by any node" % g.output)
    out = g.t[g.output]
    if out.const is not None:
        raise ExportError("the output '%s' is a constant: nothing to run" % g.output)
    if list(out.shape) != list(declared_out):
        raise ExportError("shape mismatch: the output '%s' is declared %s but computes to %s" % (
            g.output, declared_out, list(out.shape)))
    _fuse(g)
    _prune(g)
    _lower(g)
    return g


# ---- shape inference and constant folding -------------------------------------------------


def _bshape(node, a, b):
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        raise node_error(node, "shape mismatch: %s and %s do not broadcast" % (list(a), list(b)))


def _cint(g, node, i, what):
    """Constant input i as a list of ints (a shape, axes, ...)."""
    if i >= len(node.ins) or not node.ins[i]:
        return None
    c = g.const(node.ins[i])
    if c is None:
        raise node_error(node, "%s (input %d) must be a constant: dynamic shapes are not supported" % (what, i))
    return [int(v) for v in np.asarray(c).reshape(-1)]


def _axis(node, axis, rank):
    if not -rank <= axis < rank:
        raise node_error(node, "axis %d out of range for rank %d" % (axis, rank))
    return axis % rank


def _conv_out(node, hw, k, stride, pads, dil):
    out = []
    for i in range(2):
        span = hw[i] + pads[i] + pads[i + 2] - dil[i] * (k[i] - 1) - 1
        if span < 0:
            raise node_error(node, "the window %s is larger than the padded input %s" % (list(k), list(hw)))
        out.append(span // stride[i] + 1)
    return out


def _pads(node, a, k, hw, stride, dil):
    pads = list(a.get("pads", [0, 0, 0, 0]))
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0, 0, 0, 0]
        for i in range(2):
            out = -(-hw[i] // stride[i])
            total = max(0, (out - 1) * stride[i] + dil[i] * (k[i] - 1) + 1 - hw[i])
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            pads[i], pads[i + 2] = lo, total - lo
    elif auto == "VALID":
        pads = [0, 0, 0, 0]
    elif auto != "NOTSET":
        raise node_error(node, "auto_pad %s is not supported" % auto)
    if len(pads) != 4 or min(pads) < 0:
        raise node_error(node, "pads %s: 2-D pads (top, left, bottom, right) >= 0 expected" % pads)
    return pads


def _sym_pads(node, pads):
    if pads[0] != pads[2] or pads[1] != pads[3]:
        raise node_error(node, "asymmetric padding %s is not supported (the kernels pad each side alike)" % pads)
    return [pads[0], pads[1]]


def _ints2(node, a, key, default):
    v = list(a.get(key, default))
    if len(v) != 2 or min(v) < 1:
        raise node_error(node, "%s %s: two values >= 1 expected (2-D only)" % (key, v))
    return v


def _set(g, node, shapes, consts=None):
    if len(node.outs) < len(shapes):
        raise node_error(node, "has %d outputs, %d expected" % (len(node.outs), len(shapes)))
    for i, s in enumerate(shapes):
        c = consts[i] if consts else None
        if node.outs[i]:
            if node.outs[i] in g.t:
                raise node_error(node, "output '%s' is defined twice" % node.outs[i])
            if min(list(s) or [1]) < 1 and c is None:
                raise node_error(node, "output shape %s has an empty dim" % list(s))
            g.t[node.outs[i]] = Tensor(node.outs[i], s, const=c)
    if consts is None or consts[0] is None:
        node.out = node.outs[0]
        if any(node.outs[1:len(node.outs)]):
            extra = [o for o in node.outs[1:] if o]
            node.extra_outs = extra
        g.nodes.append(node)


def _numpy_binary(op, a, b):
    return {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power}[op](a, b)


SHAPE_ONLY = {"Shape", "Gather", "Cast", "Slice", "ConstantOfShape", "Range", "Constant", "Equal", "Where",
              "Expand", "Neg", "Floor", "Ceil", "Min", "Max"}


def _infer(g, node):
    a, op = node.a, node.op
    ins = [g.t[i] if i else None for i in node.ins]
    consts = [t.const if t is not None else None for t in ins]
    allc = all(c is not None for c, t in zip(consts, ins) if t is not None)
    x = ins[0] if ins else None

    def need(n_min, n_max=None):
        n = len([i for i in node.ins if i])
        if n < n_min or (n_max is not None and len(node.ins) > n_max):
            raise node_error(node, "has %d inputs, %s expected" % (
                n, n_min if n_max == n_min else "%d..%s" % (n_min, n_max)))

    if op == "Constant":
        if "value" in a:
            v = _to_array(a["value"], "node '%s' (Constant)" % node.name)
        elif "value_float" in a:
            v = np.array(a["value_float"], np.float32)
        elif "value_int" in a:
            v = np.array(a["value_int"], np.int64)
        elif "value_ints" in a:
            v = np.array(a["value_ints"], np.int64)
        elif "value_floats" in a:
            v = np.array(a["value_floats"], np.float32)
        else:
            raise node_error(node, "a Constant without a tensor value is not supported")
        return _set(g, node, [v.shape], [v])
    if op in ("Identity", "Dropout"):
        need(1, 3)
        if op == "Dropout" and len(node.ins) > 2 and node.ins[2]:
            tm = g.const(node.ins[2])
            if tm is None or bool(np.asarray(tm).reshape(-1)[0]):
                raise node_error(node, "Dropout in training mode is not supported")
        if len([o for o in node.outs if o]) > 1:
            raise node_error(node, "the dropout mask output is not supported")
        return _set(g, node, [x.shape], [x.const])
    if op == "Shape":
        need(1, 1)
        s = np.array(x.shape, np.int64)
        start, end = a.get("start", 0), a.get("end", len(s))
        return _set(g, node, [s[start:end].shape], [s[start:end]])
    if op == "DequantizeLinear":
        return _dequantize(g, node, ins, consts)
    if op == "QuantizeLinear":
        need(2, 3)
        if x.const is not None:
            raise node_error(node, "quantizing a constant is not supported (store int8 weights with a "
                             "DequantizeLinear)")
        scale, axis = _qparams(g, node, 1, x.shape)
        if np.asarray(scale).size != 1:
            raise node_error(node, "per-axis quantization of an activation is not supported (per-tensor only)")
        node.a["scale"] = float(np.asarray(scale).reshape(-1)[0])
        return _set(g, node, [x.shape])
    if allc and op in SHAPE_ONLY | {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Unsqueeze", "Squeeze", "Concat",
                                    "Reshape", "Flatten", "Transpose"}:
        v = _fold(g, node, consts)
        return _set(g, node, [v.shape], [v])
    if op in SHAPE_ONLY:
        raise node_error(node, "operator %s on a computed tensor is not supported (only on constants); %s"
                         % (op, supported_list()))
    if op in ("Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Neg"):
        need(1, 1)
        return _set(g, node, [x.shape])
    if op == "Clip":
        need(1, 3)
        lo = _cint_f(g, node, 1, "min")
        hi = _cint_f(g, node, 2, "max")
        node.a["lo"] = -math.inf if lo is None else lo
        node.a["hi"] = math.inf if hi is None else hi
        if node.a["lo"] > node.a["hi"]:
            raise node_error(node, "min %g > max %g" % (node.a["lo"], node.a["hi"]))
        node.ins = node.ins[:1]
        return _set(g, node, [x.shape])
    if op in ("Add", "Sub", "Mul", "Div", "Pow"):
        need(2, 2)
        return _set(g, node, [_bshape(node, ins[0].shape, ins[1].shape)])
    if op == "Conv":
        need(2, 3)
        w = ins[1]
        if w.const is None:
            raise node_error(node, "the weight must be a constant initializer")
        if len(x.shape) != 4 or len(w.shape) != 4:
            raise node_error(node, "only 2-D convolution (4-D tensors) is supported, got input %s weight %s"
                             % (list(x.shape), list(w.shape)))
        groups = int(a.get("group", 1))
        if groups < 1 or x.shape[1] % groups or w.shape[0] % groups or w.shape[1] * groups != x.shape[1]:
            raise node_error(node, "shape mismatch: input %s, weight %s, group %d" % (
                list(x.shape), list(w.shape), groups))
        if "kernel_shape" in a and list(a["kernel_shape"]) != list(w.shape[2:]):
            raise node_error(node, "kernel_shape %s does not match the weight %s" % (a["kernel_shape"],
                                                                                    list(w.shape)))
        if len(ins) > 2 and ins[2] is not None:
            if ins[2].const is None or ins[2].shape != (w.shape[0],):
                raise node_error(node, "the bias must be a constant of shape [%d]" % w.shape[0])
        stride, dil = _ints2(node, a, "strides", [1, 1]), _ints2(node, a, "dilations", [1, 1])
        pads = _pads(node, a, w.shape[2:], x.shape[2:], stride, dil)
        oh, ow = _conv_out(node, x.shape[2:], w.shape[2:], stride, pads, dil)
        node.a.update(stride=stride, dil=dil, pad=_sym_pads(node, pads), groups=groups)
        return _set(g, node, [(x.shape[0], w.shape[0], oh, ow)])
    if op in ("MaxPool", "AveragePool"):
        need(1, 1)
        if len(x.shape) != 4:
            raise node_error(node, "only 2-D pooling (4-D tensors) is supported")
        if len([o for o in node.outs if o]) > 1:
            raise node_error(node, "the indices output is not supported")
        k = _ints2(node, a, "kernel_shape", [0, 0])
        stride = _ints2(node, a, "strides", [1, 1])
        dil = _ints2(node, a, "dilations", [1, 1])
        if op == "AveragePool" and dil != [1, 1]:
            raise node_error(node, "dilated average pooling is not supported")
        pads = _pads(node, a, k, x.shape[2:], stride, dil)
        pad = _sym_pads(node, pads)
        if a.get("ceil_mode", 0):
            floor = _conv_out(node, x.shape[2:], k, stride, pads, dil)
            ceil = [-(-(x.shape[2 + i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) // stride[i]) + 1 for i in range(2)]
            if floor != ceil:
                raise node_error(node, "ceil_mode=1 changes the output size here: not supported")
        if a.get("storage_order", 0):
            raise node_error(node, "storage_order=1 is not supported")
        for i in range(2):
            if pad[i] > ((k[i] - 1) * dil[i] + 1) // 2:
                raise node_error(node, "padding %d is more than half the window %d" % (pad[i], k[i]))
        oh, ow = _conv_out(node, x.shape[2:], k, stride, pads, dil)
        node.a.update(kernel=k, stride=stride, dil=dil, pad=pad, count_pad=int(a.get("count_include_pad", 0)))
        return _set(g, node, [(x.shape[0], x.shape[1], oh, ow)])
    if op == "Pad":
        need(2, 4)
        mode = a.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        pads = _cint(g, node, 1, "pads")
        if mode != "constant" or pads is None or len(pads) != 2 * len(x.shape):
            raise node_error(node, "only constant padding with pads for every dim is supported")
        if len(node.ins) > 3 and node.ins[3]:
            raise node_error(node, "Pad with axes is not supported")
        value = _cint_f(g, node, 2, "the constant value") if len(node.ins) > 2 and node.ins[2] else 0.0
        if min(pads) < 0:
            raise node_error(node, "negative pads (cropping) are not supported")
        node.a.update(pads=pads, value=value)
        node.ins = node.ins[:1]
        r = len(x.shape)
        return _set(g, node, [[d + pads[i] + pads[i + r] for i, d in enumerate(x.shape)]])
    if op == "GlobalAveragePool":
        need(1, 1)
        if len(x.shape) != 4:
            raise node_error(node, "only 4-D input (N, C, H, W) is supported")
        return _set(g, node, [(x.shape[0], x.shape[1], 1, 1)])
    if op == "ReduceMean":
        need(1, 1)
        axes = a.get("axes")
        if axes is None:
            axes = list(range(len(x.shape)))
        axes = sorted(set(_axis(node, int(v), len(x.shape)) for v in axes))
        if axes != list(range(axes[0], axes[-1] + 1)):
            raise node_error(node, "axes %s: only one run of adjacent axes is supported" % axes)
        if 0 in axes:
            raise node_error(node, "reducing over the batch dim 0 is not supported")
        keep = int(a.get("keepdims", 1))
        s = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep else \
            [d for i, d in enumerate(x.shape) if i not in axes]
        node.a.update(axes=axes, keepdims=keep)
        return _set(g, node, [s])
    if op == "BatchNormalization":
        need(5, 5)
        if int(a.get("training_mode", 0)):
            raise node_error(node, "training_mode=1 is not supported (export in eval mode)")
        if len([o for o in node.outs if o]) > 1:
            raise node_error(node, "the running statistics outputs are not supported (export in eval mode)")
        if len(x.shape) < 2 or any(t.const is None or t.shape != (x.shape[1],) for t in ins[1:]):
            raise node_error(node, "scale, B, mean and var must be constants of shape [C]")
        return _set(g, node, [x.shape])
    if op == "Gemm":
        need(2, 3)
        if int(a.get("transA", 0)) or len(x.shape) != 2 or len(ins[1].shape) != 2:
            raise node_error(node, "only Gemm(A (M, K), B, C) with transA=0 is supported")
        if ins[1].const is None:
            raise node_error(node, "B must be a constant initializer (the weight)")
        k, n = ins[1].shape[::-1] if int(a.get("transB", 0)) else ins[1].shape
        if x.shape[1] != k:
            raise node_error(node, "shape mismatch: A %s, B %s (transB=%d)" % (
                list(x.shape), list(ins[1].shape), int(a.get("transB", 0))))
        if len(ins) > 2 and ins[2] is not None:
            if ins[2].const is None:
                raise node_error(node, "C must be a constant (the bias)")
            _bshape(node, (x.shape[0], n), ins[2].shape)
        return _set(g, node, [(x.shape[0], n)])
    if op == "MatMul":
        need(2, 2)
        sa, sb = list(x.shape), list(ins[1].shape)
        if len(sa) < 2 or len(sb) < 2:
            raise node_error(node, "1-D MatMul operands are not supported")
        if sa[-1] != sb[-2]:
            raise node_error(node, "shape mismatch: %s @ %s" % (sa, sb))
        batch = _bshape(node, sa[:-2], sb[:-2])
        return _set(g, node, [tuple(batch) + (sa[-2], sb[-1])])
    if op == "Softmax":
        need(1, 1)
        if g.opset < 13:
            raise node_error(node, "opset < 13 Softmax semantics are not supported")
        node.a["axis"] = _axis(node, int(a.get("axis", -1)), len(x.shape))
        return _set(g, node, [x.shape])
    if op == "LayerNormalization":
        need(1, 3)
        axis = _axis(node, int(a.get("axis", -1)), len(x.shape))
        ns = x.shape[axis:]
        for t in ins[1:]:
            if t is not None and (t.const is None or tuple(t.shape) != tuple(ns)):
                raise node_error(node, "scale and B must be constants of shape %s" % list(ns))
        if len([o for o in node.outs if o]) > 1:
            raise node_error(node, "the Mean and InvStdDev outputs are not supported")
        node.a.update(axis=axis, eps=float(a.get("epsilon", 1e-5)))
        return _set(g, node, [x.shape])
    if op in ("Flatten", "Reshape", "Squeeze", "Unsqueeze"):
        return _set(g, node, [_reshape_shape(g, node, x.shape)])
    if op == "Transpose":
        need(1, 1)
        perm = [int(p) for p in a.get("perm", list(range(len(x.shape)))[::-1])]
        if sorted(perm) != list(range(len(x.shape))):
            raise node_error(node, "perm %s is not a permutation of %d dims" % (perm, len(x.shape)))
        node.a["perm"] = perm
        return _set(g, node, [tuple(x.shape[p] for p in perm)])
    if op == "Concat":
        need(1)
        axis = _axis(node, int(a.get("axis", 0)), len(x.shape))
        for t in ins[1:]:
            if len(t.shape) != len(x.shape) or any(d != e for i, (d, e) in enumerate(zip(t.shape, x.shape))
                                                   if i != axis):
                raise node_error(node, "shape mismatch: %s and %s differ outside axis %d" % (
                    list(x.shape), list(t.shape), axis))
        s = list(x.shape)
        s[axis] = sum(t.shape[axis] for t in ins)
        node.a["axis"] = axis
        return _set(g, node, [s])
    raise node_error(node, "operator %s is not supported; %s" % (op, supported_list()))


def _cint_f(g, node, i, what):
    if i >= len(node.ins) or not node.ins[i]:
        return None
    c = g.const(node.ins[i])
    if c is None or np.asarray(c).size != 1:
        raise node_error(node, "%s must be a constant scalar" % what)
    return float(np.asarray(c).reshape(-1)[0])


def _qparams(g, node, i, shape):
    scale = g.const(node.ins[i])
    if scale is None:
        raise node_error(node, "the scale must be a constant")
    scale = np.asarray(scale, np.float32)
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise node_error(node, "scales must be finite and > 0")
    if len(node.ins) > 2 and node.ins[2]:
        zp = g.const(node.ins[2])
        if zp is None:
            raise node_error(node, "the zero point must be a constant")
        zp = np.asarray(zp)
        if zp.dtype != np.int8:
            raise node_error(node, "zero point of type %s: only int8 (symmetric, zero point 0) is supported"
                             % zp.dtype)
        if np.any(zp != 0):
            raise node_error(node, "a non-zero zero point is not supported (symmetric int8 only)")
    axis = int(node.a.get("axis", 1))
    if scale.size > 1:
        if len(shape) == 0:
            raise node_error(node, "per-axis scales on a scalar")
        axis = axis % len(shape)
        if scale.shape != (shape[axis],):
            raise node_error(node, "per-axis scales %s do not match dim %d of %s" % (list(scale.shape), axis,
                                                                                  list(shape)))
    return scale, axis


def _dequantize(g, node, ins, consts):
    x = ins[0]
    scale, axis = _qparams(g, node, 1, x.shape)
    if x.const is None:
        if node.ins[0] and g.producer(node.ins[0]) is not None and g.producer(node.ins[0]).op == "QuantizeLinear":
            q = g.producer(node.ins[0])
            if abs(q.a["scale"] - float(scale.reshape(-1)[0])) > 0 or scale.size != 1:
                raise node_error(node, "the scale differs from its QuantizeLinear's: not supported")
            node.a["scale"] = q.a["scale"]
            return _set(g, node, [x.shape])
        raise node_error(node, "DequantizeLinear of a computed tensor needs a QuantizeLinear before it")
    q = np.asarray(x.const)
    if q.dtype != np.int8:
        raise node_error(node, "quantized weights of type %s: only int8 is supported" % q.dtype)
    if scale.size > 1:
        shp = [1] * q.ndim
        shp[axis] = -1
        v = q.astype(np.float32) * scale.reshape(shp)
    else:
        v = q.astype(np.float32) * scale.reshape(-1)[0]
    _set(g, node, [v.shape], [v.astype(np.float32)])
    g.prequant[node.outs[0]] = (q, scale.reshape(-1), axis if scale.size > 1 else -1)


def _reshape_shape(g, node, shape):
    op, a = node.op, node.a
    rank = len(shape)
    if op == "Flatten":
        axis = _axis(node, int(a.get("axis", 1)), rank + 1) if a.get("axis", 1) != rank else rank
        lead = int(np.prod(shape[:axis], dtype=np.int64))
        return (lead, int(np.prod(shape[axis:], dtype=np.int64)))
    if op == "Reshape":
        target = _cint(g, node, 1, "the shape")
        if target is None:
            raise node_error(node, "Reshape needs a shape input")
        allowzero = int(a.get("allowzero", 0))
        out = []
        for i, d in enumerate(target):
            if d == 0 and not allowzero:
                if i >= rank:
                    raise node_error(node, "shape %s copies dim %d of a rank-%d input" % (target, i, rank))
                out.append(shape[i])
            else:
                out.append(d)
        if out.count(-1) > 1 or any(d < -1 for d in out):
            raise node_error(node, "shape %s is not a valid Reshape target" % target)
        total = int(np.prod(shape, dtype=np.int64))
        if -1 in out:
            rest = int(np.prod([d for d in out if d != -1], dtype=np.int64))
            if rest == 0 or total % rest:
                raise node_error(node, "shape mismatch: %s cannot be reshaped to %s" % (list(shape), target))
            out[out.index(-1)] = total // rest
        if int(np.prod(out, dtype=np.int64)) != total:
            raise node_error(node, "shape mismatch: %s cannot be reshaped to %s" % (list(shape), target))
        node.ins = node.ins[:1]
        return tuple(out)
    axes = _cint(g, node, 1, "axes") if len(node.ins) > 1 else a.get("axes")
    node.ins = node.ins[:1]
    if op == "Squeeze":
        if axes is None:
            axes = [i for i, d in enumerate(shape) if d == 1]
        axes = [_axis(node, v, rank) for v in axes]
        if any(shape[i] != 1 for i in axes):
            raise node_error(node, "squeezing dims %s of %s that are not 1" % (axes, list(shape)))
        return tuple(d for i, d in enumerate(shape) if i not in axes)
    if axes is None:
        raise node_error(node, "Unsqueeze needs axes")
    out_rank = rank + len(axes)
    axes = sorted(_axis(node, v, out_rank) for v in axes)
    out, it = [], iter(shape)
    for i in range(out_rank):
        out.append(1 if i in axes else next(it))
    return tuple(out)


def _fold(g, node, consts):
    """Evaluate a node on constants with numpy (shape arithmetic, weight transposes)."""
    op, a = node.op, node.a
    try:
        if op in ("Add", "Sub", "Mul", "Div", "Pow"):
            x, y = np.asarray(consts[0]), np.asarray(consts[1])
            if op == "Div" and x.dtype.kind in "iu" and y.dtype.kind in "iu":
                return np.floor_divide(x, y)
            return _numpy_binary(op, x, y)
        if op == "Sqrt":
            return np.sqrt(consts[0])
        if op == "Neg":
            return -np.asarray(consts[0])
        if op in ("Floor", "Ceil"):
            return (np.floor if op == "Floor" else np.ceil)(consts[0])
        if op in ("Min", "Max"):
            return (np.minimum if op == "Min" else np.maximum).reduce([np.asarray(c) for c in consts])
        if op == "Gather":
            return np.take(consts[0], np.asarray(consts[1]).astype(np.int64), axis=int(a.get("axis", 0)))
        if op == "Cast":
            to = int(a["to"])
            return np.asarray(consts[0]).astype(onnx.helper.tensor_dtype_to_np_dtype(to))
        if op == "Unsqueeze" or op == "Squeeze" or op == "Reshape" or op == "Flatten":
            shape = _reshape_shape(g, node, np.asarray(consts[0]).shape)
            return np.asarray(consts[0]).reshape(shape)
        if op == "Transpose":
            perm = a.get("perm")
            return np.transpose(consts[0], perm)
        if op == "Concat":
            return np.concatenate([np.asarray(c) for c in consts], axis=int(a.get("axis", 0)))
        if op == "Slice":
            data = np.asarray(consts[0])
            starts, ends = [int(v) for v in consts[1]], [int(v) for v in consts[2]]
            axes = [int(v) for v in consts[3]] if len(consts) > 3 and consts[3] is not None \
                else list(range(len(starts)))
            steps = [int(v) for v in consts[4]] if len(consts) > 4 and consts[4] is not None else [1] * len(starts)
            sl = [slice(None)] * data.ndim
            for s, e, ax, st in zip(starts, ends, axes, steps):
                sl[ax] = slice(s, e, st)
            return data[tuple(sl)]
        if op == "ConstantOfShape":
            v = a.get("value")
            v = _to_array(v, "node '%s'" % node.name) if v is not None else np.zeros(1, np.float32)
            return np.full([int(d) for d in consts[0]], v.reshape(-1)[0], dtype=v.dtype)
        if op == "Range":
            return np.arange(consts[0], consts[1], consts[2])
        if op == "Equal":
            return np.equal(consts[0], consts[1])
        if op == "Where":
            return np.where(consts[0], consts[1], consts[2])
        if op == "Expand":
            return np.asarray(consts[0]) * np.ones([int(d) for d in consts[1]], np.asarray(consts[0]).dtype)
    except ExportError:
        raise
    except Exception as e:
        raise node_error(node, "cannot evaluate on its constant inputs: %s" % e)
    raise node_error(node, "operator %s on constants is not supported" % op)


# ---- fusion -------------------------------------------------------------------------------


def _single_use(g, name):
    return name != g.output and len(g.consumers(name)) == 1


def _scalar(g, name):
    c = g.const(name)
    if c is None or np.asarray(c).size != 1:
        return None
    return float(np.asarray(c).reshape(-1)[0])


def _other(node, name):
    return node.ins[1] if node.ins[0] == name else node.ins[0]


def _rewire(g, old, new):
    for n in g.nodes:
        n.ins = [new if i == old else i for i in n.ins]
    if g.output == old:
        g.output = new


def _drop(g, *nodes):
    for n in nodes:
        if n in g.nodes:
            g.nodes.remove(n)


def _fuse(g):
    for n in list(g.nodes):  # Identity / Dropout (inference) are nothing
        if n.op in ("Identity", "Dropout"):
            _drop(g, n)
            _rewire(g, n.out, n.ins[0])
    for n in list(g.nodes):  # QuantizeLinear -> DequantizeLinear on an activation: a fake quantization
        if n.op == "DequantizeLinear" and n in g.nodes:
            q = g.producer(n.ins[0])
            if q is None or q.op != "QuantizeLinear" or not _single_use(g, q.out):
                raise node_error(n, "DequantizeLinear of a computed tensor needs its own QuantizeLinear")
            fq = Node("fakequant", q.name, q.ins[:1], n.out, {"scale": n.a["scale"]}, "QuantizeLinear+DequantizeLinear")
            g.nodes[g.nodes.index(n)] = fq
            _drop(g, q)
    for n in list(g.nodes):
        if n.op == "QuantizeLinear":
            raise node_error(n, "QuantizeLinear without a DequantizeLinear after it is not supported")
    _fuse_pad(g)
    _fuse_gelu(g)
    _fuse_layernorm(g)
    _fuse_batchnorm(g)
    _fuse_linear(g)


def _fuse_pad(g):
    """Zero padding of H and W before a Conv (more padding) or an AveragePool (padding that
    counts in the divisor): torch exports avg_pool2d(padding, count_include_pad=True) so."""
    for pad in list(g.nodes):
        if pad.op != "Pad":
            continue
        p, r = pad.a["pads"], len(g.t[pad.ins[0]].shape)
        uses = g.consumers(pad.out)
        if r != 4 or any(p[i] or p[i + 4] for i in (0, 1)) or pad.a["value"] != 0.0 or len(uses) != 1 or \
                pad.out == g.output or p[2] != p[6] or p[3] != p[7]:
            raise node_error(pad, "Pad is supported only as symmetric zero padding of H and W before a Conv or an "
                             "AveragePool")
        u = uses[0]
        if u.op == "Conv":
            u.a["pad"] = [u.a["pad"][0] + p[2], u.a["pad"][1] + p[3]]
        elif u.op == "AveragePool" and u.a["pad"] == [0, 0]:
            u.a["pad"], u.a["count_pad"] = [p[2], p[3]], 1
            k = u.a["kernel"]
            if p[2] > k[0] // 2 or p[3] > k[1] // 2:
                raise node_error(u, "padding more than half the window")
        else:
            raise node_error(pad, "Pad is supported only before a Conv or an AveragePool")
        u.ins[0] = pad.ins[0]
        u.onnx = "Pad+" + u.op
        _drop(g, pad)


def _fuse_gelu(g):
    for e in list(g.nodes):
        if e.op != "Erf" or e not in g.nodes:
            continue
        d = g.producer(e.ins[0])
        if d is None or not _single_use(g, d.out) or d.op not in ("Div", "Mul"):
            continue
        c = _scalar(g, d.ins[1])
        if c is None or not (d.op == "Div" and abs(c - math.sqrt(2)) < 1e-4 or
                             d.op == "Mul" and abs(c - 1 / math.sqrt(2)) < 1e-4):
            continue
        x = d.ins[0]
        if not _single_use(g, e.out):
            continue
        add = g.consumers(e.out)[0]
        if add.op != "Add" or _scalar(g, _other(add, e.out)) != 1.0 or not _single_use(g, add.out):
            continue
        # the product x * (1 + erf) * 0.5 in any order, over one or two Muls
        chain, cur, factors = [], add.out, []
        while len(chain) < 2 and _single_use(g, cur):
            m = g.consumers(cur)[0]
            if m.op != "Mul":
                break
            chain.append(m)
            factors.append(_other(m, cur))
            cur = m.out
        half = [f for f in factors if _scalar(g, f) == 0.5]
        xs = [f for f in factors if f == x]
        pre = [f for f in factors if f not in half and f not in xs]
        ok = (len(half) == 1 and len(xs) == 1 and len(chain) == 2)
        if not ok and len(pre) == 1 and len(chain) == 1:  # x * 0.5 computed first
            h = g.producer(pre[0])
            ok = h is not None and h.op == "Mul" and x in h.ins and _scalar(g, _other(h, x)) == 0.5 and \
                _single_use(g, h.out)
            if ok:
                _drop(g, h)
        if not ok:
            continue
        last = chain[-1]
        gl = Node("gelu", e.name, [x], last.out, {}, "Gelu(erf form)")
        g.nodes[g.nodes.index(last)] = gl
        _drop(g, d, e, add, *chain[:-1])


def _fuse_layernorm(g):
    for div in list(g.nodes):
        if div.op != "Div" or div not in g.nodes:
            continue
        sub, sq = g.producer(div.ins[0]), g.producer(div.ins[1])
        if sub is None or sq is None or sub.op != "Sub" or sq.op != "Sqrt":
            continue
        mean = g.producer(sub.ins[1])
        x = sub.ins[0]
        if mean is None or mean.op != "ReduceMean" or mean.ins[0] != x:
            continue
        rank = len(g.t[x].shape)
        axes = mean.a.get("axes")
        if axes != [rank - 1] or not mean.a.get("keepdims", 1):
            continue
        e = g.producer(sq.ins[0])
        if e is None or e.op != "Add":
            continue
        var = g.producer(e.ins[0]) if g.producer(e.ins[0]) is not None else g.producer(e.ins[1])
        eps = _scalar(g, _other(e, var.out)) if var is not None else None
        if var is None or var.op != "ReduceMean" or var.a.get("axes") != [rank - 1] or eps is None:
            continue
        p = g.producer(var.ins[0])
        if p is None or not (p.op == "Pow" and p.ins[0] == sub.out and _scalar(g, p.ins[1]) == 2.0 or
                             p.op == "Mul" and p.ins == [sub.out, sub.out]):
            continue
        if len(g.consumers(sub.out)) != 2 or not all(_single_use(g, n.out) for n in (mean, p, var, e, sq)):
            continue
        d = g.t[x].shape[-1]
        w, b, out, drop = np.ones(d, np.float32), np.zeros(d, np.float32), div.out, [mean, sub, p, var, e, sq]
        m = g.consumers(div.out)
        if len(m) == 1 and m[0].op == "Mul" and div.out != g.output:
            c = g.const(_other(m[0], div.out))
            if c is not None and np.asarray(c).size in (1, d) and np.asarray(c).shape[-1:] in ((), (1,), (d,)):
                w = np.broadcast_to(np.asarray(c, np.float32).reshape(-1), (d,)).copy()
                drop.append(div)
                div, out = m[0], m[0].out
                m = g.consumers(out)
        if len(m) == 1 and m[0].op == "Add" and out != g.output:
            c = g.const(_other(m[0], out))
            if c is not None and np.asarray(c).size in (1, d):
                b = np.broadcast_to(np.asarray(c, np.float32).reshape(-1), (d,)).copy()
                drop.append(div)
                div, out = m[0], m[0].out
        wn, bn = g.add_const(g.fresh(out + ".ln_w"), w), g.add_const(g.fresh(out + ".ln_b"), b)
        ln = Node("LayerNormalization", sub.name, [x, wn, bn], out, {"axis": rank - 1, "eps": eps},
                  "LayerNormalization(decomposed)")
        g.nodes[g.nodes.index(div)] = ln
        _drop(g, *drop)


def _fuse_batchnorm(g):
    for bn in list(g.nodes):
        if bn.op != "BatchNormalization":
            continue
        s, b, mu, var = (np.asarray(g.const(i), np.float64) for i in bn.ins[1:5])
        eps = float(bn.a.get("epsilon", 1e-5))
        k = s / np.sqrt(var + eps)
        shift = b - mu * k
        conv = g.producer(bn.ins[0])
        c = g.t[bn.ins[0]].shape[1]
        if conv is not None and conv.op == "Conv" and _single_use(g, conv.out):
            w = np.asarray(g.const(conv.ins[1]), np.float64)
            bias = np.asarray(g.const(conv.ins[2]), np.float64) if len(conv.ins) > 2 and conv.ins[2] else 0.0
            wn = g.add_const(g.fresh(conv.ins[1] + ".bn"), (w * k.reshape(-1, 1, 1, 1)).astype(np.float32))
            bn_ = g.add_const(g.fresh(conv.out + ".bn_bias"), (bias * k + shift).astype(np.float32))
            conv.ins = [conv.ins[0], wn, bn_]
            conv.onnx = "Conv+BatchNormalization"
            _drop(g, bn)
            _rewire(g, bn.out, conv.out)
            continue
        if len(g.t[bn.ins[0]].shape) != 4:
            raise node_error(bn, "BatchNormalization is supported after a Conv or on 4-D input only")
        # per channel: a depthwise 1x1 conv
        wn = g.add_const(g.fresh(bn.out + ".w"), k.astype(np.float32).reshape(c, 1, 1, 1))
        bn_ = g.add_const(g.fresh(bn.out + ".b"), shift.astype(np.float32))
        conv = Node("Conv", bn.name, [bn.ins[0], wn, bn_], bn.out,
                    {"stride": [1, 1], "dil": [1, 1], "pad": [0, 0], "groups": c}, "BatchNormalization")
        g.nodes[g.nodes.index(bn)] = conv


def _fuse_linear(g):
    for n in list(g.nodes):
        if n not in g.nodes:
            continue
        if n.op == "Gemm":
            w = np.asarray(g.const(n.ins[1]), np.float32)
            w = w if int(n.a.get("transB", 0)) else w.T
            w = w * np.float32(n.a.get("alpha", 1.0))
            nout = w.shape[0]
            ins = [n.ins[0], g.add_const(g.fresh(n.ins[1] + ".w"), np.ascontiguousarray(w, np.float32))]
            if len(n.ins) > 2 and n.ins[2]:
                c = np.asarray(g.const(n.ins[2]), np.float32) * np.float32(n.a.get("beta", 1.0))
                if c.size not in (1, nout) or (c.ndim == 2 and c.shape[0] != 1):
                    raise node_error(n, "a bias C of shape %s is not supported (per output column only)"
                                     % list(c.shape))
                ins.append(g.add_const(g.fresh(n.ins[2] + ".b"), np.broadcast_to(c.reshape(-1), (nout,)).copy()))
            g.nodes[g.nodes.index(n)] = Node("linear", n.name, ins, n.out, {}, "Gemm")
        elif n.op == "MatMul" and g.const(n.ins[1]) is not None:
            w = np.asarray(g.const(n.ins[1]), np.float32)
            if w.ndim != 2:
                raise node_error(n, "a constant MatMul operand must be 2-D (a weight), got %s" % list(w.shape))
            if g.const(n.ins[0]) is not None:
                continue
            ins = [n.ins[0], g.add_const(g.fresh(n.ins[1] + ".w"), np.ascontiguousarray(w.T))]
            out, onnx_op, node = n.out, "MatMul", n
            m = g.consumers(n.out)
            if len(m) == 1 and m[0].op == "Add" and n.out != g.output:
                c = g.const(_other(m[0], n.out))
                if c is not None and np.asarray(c).size == w.shape[1] and np.asarray(c).shape[-1] == w.shape[1]:
                    ins.append(g.add_const(g.fresh(out + ".b"), np.asarray(c, np.float32).reshape(-1).copy()))
                    _drop(g, n)
                    node, out, onnx_op = m[0], m[0].out, "MatMul+Add"
            g.nodes[g.nodes.index(node)] = Node("linear", n.name, ins, out, {}, onnx_op)
        elif n.op == "MatMul":
            if g.const(n.ins[0]) is not None:
                raise node_error(n, "a constant first MatMul operand is not supported")
            sa, sb = g.t[n.ins[0]].shape, g.t[n.ins[1]].shape
            if sa[:-2] != sb[:-2]:
                raise node_error(n, "MatMul of activations needs equal batch dims, got %s @ %s" % (
                    list(sa), list(sb)))
            g.nodes[g.nodes.index(n)] = Node("matmul", n.name, n.ins, n.out, {}, "MatMul")


def _prune(g):
    live, changed = {g.output}, True
    while changed:
        changed = False
        for n in g.nodes:
            if n.out in live and not set(n.ins) <= live:
                live |= set(i for i in n.ins if i)
                changed = True
    g.nodes = [n for n in g.nodes if n.out in live]


# ---- lowering to the runner's operators --------------------------------------------------------

RELU_FUSABLE = ("conv", "linear")


def _lower(g):
    out = []
    for n in g.nodes:
        op, a = n.op, n.a
        if op == "Conv":
            ins = n.ins if len(n.ins) > 2 and n.ins[2] else n.ins[:2]
            out.append(Node("conv", n.name, ins, n.out, {k: a[k] for k in ("stride", "dil", "pad", "groups")},
                            n.onnx))
        elif op in ("MaxPool", "AveragePool"):
            out.append(Node("maxpool" if op == "MaxPool" else "avgpool", n.name, n.ins, n.out,
                            {k: a[k] for k in ("kernel", "stride", "dil", "pad", "count_pad")}, n.onnx))
        elif op == "GlobalAveragePool":
            out.append(Node("mean", n.name, n.ins, n.out, {"axes": [2, 3]}, n.onnx))
        elif op == "ReduceMean":
            out.append(Node("mean", n.name, n.ins, n.out, {"axes": a["axes"]}, n.onnx))
        elif op in ("Relu", "Sigmoid", "Tanh"):
            out.append(Node(op.lower(), n.name, n.ins, n.out, {}, n.onnx))
        elif op == "Clip":
            if a["lo"] == 0.0 and a["hi"] == math.inf:
                out.append(Node("relu", n.name, n.ins, n.out, {}, n.onnx))
            else:
                out.append(Node("clip", n.name, n.ins, n.out, {"lo": a["lo"], "hi": a["hi"]}, n.onnx))
        elif op == "Softmax":
            out.append(Node("softmax", n.name, n.ins, n.out, {"axis": a["axis"]}, n.onnx))
        elif op == "LayerNormalization":
            x = g.t[n.ins[0]]
            d = x.shape[a["axis"]:]
            ins = list(n.ins) + [None] * (3 - len(n.ins))
            if not ins[1]:
                ins[1] = g.add_const(g.fresh(n.out + ".ln_w"), np.ones(d, np.float32))
            if not ins[2]:
                ins[2] = g.add_const(g.fresh(n.out + ".ln_b"), np.zeros(d, np.float32))
            out.append(Node("layernorm", n.name, ins, n.out, {"axis": a["axis"], "eps": a["eps"]}, n.onnx))
        elif op in ("Flatten", "Reshape", "Squeeze", "Unsqueeze"):
            out.append(Node("reshape", n.name, n.ins[:1], n.out, {}, n.onnx))
        elif op == "Transpose":
            out.append(Node("transpose", n.name, n.ins, n.out, {"perm": a["perm"]}, n.onnx))
        elif op == "Concat":
            if any(g.const(i) is not None for i in n.ins):
                raise node_error(n, "concatenating constants with activations is not supported")
            out.append(Node("concat", n.name, n.ins, n.out, {"axis": a["axis"]}, n.onnx))
        elif op in ("Add", "Sub", "Mul", "Div"):
            out.append(_lower_binary(g, n))
        elif op in ("linear", "matmul", "gelu", "fakequant"):
            out.append(n)
        elif op == "Erf":
            raise node_error(n, "operator Erf is supported only inside the erf form of GELU "
                             "(x * 0.5 * (1 + erf(x / sqrt(2)))); %s" % supported_list())
        elif op in ("Pow", "Sqrt", "Exp", "Neg"):
            raise node_error(n, "operator %s is supported only inside the decomposed LayerNorm; %s" % (
                op, supported_list()))
        else:
            raise node_error(n, "operator %s is not supported; %s" % (op, supported_list()))
    g.nodes = out
    # Relu after a conv / linear whose output nothing else reads: fused (f32 and int8 alike)
    for n in list(g.nodes):
        if n.op == "relu":
            p = g.producer(n.ins[0])
            if p is not None and p.op in RELU_FUSABLE and _single_use(g, p.out) and not p.a.get("relu"):
                p.a["relu"] = 1
                p.onnx += "+Relu"
                g.nodes.remove(n)
                p.out = n.out


def _lower_binary(g, n):
    fn = n.op.lower()
    ca, cb = g.const(n.ins[0]), g.const(n.ins[1])
    if ca is not None and cb is not None:
        raise node_error(n, "internal: constant operands were not folded")
    if ca is not None:  # constant first: commute add and mul; c - x and c / x are x-ops of their own
        if fn in ("add", "mul"):
            n.ins = [n.ins[1], n.ins[0]]
            ca, cb = None, ca
        elif np.asarray(ca).size == 1:
            return Node("scalar", n.name, [n.ins[1]], n.out, {"fn": "r" + fn, "c": float(np.asarray(ca).reshape(-1)[0])},
                        n.onnx)
        else:
            raise node_error(n, "%s with a constant first operand of shape %s is not supported" % (
                n.op, list(np.asarray(ca).shape)))
    x = g.t[n.ins[0]]
    out = g.t[n.out]
    if cb is not None and np.asarray(cb).size == 1:
        return Node("scalar", n.name, [n.ins[0]], n.out, {"fn": fn, "c": float(np.asarray(cb).reshape(-1)[0])}, n.onnx)
    if tuple(out.shape) != tuple(x.shape):
        if fn in ("add", "mul"):
            n.ins = [n.ins[1], n.ins[0]]
            x = g.t[n.ins[0]]
        if tuple(out.shape) != tuple(x.shape) or g.const(n.ins[0]) is not None:
            raise node_error(n, "shape mismatch: the first operand %s must have the output's shape %s (only the "
                             "second one broadcasts)" % (list(g.t[n.ins[0]].shape), list(out.shape)))
    if cb is not None:  # a broadcast constant, stored in the output's rank
        c = np.asarray(cb, np.float32)
        c = c.reshape((1,) * (len(out.shape) - c.ndim) + c.shape)
        n.ins[1] = g.add_const(g.fresh(n.ins[1] + ".c"), c)
    return Node("binary", n.name, n.ins, n.out, {"fn": fn}, n.onnx)
