#!/usr/bin/env python3
"""Consume splitcore the way other projects do; run by `scons test` (site_scons/splitcore/consume.py).

    check_consume.py --repo R cmake-subdir  --build B [--mpi [--mpirun]]
        tests/consume/CMakeLists.txt with add_subdirectory(R): build, run the consumer.
    check_consume.py --repo R cmake-package --prefix P --build B [--mpi [--mpirun]]
        the same project with find_package(splitcore) from the tree `scons install` wrote
        into P; then `cmake --install` of R's CMakeLists.txt must write the same tree.
    check_consume.py --repo R pkg-config --prefix P --build B
        main.c built with `pkg-config --cflags splitcore` (PKG_CONFIG_PATH=P/share/pkgconfig).
    check_consume.py --repo R manifests --build B [--cmake]
        library.json (PlatformIO's manifest schema; what PlatformIO would compile and put on
        the include path, then a build with that include path), zephyr/module.yml (Zephyr's
        module schema), zephyr/Kconfig and zephyr/CMakeLists.txt (run in a stub Zephyr
        build with --cmake), idf_component.yml (the ESP-IDF component manager's manifest; with
        --cmake the root CMakeLists.txt in a stub ESP-IDF build, ports/platform/freertos.h
        compiled with ESP-IDF's include layout), the version in every header, manifest and
        CHANGELOG.md, and headers of different releases failing to compile together.

Prints one line per check and a summary; exits 1 when any check failed."""
import argparse
import fnmatch
import glob
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "site_scons"))
from splitcore.checks import Checks  # noqa: E402
from splitcore.consume import GENERATED, INCLUDE_PATH, forwarders_differ, header_version  # noqa: E402

WARN = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
TOP_HEADERS = ["splitcore_base.h", "microbatch.h", "pipeline.h", "pipeline_model.h", "pipeline_exec.h", "pipeline_bn.h", "dtensor.h", "dtensor_ops.h", "dtensor_conv.h",
               "dtensor_quant.h", "dtensor_qconv.h", "dtensor_random.h", "dtensor_graph.h"]


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return os.path.abspath(path)


def version_defines(version):
    major, minor, patch = version.split(".")
    return ["-DEXPECT_MAJOR=" + major, "-DEXPECT_MINOR=" + minor, "-DEXPECT_PATCH=" + patch]


def run_mpi(c, prog, np=2):
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    c.run(["mpirun"] + root + ["--oversubscribe", "-np", str(np), prog],
          "splitcore::mpi consumer runs under mpirun -np %d" % np)


def cmake_consumer(c, args, build, defines, label):
    """Configure, build and run tests/consume with the given -D definitions."""
    src = os.path.join(args.repo, "tests", "consume")
    mpi = ["-DSPLITCORE_MPI=ON"] if args.mpi and any("SPLITCORE_SOURCE_DIR" in d for d in defines) else []
    ok, _ = c.run(["cmake", "-S", src, "-B", build] + defines + mpi, "cmake configures (%s)" % label)
    if not ok:
        return
    ok, _ = c.run(["cmake", "--build", build], "cmake --build (%s)" % label)
    if not ok:
        return
    c.run([os.path.join(build, "consumer")], "the consumer runs: split, plan, shards, all_reduce (%s)" % label)
    if args.mpi:
        prog = os.path.join(build, "consumer_mpi")
        if c.ok(os.path.exists(prog), "splitcore::mpi target built consumer_mpi (%s)" % label) and args.mpirun:
            run_mpi(c, prog)


def cmd_cmake_subdir(c, args):
    build = fresh(args.build)
    cmake_consumer(c, args, build, ["-DSPLITCORE_SOURCE_DIR=" + args.repo], "add_subdirectory")


def tree(root):
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(out)


