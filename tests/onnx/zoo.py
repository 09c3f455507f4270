"""A small model with every operator the exporter takes that the two worked examples do not
use: a dilated grouped conv, ReLU6 (Clip), Sigmoid, Tanh, MaxPool, AveragePool with padding
counted (count_include_pad), a BatchNorm that follows no conv (a per-channel 1x1 depthwise
conv after export), Concat, Mul of two activations, a fake quantization (QuantizeLinear +
DequantizeLinear), Flatten, Gemm and Softmax. tests/onnx/check.py exports and runs it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Zoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, stride=1, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2)
        self.bn = nn.BatchNorm2d(8)
        self.c3 = nn.Conv2d(16, 8, 1)
        self.fc = nn.Linear(8 * 7 * 7, 10)

    def forward(self, x):
        a = F.relu6(self.c1(x) * 4.0)
        b = torch.sigmoid(self.c2(a))
        m = self.bn(F.max_pool2d(a, 2))
        v = F.avg_pool2d(b, 3, stride=2, padding=1)
        y = torch.cat([m, v * torch.tanh(v)], 1)
        y = torch.fake_quantize_per_tensor_affine(y, 0.05, 0, -128, 127)
        z = F.relu(self.c3(F.avg_pool2d(y, 2)))
        return torch.softmax(self.fc(torch.flatten(z, 1)), -1)


def make(path, seed=3, opset=13):
    torch.manual_seed(seed)
    m = Zoo()
    g = torch.Generator().manual_seed(seed)
    m.bn.running_mean.copy_(torch.randn(8, generator=g) * 0.1)
    m.bn.running_var.copy_(torch.rand(8, generator=g) + 0.5)
    m.bn.weight.data.copy_(torch.rand(8, generator=g) + 0.5)
    m.eval()
    torch.onnx.export(m, torch.zeros(1, 1, 28, 28), path, input_names=["x"], output_names=["y"], opset_version=opset,
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    return m
