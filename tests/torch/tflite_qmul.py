#!/usr/bin/env python3
"""dtensor_quant.h's dt_qmm_multipliers against TFLite's requantization multipliers.

The oracle is TFLite's reference code re-derived in numpy (no TFLite code is used or needed):
  - the effective scale of an int8 conv (per tensor and per channel) and of a fully-connected
    layer with per-channel weight scales is computed in double from the float scales
    (kernel_util.cc PopulateConvolutionQuantizationParams; fully_connected.cc's per-channel
    loop), dt_qmm_multipliers:
        static_cast<double>(input_scale) * static_cast<double>(filter_scale)
            / static_cast<double>(output_scale)
  - a fully-connected layer with one weight scale takes kernel_util.cc
    GetQuantizedConvolutionMultipler's, whose product of the two scales is a float product
    (TFLite and TFLite Micro alike), dt_qlinear_multiplier:
        static_cast<double>(input->params.scale * filter->params.scale)
            / static_cast<double>(output->params.scale)
  - QuantizeMultiplier (quantization_util.cc, without TFLITE_SINGLE_ROUNDING):
        q = frexp(d, &shift); q_fixed = TfLiteRound(q * 2^31)  (std::round: half away
        from zero); q_fixed == 2^31 -> q_fixed / 2, ++shift; shift < -31 -> 0, 0.
The cases go to dt_driver (tests/torch/dt_driver.c) as the floats' bits, each channel also
alone as a fully-connected layer's one weight scale; every (multiplier, shift) must be
TFLite's, bit for bit. Scales are positive finite floats with an
effective scale below 2^30 (dt_quantize_multiplier refuses 2^30 and above, see its doc).
The summary also counts how many cases float32 arithmetic (sa * sb / sy in float) would get
wrong, to show the cases exercise the difference. Exit 0 when there is no mismatch.
"""
import math
import sys

import numpy as np

import dt_drive


def f32_bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def bits_f32(b):
    return np.array([b], dtype=np.uint32).view(np.float32)[0]


def quantize_multiplier(d):
    """TFLite's QuantizeMultiplier(double) -> (quantized_multiplier, shift)."""
    d = float(d)
    if d == 0.0:
        return 0, 0
    q, shift = math.frexp(d)
    x = q * (1 << 31)  # exact: a power-of-two scaling
    q_fixed = int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)  # std::round, exact for |x| < 2^31
    assert abs(q_fixed) <= 1 << 31
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift = 0
        q_fixed = 0
    return q_fixed, shift


def effective_scale(sa, sb, sy):
    """static_cast<double>(input_scale) * filter_scale / static_cast<double>(output_scale)."""
    return np.float64(np.float32(sa)) * np.float64(np.float32(sb)) / np.float64(np.float32(sy))


def tflite(sa, sbs, sy):
    return [quantize_multiplier(effective_scale(sa, sb, sy)) for sb in sbs]


def fc_scale(sa, sb, sy):
    """static_cast<double>(input_scale * filter_scale) / static_cast<double>(output_scale)."""
    with np.errstate(all="ignore"):
        p = np.float32(sa) * np.float32(sb)  # a float32 product, rounded once
    return np.float64(p) / np.float64(np.float32(sy))


def tflite_fc(sa, sb, sy):
    """TFLite's per-tensor FULLY_CONNECTED multiplier; None where TFLite's QuantizeMultiplier
    cannot give one (an infinite product or a multiplier of 2^30 and above: refused)."""
    d = fc_scale(sa, sb, sy)
    return quantize_multiplier(d) if d < 2.0 ** 30 and quantize_multiplier(d)[1] <= 30 else None


def f32_path(sa, sb, sy):
    """What float32 arithmetic gives (splitcore before: sa * sb / sy in float)."""
    with np.errstate(all="ignore"):
        v = np.float32(np.float32(sa) * np.float32(sb)) / np.float32(sy)
    return quantize_multiplier(np.float64(v)) if np.isfinite(v) else None


def rand_pos_f32(rng, lo_exp, hi_exp):
    """A positive normal float with a uniform random mantissa and exponent in [lo, hi]."""
    e = rng.randint(lo_exp, hi_exp)
    return float(np.float32(math.ldexp(1.0 + rng.getrandbits(23) / float(1 << 23), e)))


def half_tie_case(rng):
    """sa, sb, sy whose effective scale is exact in double and lies halfway between two
    31-bit multipliers (q * 2^31 = k + 0.5): TfLiteRound's half-away-from-zero decides."""
    while True:
        ma = rng.randrange(1 << 23, 1 << 24) | 1
        mb = rng.randrange(1 << 8, 1 << 9) | 1
        p = ma * (mb << 15)
        t = p.bit_length() - 1
        if t - 31 == 15:  # p's lowest set bit is bit 15, exactly the first one rounded away
            sa = math.ldexp(ma, -23 - rng.randint(0, 6))
            sb = math.ldexp(mb << 15, -23 - rng.randint(0, 6))
            sy = math.ldexp(1.0, -rng.randint(0, 8))
            return float(np.float32(sa)), float(np.float32(sb)), float(np.float32(sy))


