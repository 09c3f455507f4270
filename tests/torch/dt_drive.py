"""What the dt_driver oracles share (tests/torch/dt_strategies.py, tflite_qmul.py,
batch_dims.py): their command line and one run of dt_driver over all requests."""
import argparse
import random
import subprocess
import sys


def options(doc, cases):
    """--driver, --cases (default `cases`), --seed: (arguments, seed, random.Random(seed))."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--cases", type=int, default=cases)
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    return a, seed, random.Random(seed)


def ask(driver, lines, who):
    """dt_driver's answer lines to the request lines, one each (exits when it fails)."""
    out = subprocess.run([driver], input="\n".join(lines) + "\n", capture_output=True, text=True)
    answers = out.stdout.splitlines()
    if out.returncode or len(answers) != len(lines):
        sys.exit("%s: dt_driver failed (exit %d, %d answers for %d requests)" %
                 (who, out.returncode, len(answers), len(lines)))
    return answers
