"""The two worked models of `scons models` (README, "Bring your own model"), as PyTorch
modules, and Debian's Fashion-MNIST as numpy arrays.

resnet8:  the MLPerf Tiny image-classification ResNet-8 shape on 28x28x1: a 3x3 stem of 16
          channels, three residual stacks of 16, 32 and 64 channels (the last two with
          stride 2 and a 1x1 strided shortcut), BatchNorm after every 3x3 conv (folded
          into the conv by torch.onnx.export in eval mode), global average pool, linear.
encoder:  a small transformer encoder block on 7x7 patches (16 tokens of width 64): patch
          embedding (a 7x7 stride-7 conv), learned positions, pre-norm multi-head
          self-attention (4 heads) and a GELU MLP, each with a residual add, a final
          LayerNorm, the mean over tokens, linear.

Both take x of shape (N, 1, 28, 28), pixels / 255, and give 10 logits. Reshapes use -1
for the batch so the ONNX graph has constant shapes with a symbolic batch dim."""
import gzip
import os

import numpy as np
import torch
import torch.nn as nn

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def load_fmnist(split):
    """(images float32 (N, 1, 28, 28) in [0, 1], labels int64 (N,)) of 'train' or 't10k'."""
    def read(name, offset):
        path = os.path.join(DATA_DIR, name)
        if not os.path.exists(path):
            raise SystemExit("cannot read %s (apt-get install dataset-fashion-mnist)" % path)
        with gzip.open(path, "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
    x = read("%s-images-idx3-ubyte.gz" % split, 16).reshape(-1, 1, 28, 28).astype(np.float32) / 255.0
    y = read("%s-labels-idx1-ubyte.gz" % split, 8).astype(np.int64)
    return x, y


class Residual(nn.Module):
    """conv3x3(stride)-BN-ReLU-conv3x3-BN, plus the input (or its 1x1 strided conv), ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = nn.Conv2d(cin, cout, 1, stride, 0) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (self.short(x) if self.short is not None else x))


class ResNet8(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.s1 = Residual(16, 16, 1)
        self.s2 = Residual(16, 32, 2)
        self.s3 = Residual(32, 64, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = self.s3(self.s2(self.s1(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        t, d = x.shape[1], x.shape[2]

        def heads(z):
            return z.reshape(-1, t, self.h, self.dh).transpose(1, 2)
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        a = torch.softmax(q @ k.transpose(-2, -1) * (1.0 / self.dh ** 0.5), dim=-1)
        return self.o((a @ v).transpose(1, 2).reshape(-1, t, d))


class Encoder(nn.Module):
    def __init__(self, d=64, heads=4, hidden=128, patch=7):
        super().__init__()
        self.d, self.tokens = d, (28 // patch) ** 2
        self.embed = nn.Conv2d(1, d, patch, patch)
        self.pos = nn.Parameter(torch.zeros(1, self.tokens, d))
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, x):
        x = self.embed(x).reshape(-1, self.d, self.tokens).transpose(1, 2) + self.pos
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return self.head(self.lnf(x).mean(dim=1))


MODELS = {"resnet8": ResNet8, "encoder": Encoder}


def randomize_bn(model, seed):
    """BatchNorm statistics and affine parameters away from their initial 0/1, so that an
    untrained model still tests the folding (test models are not trained)."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)


def export(model, path, opset=13, batch=None):
    """torch.onnx.export in eval mode (BatchNorm folded into the convs); the batch dim is
    symbolic ('N') unless `batch` fixes it."""
    model.eval()
    x = torch.zeros(1 if batch is None else batch, 1, 28, 28)
    dyn = None if batch is not None else {"x": {0: "N"}, "logits": {0: "N"}}
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["logits"], opset_version=opset,
                      dynamic_axes=dyn, do_constant_folding=True)