def cmd_cmake_package(c, args):
    prefix = os.path.abspath(args.prefix)
    build = fresh(args.build)
    cmake_consumer(c, args, os.path.join(build, "consumer"), ["-DCMAKE_PREFIX_PATH=" + prefix],
                   "find_package from the scons install")
    # A request for a newer minor release must be refused by splitcoreConfigVersion.cmake.
    probe = os.path.join(build, "probe")
    os.makedirs(probe)
    with open(os.path.join(probe, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.13)\nproject(probe NONE)\n"
                "find_package(splitcore ${WANT} EXACT REQUIRED)\n")
    v = header_version(os.path.join(args.repo, "splitcore_base.h"))
    major, minor, _ = (int(x) for x in v.split("."))
    c.run(["cmake", "-S", probe, "-B", os.path.join(probe, "b1"), "-DCMAKE_PREFIX_PATH=" + prefix,
           "-DWANT=" + v], "find_package(splitcore %s EXACT) accepts the installed %s" % (v, v))
    newer = "%d.%d" % (major, minor + 1)
    with open(os.path.join(probe, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.13)\nproject(probe NONE)\n"
                "find_package(splitcore ${WANT} REQUIRED)\n")
    _, out = c.run(["cmake", "-S", probe, "-B", os.path.join(probe, "b2"), "-DCMAKE_PREFIX_PATH=" + prefix,
                    "-DWANT=" + newer], "find_package(splitcore %s) fails with the installed %s" % (newer, v),
                   expect_ok=False)
    c.ok("compatible with requested version" in out, "... because the version is refused, not for another reason")
    with open(os.path.join(probe, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.13)\nproject(probe NONE)\n"
                "find_package(splitcore REQUIRED COMPONENTS gpu)\n")
    _, out = c.run(["cmake", "-S", probe, "-B", os.path.join(probe, "b3"), "-DCMAKE_PREFIX_PATH=" + prefix],
                   "find_package(splitcore COMPONENTS gpu) fails", expect_ok=False)
    c.ok("unknown component gpu" in out, "... naming the unknown component")
    # cmake --install of the repository's CMakeLists.txt writes the same tree as scons install.
    cm_build, cm_prefix = os.path.join(build, "cmake-install"), os.path.join(build, "cmake-prefix")
    ok, _ = c.run(["cmake", "-S", args.repo, "-B", cm_build, "-DSPLITCORE_PTHREAD=OFF"],
                  "the repository's CMakeLists.txt configures on its own")
    if ok and c.run(["cmake", "--install", cm_build, "--prefix", cm_prefix], "cmake --install")[0]:
        a, b = tree(prefix), tree(cm_prefix)
        c.ok(a == b, "cmake --install and scons install write the same files",
             "only scons: %s; only cmake: %s" % (sorted(set(a) - set(b)), sorted(set(b) - set(a))))
        differ = [f for f in sorted(set(a) & set(b))
                  if not filecmp.cmp(os.path.join(prefix, f), os.path.join(cm_prefix, f), shallow=False)]
        c.ok(not differ, "... with the same contents", ", ".join(differ))


def cmd_pkg_config(c, args):
    prefix = os.path.abspath(args.prefix)
    build = fresh(args.build)
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "share", "pkgconfig"))
    env.pop("PKG_CONFIG_LIBDIR", None)
    want = header_version(os.path.join(args.repo, "splitcore_base.h"))
    ok, got = c.run(["pkg-config", "--modversion", "splitcore"], "pkg-config finds splitcore", env=env)
    if not ok:
        return
    c.ok(got.strip() == want, "pkg-config --modversion is the headers' %s" % want, got.strip())
    ok, cflags = c.run(["pkg-config", "--cflags", "splitcore"], "pkg-config --cflags splitcore", env=env)
    if not ok:
        return
    incs = [f[2:] for f in cflags.split() if f.startswith("-I")]
    c.ok(len(incs) == 1 and os.path.realpath(incs[0]) == os.path.realpath(os.path.join(prefix, INCLUDE_PATH)),
         "--cflags names the installed include directory", cflags.strip())
    # main.c copied out of the repository: only the installed headers can be found.
    main = os.path.join(build, "main.c")
    shutil.copy(os.path.join(HERE, "main.c"), main)
    prog = os.path.join(build, "consumer")
    ok, _ = c.run(["gcc"] + WARN + cflags.split() + version_defines(got.strip()) +
                  [main, "-o", prog, "-pthread", "-lm"],
                  "gcc $(pkg-config --cflags splitcore) main.c -pthread")
    if ok:
        c.run([prog], "the consumer runs: split, plan, shards, all_reduce (pkg-config)")


