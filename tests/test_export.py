"""`tinysched export`: the model as a library folder inside a project that is not tinysched's.

Tiers: the folder's content and the one-line refusals need nothing; the in-place API runs on the
host compiler; the compile matrix and the user's own project (tests/user_project: its own main,
start-up and linker script) need the cross compiler, and the project runs on QEMU's mps2-an500,
built with CMake + Ninja and with plain make. Models: tinysched's own (modelgen, the golden
quantize_edges) everywhere, and KWS and VWW from the shared models where available.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO, shared_model
from tiers import require

from tinysched.cli import main
from tinysched.codegen.edges import edge_lifetimes
from tinysched.commands.export import ExportResult, export_model
from tinysched.device.reference import random_inputs, run_reference_many
from tinysched.model.modelgen import random_branching_model, tiny_demo_model
from tinysched.pipeline import PlanOptions

USER_PROJECT = REPO / "tests" / "user_project"
GOLDEN_QUANTIZE = REPO / "tests" / "golden" / "quantize_edges" / "quantize_edges.tflite"
QEMU_TIMEOUT = 120
# -mcpu flags of the four cores the exported sources must compile for (as boards.yaml has them)
CORES = {
    "m4": ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
    "m7": ["-mcpu=cortex-m7", "-mthumb", "-mfpu=fpv5-d16", "-mfloat-abi=hard"],
    "m33": ["-mcpu=cortex-m33", "-mthumb", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard"],
    "m55": ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"],
}
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


@dataclass(frozen=True)
class Exported:
    """An exported folder, its model and one input set with TFLite's outputs for it."""

    result: ExportResult
    model: Path
    inputs: list[np.ndarray]
    expected: list[bytes]

    @property
    def name(self) -> str:
        return self.result.module.prefix

    @property
    def directory(self) -> Path:
        return self.result.directory


def export(
    model: Path, out: Path, prefix: str, *, compile: bool = False, seed: int = 0, stream_input: bool = False
) -> Exported:
    options = PlanOptions(time_limit=4.0, stream_input=stream_input)
    result = export_model(model, out, "nucleo-f767", options=options, prefix=prefix, compile=compile)
    inputs = random_inputs(model, seed, 1)[0]
    ref = run_reference_many(model, [inputs])[0]
    return Exported(result, model, inputs, [np.asarray(o).tobytes() for o in ref.outputs])


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("models") / "demo.tflite"
    path.write_bytes(tiny_demo_model())
    return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_model) -> Exported:
    return export(demo_model, tmp_path_factory.mktemp("export") / "demo", "demo", compile=True)


@pytest.fixture(scope="module")
def branching(tmp_path_factory) -> Exported:
    path = tmp_path_factory.mktemp("models") / "branching.tflite"
    path.write_bytes(random_branching_model(3))
    return export(path, tmp_path_factory.mktemp("export") / "branching", "branching")


@pytest.fixture(scope="module")
def camera(tmp_path_factory) -> Exported:
    """A camera's first layers exported with --stream-input: the input only ever a window of rows."""
    from helpers import saved_model
    from stream_input_models import camera_head

    path = saved_model(tmp_path_factory.mktemp("models") / "camera.tflite", camera_head, seed=4)
    return export(path, tmp_path_factory.mktemp("export") / "camera", "camera", stream_input=True)


@pytest.fixture(scope="module")
def quantize_edges(tmp_path_factory) -> Exported:
    return export(GOLDEN_QUANTIZE, tmp_path_factory.mktemp("export") / "qe", "qe")


@pytest.fixture(scope="module")
def legacy_uint8(tmp_path_factory) -> list[Exported]:
    """Legacy uint8 models (streamed stages too): ts_legacy_uint8.c's kernels in the compile matrix."""
    from fast_path_models import uint8_legacy_layers, uint8_legacy_stream

    exported = []
    for build in (uint8_legacy_layers, uint8_legacy_stream):
        path = tmp_path_factory.mktemp("models") / f"{build.__name__}.tflite"
        path.write_bytes(build())
        exported.append(export(path, tmp_path_factory.mktemp("export") / build.__name__, build.__name__))
    return exported


@pytest.fixture(scope="module")
def own_loops(tmp_path_factory) -> Exported:
    """1x1 layers over 8 channels: their own pixel loops (TS_PIXEL_OWN_LOOP) in the module's C file."""
    from fast_path_models import pixel_own_loops

    path = tmp_path_factory.mktemp("models") / "pixel_own_loops.tflite"
    path.write_bytes(pixel_own_loops())
    return export(path, tmp_path_factory.mktemp("export") / "own", "own")