def gen_case(rng, k):
    kind = k % 8
    nb = rng.choice([1, 1, 2, 3, 4, 8, 16, 33])
    if kind in (0, 1, 2):  # observer scales: amax / 127.5 of activations and weights
        sa = float(np.float32(10 ** rng.uniform(-4, 1) / 127.5))
        sy = float(np.float32(10 ** rng.uniform(-4, 1) / 127.5))
        sbs = [float(np.float32(10 ** rng.uniform(-4, 0) / 127.5)) for _ in range(nb)]
    elif kind == 3:  # any mantissa, wide exponents (effective scale kept below 2^30)
        sa = rand_pos_f32(rng, -60, 20)
        sy = rand_pos_f32(rng, -60, 20)
        sbs = [rand_pos_f32(rng, -60, 20) for _ in range(nb)]
    elif kind == 4:  # near the 2^-32 underflow to (0, 0) and the 2^30 limit
        sa = rand_pos_f32(rng, -20, 0)
        sy = rand_pos_f32(rng, -20, 0)
        sbs = []
        for _ in range(nb):
            target = rng.choice([-33, -32, -31, 28, 29])
            sbs.append(float(np.float32(math.ldexp(rng.uniform(0.5, 1.0), target) * sy / sa)))
    elif kind == 5:  # subnormal and extreme floats
        sa = rng.choice([float(bits_f32(rng.randrange(1, 1 << 23))), rand_pos_f32(rng, -126, -100),
                         rand_pos_f32(rng, 90, 127)])
        sy = rng.choice([float(bits_f32(rng.randrange(1, 1 << 23))), rand_pos_f32(rng, -126, -100),
                         rand_pos_f32(rng, 90, 127)])
        sbs = [rng.choice([float(bits_f32(rng.randrange(1, 1 << 23))), rand_pos_f32(rng, -126, 127)])
               for _ in range(nb)]
    elif kind == 6:  # exact effective scales halfway between two multipliers
        sa, sb, sy = half_tie_case(rng)
        sbs = [sb] + [half_tie_case(rng)[1] for _ in range(nb - 1)]
    else:  # the multiplier rounding up to 2^31 (q just below 1)
        sa = rand_pos_f32(rng, -10, 0)
        sy = rand_pos_f32(rng, -10, 0)
        sbs = [float(np.float32(math.ldexp(1.0 - rng.uniform(0, 2 ** -30), rng.randint(-8, 8)) * sy / sa))
               for _ in range(nb)]
    # keep only TFLite's range below 2^30 (and above 0 for positive floats)
    sbs = [sb for sb in sbs if 0 < sb < math.inf and effective_scale(sa, sb, sy) < 2.0 ** 30]
    if not sbs or not (0 < sa < math.inf and 0 < sy < math.inf):
        return gen_case(rng, k + 1)
    return sa, sbs, sy


def main():
    a, seed, rng = dt_drive.options(__doc__, 2000)
    # a case where float32 arithmetic loses: TFLite (1307231021, -2), float32 (1307230976, -2)
    cases = [(0.652019, [0.0165054], 0.070717)]
    cases += [gen_case(rng, k) for k in range(a.cases - 1)]
    answers = dt_drive.ask(a.driver, ["qmul %08x %d %s %08x" % (
        f32_bits(sa), len(sbs), " ".join("%08x" % f32_bits(sb) for sb in sbs), f32_bits(sy))
        for sa, sbs, sy in cases], "tflite_qmul")
    fc_cases = [(sa, sb, sy) for sa, sbs, sy in cases for sb in sbs]
    fc_answers = dt_drive.ask(a.driver, ["qlin %08x %08x %08x" % (f32_bits(sa), f32_bits(sb), f32_bits(sy))
                                         for sa, sb, sy in fc_cases], "tflite_qmul")
    fc_bad = fc_differs = 0
    for (sa, sb, sy), ans in zip(fc_cases, fc_answers):
        f = [int(v) for v in ans.split()]
        want = tflite_fc(sa, sb, sy)
        fc_differs += want != quantize_multiplier(effective_scale(sa, sb, sy))
        if (f[0] == 0 and want != (f[1], f[2])) or (f[0] != 0 and want is not None):
            fc_bad += 1
            if fc_bad <= 10:
                print("MISMATCH fully-connected sa=%r sb=%r sy=%r: rc %d (%d, %d), TFLite %r" % (
                    sa, sb, sy, f[0], f[1], f[2], want))
    bad = channels = f32_wrong = f32_cases = ties = 0
    for (sa, sbs, sy), ans in zip(cases, answers):
        f = [int(v) for v in ans.split()]
        want = tflite(sa, sbs, sy)
        got = list(zip(f[1::2], f[2::2]))
        channels += len(sbs)
        wrong = [f32_path(sa, sb, sy) != w for sb, w in zip(sbs, want)]
        f32_wrong += sum(wrong)
        f32_cases += any(wrong)
        ties += sum(math.frexp(float(effective_scale(sa, sb, sy)))[0] * 2 ** 31 % 1 == 0.5 for sb in sbs)
        if f[0] != 0 or got != want:
            bad += 1
            if bad <= 10:
                print("MISMATCH sa=%r sb=%r sy=%r: rc %d %r, TFLite %r" % (sa, sbs, sy, f[0], got, want))
    print("tflite_qmul: seed %d: %d cases (%d channels), %d mismatches with TFLite's QuantizeMultiplier of the "
          "double effective scale; %d halfway roundings; float32 arithmetic would differ in %d cases (%d channels)"
          % (seed, len(cases), channels, bad, ties, f32_cases, f32_wrong))
    print("tflite_qmul: %d per-tensor fully-connected layers, %d mismatches with TFLite's "
          "GetQuantizedConvolutionMultipler (float product of the scales); its multiplier differs from the "
          "conv / per-channel one in %d" % (len(fc_cases), fc_bad, fc_differs))
    sys.exit(1 if bad or fc_bad else 0)


if __name__ == "__main__":
    main()