# ---- PlatformIO ------------------------------------------------------------------------
# Fields and rules of PlatformIO's manifest schema (platformio/package/manifest/schema.py)
# and of library.json's "build" and "export" sections (docs.platformio.org, library.json).
PIO_FIELDS = {"name": str, "version": str, "description": str, "keywords": list, "authors": list,
              "repository": dict, "homepage": str, "license": str, "frameworks": (list, str),
              "platforms": (list, str), "headers": (list, str), "build": dict, "export": dict,
              "examples": list, "dependencies": (list, dict), "downloadUrl": str}
PIO_BUILD = {"flags": (list, str), "unflags": (list, str), "includeDir": str, "srcDir": str,
             "srcFilter": (list, str), "extraScript": str, "libArchive": bool, "libLDFMode": str,
             "libCompatMode": str, "builder": str}


def pio_filter_matches(pattern, rel):
    """PlatformIO's <pattern>: a glob relative to srcDir; a directory matches its contents."""
    return fnmatch.fnmatch(rel, pattern) or rel.startswith(pattern.rstrip("/") + "/") or \
        fnmatch.fnmatch(rel.split("/")[0], pattern)


def pio_sources(root, src_dir, src_filter):
    """The source files PlatformIO would compile: +<glob> adds, -<glob> removes, in order."""
    exts = (".c", ".cc", ".cpp", ".cxx", ".S", ".s", ".asm", ".ino")
    base = os.path.join(root, src_dir)
    files = [f for f in tree(base) if f.endswith(exts) and not f.startswith((".git/", "build/"))]
    rules = re.findall(r"([+-])<([^>]*)>", " ".join(src_filter) if isinstance(src_filter, list) else src_filter)
    chosen = set()
    for sign, pat in rules:
        hit = {f for f in files if pio_filter_matches(pat, f)}
        chosen = chosen | hit if sign == "+" else chosen - hit
    return sorted(chosen)


