"""`scons install PREFIX=...` and the tests that consume splitcore from outside the tree.

The install tree (the same one the top-level CMakeLists.txt's `cmake --install` makes):
    <prefix>/include/splitcore/        the headers, same relative paths as in the repository
    <prefix>/share/pkgconfig/splitcore.pc
    <prefix>/share/cmake/splitcore/    splitcoreConfig.cmake, splitcoreConfigVersion.cmake
The version comes from the headers' SPLITCORE_VERSION_* macros. The templates in cmake/
carry one token, @SPLITCORE_VERSION@ (CMake's configure_file(@ONLY) fills it the same way).

`scons test` installs into build/consume/prefix and runs tests/consume/check_consume.py:
a CMake project consuming the tree by add_subdirectory and by find_package, a program built
with `pkg-config --cflags splitcore`, and the PlatformIO / Zephyr manifests (their tools are
not installed here: schema checks plus a build that follows what those tools do). It also
runs tests/docs/check_docs.py: every C example in the README, docs/ and the headers' preambles
compiles (programs run), every relative link resolves.
"""
import os
import re
import shutil
import sys

INCLUDE_DIR = "include/splitcore"  # where the headers go
INCLUDE_PATH = "include"  # what goes on the include path: #include <splitcore/pipeline.h>
# The repository's own include/splitcore/: one forwarding header per library header, so a
# vendored tree (add_subdirectory, PlatformIO, Zephyr, ESP-IDF) spells the includes as an
# installed one does. forwarders() writes what they must hold; scons test checks them.
FORWARD_DIR = "include/splitcore"
PKGCONFIG_DIR = "share/pkgconfig"
CMAKE_DIR = "share/cmake/splitcore"
# (template or file in the repository, installed path)
GENERATED = [("cmake/splitcore.pc.in", PKGCONFIG_DIR + "/splitcore.pc"),
             ("cmake/splitcoreConfigVersion.cmake.in", CMAKE_DIR + "/splitcoreConfigVersion.cmake"),
             ("cmake/splitcoreConfig.cmake", CMAKE_DIR + "/splitcoreConfig.cmake")]

_VERSION_RE = re.compile(r"^#define SPLITCORE_VERSION_(MAJOR|MINOR|PATCH) (\d+)$", re.M)


def header_version(path):
    """"MAJOR.MINOR.PATCH" of a header's SPLITCORE_VERSION_* macros, or None."""
    with open(path, encoding="utf-8") as f:
        found = dict(_VERSION_RE.findall(f.read()))
    if set(found) != {"MAJOR", "MINOR", "PATCH"}:
        return None
    return "%s.%s.%s" % (found["MAJOR"], found["MINOR"], found["PATCH"])


def render(template_path, version):
    with open(template_path, encoding="utf-8") as f:
        return f.read().replace("@SPLITCORE_VERSION@", version)


def install(env, headers, prefix, version_header="splitcore_base.h"):
    """SCons nodes that install `headers` (repository-relative paths) and the generated
    pkg-config / CMake files under `prefix`."""
    from SCons.Script import Action  # (env.Action would expand $TARGET too early)
    nodes = []
    for h in headers:
        nodes += env.InstallAs(os.path.join(prefix, INCLUDE_DIR, h), h)
    for src, dest in GENERATED:
        def write(target, source, env, src=src):
            with open(str(target[0]), "w", encoding="utf-8") as out:
                out.write(render(src, header_version(version_header)))
            return 0
        nodes += env.Command(os.path.join(prefix, dest), [src, version_header],
                             Action(write, "GEN    $TARGET"))
    return nodes


def _have_yaml():
    try:
        import yaml  # noqa: F401 (the Zephyr check parses zephyr/module.yml)
        return True
    except ImportError:
        return False


