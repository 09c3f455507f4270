"""The chip hook files of ports/platform/: what `scons test` and `scons size` do with them.

- Compile checks (`scons test`): tests/ports/firmware.c, one core's firmware (pg_shm, the
  pipeline executor of an emitted plan, the hook file, its doorbell handler and a rank's
  main), compiled warning-free (-Wall -Wextra -Wpedantic -Werror -Os) for each core of the
  chip: no vendor SDK is needed, the hook files carry their own register definitions.
- Sizes (`scons size`): the same file with PORT_SIZE_ONLY, i.e. pg_shm's implementation and
  the hook set alone, one row per chip and core ("pg_shm.h + ports/platform/<chip>.h").
- Line budget (`scons test`): each hook file holds at most LINE_BUDGET lines of code
  (comments and blank lines not counted); the table is printed.
The behaviour of each hook file is tested elsewhere: tests/test_port_*.c run it against a
model of its chip on host threads (TEST_OPTIONS in SConstruct).
"""
import re

LINE_BUDGET = 150
FIRMWARE = "tests/ports/firmware.c"

# Cores without a TARGET of their own: compiler flags.
NRF5340_NET = ["-mcpu=cortex-m33+nofp", "-mthumb", "-mfloat-abi=soft"]  # the network core has no FPU


class Core:
    """One core a hook file is built for: a TARGET name (its flags), or a label with flags."""

    def __init__(self, label, target, arch=None, defines=()):
        self.label, self.target, self.arch, self.defines = label, target, arch, list(defines)


class Port:
    def __init__(self, name, header, define, cores, defines=()):
        self.name, self.header, self.define = name, header, define
        self.cores, self.defines = cores, list(defines)


PORTS = [
    Port("rp2040", "ports/platform/rp2040.h", "PORT_RP2040", [Core("cortex-m0plus", "cortex-m0plus")]),
    Port("rp2040_shared", "ports/platform/rp2040.h", "PORT_RP2040", [Core("cortex-m0plus", "cortex-m0plus")],
         defines=["PG_SHM_RP2040_SHARED_FIFO=1"]),
    Port("rp2350", "ports/platform/rp2350.h", "PORT_RP2350", [Core("cortex-m33", "cortex-m33")]),
    Port("stm32h7", "ports/platform/stm32h7.h", "PORT_STM32H7",
         [Core("cortex-m7", "cortex-m7"), Core("cortex-m4", "cortex-m4")]),
    Port("nrf5340", "ports/platform/nrf5340.h", "PORT_NRF5340",
         [Core("cortex-m33", "cortex-m33"),
          Core("cortex-m33+nofp (network)", "cortex-m33", NRF5340_NET, ["PORT_RANK=1u"])]),
    Port("imxrt1170", "ports/platform/imxrt1170.h", "PORT_IMXRT1170",
         [Core("cortex-m7", "cortex-m7"), Core("cortex-m4", "cortex-m4")]),
]

# Every chip or RTOS hook file the budget applies to (cortex_m.h: what the Cortex-M ones share).
BUDGETED = ["ports/platform/cortex_m.h", "ports/platform/rp2040.h", "ports/platform/rp2350.h",
            "ports/platform/stm32h7.h", "ports/platform/nrf5340.h", "ports/platform/imxrt1170.h",
            "ports/platform/freertos.h", "ports/platform/zephyr.h"]


def code_lines(path):
    """Lines of a C file that hold code: comments and blank lines removed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return sum(1 for line in text.split("\n") if line.strip())


def line_report(paths=BUDGETED, budget=LINE_BUDGET):
    """(lines of the table, problems)."""
    lines = ["| hook file | lines of code | budget |", "|---|---:|---|"]
    problems = []
    for p in paths:
        n = code_lines(p)
        lines.append("| %s | %d | %s |" % (p, n, "<= %d ok" % budget if n <= budget else "EXCEEDED"))
        if n > budget:
            problems.append("%s: %d lines of code, budget %d" % (p, n, budget))
    return lines, problems


def builds(make_env, targets, available, alias, warn):
    """[(port, core, env, defines)] for every core whose compiler is installed; `available`
    reports the missing ones (skipped, or a failure under CI=true)."""
    out = []
    for port in PORTS:
        for core in port.cores:
            if not available(core.target, alias):
                continue
            env = make_env(targets[core.target])
            if core.arch:
                env.Replace(CCFLAGS=core.arch + targets[core.target].compile_flags(), LINKFLAGS=core.arch)
            env.Append(CCFLAGS=warn + ["-Os"])
            out.append((port, core, env, [port.define] + port.defines + core.defines))
    return out


def stem(port, core):
    return "%s_%s" % (port.name, re.sub(r"[^A-Za-z0-9]+", "_", core.label).strip("_"))