def check_platformio(c, repo, build, version):
    path = os.path.join(repo, "library.json")
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        c.ok(False, "library.json parses as JSON", str(e))
        return
    c.ok(True, "library.json parses as JSON")
    bad = [k for k, t in PIO_FIELDS.items() if k in m and not isinstance(m[k], t)]
    unknown = sorted(set(m) - set(PIO_FIELDS))
    c.ok(not bad and not unknown, "library.json: known fields of the right types",
         "wrong type: %s, unknown: %s" % (bad, unknown))
    c.ok(isinstance(m.get("name"), str) and re.match(r"^[^:;/,@<>]{1,100}$", m["name"]) is not None,
         "library.json: required name without [:;/,@<>]")
    c.ok(m.get("version") == version, "library.json: version is the headers' %s" % version, str(m.get("version")))
    c.ok(all(isinstance(k, str) and re.match(r"^[a-z\d\-+. ]{1,50}$", k) for k in m.get("keywords", [])),
         "library.json: keywords use [a-z0-9-+. ]")
    for key in ("platforms", "frameworks"):
        vals = m.get(key, [])
        vals = [vals] if isinstance(vals, str) else vals
        c.ok(all(re.match(r"^([a-z\d\-_]+|\*)$", v) for v in vals), "library.json: %s use [a-z0-9-_*]" % key)
    if "repository" in m:
        c.ok(m["repository"].get("type") in ("git", "hg", "svn") and m["repository"].get("url"),
             "library.json: repository has type git/hg/svn and a url")
    c.ok(all(isinstance(a, dict) and a.get("name") for a in m.get("authors", [])), "library.json: authors have names")
    with open(os.path.join(repo, "LICENSE")) as f:
        first = f.readline()
    c.ok(m.get("license") == "MIT" and first.startswith("MIT License"),
         "library.json: license is the SPDX id of LICENSE (MIT)", "%s vs %s" % (m.get("license"), first.strip()))
    b = m.get("build", {})
    bad = [k for k, t in PIO_BUILD.items() if k in b and not isinstance(b[k], t)]
    c.ok(not bad and not set(b) - set(PIO_BUILD), "library.json: build fields known, right types",
         "%s %s" % (bad, sorted(set(b) - set(PIO_BUILD))))
    src_dir = b.get("srcDir", "src" if os.path.isdir(os.path.join(repo, "src")) else ".")
    include_dir = b.get("includeDir", "include")
    c.ok(os.path.isdir(os.path.join(repo, src_dir)) and os.path.isdir(os.path.join(repo, include_dir)),
         "library.json: srcDir and includeDir exist")
    c.ok(pio_sources(repo, src_dir, "+<*>"), "the PlatformIO filter emulation sees the repository's C sources")
    srcs = pio_sources(repo, src_dir, b.get("srcFilter", "+<*> -<.git/> -<example*/> -<test*/>"))
    c.ok(not srcs, "PlatformIO would compile no source of this header-only library", ", ".join(srcs[:5]))
    for h in m.get("headers", []):
        c.ok(os.path.isfile(os.path.join(repo, include_dir, h)), "library.json: header %s exists" % h)
    exported = m.get("export", {}).get("include", [])
    files = tree(repo)
    for pat in exported:
        c.ok(any(pio_filter_matches(pat, f) for f in files), "library.json: export.include %s matches files" % pat)
    missing = [h for h in TOP_HEADERS + ["ports/pg.h", "ports/platform/riscv_virt.h"]
               if not any(pio_filter_matches(p, h) for p in exported)]
    c.ok(not missing, "library.json: the package exports every header", ", ".join(missing))
    # PlatformIO puts includeDir and srcDir on the include path of the project's sources.
    out = fresh(os.path.join(build, "platformio"))
    main = os.path.join(out, "main.c")
    shutil.copy(os.path.join(HERE, "main.c"), main)
    incs = sorted({"-I" + os.path.join(repo, include_dir), "-I" + os.path.join(repo, src_dir)})
    c.run(["gcc"] + WARN + incs + version_defines(version) + [main, "-o", os.path.join(out, "consumer"),
                                                               "-pthread", "-lm"],
          "a project's main.c builds with PlatformIO's include path for the library")


# ---- Zephyr -----------------------------------------------------------------------------
# zephyr/module.yml schema of Zephyr's scripts/zephyr_module.py (METADATA_SCHEMA).
ZEPHYR_SCHEMA = {"name": str, "build": {"cmake": str, "kconfig": str, "cmake-ext": bool, "kconfig-ext": bool,
                                        "sysbuild-cmake": str, "sysbuild-kconfig": str,
                                        "sysbuild-cmake-ext": bool, "sysbuild-kconfig-ext": bool,
                                        "depends": list, "settings": dict},
                 "tests": list, "samples": list, "boards": list, "blobs": list}


def schema_errors(data, schema, where=""):
    if not isinstance(data, dict):
        return ["%s is not a mapping" % (where or "the document")]
    errs = []
    for k, v in data.items():
        if k not in schema:
            errs.append("unknown key %s%s" % (where, k))
        elif isinstance(schema[k], dict):
            errs += schema_errors(v, schema[k], where + k + ".")
        elif not isinstance(v, schema[k]):
            errs.append("%s%s: %s expected" % (where, k, schema[k].__name__))
    return errs


