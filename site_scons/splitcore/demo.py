"""`scons demo`: the host's and the bare-metal firmware's predictions must be identical.

Both programs print one line `predictions: 9 2 1 ...` (the first 100 test images) and one
line `logits fnv-1a: <hex>` (a hash of those images' logits, bit by bit); their run logs
(runners.run_and_log) are compared here."""
import sys


def line_values(log_path, prefix):
    """The words after `prefix` on the last line of a run log starting with it, or None."""
    found = None
    with open(log_path, encoding="utf-8", errors="replace") as log:
        for line in log:
            if line.startswith(prefix):
                found = line[len(prefix):].split()
    return found


def predictions(log_path):
    return line_values(log_path, "predictions:")


def compare_action(host_label, fw_label):
    """An SCons action: source[0] = host run log, source[1] = firmware run log; writes
    target[0] with the verdict. Fails on a missing line or any difference."""
    def action(target, source, env):
        host, fw = predictions(str(source[0])), predictions(str(source[1]))
        lines = []
        if host is None or fw is None:
            lines.append("FAILED: no `predictions:` line in the %s log (%s)" % (
                host_label if host is None else fw_label, source[0] if host is None else source[1]))
        elif len(host) != len(fw):
            lines.append("FAILED: %s printed %d predictions, %s %d" % (host_label, len(host), fw_label, len(fw)))
        else:
            diff = [i for i, (a, b) in enumerate(zip(host, fw)) if a != b]
            for i in diff:
                lines.append("  image %d: %s %s, %s %s" % (i, host_label, host[i], fw_label, fw[i]))
            if diff:
                lines.insert(0, "FAILED: bare-metal predictions differ from host for %d/%d images"
                             % (len(diff), len(host)))
            else:
                lines.append("bare-metal predictions identical to host for %d/%d images"
                             % (len(host), len(host)))
                hh = line_values(str(source[0]), "logits fnv-1a:")
                fh = line_values(str(source[1]), "logits fnv-1a:")
                if hh is None or fh is None or hh != fh:
                    lines.insert(0, "FAILED: logits not bit-identical: fnv-1a %s on %s, %s on %s" % (
                        hh and hh[0], host_label, fh and fh[0], fw_label))
                else:
                    lines[-1] += " (logits bit-identical: fnv-1a %s)" % hh[0]
        text = "\n".join(lines) + "\n"
        with open(str(target[0]), "w") as out:
            out.write(text)
        sys.stdout.write(text)
        sys.stdout.flush()
        return 1 if lines[0].startswith("FAILED") else 0
    action.__name__ = "compare"
    return action
