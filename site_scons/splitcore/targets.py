"""The table of build targets: which compiler, which flags, which QEMU.

One Target per name that TARGET= accepts (plus cortex-m3, which is what
`scons test` runs under QEMU's mps2-an385). Add a target here and every
step (hygiene, tests, examples, size) can use it by name.
"""
import os

# The 4 MB RAM at 0x80000000 is flash for picolibc's linker script, the
# next 4 MB its RAM (QEMU virt has 128 MB from 0x80000000).
_PICOLIBC_LAYOUT = ("-Wl,--defsym=__flash=0x80000000,--defsym=__flash_size=0x400000,"
                    "--defsym=__ram=0x80400000,--defsym=__ram_size=0x400000")


class Target:
    """A compiler + flags + (optionally) a QEMU machine that runs its programs.

    kind: "host" (native gcc, real libcmocka, run directly), "arm" (newlib
    semihosting, tests/target/cortexm_*), "riscv" (picolibc semihosting,
    tests/target/riscv_virt_main.c). qemu is the command line without
    -kernel, or None when QEMU has no board for it (the target is then
    only built).
    """

    def __init__(self, name, kind, prefix, arch, qemu=None, ram_base=None):
        self.name = name
        self.kind = kind
        self.prefix = prefix        # "arm-none-eabi-", "" for host
        self.arch = list(arch)      # -mcpu/-march/-mabi/float flags
        self.qemu = qemu
        self.ram_base = ram_base    # arm: where cortexm.ld puts the image

    @property
    def cross(self):
        return self.kind != "host"

    @property
    def cc(self):
        return self.prefix + "gcc"

    @property
    def size_tool(self):
        return self.prefix + "size"

    @property
    def nm_tool(self):
        return self.prefix + "nm"

    def link_flags(self):
        """Flags that give a complete, bootable program for this target."""
        if self.kind == "arm":
            return ["--specs=rdimon.specs", "-T", "tests/target/cortexm.ld",
                    "-Wl,--defsym=__splitcore_ram_base=%s" % self.ram_base,
                    "-Wl,--gc-sections"]
        if self.kind == "riscv":
            return ["--specs=picolibc.specs", "--oslib=semihost",
                    _PICOLIBC_LAYOUT, "-Wl,--gc-sections"]
        return []

    def compile_flags(self):
        """Flags every object for this target gets (on top of self.arch)."""
        if self.kind == "riscv":
            # medany: code and data live at 0x80000000, outside medlow's
            # +-2 GB around 0 on rv64.
            return ["--specs=picolibc.specs", "-mcmodel=medany"]
        return []

    def startup_sources(self):
        """Board support linked into every cross program (tests, examples)."""
        if self.kind == "arm":
            return ["tests/target/cortexm_startup.c"]
        if self.kind == "riscv":
            return ["tests/target/riscv_virt_main.c"]
        return []

    def program_defines(self):
        """riscv: the program's main() becomes splitcore_target_main(), which
        riscv_virt_main.c calls and then reports through the test device."""
        if self.kind == "riscv":
            return ["main=splitcore_target_main"]
        return []

    def run_command(self, program):
        if self.kind == "host":
            return [os.path.abspath(program)]
        return self.qemu + ["-kernel", program]

    def qemu_on(self, machine=None):
        """The QEMU command line (without -kernel) on another board of the same kind."""
        q = list(self.qemu)
        if machine:
            q[q.index("-machine") + 1] = machine
        return q


# Under QEMU's -icount every instruction takes 1 ns of guest time (shift=0), guest time runs
# apart from the host's (align=off) and an idle machine jumps to its next timer (sleep=off):
# a multi-core run is deterministic, and its clocks count instructions.
ICOUNT = ["-icount", "shift=0,align=off,sleep=off"]


def _mps2(machine):
    return ["qemu-system-arm", "-machine", machine, "-nographic", "-monitor", "none",
            "-semihosting-config", "enable=on,target=native"]


def _virt(bits):
    return ["qemu-system-riscv%d" % bits, "-machine", "virt", "-bios", "none",
            "-nographic", "-monitor", "none", "-semihosting-config", "enable=on"]


_ARM = "arm-none-eabi-"
_RISCV = "riscv64-unknown-elf-"

TARGETS = {t.name: t for t in [
    Target("host", "host", "", []),
    Target("cortex-m0plus", "arm", _ARM, ["-mcpu=cortex-m0plus", "-mthumb"],
           qemu=None, ram_base="0x0"),   # QEMU has no M0+ mps2 board
    Target("cortex-m3", "arm", _ARM, ["-mcpu=cortex-m3", "-mthumb"],
           qemu=_mps2("mps2-an385"), ram_base="0x0"),
    Target("cortex-m4", "arm", _ARM,
           ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
           qemu=_mps2("mps2-an386"), ram_base="0x0"),
    Target("cortex-m7", "arm", _ARM,
           ["-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-d16"],
           qemu=_mps2("mps2-an500"), ram_base="0x0"),
    # an505 boots secure: its code RAM is at the secure alias 0x10000000.
    Target("cortex-m33", "arm", _ARM,
           ["-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"],
           qemu=_mps2("mps2-an505"), ram_base="0x10000000"),
    # Both Cortex-M33 of Arm's SSE-200 (mps2-an521, mps3-an524): AN521's CPU0 has neither FPU
    # nor DSP, so code both cores run is built without them. Boots secure, like an505.
    Target("sse200", "arm", _ARM, ["-mcpu=cortex-m33+nodsp", "-mthumb", "-mfloat-abi=soft"],
           qemu=_mps2("mps2-an521"), ram_base="0x10000000"),
    Target("rv32imac", "riscv", _RISCV, ["-march=rv32imac", "-mabi=ilp32"],
           qemu=_virt(32)),
    Target("rv64imac", "riscv", _RISCV, ["-march=rv64imac", "-mabi=lp64"],
           qemu=_virt(64)),
]}

# Debian package that provides each program (for the SKIPPED/ERROR lines
# and .ci/run).
PACKAGE_OF = {
    "gcc": "gcc", "g++": "g++", "clang": "clang", "libcmocka": "libcmocka-dev",
    "mpicc": "libopenmpi-dev", "mpirun": "openmpi-bin",
    "libFuzzer": "libclang-rt-14-dev", "spin": "spin",
    "arm-none-eabi-gcc": "gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "riscv64-unknown-elf-gcc": "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf",
    "qemu-system-arm": "qemu-system-arm",
    "qemu-system-riscv32": "qemu-system-misc",
    "qemu-system-riscv64": "qemu-system-misc",
    "python3-torch": "python3-torch",
    "python3-onnx": "python3-onnx python3-numpy python3-torch",
}