@pytest.fixture(scope="module")
def vww(tmp_path_factory) -> Exported:
    model = shared_model("mlperf_vww_mbv1_025_96_int8")
    return export(model, tmp_path_factory.mktemp("export") / "vww", "vww")


@pytest.fixture(scope="module")
def kws(tmp_path_factory) -> Exported:
    model = shared_model("mlperf_kws_dscnn_int8")
    return export(model, tmp_path_factory.mktemp("export") / "kws", "kws")


# ---- the folder ------------------------------------------------------------------------------------


def test_the_folder_holds_the_library_and_nothing_of_the_harness(demo: Exported) -> None:
    d, name = demo.directory, demo.name
    files = {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()}
    kernels = set(demo.result.module.kernels)
    assert {f"src/kernels/{k}.c" for k in kernels} == {
        f for f in files if f.startswith("src/kernels/") and f.endswith(".c")
    }
    for f in (
        "README.md",
        "CMakeLists.txt",
        f"{name}.mk",
        "library.json",
        "zephyr/module.yml",
        "zephyr/CMakeLists.txt",
        "zephyr/Kconfig",
        f"include/{name}.h",
        "include/ts_model.h",
        f"src/{name}.c",
        f"src/{name}_weights.c",
        "example/main.c",
        f"{name}_metadata.json",
    ):
        assert f in files, f
    harness = ("harness", "startup", "ts_protocol", "ts_target", ".ld", "linker", "selftest", "counter")
    assert not [f for f in files if any(h in f for h in harness)]
    assert set(demo.result.library.files) <= files
    text = (d / "CMakeLists.txt").read_text()
    assert f"add_library({name} STATIC" in text
    for src in demo.result.library.sources:
        assert f"${{CMAKE_CURRENT_LIST_DIR}}/{src}" in text and (d / src).is_file()


def test_zephyr_and_platformio_files_say_what_they_must(demo: Exported) -> None:
    """Checked for content only: no Zephyr SDK or PlatformIO platform here (docs/integration.md)."""
    d, name, NAME = demo.directory, demo.name, demo.name.upper()
    module = yaml.safe_load((d / "zephyr" / "module.yml").read_text())
    assert module["name"] == name and module["build"]["cmake"] == "zephyr"
    assert (d / module["build"]["kconfig"]).is_file()
    cmake = (d / "zephyr" / "CMakeLists.txt").read_text()
    assert f"if(CONFIG_TINYSCHED_{NAME})" in cmake and f"zephyr_library_named({name})" in cmake
    assert f"zephyr_include_directories(${{{NAME}_ROOT}}/include)" in cmake
    for src in demo.result.library.sources:
        assert f"${{{NAME}_ROOT}}/{src}" in cmake
    kconfig = (d / "zephyr" / "Kconfig").read_text()
    for option in (
        f"config TINYSCHED_{NAME}\n",
        f"TINYSCHED_{NAME}_ARENA_SECTION",
        f"TINYSCHED_{NAME}_ARENA_EXTERNAL",
    ):
        assert option in kconfig
    assert (
        f"CONFIG_TINYSCHED_{NAME}_ARENA_SECTION" in cmake
        and f"CONFIG_TINYSCHED_{NAME}_ARENA_EXTERNAL" in cmake
    )
    lib = json.loads((d / "library.json").read_text())
    assert lib["name"] == name and lib["build"]["srcDir"] == "src" and lib["build"]["includeDir"] == "include"
    assert (d / lib["build"]["srcDir"] / f"{name}.c").is_file() and (d / "include" / f"{name}.h").is_file()
    for flag in lib["build"]["flags"]:
        if flag.startswith("-I"):
            assert (d / flag[2:].strip()).is_dir(), flag
    assert "example" in lib["export"]["exclude"]