def tests(env, headers, tools, mpi):
    """The `scons test` steps: install into build/consume/prefix, then the consumer checks
    (tests/consume/check_consume.py) and the docs check (tests/docs/check_docs.py). A missing
    cmake, make or pkg-config skips its check (fails under CI=true); mpi: also build (and run
    under mpirun when present) the MPI consumer."""
    from SCons.Script import Action, AlwaysBuild, Dir

    from . import runners

    alias = "consume" if "consume" in tools.requested else "test"

    def have(program, what, found=None):
        return tools.have(program, what, alias, found=found)

    def step(label, log, sources, argv):
        s = env.Command(log, sources, Action(runners.run_action(label, lambda source: argv), "RUN    %s" % label))
        AlwaysBuild(s)
        return s

    prefix = Dir("#build/consume/prefix").abspath
    installed = install(env, headers, prefix)
    py = sys.executable or "python3"
    check = "tests/consume/check_consume.py"
    base = [py, check, "--repo", Dir("#").abspath]
    mpi_flags = ["--mpi"] + (["--mpirun"] if shutil.which("mpirun") else []) if mpi else []
    consumer = [check, "tests/consume/CMakeLists.txt", "tests/consume/main.c", "CMakeLists.txt"]
    steps = []
    if have("cmake", "CMake consumer tests") and have("make", "CMake consumer tests"):
        steps.append(step("consume cmake add_subdirectory", "build/consume/cmake-subdir.log", consumer,
                          base + ["cmake-subdir", "--build", "build/consume/cmake-subdir"] + mpi_flags))
        steps.append(step("consume cmake find_package (installed tree)", "build/consume/cmake-package.log",
                          consumer + installed, base + ["cmake-package", "--prefix", prefix,
                                                        "--build", "build/consume/cmake-package"] + mpi_flags))
    if have("pkg-config", "pkg-config consumer test"):
        steps.append(step("consume pkg-config (installed tree)", "build/consume/pkg-config.log",
                          [check, "tests/consume/main.c"] + installed,
                          base + ["pkg-config", "--prefix", prefix, "--build", "build/consume/pkg-config"]))
    if have("python3-yaml", "Zephyr module.yml check", found=_have_yaml()):
        steps.append(step("consume PlatformIO and Zephyr manifests, versions", "build/consume/manifests.log",
                          [check, "library.json", "zephyr/module.yml", "zephyr/CMakeLists.txt",
                           "zephyr/Kconfig", "CHANGELOG.md", "idf_component.yml", "CMakeLists.txt"],
                          base + ["manifests", "--build", "build/consume/manifests"] +
                          (["--cmake"] if shutil.which("cmake") else [])))
    # README's two commands in order, packages installed in between (tests/consume/check_newcomer.py).
    # It hides the test packages' headers in a private mount namespace: root only (CI is root);
    # elsewhere one NOT RUN line, counted in the run's last line.
    newcomer = "tests/consume/check_newcomer.py"
    if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("git"):
        steps.append(step("newcomer: README's demo then test command, packages installed between",
                          "build/newcomer/check_newcomer.log", [newcomer],
                          [py, newcomer, "--repo", Dir("#").abspath, "--build", "build/newcomer"]))
    else:
        print("NOT RUN: the newcomer replay (tests/consume/check_newcomer.py) needs root for unshare -m; CI runs it")
    docs = "tests/docs/check_docs.py"
    steps.append(step("docs: examples compile, links resolve", "build/docs/check_docs.log", [docs],
                      [py, docs, "--repo", Dir("#").abspath, "--build", "build/docs"]))
    return steps


def forwarders(headers):
    """{repository path of the forwarding header: its text} for each library header
    (repository-relative paths): include/splitcore/<path> includes ../../<path>."""
    out = {}
    for h in headers:
        up = "../" * (h.count("/") + 2)
        out["%s/%s" % (FORWARD_DIR, h)] = (
            "/* <splitcore/%s> in a vendored tree (-I<repository>/include), as an installed tree\n"
            "   names it. Written by `scons includes`. */\n"
            "#include \"%s%s\"\n" % (h, up, h))
    return out


def forwarders_differ(repo, headers):
    """The forwarding headers that are missing or hold other text, and stray ones."""
    want = forwarders(headers)
    bad = [p for p, text in sorted(want.items())
           if not os.path.isfile(os.path.join(repo, p)) or open(os.path.join(repo, p)).read() != text]
    have = []
    for root, _, files in os.walk(os.path.join(repo, FORWARD_DIR)):
        have += [os.path.relpath(os.path.join(root, f), repo).replace(os.sep, "/") for f in files]
    return bad + sorted(p for p in have if p not in want)
