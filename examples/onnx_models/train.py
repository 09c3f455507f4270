#!/usr/bin/python3
"""Train one of models.py's models on Debian's Fashion-MNIST with Debian's torch 1.13 (one
thread, short: CPU is scarce) and export it to ONNX; or write the data as .npy files.

    train.py resnet8 --out build/models [--epochs 2] [--opset 13]
        -> build/models/resnet8.pt (state dict), resnet8.onnx, resnet8.json (accuracy)
    train.py encoder --untrained --out DIR     a seeded random model (tests: no training)
    train.py resnet8 --steps 60 --out DIR      trained briefly (tests: 60 batches of 128)
    train.py data --out build/models
        -> test_x.npy (10000, 1, 28, 28) f32, test_y.npy (10000,) int64,
           calib.npy (512 training images: the int8 calibration set)

torch.onnx.export runs in eval mode, so BatchNorm is folded into the convs."""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def accuracy(model, x, y, batch=500):
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            right += int((model(torch.from_numpy(x[i:i + batch])).argmax(1).numpy() == y[i:i + batch]).sum())
    return right / len(x)


def train(name, epochs, seed, log, max_steps=0):
    torch.manual_seed(seed)
    model = models.MODELS[name]()
    x, y = models.load_fmnist("train")
    if max_steps:  # one epoch over the first max_steps batches' images
        x, y, epochs = x[:max_steps * 128], y[:max_steps * 128], 1
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    steps = epochs * (len(x) // 128)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    g = np.random.default_rng(seed)
    step = 0
    for epoch in range(epochs):
        model.train()
        order = g.permutation(len(x))
        t0, total = time.time(), 0.0
        for i in range(0, len(x) - 127, 128):
            idx = order[i:i + 128]
            loss = F.cross_entropy(model(torch.from_numpy(x[idx])), torch.from_numpy(y[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss)
            step += 1
            if step % 100 == 0:
                log("  step %d/%d  loss %.4f  %.0f s" % (step, steps, float(loss), time.time() - t0))
        log("%s epoch %d/%d  loss %.4f  %.0f s" % (name, epoch + 1, epochs, total / (len(x) // 128),
                                                   time.time() - t0))
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=sorted(models.MODELS) + ["data"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--untrained", action="store_true", help="a seeded random model, no training")
    ap.add_argument("--steps", type=int, default=0, help="train on this many batches only (one epoch)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    if a.what == "data":
        tx, ty = models.load_fmnist("t10k")
        x, _ = models.load_fmnist("train")
        np.save(os.path.join(a.out, "test_x.npy"), tx)
        np.save(os.path.join(a.out, "test_y.npy"), ty)
        np.save(os.path.join(a.out, "calib.npy"), x[np.random.default_rng(a.seed).permutation(len(x))[:512]])
        return
    stem = os.path.join(a.out, a.what)
    if a.untrained:
        torch.manual_seed(a.seed)
        model = models.MODELS[a.what]()
        models.randomize_bn(model, a.seed)
        info = {"trained": False}
    else:
        model = train(a.what, a.epochs, a.seed, lambda s: print(s, flush=True), a.steps)
        tx, ty = models.load_fmnist("t10k")
        info = {"trained": True, "epochs": 1 if a.steps else a.epochs, "steps": a.steps,
                "torch_top1": accuracy(model, tx, ty)}
        print("%s: torch f32 top-1 on the 10,000 test images: %.4f" % (a.what, info["torch_top1"]))
    torch.save(model.state_dict(), stem + ".pt")
    models.export(model, stem + ".onnx", opset=a.opset)
    info.update(opset=a.opset, torch=torch.__version__)
    with open(stem + ".json", "w") as f:
        json.dump(info, f)


if __name__ == "__main__":
    main()