def test_readme_and_metadata_state_the_ram_both_ways(demo: Exported) -> None:
    doc = json.loads((demo.directory / f"{demo.name}_metadata.json").read_text())
    ram = doc["summary"]["application_ram"]
    graph, arena = demo.result.planned.graph, demo.result.planned.arena
    io = sum(graph.tensors[t].nbytes for t in (*graph.inputs, *graph.outputs))
    assert ram["arena_bytes"] == arena.arena_bytes and ram["state_bytes"] == 0
    assert ram["zero_copy_bytes"] == arena.arena_bytes
    assert (
        ram["copying_bytes"]
        == arena.arena_bytes + io
        == ram["zero_copy_bytes"] + ram["input_bytes"] + ram["output_bytes"]
    )
    assert ram["invoke_stack_bytes"] and ram["invoke_stack_bytes"] > 0
    readme = (demo.directory / "README.md").read_text()
    assert f"| arena (aligned to {arena.alignment}) | {arena.arena_bytes:,} |" in readme
    assert f"**{ram['zero_copy_bytes']:,}**" in readme and f"| {ram['copying_bytes']:,} |" in readme
    assert "-mcpu=cortex-m7 -mthumb -mfpu=fpv5-d16 -mfloat-abi=hard" in readme
    flash = doc["build"]["flash"]
    assert flash["weights_bytes"] == demo.result.module.weights_bytes
    if flash["compiled_bytes"]:  # arm-none-eabi-gcc installed
        weights = flash["weights_bytes"] + flash["parameter_bytes"]
        assert all(n > weights for n in flash["compiled_bytes"].values())
        # the objects' RAM: the static arena and the pointer to the arena in use
        assert all(
            arena.arena_bytes <= n <= arena.arena_bytes + 64 for n in flash["static_ram_bytes"].values()
        )
        assert f"{flash['compiled_bytes']['-O2']:,} B at -O2" in readme
    usage = [line for line in readme.splitlines() if re.match(r"\d+\. ", line)]
    assert len(usage) >= 6


def test_in_place_comments_say_when_the_input_is_overwritten(
    demo: Exported, quantize_edges: Exported
) -> None:
    for ex in (demo, quantize_edges):
        planned = ex.result.planned
        graph, plan = planned.graph, planned.arena
        offsets = {p.index: p for p in plan.buffers if p.instance == 0}
        edges = [(t, offsets[t].offset, graph.tensors[t].nbytes) for t in graph.inputs]
        outs = [(t, offsets[t].offset, graph.tensors[t].nbytes) for t in graph.outputs]
        lives = edge_lifetimes(graph, plan, edges, outs)
        header = (ex.directory / "include" / f"{ex.name}.h").read_text()
        for k, reuse in enumerate(lives.inputs):
            block = header.split(f"/* input {k}:", 1)[1].split("typedef", 1)[0]
            if reuse is None:
                assert "still hold the input" in block
            else:
                assert (
                    f"valid until step {reuse.step} (operator {reuse.operator}, {reuse.opcode})"
                    in " ".join(line.strip(" */") for line in block.splitlines())
                )
                # the step writes a tensor over those bytes, which really overlap
                p = next(b for b in plan.buffers if b.index == reuse.tensor)
                t, off, n = edges[k]
                assert p.offset < off + n and off < p.offset + p.bytes and p.first_step == reuse.step
        for k, shared in enumerate(lives.outputs):
            block = header.split(f"/* output {k}:", 1)[1].split("typedef", 1)[0]
            assert ("shares bytes with input" in block) == bool(shared)


# ---- bad input: one line, exit 2, nothing written ----------------------------------------------------


def _one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tinysched: error: ") and "Traceback" not in err
    return err


def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, demo_model: Path, capsys) -> None:
    out = tmp_path / "lib"
    assert "unknown board" in _one_line_error(
        capsys, ["export", str(demo_model), "--board", "nucleo-f999", "-o", str(out)]
    )
    assert not out.exists()
    assert "microcontroller board" in _one_line_error(
        capsys, ["export", str(demo_model), "--board", "host", "-o", str(out)]
    )
    assert "--board" in _one_line_error(capsys, ["export", str(demo_model), "-o", str(out)])
    assert "--pool" in _one_line_error(
        capsys, ["export", str(demo_model), "--board", "nucleo-f767", "--pool", "dtcm=64K", "-o", str(out)]
    )
    _one_line_error(
        capsys, ["export", str(tmp_path / "missing.tflite"), "--board", "nucleo-f767", "-o", str(out)]
    )
    assert not out.exists() and not list(tmp_path.glob(".lib*"))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "main.c").write_text("int main(void) { return 0; }\n")
    assert "--force" in _one_line_error(
        capsys, ["export", str(demo_model), "--board", "nucleo-f767", "-o", str(mine), "--no-compile"]
    )
    assert sorted(p.name for p in mine.iterdir()) == ["main.c"]