def check_zephyr(c, repo, build, version, with_cmake):
    import yaml
    path = os.path.join(repo, "zephyr", "module.yml")
    try:
        with open(path) as f:
            meta = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        c.ok(False, "zephyr/module.yml parses as YAML", str(e))
        return
    c.ok(True, "zephyr/module.yml parses as YAML")
    errs = schema_errors(meta, ZEPHYR_SCHEMA)
    c.ok(not errs, "zephyr/module.yml follows Zephyr's module schema", "; ".join(errs))
    bld = meta.get("build", {}) if isinstance(meta, dict) else {}
    cmake_dir = os.path.join(repo, bld.get("cmake", "zephyr"))
    kconfig = os.path.join(repo, bld.get("kconfig", "zephyr/Kconfig"))
    c.ok(os.path.isfile(os.path.join(cmake_dir, "CMakeLists.txt")), "module.yml: build.cmake holds a CMakeLists.txt")
    c.ok(os.path.isfile(kconfig), "module.yml: build.kconfig is a file")
    name = meta.get("name", os.path.basename(repo))
    sanitized = re.sub("[^a-zA-Z0-9]", "_", name).upper()
    c.ok(name == "splitcore", "module.yml: name is splitcore (Kconfig ZEPHYR_%s_MODULE)" % sanitized, name)
    with open(kconfig) as f:
        ktext = f.read()
    defined = set(re.findall(r"^\s*(?:menu)?config\s+([A-Z0-9_]+)\s*$", ktext, re.M))
    c.ok("SPLITCORE" in defined, "zephyr/Kconfig defines SPLITCORE")
    c.ok(re.search(r"^config SPLITCORE\n\s+bool \"[^\"]+\"", ktext, re.M) is not None,
         "zephyr/Kconfig: SPLITCORE is a bool with a prompt")
    c.ok(ktext.count("if SPLITCORE") == ktext.count("endif"), "zephyr/Kconfig: if/endif balanced")
    with open(os.path.join(cmake_dir, "CMakeLists.txt")) as f:
        ctext = f.read()
    used = set(re.findall(r"CONFIG_([A-Z0-9_]+)", ctext))
    c.ok(used and used <= defined, "zephyr/CMakeLists.txt uses only options zephyr/Kconfig defines",
         "undefined: %s" % sorted(used - defined))
    if not with_cmake:
        return
    # A stub Zephyr build: the zephyr_* functions the module calls, an app linking
    # zephyr_interface (as every Zephyr library does), CONFIG_SPLITCORE=y.
    out = fresh(os.path.join(build, "zephyr"))
    main = os.path.join(out, "main.c")
    shutil.copy(os.path.join(HERE, "main.c"), main)
    with open(os.path.join(out, "CMakeLists.txt"), "w") as f:
        f.write("""cmake_minimum_required(VERSION 3.20)
project(zephyr_stub C)
add_library(zephyr_interface INTERFACE)
function(zephyr_include_directories)
  target_include_directories(zephyr_interface INTERFACE ${ARGN})
endfunction()
function(zephyr_compile_definitions)
  target_compile_definitions(zephyr_interface INTERFACE ${ARGN})
endfunction()
set(CONFIG_SPLITCORE y)
set(ZEPHYR_CURRENT_MODULE_DIR %s)
set(ZEPHYR_SPLITCORE_MODULE_DIR %s)
add_subdirectory(%s splitcore_module)
add_executable(app main.c)
target_link_libraries(app PRIVATE zephyr_interface)
target_compile_definitions(app PRIVATE %s)
target_compile_options(app PRIVATE %s)
find_package(Threads REQUIRED)
target_link_libraries(app PRIVATE Threads::Threads m)
""" % (repo, repo, cmake_dir, " ".join(d[2:] for d in version_defines(version)), " ".join(WARN)))
    ok, _ = c.run(["cmake", "-S", out, "-B", os.path.join(out, "b")],
                  "zephyr/CMakeLists.txt runs in a stub Zephyr build (CONFIG_SPLITCORE=y)")
    if ok and c.run(["cmake", "--build", os.path.join(out, "b")],
                    "an app linking zephyr_interface compiles against the module's headers")[0]:
        c.run([os.path.join(out, "b", "app")], "... and runs")