def test_an_exported_folder_is_replaced_by_the_next_export(tmp_path: Path, demo_model: Path, capsys) -> None:
    out = tmp_path / "lib"
    for _ in range(2):
        assert (
            main(["export", str(demo_model), "-b", "nucleo-f767", "-o", str(out), "--no-compile", "--json"])
            == 0
        )
        doc = json.loads(capsys.readouterr().out)
        assert doc["prefix"] == "demo" and doc["application_ram"]["zero_copy_bytes"] > 0
    assert (out / "CMakeLists.txt").is_file() and not list(tmp_path.glob(".lib*"))


# ---- the API on the host ---------------------------------------------------------------------------

HOST_DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include "qe.h"

static uint8_t in0[QE_INPUT0_BYTES], in1[QE_INPUT1_BYTES], out0[QE_OUTPUT0_BYTES], out1[QE_OUTPUT1_BYTES];
static uint8_t buffer[QE_ARENA_BYTES + 16] __attribute__((aligned(16)));

static int read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t n;
    if (!f) return 1;
    n = fread(in0, 1, sizeof in0, f) + fread(in1, 1, sizeof in1, f);
    fclose(f);
    return n != sizeof in0 + sizeof in1;
}

static void put(const char *tag, const void *p, size_t n)
{
    size_t i;
    printf("%s ", tag);
    for (i = 0; i < n; ++i) printf("%02x", ((const uint8_t *)p)[i]);
    printf("\n");
}