# ---- ESP-IDF ----------------------------------------------------------------------------
# idf_component.yml keys of the component manager's manifest (docs.espressif.com,
# idf-component-manager, "idf_component.yml Manifest File").
IDF_KEYS = {"version": str, "description": str, "url": str, "license": str, "maintainers": list, "tags": list,
            "repository": str, "documentation": str, "issues": str, "discussion": str, "targets": list,
            "dependencies": dict, "files": dict, "examples": list}


def check_esp_idf(c, repo, build, version, with_cmake):
    import yaml
    try:
        with open(os.path.join(repo, "idf_component.yml")) as f:
            meta = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        c.ok(False, "idf_component.yml parses as YAML", str(e))
        return
    bad = [k for k, v in meta.items() if k not in IDF_KEYS or not isinstance(v, IDF_KEYS[k])]
    c.ok(not bad, "idf_component.yml: known keys of the right types", ", ".join(bad))
    c.ok(meta.get("version") == version, "idf_component.yml: version is the headers' %s" % version,
         str(meta.get("version")))
    idf = meta.get("dependencies", {}).get("idf", {})
    c.ok(isinstance(idf, dict) and str(idf.get("version", "")).startswith(">="),
         "idf_component.yml: depends on an ESP-IDF version range")
    if not with_cmake:
        return
    # A stub ESP-IDF build: ESP_PLATFORM set, idf_component_register recording the include
    # directories; an app then compiles freertos.h as ESP-IDF firmware does (the kernel's
    # headers as freertos/FreeRTOS.h: the FreeRTOS model of tests/ports/freertos stands in).
    out = fresh(os.path.join(build, "esp-idf"))
    with open(os.path.join(out, "main.c"), "w") as f:
        f.write('#include <splitcore/ports/pg.h>\n#include <splitcore/ports/pg_shm.h>\n#include <splitcore/ports/platform/freertos.h>\n'
                "int main(void)\n{\n    static pg_shm_freertos_bells bells;\n    pg_shm_hooks h;\n"
                "    pg_shm_freertos_hooks(&h, &bells);\n    return h.notify == pg_shm_freertos_notify ? 0 : 1;\n}\n")
    with open(os.path.join(out, "CMakeLists.txt"), "w") as f:
        f.write("""cmake_minimum_required(VERSION 3.16)
project(esp_idf_stub C)
set(ESP_PLATFORM 1)
function(idf_component_register)
  cmake_parse_arguments(ARG "" "" "INCLUDE_DIRS;SRCS;REQUIRES" ${ARGN})
  list(TRANSFORM ARG_INCLUDE_DIRS PREPEND "${CMAKE_CURRENT_SOURCE_DIR}/")
  set_property(GLOBAL PROPERTY SPLITCORE_IDF_INCLUDES "${ARG_INCLUDE_DIRS}")
  set_property(GLOBAL PROPERTY SPLITCORE_IDF_SRCS "${ARG_SRCS}")
endfunction()
add_subdirectory(%s splitcore_component)
get_property(incs GLOBAL PROPERTY SPLITCORE_IDF_INCLUDES)
get_property(srcs GLOBAL PROPERTY SPLITCORE_IDF_SRCS)
if(srcs)
  message(FATAL_ERROR "the component compiles sources: ${srcs}")
endif()
add_executable(app main.c)
target_include_directories(app PRIVATE ${incs} %s)
target_compile_definitions(app PRIVATE ESP_PLATFORM=1 _DEFAULT_SOURCE=1)
target_compile_options(app PRIVATE %s)
find_package(Threads REQUIRED)
target_link_libraries(app PRIVATE Threads::Threads)
""" % (repo, os.path.join(repo, "tests", "ports", "freertos") + " " + repo, " ".join(WARN)))  # the model's stubs
    ok, _ = c.run(["cmake", "-S", out, "-B", os.path.join(out, "b")],
                  "CMakeLists.txt registers an ESP-IDF component in a stub ESP-IDF build")
    if ok and c.run(["cmake", "--build", os.path.join(out, "b")],
                    "an ESP-IDF app compiles ports/platform/freertos.h with the component's include path")[0]:
        c.run([os.path.join(out, "b", "app")], "... and runs")


def cmd_manifests(c, args):
    repo = args.repo
    version = header_version(os.path.join(repo, "splitcore_base.h"))
    c.ok(version is not None, "splitcore_base.h defines SPLITCORE_VERSION_*", str(version))
    if version is None:
        return
    major, minor, patch = (int(x) for x in version.split("."))
    number = "SPLITCORE_VERSION != %d" % (major * 10000 + minor * 100 + patch)
    checking = [h for h in TOP_HEADERS[1:] + ["ports/pg.h"] if number in open(os.path.join(repo, h)).read()]
    c.ok(len(checking) == len(TOP_HEADERS), "every header checks it is of release %s (%s)" % (version, number),
         "checking: %s" % ", ".join(checking))
    with open(os.path.join(repo, "CHANGELOG.md")) as f:
        releases = re.findall(r"^## \[?(\d+\.\d+\.\d+)\]?", f.read(), re.M)
    c.ok(releases[:1] == [version], "CHANGELOG.md's newest release is %s" % version, str(releases[:1]))
    with open(os.path.join(repo, "cmake", "splitcore.pc.in")) as f:
        c.ok("Version: @SPLITCORE_VERSION@" in f.read(), "splitcore.pc takes its version from the headers")
    c.ok(all(os.path.isfile(os.path.join(repo, src)) for src, _ in GENERATED), "cmake/ templates exist")
    # Headers of different releases together must not compile: another release's numbers
    # defined first stand in for an older header included before these.
    build = fresh(args.build)
    tu = os.path.join(build, "mixed.c")
    with open(tu, "w") as f:
        f.write("".join('#include "%s"\n' % h for h in TOP_HEADERS) + "int main(void) { return 0; }\n")
    major, minor, patch = version.split(".")
    c.run(["gcc"] + WARN + ["-I", repo, "-c", tu, "-o", os.path.join(build, "same.o"),
                            "-DSPLITCORE_VERSION_MAJOR=" + major, "-DSPLITCORE_VERSION_MINOR=" + minor,
                            "-DSPLITCORE_VERSION_PATCH=" + patch],
          "headers of the same release compile together")
    c.run(["gcc"] + WARN + ["-I", repo, "-c", tu, "-o", os.path.join(build, "mixed.o"),
                            "-DSPLITCORE_VERSION_MAJOR=" + major, "-DSPLITCORE_VERSION_MINOR=%d" % (int(minor) + 1),
                            "-DSPLITCORE_VERSION_PATCH=0"],
          "headers of different releases do not compile together (#error)", expect_ok=False)
    library = sorted(os.path.relpath(p, repo).replace(os.sep, "/") for pat in ("*.h", "ports/*.h", "ports/platform/*.h")
                     for p in glob.glob(os.path.join(repo, pat)))
    bad = forwarders_differ(repo, library)
    c.ok(not bad, "include/splitcore/ forwards <splitcore/X> to each of the %d library headers, and only those "
         "(`scons includes` writes them)" % len(library), ", ".join(bad))
    check_platformio(c, repo, build, version)
    check_zephyr(c, repo, build, version, args.cmake)
    check_esp_idf(c, repo, build, version, args.cmake)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("command", choices=["cmake-subdir", "cmake-package", "pkg-config", "manifests"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--prefix")
    ap.add_argument("--mpi", action="store_true", help="also build the splitcore::mpi consumer")
    ap.add_argument("--mpirun", action="store_true", help="and run it under mpirun -np 2")
    ap.add_argument("--cmake", action="store_true", help="run zephyr/CMakeLists.txt in a stub Zephyr build")
    args = ap.parse_args()
    args.repo = os.path.abspath(args.repo)
    args.build = os.path.abspath(args.build)
    c = Checks()
    {"cmake-subdir": cmd_cmake_subdir, "cmake-package": cmd_cmake_package,
     "pkg-config": cmd_pkg_config, "manifests": cmd_manifests}[args.command](c, args)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