int main(int argc, char **argv)
{
    const void *ins[2];
    void *outs[2];
    int rc;
    ins[0] = in0; ins[1] = in1; outs[0] = out0; outs[1] = out1;
    if (argc < 2 || read_all(argv[1])) return 9;
#ifdef QE_ARENA_EXTERNAL
    printf("before %d %d\n", qe_invoke_in_place(), qe_input(0) == NULL);
    printf("null %d\n", qe_init(NULL, 0));
#endif
    printf("small %d\n", qe_init(buffer, QE_ARENA_BYTES - 1));
    printf("misaligned %d\n", qe_init(buffer + 1, sizeof buffer));
    printf("string %s\n", qe_error_string(QE_ERROR_ARENA_TOO_SMALL));
    printf("kernel %s\n", qe_error_string(1));
    rc = qe_init(buffer, sizeof buffer);
    printf("init %d\n", rc);
    printf("offsets %d %d\n", (int)((uint8_t *)qe_input(1) - buffer), (int)((uint8_t *)qe_output(1) - buffer));
    printf("none %d\n", qe_input(2) == NULL && qe_output(2) == NULL);
    printf("nullptr %d\n", qe_invoke(NULL, outs));
    memcpy(qe_input(0), in0, sizeof in0);
    memcpy(qe_input(1), in1, sizeof in1);
    printf("inplace %d\n", qe_invoke_in_place());
    put("out0", qe_output(0), sizeof out0);
    put("out1", qe_output(1), sizeof out1);
    printf("copying %d\n", qe_invoke(ins, outs));
    put("copy0", out0, sizeof out0);
    put("copy1", out1, sizeof out1);
    return 0;
}
"""


@pytest.mark.host
@pytest.mark.parametrize("external", [False, True], ids=["static", "external"])
def test_the_in_place_api_on_the_host(quantize_edges: Exported, tmp_path: Path, external: bool) -> None:
    require("host")
    d = quantize_edges.directory
    (tmp_path / "driver.c").write_text(HOST_DRIVER)
    srcs = [str(d / s) for s in quantize_edges.result.library.sources]
    defines = ["-DQE_ARENA_EXTERNAL"] if external else []
    exe = tmp_path / "driver"
    cmd = [
        "gcc",
        *STRICT,
        "-O2",
        "-ffp-contract=off",
        *defines,
        f"-I{d}/include",
        f"-I{d}/src",
        f"-I{d}/src/kernels",
    ]
    subprocess.run([*cmd, str(tmp_path / "driver.c"), *srcs, "-lm", "-o", str(exe)], check=True)
    inputs = tmp_path / "inputs.bin"
    inputs.write_bytes(b"".join(np.asarray(a).tobytes() for a in quantize_edges.inputs))
    lines = dict(
        line.split(" ", 1)
        for line in subprocess.run(
            [str(exe), str(inputs)], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    )
    header = (d / "include" / "qe.h").read_text()

    def macro(name: str) -> int:
        return int(re.search(rf"#define {name} \(?(-?\d+)", header).group(1))

    assert int(lines["small"]) == macro("QE_ERROR_ARENA_TOO_SMALL") == -2
    assert int(lines["misaligned"]) == macro("QE_ERROR_ARENA_MISALIGNED") == -3
    assert (
        lines["string"] == "arena smaller than QE_ARENA_BYTES"
        and lines["kernel"] == "a kernel refused its parameters"
    )
    assert (
        lines["init"] == "0"
        and lines["none"] == "1"
        and int(lines["nullptr"]) == macro("QE_ERROR_NULL_POINTER")
    )
    assert lines["offsets"] == f"{macro('QE_INPUT1_OFFSET')} {macro('QE_OUTPUT1_OFFSET')}"
    if external:
        assert lines["before"] == f"{macro('QE_ERROR_NO_ARENA')} 1" and int(lines["null"]) == macro(
            "QE_ERROR_ARENA_NULL"
        )
    assert lines["inplace"] == "0" and lines["copying"] == "0"
    for k, expected in enumerate(quantize_edges.expected):
        assert bytes.fromhex(lines[f"out{k}"]) == expected, k
        assert bytes.fromhex(lines[f"copy{k}"]) == expected, k


@pytest.mark.host
def test_the_header_compiles_as_cxx17(quantize_edges: Exported, demo: Exported, tmp_path: Path) -> None:
    require("host", ("g++",))
    src = tmp_path / "use.cpp"
    src.write_text(
        '#include "qe.h"\n#include "demo.h"\n'
        "int use() { return qe_input(0) != nullptr && demo_error_string(DEMO_OK) != nullptr; }\n"
    )
    includes = [f"-I{e.directory}/include" for e in (quantize_edges, demo)]
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            *includes,
            "-c",
            str(src),
            "-o",
            str(tmp_path / "use.o"),
        ],
        check=True,
    )


# ---- the compile matrix ----------------------------------------------------------------------------


@pytest.mark.qemu
def test_exported_sources_compile_strict_for_four_cores_and_three_levels(
    demo: Exported,
    quantize_edges: Exported,
    legacy_uint8: list[Exported],
    own_loops: Exported,
    tmp_path: Path,
) -> None:
    """-std=c99 -Wall -Wextra -Werror -pedantic, M4/M7/M33/M55 at -O0/-Os/-O2 (an IDE's Debug build is
    -O0, where the kernels' asm once ran out of registers), example/main.c included; the headers
    from C++17 with arm-none-eabi-g++."""
    require("qemu")
    jobs = []
    assert "TS_PIXEL_OWN_LOOP(" in (own_loops.directory / "src" / "own.c").read_text()
    for ex in (demo, quantize_edges, *legacy_uint8, own_loops):
        d = ex.directory
        files = [d / s for s in ex.result.library.sources] + [d / "example" / "main.c"]
        includes = [f"-I{d}/include", f"-I{d}/src", f"-I{d}/src/kernels"]
        for core, flags in CORES.items():
            for level in ("-O0", "-Os", "-O2"):
                for f in files:
                    out = tmp_path / f"{ex.name}-{core}{level}-{f.parent.name}-{f.stem}.o"
                    jobs.append(
                        ["arm-none-eabi-gcc", *flags, level, *STRICT, *includes, "-c", str(f), "-o", str(out)]
                    )
    cxx = tmp_path / "use.cpp"
    cxx.write_text(
        '#include "demo.h"\n#include "qe.h"\nint use() { return demo_input(0) != nullptr && qe_output(1) != nullptr; }\n'
    )
    if shutil.which("arm-none-eabi-g++"):
        inc = [f"-I{e.directory}/include" for e in (demo, quantize_edges)]
        jobs.append(
            [
                "arm-none-eabi-g++",
                *CORES["m7"],
                "-std=c++17",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                *inc,
                "-c",
                str(cxx),
                "-o",
                str(tmp_path / "use.o"),
            ]
        )

    def run(cmd: list[str]) -> str | None:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        return (
            None if proc.returncode == 0 else f"{' '.join(cmd[1:6])} {cmd[-3]}: {proc.stderr.strip()[:400]}"
        )

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failures = [f for f in pool.map(run, jobs) if f]
    assert not failures, "\n".join(failures[:5])


# ---- the user's own project on QEMU ------------------------------------------------------------------


def c_bytes(data: bytes) -> str:
    rows = [", ".join(f"0x{b:02x}" for b in data[i : i + 16]) for i in range(0, len(data), 16)]
    return "{\n    " + ",\n    ".join(rows or ["0"]) + "\n}"


def write_app_config(folder: Path, models: list[Exported], runs: list[int], shared: bool) -> Path:
    """app_models.h / app_models.c: the model-specific part of the user's application."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [m.name for m in models]
    h = ["#ifndef APP_MODELS_H", "#define APP_MODELS_H", *[f'#include "{n}.h"' for n in names]]
    h.append("#define APP_EACH_MODEL(X) " + " ".join(f"X({n})" for n in names))
    h.append(f"#define APP_MAX_OUTPUT_BYTES {max(max(m.result.module.output_bytes) for m in models)}")
    if shared:
        biggest = max(models, key=lambda m: m.result.module.arena_bytes).name.upper()
        h.append(f"#define APP_SHARED_ARENA_BYTES {biggest}_ARENA_BYTES")
    h.append("#endif")
    (folder / "app_models.h").write_text("\n".join(h) + "\n")
    c = ['#include "app.h"', '#include "app_models.h"']
    rows = []
    for m in models:
        n, N = m.name, m.name.upper()
        for k, a in enumerate(m.inputs):
            c.append(f"static const uint8_t {n}_in{k}[] = {c_bytes(np.asarray(a).tobytes())};")
        c.append(
            f"static const uint8_t *const {n}_inputs[] = {{ {', '.join(f'{n}_in{k}' for k in range(len(m.inputs)))} }};"
        )
        c.append(
            f"static const size_t {n}_input_bytes[] = {{ {', '.join(f'{N}_INPUT{k}_BYTES' for k in range(len(m.inputs)))} }};"
        )
        outs = len(m.expected)
        c.append(
            f"static const size_t {n}_output_bytes[] = {{ {', '.join(f'{N}_OUTPUT{k}_BYTES' for k in range(outs))} }};"
        )
        streamed = m.result.module.streamed  # exported with --stream-input: <name>_invoke_streamed
        offset = "0" if streamed and not streamed["whole"] else f"{N}_INPUT0_OFFSET"
        entry = f"{n}_invoke_streamed, {N}_INPUT0_ROW_BYTES" if streamed else "NULL, 0"
        rows.append(
            f'    {{ "{n}", {n}_init, {n}_input, {n}_output, {n}_invoke_in_place, {n}_invoke, {n}_error_string, '
            f"{N}_ARENA_BYTES, {offset}, {N}_OUTPUT0_OFFSET, {entry}, {N}_NUM_INPUTS, {N}_NUM_OUTPUTS, "
            f"{n}_inputs, {n}_input_bytes, {n}_output_bytes }},"
        )
    c += ["const app_model app_models[] = {", *rows, "};", f"const size_t app_num_models = {len(models)};"]
    c.append(f"const size_t app_runs[] = {{ {', '.join(map(str, runs))} }};")
    c.append(f"const size_t app_num_runs = {len(runs)};")
    (folder / "app_models.c").write_text("\n".join(c) + "\n")
    return folder


def run_qemu(elf: Path) -> list[str]:
    cmd = ["qemu-system-arm", "-machine", "mps2-an500", "-cpu", "cortex-m7", "-display", "none", "-monitor", "none",
           "-serial", "stdio", "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=QEMU_TIMEOUT)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines and lines[-1] == "DONE", proc.stdout[-2000:] + proc.stderr[-500:]
    return lines


def section(map_text: str, name: str) -> tuple[int, int]:
    m = re.search(rf"^{re.escape(name)}\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", map_text, flags=re.M)
    assert m, f"no output section {name} in the map"
    return int(m.group(1), 16), int(m.group(2), 16)


def symbols(elf: Path) -> dict[str, int]:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return {
        parts[2]: int(parts[0], 16)
        for parts in (line.split() for line in out.splitlines())
        if len(parts) == 3
    }


def check_run(
    lines: list[str], models: list[Exported], runs: list[int], elf: Path, map_file: Path, shared: bool
) -> None:
    """Outputs bit-exact in place and copying, every arena in .model_arena (in MODEL_RAM, where the
    project's linker script put it), each input written at its place in its arena."""
    start, size = section(map_file.read_text(), ".model_arena")
    assert start >= 0x20200000 and start + size <= 0x20300000  # MODEL_RAM
    syms = symbols(elf)
    seen = [line.split() for line in lines if line.startswith("MODEL ")]
    assert [s[1] for s in seen] == [models[r].name for r in runs]
    for fields in seen:
        m = next(x for x in models if x.name == fields[1])
        arena = int(fields[2].split("=")[1], 16)
        assert fields[4] == "rc=0"
        assert start <= arena and arena + m.result.module.arena_bytes <= start + size
        header = (m.directory / "include" / f"{m.name}.h").read_text()
        if fields[3] == "input0=streamed":  # through _invoke_streamed: every row asked for, in order
            rows = m.result.module.streamed["rows"]
            assert f"ROWS {m.name} {rows}" in {" ".join(line.split()[:3]) for line in lines}
            assert not any(line.startswith(f"ROWS {m.name} ") and "out-of-order" in line for line in lines)
            assert f"#define {m.name.upper()}_INPUT0_OFFSET" not in header
            assert "IN_PLACE -8 input0=NULL" in lines  # _invoke_in_place refused, no input pointer
        else:
            input0 = int(fields[3].split("=")[1], 16)
            offset = int(re.search(rf"#define {m.name.upper()}_INPUT0_OFFSET (\d+)u", header).group(1))
            assert input0 == arena + offset
        if shared:
            assert arena == syms["shared_arena"]
        else:
            assert arena == syms[f"{m.name}_arena"]  # the library's own static arena, in the asked section
    for m in models:
        for k, expected in enumerate(m.expected):
            outs = {line for line in lines if line.startswith(f"OUT {m.name} {k} ")}
            assert outs == {f"OUT {m.name} {k} {expected.hex()}"}, (m.name, k)
        if len(m.expected) == 1:
            assert {line for line in lines if line.startswith(f"COPY {m.name} ")} == {
                f"COPY {m.name} 0 {m.expected[0].hex()}"
            }
    errors = next(line for line in lines if line.startswith("ERRORS ")).split(" ", 3)
    assert errors[1:3] == ["-2", "-3"] and errors[3].startswith("arena smaller than")


def cmake_build(
    tmp_path: Path, models: list[Exported], runs: list[int], config: str, *, shared: bool
) -> tuple[Path, Path]:
    require("qemu", ("qemu-system-arm", "arm-none-eabi-gcc", "cmake", "ninja"))
    if not shutil.which("arm-none-eabi-g++"):
        pytest.skip("arm-none-eabi-g++ not installed")
    cfg = write_app_config(tmp_path / "config", models, runs, shared)
    build = tmp_path / "build"
    per_model = [
        f"-D{m.name.upper()}_ARENA_EXTERNAL=ON"
        if shared
        else f"-D{m.name.upper()}_ARENA_SECTION=.model_arena"
        for m in models
    ]
    configure = [
        "cmake", "-G", "Ninja", "-S", str(USER_PROJECT), "-B", str(build),
        f"-DCMAKE_TOOLCHAIN_FILE={USER_PROJECT / 'arm-none-eabi.cmake'}", f"-DCMAKE_BUILD_TYPE={config}",
        f"-DAPP_MODEL_DIRS={';'.join(str(m.directory) for m in models)}",
        f"-DAPP_MODEL_NAMES={';'.join(m.name for m in models)}", f"-DAPP_CONFIG_DIR={cfg}", *per_model,
    ]  # fmt: skip
    for cmd in (configure, ["cmake", "--build", str(build)]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return build / "app.elf", build / "app.map"


def make_build(tmp_path: Path, models: list[Exported], runs: list[int], opt: str) -> tuple[Path, Path]:
    require("qemu", ("qemu-system-arm", "arm-none-eabi-gcc", "make"))
    cfg = write_app_config(tmp_path / "config", models, runs, shared=False)
    build = tmp_path / "build"
    cmd = [
        "make", "-s", "-f", str(USER_PROJECT / "Makefile"), f"-j{os.cpu_count() or 2}", f"BUILD={build}", f"OPT={opt}",
        f"CONFIG_DIR={cfg}", f"MODEL_MKS={' '.join(str(m.directory / f'{m.name}.mk') for m in models)}",
        f"MODELS={' '.join(m.name.upper() for m in models)}",
        *[f"{m.name.upper()}_ARENA_SECTION=.model_arena" for m in models],
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return build / "app.elf", build / "app.map"


@pytest.mark.qemu
@pytest.mark.parametrize("config", ["Debug", "Release"])
def test_cmake_project_runs_the_export_bit_exact_with_the_arena_where_it_put_it(
    demo: Exported, tmp_path: Path, config: str
) -> None:
    elf, map_file = cmake_build(tmp_path, [demo], [0], config, shared=False)
    check_run(run_qemu(elf), [demo], [0], elf, map_file, shared=False)
    assert re.search(
        r"^ \.model_arena\s+0x[0-9a-f]+\s+0x[0-9a-f]+ .*libdemo\.a\(demo\.c\.obj\)",
        map_file.read_text(),
        flags=re.M,
    )


@pytest.mark.qemu
def test_make_project_links_two_exports_with_each_kernel_once(
    demo: Exported, branching: Exported, tmp_path: Path
) -> None:
    shared_kernels = set(demo.result.module.kernels) & set(branching.result.module.kernels)
    assert shared_kernels  # the .mk files must name those once between them
    elf, map_file = make_build(tmp_path, [demo, branching], [0, 1], "-Os")
    check_run(run_qemu(elf), [demo, branching], [0, 1], elf, map_file, shared=False)


@pytest.mark.qemu
def test_cmake_project_runs_a_streamed_input_export_bit_exact(
    demo: Exported, camera: Exported, tmp_path: Path
) -> None:
    """The user's project pulls the camera model's rows through camera_invoke_streamed with its own
    row source (every row asked for, in order, once; outputs left in the arena), then through the
    copying invoke, beside a model run in place: both bit-exact; the README and example say so."""
    streamed = camera.result.module.streamed
    assert streamed is not None and not streamed["whole"] and streamed["window_rows"] == 3
    readme = (camera.directory / "README.md").read_text()
    assert (
        "camera_invoke_streamed(read_rows, ctx, outputs)" in readme
        and "**streamed** (`_invoke_streamed`)" in readme
    )
    assert (
        "camera_invoke_streamed(read_rows, NULL, NULL)"
        in (camera.directory / "example" / "main.c").read_text()
    )
    elf, map_file = cmake_build(tmp_path, [demo, camera], [0, 1], "Release", shared=False)
    lines = run_qemu(elf)
    check_run(lines, [demo, camera], [0, 1], elf, map_file, shared=False)
    assert "ROWS camera 24 calls=12 in-order" in lines  # rows 0-2, then two new rows per output row
    d = camera.directory  # its own module, example and header strict (the kernels: the matrix above)
    includes = [f"-I{d}/include", f"-I{d}/src", f"-I{d}/src/kernels"]
    for core in ("m7", "m55"):
        for level in ("-O0", "-O2"):
            for f in (d / "src" / "camera.c", d / "example" / "main.c"):
                cmd = [
                    "arm-none-eabi-gcc",
                    *CORES[core],
                    level,
                    *STRICT,
                    *includes,
                    "-c",
                    str(f),
                    "-o",
                    "/dev/null",
                ]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                assert proc.returncode == 0, (core, level, f.name, proc.stderr[:600])
    cxx = tmp_path / "use.cpp"
    cxx.write_text(
        '#include "camera.h"\nint use() { return camera_invoke_streamed(nullptr, nullptr, nullptr); }\n'
    )
    cmd = ["arm-none-eabi-g++", *CORES["m7"], "-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic",
           f"-I{d}/include", "-c", str(cxx), "-o", "/dev/null"]  # fmt: skip
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0


@pytest.mark.qemu
def test_vww_through_cmake_and_through_make(vww: Exported, tmp_path: Path) -> None:
    elf, map_file = cmake_build(tmp_path / "cmake", [vww], [0], "Debug", shared=False)
    check_run(run_qemu(elf), [vww], [0], elf, map_file, shared=False)
    elf, map_file = make_build(tmp_path / "make", [vww], [0], "-O2")
    check_run(run_qemu(elf), [vww], [0], elf, map_file, shared=False)


@pytest.mark.qemu
def test_kws_and_vww_share_one_arena(kws: Exported, vww: Exported, tmp_path: Path) -> None:
    """Both built with <NAME>_ARENA_EXTERNAL, given one buffer by _init, run VWW, KWS, VWW again."""
    runs = [1, 0, 1]
    elf, map_file = cmake_build(tmp_path, [kws, vww], runs, "Release", shared=True)
    lines = run_qemu(elf)
    check_run(lines, [kws, vww], runs, elf, map_file, shared=True)
    syms = symbols(elf)
    assert "kws_arena" not in syms and "vww_arena" not in syms  # no static arenas: one buffer for both
    _, size = section(map_file.read_text(), ".model_arena")
    assert size == max(kws.result.module.arena_bytes, vww.result.module.arena_bytes)
