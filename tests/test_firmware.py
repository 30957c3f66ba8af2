"""Cross builds for every board (-Wall -Wextra -Werror) and, on QEMU, the device harness end to end.

Tier `qemu`: needs arm-none-eabi-gcc and qemu-system-arm; missing tools skip with the reason, or
fail when TINYSCHED_REQUIRE names the tier (CI sets TINYSCHED_REQUIRE=qemu). Tier `hardware` runs
only when TINYSCHED_PORT names a board's serial port (TINYSCHED_BOARD, default nucleo-f767).
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from conftest import shared_model_params
from tiers import require

from tinysched.boards import all_boards, get_board
from tinysched.build.elfsize import DoesNotFit
from tinysched.build.firmware import build_firmware, linker_script, selftest_sources
from tinysched.build.stack import (
    KernelStackTable,
    invoke_stack,
    kernel_stack_table,
    stack_reservation,
    with_margin,
)
from tinysched.device.link import DeviceFault, DeviceLink
from tinysched.device.runner import (
    SELFTEST_ARENA,
    flash_command,
    flash_commands,
    flash_tool,
    measure_selftest,
    qemu_command,
)
from tinysched.errors import TinyschedError


@pytest.fixture
def qemu_tools():
    require("qemu")


# ---- no tools needed ------------------------------------------------------------------------------


@pytest.mark.parametrize("board", all_boards(), ids=lambda b: b.name)
def test_linker_script_from_regions(board):
    script = linker_script(board)
    for region in board.memory:
        assert f"ORIGIN = {region.origin:#010x}, LENGTH = {region.length}" in script
    assert f"}} > {board.placement['arena'].upper()}" in script
    assert f"TS_STACK_BYTES = {board.stack_bytes};" in script


def test_flash_commands_for_real_boards(tmp_path):
    elf = tmp_path / "fw.elf"
    cmds = flash_commands(get_board("nucleo-f767"), elf)
    assert cmds[0][0] == "openocd" and "target/stm32f7x.cfg" in cmds[0]
    assert cmds[0][-1] == f"program {{{elf}}} verify reset exit"
    assert cmds[1] == ["pyocd", "flash", "--target", "stm32f767zitx", str(elf)]
    assert flash_commands(get_board("mps2-an500"), elf) == []


def test_flash_command_passes_the_probe_through(tmp_path):
    elf = tmp_path / "my fw.elf"  # a space in the path stays one argument, braced for openocd's Tcl
    board = get_board("nucleo-f446re")
    assert flash_command(board, elf, "openocd", probe="0666FF303032424257021242") == [
        "openocd", "-f", "interface/stlink.cfg", "-c", "adapter serial 0666FF303032424257021242",
        "-f", "target/stm32f4x.cfg", "-c", f"program {{{elf}}} verify reset exit",
    ]  # fmt: skip
    assert flash_command(board, elf, "pyocd", probe="066DFF49") == [
        "pyocd", "flash", "--target", "stm32f446retx", "--probe", "066DFF49", str(elf),
    ]  # fmt: skip
    assert flash_command(board, elf, "pyocd") == ["pyocd", "flash", "--target", "stm32f446retx", str(elf)]


@pytest.mark.parametrize("probe", ["x; shutdown", "[exit]", "a b", "", "-u"])
def test_a_probe_id_that_would_reach_tcl_is_refused(tmp_path, probe):
    with pytest.raises(TinyschedError, match=r"^--probe .*: a probe id is letters, digits"):
        flash_command(get_board("nucleo-f446re"), tmp_path / "fw.elf", "openocd", probe=probe)


def test_flash_tool_is_the_first_installed():
    board = get_board("nucleo-f767")
    both = {"openocd": "/usr/bin/openocd", "pyocd": "/usr/local/bin/pyocd"}
    assert flash_tool(board, which=both.get) == "openocd"
    assert flash_tool(board, which={"pyocd": "/x/pyocd"}.get) == "pyocd"
    assert flash_tool(board, "pyocd", which=both.get) == "pyocd"
    with pytest.raises(TinyschedError) as err:
        flash_tool(board, which={}.get)
    message = str(err.value)
    assert message.count("\n") == 0
    assert "neither openocd nor pyocd is installed" in message and "apt install openocd" in message
    with pytest.raises(TinyschedError, match=r"^pyocd is not installed \(PyPI: pip install pyocd\)$"):
        flash_tool(board, "pyocd", which={"openocd": "/usr/bin/openocd"}.get)


def test_an_emulated_board_has_nothing_to_flash(tmp_path):
    with pytest.raises(TinyschedError, match="exists only under emulation"):
        flash_command(get_board("netduinoplus2"), tmp_path / "fw.elf", "pyocd")


def test_qemu_command_uses_a_tcp_uart(tmp_path):
    cmd = qemu_command(get_board("mps2-an500"), tmp_path / "fw.elf", 4321)
    assert cmd[:3] == ["qemu-system-arm", "-machine", "mps2-an500"]
    assert "tcp:127.0.0.1:4321,server=on,wait=on" in cmd
    assert any(a.startswith("shift=") for a in cmd)
    assert "null" not in cmd


def test_qemu_command_puts_the_harness_on_usart2_of_netduinoplus2(tmp_path):
    """QEMU gives -serial i to USART i+1: USART1 gets null, USART2 (the F446's ST-LINK port) the socket."""
    elf = tmp_path / "fw.elf"
    assert qemu_command(get_board("netduinoplus2"), elf, 4321, listen_fd=7) == [
        "qemu-system-arm", "-machine", "netduinoplus2", "-cpu", "cortex-m4", "-display", "none",
        "-monitor", "none", "-serial", "null",
        "-chardev", "socket,id=uart0,fd=7,server=on,wait=on", "-serial", "chardev:uart0",
        "-icount", "shift=6,align=off,sleep=off", "-semihosting-config", "enable=on,target=native",
        "-kernel", str(elf),
    ]  # fmt: skip


# ---- cross builds ------------------------------------------------------------------------------------


@pytest.mark.qemu
def test_every_board_compiles_warning_free(qemu_tools, tmp_path):
    """Startup, clocks, UART, counter and harness for every board, -Wall -Wextra -Werror."""
    for board in all_boards():
        image = build_firmware(selftest_sources(), board, tmp_path / board.name)
        assert image.elf.is_file() and image.hex.is_file()
        assert image.size.fits
        assert image.size.arena_bytes_planned == SELFTEST_ARENA
        assert image.size.ram_arena == SELFTEST_ARENA
        assert image.size.ram_stack == board.stack_bytes
        arena_region = next(r for r in image.size.regions if r.name == board.placement["arena"])
        assert arena_region.used >= SELFTEST_ARENA
        if not board.emulated:
            assert image.bin is not None and image.bin.stat().st_size == image.size.flash_total
        # the vector table sits at the start of the code region
        nm = subprocess.run(["arm-none-eabi-nm", str(image.elf)], capture_output=True, text=True).stdout
        vt = re.search(r"^([0-9a-f]+) [TtRr] ts_vector_table$", nm, re.M)
        assert vt and int(vt.group(1), 16) == board.placed("text").origin


@pytest.mark.qemu
def test_size_report_lines(qemu_tools, tmp_path):
    image = build_firmware(selftest_sources(), get_board("nucleo-f446re"), tmp_path)
    text = "\n".join(image.size.lines())
    assert "flash" in text and "weights" in text and "arena 300 B" in text and "fits the board" in text
    js = image.size.to_json()
    assert js["fits"] and js["flash_total"] == image.size.flash_total


@pytest.mark.qemu
def test_model_too_big_fails_with_numbers(qemu_tools, tmp_path):
    board = get_board("nucleo-f446re")  # 128 KiB of SRAM
    with pytest.raises(DoesNotFit) as err:
        build_firmware(selftest_sources(), board, tmp_path, defines=["-DSELFTEST_ARENA=200000"])
    message = str(err.value)
    assert "does not fit nucleo-f446re" in message and "sram" in message
    report = err.value.report
    sram = next(r for r in report.regions if r.name == "sram")
    assert not sram.fits and sram.used > 200000 and sram.length == 131072
    assert report.ram_arena >= 200000


# ---- on QEMU -------------------------------------------------------------------------------------------

EMULATED = ["mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547", "netduinoplus2"]


@pytest.mark.qemu
@pytest.mark.parametrize("board", EMULATED)
def test_selftest_on_qemu(qemu_tools, tmp_path, board):
    result = measure_selftest(board, tmp_path, n_inputs=3)
    assert result.hello["board"] == board
    assert result.hello["arena_bytes"] == SELFTEST_ARENA
    assert result.hello["build_id"].startswith("selftest-")
    assert result.outputs_match is True and result.outputs_agree_on_device
    assert result.arena_bytes_measured == result.arena_bytes_planned == SELFTEST_ARENA
    assert result.arena_bytes_touched == SELFTEST_ARENA
    assert 0 < result.stack_bytes_measured < result.stack_bytes_total < 4096
    assert result.instructions and result.instructions > 1000 and result.cycles is None
    assert result.emulated_by is None and result.ok


@pytest.mark.qemu
def test_real_board_runs_on_its_stand_in(qemu_tools, tmp_path):
    result = measure_selftest("nucleo_f767zi", tmp_path, n_inputs=2, arena_bytes=1001)
    assert result.board == "nucleo-f767" and result.emulated_by == "mps2-an500"
    assert "standing in for nucleo-f767" in "\n".join(result.lines())
    assert result.arena_bytes_measured == 1001 and result.ok
    assert result.size["board"] == "nucleo-f767" and result.size["emulated_image"]["board"] == "mps2-an500"
    js = result.to_json()
    for key in (
        "board",
        "emulated_by",
        "arena_bytes_planned",
        "arena_high_water_planned",
        "arena_bytes_measured",
        "stack_bytes_measured",
        "outputs_match",
        "inputs",
        "cycles",
        "instructions",
    ):
        assert key in js
    assert js["cycles"] is None and js["count_unit"] == "instructions (emulated)"


@pytest.mark.qemu
def test_nucleo_f446re_image_boots_on_netduinoplus2(qemu_tools, tmp_path):
    """The F446's own image (its PLL set-up, USART2 driver and layout) on QEMU's STM32F405, whose RCC
    is not modelled: the bounded wait on HSIRDY times out, one text line says so at the reset clock,
    and the harness then answers and measures bit-exact, arena equal to the plan."""
    import socket
    import time

    from tinysched.device.runner import measure_image, run_qemu, selftest_inputs, selftest_reference

    f446, stand_in = get_board("nucleo-f446re"), get_board("netduinoplus2")
    image = build_firmware(selftest_sources(), f446, tmp_path)
    with run_qemu(stand_in, image.elf) as session:
        port = int(session.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            text = b""
            deadline = time.monotonic() + 20
            while not text.endswith(b"Hz\r\n") and time.monotonic() < deadline and len(text) < 400:
                text += sock.recv(1)
    assert text.decode() == (
        "\r\ntinysched: nucleo-f446re: clock: HSIRDY (RCC_CR bit 1) did not come up within 200000 polls "
        "(register 0x40023800 = 0x00000000): running on the reset clock, HSI 16000000 Hz, not 180000000 Hz\r\n"
    )
    inputs = selftest_inputs(2)
    expected = [[selftest_reference(x[0])] for x in inputs]
    result = measure_image(image, stand_in, inputs, expected, SELFTEST_ARENA, requested=f446)
    assert result.hello["board"] == "nucleo-f446re" and result.hello["counter"] == "systick"  # no DWT in QEMU
    assert result.hello["cpu_hz"] == 16_000_000  # the clock it runs at (the reset clock), not TS_CPU_HZ
    assert result.emulated_by == "netduinoplus2" and result.ran_on == "netduinoplus2"
    assert result.outputs_match is True and result.arena_bytes_measured == SELFTEST_ARENA and result.ok


@pytest.mark.qemu
def test_measure_selftest_on_the_second_stand_in(qemu_tools, capsys):
    import json

    from tinysched.cli import main

    argv = ["measure", "selftest", "--board", "nucleo_f446re", "--stand-in", "netduinoplus2", "--inputs", "2"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["board"] == "nucleo-f446re" and out["emulated_by"] == out["ran_on"] == "netduinoplus2"
    assert out["qemu_command"][out["qemu_command"].index("-machine") + 1] == "netduinoplus2"
    assert (
        out["size"]["board"] == "nucleo-f446re" and out["size"]["emulated_image"]["board"] == "netduinoplus2"
    )
    assert out["outputs_match"] is True and out["arena_bytes_measured"] == SELFTEST_ARENA and out["ok"]
    assert main(["measure", "selftest", "--board", "nucleo-f446re", "--stand-in", "mps2-an500"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "mps2-an500 is not one of its stand-ins" in err


@pytest.mark.qemu
def test_overrun_past_the_plan_is_measured(qemu_tools, tmp_path):
    result = measure_selftest("mps2-an386", tmp_path, n_inputs=1, overrun=True)
    assert result.arena_bytes_measured == SELFTEST_ARENA + 4
    assert not result.arena_matches_plan and not result.ok


@pytest.mark.qemu
def test_device_fault_is_a_clear_error(qemu_tools, tmp_path):
    with pytest.raises(DeviceFault, match=r"HardFault at pc 0x"):
        measure_selftest("mps2-an500", tmp_path, n_inputs=1, fault=True)


@pytest.mark.qemu
def test_corrupted_request_is_nakked_and_retried(qemu_tools, tmp_path):
    """A real device (the harness on QEMU) rejects a frame with a bad CRC, then runs the retry."""
    from tinysched.device.link import MSG_NAK, MSG_RUN, encode_frame
    from tinysched.device.runner import connect_qemu, run_qemu, selftest_inputs, selftest_reference

    board = get_board("mps2-an386")
    image = build_firmware(selftest_sources(), board, tmp_path)
    with run_qemu(board, image.elf) as session, connect_qemu(session, ack_timeout=1.0) as link:
        # the boot hello's first bytes can be gone (pyserial's open discards what has arrived): a
        # QUERY asks for another, as `measure` does
        link.wait_hello(timeout=10)
        (x,) = selftest_inputs(1)[0]
        frame = bytearray(encode_frame(MSG_RUN, 7, bytes(8) + x))
        frame[20] ^= 0xFF  # one payload byte flipped on the wire
        link.port.write(bytes(frame))
        import time

        nak = link.receive(time.monotonic() + 5)
        assert nak is not None and nak.type == MSG_NAK and nak.seq == 7
        result = link.run([x])
        assert result.outputs == (selftest_reference(x),)


@pytest.mark.qemu
def test_semihosted_inputs_with_a_bad_crc_are_one_clear_error(qemu_tools, tmp_path, monkeypatch):
    """Opt-in semihosting: a file that does not match the CRC-32 in the request is refused by the
    harness with one error frame, raised at once by the host; the next run (over the UART) works."""
    import time
    from pathlib import Path

    from tinysched.device.link import LinkError
    from tinysched.device.runner import connect_qemu, run_qemu, selftest_inputs, selftest_reference

    board = get_board("mps2-an386")
    image = build_firmware(selftest_sources(), board, tmp_path)
    with run_qemu(board, image.elf) as session, connect_qemu(session, semihost_inputs=True) as link:
        assert link.wait_hello(timeout=10).semihosting  # a QUERY if the boot hello was cut
        (x,) = selftest_inputs(1)[0]
        assert link.run([x], reset_state=True).outputs == (selftest_reference(x),)  # a good file
        assert link.inputs_semihosted == 1
        write_bytes = Path.write_bytes
        monkeypatch.setattr(Path, "write_bytes", lambda self, b: write_bytes(self, bytes([b[0] ^ 1]) + b[1:]))
        start = time.monotonic()
        with pytest.raises(LinkError, match=r"device error: semihosting: .* do not match their CRC-32"):
            link.run([x])
        assert time.monotonic() - start < 5
        monkeypatch.undo()
        link.semihost_dir = None  # back to the UART
        assert link.run([x]).outputs == (selftest_reference(x),)


def test_semihosted_inputs_are_refused_on_a_real_board(capsys):
    from tinysched.cli import main

    argv = ["measure", "selftest", "--board", "nucleo-f767", "--port", "/dev/null", "--semihost-inputs"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--semihost-inputs works only under emulation" in err


@pytest.mark.qemu
def test_measure_command_json(qemu_tools, tmp_path, capsys):
    import json

    from tinysched.cli import main

    rc = main(["measure", "selftest", "--board", "mps2/an505", "--inputs", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["board"] == "mps2-an505" and out["arena_bytes_measured"] == out["arena_bytes_planned"]
    assert out["outputs_match"] is True and out["inputs"] == 2
    assert out["inputs_semihosted"] is False


@pytest.mark.qemu
def test_measure_command_semihost_inputs_is_labelled(qemu_tools, tmp_path, capsys):
    import dataclasses
    import json

    from tinysched.cli import main
    from tinysched.device.runner import MeasureResult

    argv = ["measure", "selftest", "--board", "mps2-an386", "--inputs", "1"]
    assert main([*argv, "--semihost-inputs", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["inputs_semihosted"] is True and out["outputs_match"] is True
    result = MeasureResult(**{f.name: out[f.name] for f in dataclasses.fields(MeasureResult)})
    assert "by SEMIHOSTING (--semihost-inputs, QEMU only)" in "\n".join(result.lines())


# ---- on a real board ---------------------------------------------------------------------------------


@pytest.mark.hardware
@pytest.mark.skipif(
    not os.environ.get("TINYSCHED_PORT"), reason="no board: set TINYSCHED_PORT (and TINYSCHED_BOARD)"
)
def test_selftest_on_hardware(tmp_path):
    require("hardware")
    board = os.environ.get("TINYSCHED_BOARD", "nucleo-f767")
    result = measure_selftest(board, tmp_path, n_inputs=3, port=os.environ["TINYSCHED_PORT"])
    assert result.outputs_match and result.arena_bytes_measured == result.arena_bytes_planned
    assert result.cycles and result.cycles > 0


def test_device_link_is_importable():
    assert DeviceLink


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an500", "netduinoplus2"])
def test_emulated_instruction_count_is_exact(qemu_tools, tmp_path, board):
    """A loop of 2N instructions adds 2N (to within the SysTick resolution) to the count: on
    netduinoplus2 the SysTick runs at QEMU's 168 MHz (qemu.systick_hz), not the image's clock."""
    n = 50_000
    base = measure_selftest(board, tmp_path / "base", n_inputs=1)
    spun = measure_selftest(board, tmp_path / "spin", n_inputs=1, spin=n)
    assert abs(spun.instructions - base.instructions - 2 * n) <= 2
    assert spun.count_unit == "instructions (emulated)"


# ---- the project's own generated models, through the code generator -------------------------------


def _measure_tflite(tmp_path, model_bytes_or_path, board, n_inputs=2, stand_in=None):
    from pathlib import Path

    from helpers import generate_for_measure

    from tinysched.device.runner import measure_sources

    if isinstance(model_bytes_or_path, bytes):
        path = tmp_path / "model.tflite"
        path.write_bytes(model_bytes_or_path)
    else:
        path = Path(model_bytes_or_path)
    gen = generate_for_measure(path, tmp_path / "gen", n_inputs)
    return measure_sources(
        gen.sources, board, gen.inputs, gen.expected,
        gen.arena_bytes_planned, tmp_path / "build",
        arena_high_water_planned=gen.arena_high_water_planned, stand_in=stand_in,
        expected_steps=gen.expected_steps,
    )  # fmt: skip


@pytest.mark.qemu
@pytest.mark.parametrize(
    "model,board,stand_in",
    [
        ("demo", "nucleo-f767", None),
        ("branching", "mps3-an547", None),
        ("branching", "nucleo-f446re", "netduinoplus2"),
    ],
)
def test_generated_model_on_qemu(qemu_tools, tmp_path, model, board, stand_in):
    from tinysched.model.modelgen import random_branching_model, tiny_demo_model

    data = tiny_demo_model() if model == "demo" else random_branching_model(seed=3, n_blocks=5)
    result = _measure_tflite(tmp_path, data, board, n_inputs=2, stand_in=stand_in)
    assert result.ran_on == (stand_in or get_board(board).stand_in().name)
    assert result.outputs_match is True, result.mismatches
    assert result.arena_bytes_measured == result.arena_high_water_planned, result.mismatches
    assert result.arena_high_water_planned <= result.arena_bytes_planned
    assert result.outputs_agree_on_device and result.ok
    assert result.instructions and result.instructions > 10_000


@pytest.mark.qemu
def test_large_input_goes_over_the_uart_by_default(qemu_tools, tmp_path):
    """An input set of more than 4 KiB (1x24x24x8 int8: 4,608 B) reaches QEMU over the UART, bit-exact."""
    from tinysched.model.modelgen import random_branching_model

    data = random_branching_model(seed=5, n_blocks=3, input_shape=(1, 24, 24, 8))
    result = _measure_tflite(tmp_path, data, "mps2-an500", n_inputs=1)
    assert result.hello["input_bytes"] == [24 * 24 * 8] and result.hello["semihosting"]
    assert result.inputs_semihosted is False and result.to_json()["inputs_semihosted"] is False
    assert "semihosting" not in "\n".join(result.lines()).lower()
    assert result.outputs_match is True, result.mismatches
    assert result.ok, result.mismatches


# ---- every shared model that is supported and fits: in the default suite ---------------------------
#
# One input per model, on the first emulated board whose memory holds it (mps2-an500, the
# Cortex-M7 that stands in for nucleo-f767; then mps3-an547). All models are measured once, two at a
# time (QEMU, the cross compiler and the reference interpreter are separate processes), by a
# module-scoped fixture; each model is then its own test. Inputs go over the UART (as every
# conversation with a device must), except that models whose input set is larger than 32 KiB
# (mcunet_vww, mbv2, mcunetv2_large: 75-600 KB, 20 s to 3 min each at QEMU's 3-10 KB/s)
# opt in to semihosting (`--semihost-inputs`, docs/firmware.md) to keep the suite's time budget;
# their input path is the same harness code that the smaller models and
# test_large_input_goes_over_the_uart_by_default exercise over the UART.

SHARED_QEMU_BOARDS = ("mps2-an500", "mps3-an547")
# The suite samples the sweep: models of more MACs than this (mbv2 301 M, mcunetv2_large 219 M, about
# 40 s of CPU between them on QEMU) run on the emulated M7 in bench/bench_device.py (the Device
# table in docs/BENCHMARKS.md, bit-exact and arena = plan), and on the host in test_codegen's
# test_shared_model_verifies_or_is_refused.
SHARED_QEMU_MAX_MACS = 100_000_000
SHARED_SEMIHOST_ABOVE = 32 * 1024  # input bytes per set above which the shared test opts in to semihosting


def _measure_shared(path, work):
    from helpers import generate_for_measure

    from tinysched.codegen import check_supported
    from tinysched.device.runner import measure_sources
    from tinysched.errors import TinyschedError
    from tinysched.model.reader import read_model
    from tinysched.model.uint8 import int8_arithmetic
    from tinysched.order.recompute import macs

    graph = read_model(path)
    total = sum(macs(graph, v) for v in range(len(graph.operators)))
    try:  # a model the code generator refuses is skipped below, with its own reason
        check_supported(int8_arithmetic(graph, uint8_edges=True).graph)  # a legacy uint8 model as built
        supported = True
    except TinyschedError:
        supported = False
    if supported and total > SHARED_QEMU_MAX_MACS:
        return (
            "skip",
            f"{total:,} MACs: measured on QEMU by bench/bench_device.py, bit-exact on the host in the suite",
        )
    try:
        gen = generate_for_measure(path, work / "gen", 1)
    except TinyschedError as err:
        if "not supported by the code generator" in str(err):
            return "skip", str(err)
        raise
    misfits = []
    semihost = sum(len(x) for x in gen.inputs[0]) > SHARED_SEMIHOST_ABOVE
    for board in SHARED_QEMU_BOARDS:
        try:
            result = measure_sources(
                gen.sources, board, gen.inputs, gen.expected,
                gen.arena_bytes_planned, work / board,
                arena_high_water_planned=gen.arena_high_water_planned, semihost_inputs=semihost,
                expected_steps=gen.expected_steps,
            )  # fmt: skip
        except DoesNotFit as err:
            misfits.append(str(err))
            continue
        kernels = [f.stem for f in gen.sources.c_files if f.parent.name == "kernels"]
        return "ran", (result, kernels)
    return "skip", "; ".join(misfits)


@pytest.fixture(scope="module")
def shared_results(tmp_path_factory):
    from concurrent.futures import ThreadPoolExecutor

    from conftest import shared_model_paths

    require("qemu")
    paths = shared_model_paths()
    base = tmp_path_factory.mktemp("shared-qemu")

    def one(path):
        try:
            return _measure_shared(path, base / path.stem)
        except Exception as err:  # reported by that model's own test
            return "error", err

    # the biggest models (about 3 G instructions per inference) first, so they overlap each other
    paths = sorted(paths, key=lambda p: -p.stat().st_size)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip([p.stem for p in paths], pool.map(one, paths), strict=True))


@pytest.mark.qemu
@pytest.mark.parametrize("path", shared_model_params())
def test_shared_model_on_qemu(shared_results, path):
    kind, result = shared_results[path.stem]
    if kind == "skip":
        pytest.skip(result)
    if kind == "error":
        raise result
    result, kernels = result
    assert result.outputs_match is True, result.mismatches
    assert result.outputs_agree_on_device, result.mismatches
    assert result.arena_bytes_measured == result.arena_high_water_planned, result.mismatches
    assert result.inputs_semihosted == (sum(result.hello["input_bytes"]) > SHARED_SEMIHOST_ABOVE)
    assert result.ok
    # the default reservation `build` would make from the measured kernel stacks holds this model
    reservation = stack_reservation(get_board(result.ran_on), kernels)
    assert reservation.measured_bytes is not None, reservation.basis
    assert result.stack_bytes_total < reservation.bytes, reservation.basis


# ---- `tinysched build MODEL --board B -o DIR` -------------------------------------------------------


@pytest.mark.qemu
def test_build_for_a_board_writes_the_image_and_metadata(qemu_tools, tmp_path, capsys):
    import json

    from tinysched.cli import main
    from tinysched.model.modelgen import tiny_demo_model

    model = tmp_path / "demo.tflite"
    model.write_bytes(tiny_demo_model())
    out = tmp_path / "fw"
    assert main(["build", str(model), "--board", "nucleo_f767zi", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Region" in text and "%Used" in text and "fits the board with margin" in text
    for suffix in (".elf", ".bin", ".hex", ".map", "_metadata.json"):
        assert (out / f"demo{suffix}").is_file(), suffix
    assert (out / "src" / "demo.c").is_file() and not (out / "obj").exists()
    doc = json.loads((out / "demo_metadata.json").read_text())
    assert doc["schema"] == "tinysched.metadata" and doc["schema_version"] == 1
    build = doc["build"]
    assert build["board"] == "nucleo-f767" and build["emulated_by"] == "mps2-an500"
    assert build["files"]["elf"] == "demo.elf" and build["fits"] is True
    assert build["arena_high_water_bytes"] <= build["arena_bytes"] == build["size_report"]["ram_arena"]
    assert {"flash_code", "flash_weights", "ram_arena", "ram_stack", "ram_other", "regions"} <= set(
        build["size_report"]
    )


@pytest.mark.qemu
def test_build_too_big_for_the_board_fails_in_one_line(qemu_tools, tmp_path, capsys):
    from conftest import shared_model

    from tinysched.cli import main

    # As converted, 161 KB of arena: more than nucleo-f446re's 128 KiB of SRAM (with its PADs fused,
    # tinysched/model/rewrite.py, the arena is 96,000 B and the model fits).
    model = shared_model("mcunet_vww_int8")
    out = tmp_path / "fw"
    argv = [
        "build",
        str(model),
        "--board",
        "nucleo-f446re",
        "-o",
        str(out),
        "--no-rewrite",
        "--memory-model",
        "tensor",
    ]
    assert main(argv) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not fit nucleo-f446re" in err and "arena 161,472 B" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


# ---- `tinysched flash BUILD_DIR`: which tool, the exact command, the probe id, the errors -------------
#
# No board is attached here: the tools are stand-in executables on PATH that record their argv (and
# fail when asked), run for real by `tinysched flash`.


@pytest.fixture(scope="module")
def f446_build(tmp_path_factory):
    from tinysched.build import BuildOptions
    from tinysched.commands.build import build_model
    from tinysched.model.modelgen import tiny_demo_model

    require("qemu", ("arm-none-eabi-gcc", "arm-none-eabi-objcopy"))
    base = tmp_path_factory.mktemp("flash")
    model = base / "demo.tflite"
    model.write_bytes(tiny_demo_model())
    return build_model(model, base / "fw", "nucleo-f446re", build=BuildOptions(), report=False)


def _fake_tool(bin_dir, name, exit_code=0, message=""):
    """An executable `name` that writes its argv (one per line) to <name>.argv and exits with exit_code."""
    import sys

    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(bin_dir / (name + '.argv'))!r}, 'w').write('\\n'.join(sys.argv[1:]))\n"
        f"print({message!r}, file=sys.stderr)\nsys.exit({exit_code})\n"
    )
    tool.chmod(0o755)
    return bin_dir / f"{name}.argv"


def test_flash_runs_the_installed_tool_with_the_exact_command(f446_build, tmp_path, monkeypatch, capsys):
    from tinysched.cli import main

    argv_file = _fake_tool(tmp_path / "bin", "pyocd")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # pyocd only: no openocd
    fw = f446_build.directory
    assert main(["flash", str(fw), "--board", "nucleo_f446re", "--probe", "066DFF495150"]) == 0
    out = capsys.readouterr().out
    elf = fw / "demo.elf"
    assert f"flashing: pyocd flash --target stm32f446retx --probe 066DFF495150 {elf}\n" in out
    assert argv_file.read_text().splitlines() == [
        "flash",
        "--target",
        "stm32f446retx",
        "--probe",
        "066DFF495150",
        str(elf),
    ]
    assert f"with image {f446_build.image.image_id} (pyocd)" in out and "--port DEV --no-flash" in out

    openocd_argv = _fake_tool(tmp_path / "bin", "openocd")  # both installed: openocd first
    assert main(["flash", str(fw)]) == 0
    assert openocd_argv.read_text().splitlines() == [
        "-f", "interface/stlink.cfg", "-f", "target/stm32f4x.cfg", "-c", f"program {{{elf}}} verify reset exit",
    ]  # fmt: skip
    capsys.readouterr()
    assert main(["flash", str(fw), "--tool", "pyocd"]) == 0
    assert "flashing: pyocd flash" in capsys.readouterr().out


def test_flash_dry_run_prints_the_command_and_runs_nothing(f446_build, tmp_path, monkeypatch, capsys):
    from tinysched.cli import main

    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed
    assert main(["flash", str(f446_build.directory), "--dry-run", "--probe", "0670FF3"]) == 0
    elf = f446_build.directory / "demo.elf"
    assert capsys.readouterr().out == (
        "openocd -f interface/stlink.cfg -c 'adapter serial 0670FF3' -f target/stm32f4x.cfg "
        f"-c 'program {{{elf}}} verify reset exit'\n"
    )


def test_flash_errors_are_one_line(f446_build, tmp_path, monkeypatch, capsys):
    import shutil

    from tinysched.cli import main

    fw = f446_build.directory

    def one_line_error(argv):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        return err

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert (
        "neither openocd nor pyocd is installed: Debian: apt install openocd, or PyPI: pip install pyocd"
        in (one_line_error(["flash", str(fw)]))
    )
    _fake_tool(tmp_path / "bin", "pyocd", exit_code=1, message="0001:CRITICAL:No connected debug probes")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    err = one_line_error(["flash", str(fw)])
    assert (
        "flashing nucleo-f446re failed (exit 1): 0001:CRITICAL:No connected debug probes; command: pyocd flash"
        in err
    )
    assert "built for nucleo-f446re, not nucleo-f767" in one_line_error(
        ["flash", str(fw), "--board", "nucleo-f767"]
    )
    assert "not a folder written by `tinysched build`" in one_line_error(["flash", str(tmp_path)])
    assert "no such folder" in one_line_error(["flash", str(tmp_path / "absent")])
    sources_only = tmp_path / "src-only"
    shutil.copytree(fw, sources_only)
    emulated = sources_only / "demo_metadata.json"
    import json

    doc = json.loads(emulated.read_text())
    doc["build"]["target"] = "mps2-an386"
    emulated.write_text(json.dumps(doc))
    assert "which exists only under emulation: nothing to flash" in one_line_error(
        ["flash", str(sources_only)]
    )
    doc["build"]["kind"] = "sources"
    emulated.write_text(json.dumps(doc))
    assert "holds sources only (built with --no-compile)" in one_line_error(["flash", str(sources_only)])
    changed = tmp_path / "changed"
    shutil.copytree(fw, changed)
    with (changed / "demo.elf").open("ab") as f:
        f.write(b"\0")
    assert "the image changed since `build` wrote it" in one_line_error(["flash", str(changed)])


# ---- the default stack reservation, from the stack measured per kernel ----------------------------------


def test_stack_reservation_from_measured_kernels():
    table = KernelStackTable({"ts_conv2d_s8": 860, "ts_add_s8": 300}, harness_bytes=264, measured_on=("x",))
    board = get_board("nucleo-f446re")
    r = stack_reservation(board, ["ts_add_s8", "ts_conv2d_s8"], table=table)
    assert r.measured_bytes == 860 + 264 and r.bytes == with_margin(1124) == 1664  # 1124 + 281 + 256 -> 1664
    assert "deepest kernel ts_conv2d_s8 860 B + harness 264 B" in r.basis and "+ 25% + 256 B" in r.basis
    unknown = stack_reservation(board, ["ts_conv2d_s8", "ts_new_kernel"], table=table)
    assert unknown.bytes == board.stack_bytes == 8192 and unknown.measured_bytes is None
    assert unknown.unmeasured == ("ts_new_kernel",) and "no stack measured for ts_new_kernel" in unknown.basis
    forced = stack_reservation(board, ["ts_add_s8"], requested=4096, table=table)
    assert forced.bytes == 4096 and forced.basis == "--stack" and forced.measured_bytes == 300 + 264
    assert with_margin(0) == 256 and all(with_margin(n) % 16 == 0 for n in range(0, 3000, 7))


def test_stack_reservation_takes_the_boards_core_where_it_was_measured():
    # Helium's kernels keep blocks on the stack that the DSP cores' do not: a Cortex-M4 board takes
    # the M4's figure, a core never measured (the M33) the deepest of all
    table = KernelStackTable(
        {"ts_conv2d_s8": 2364, "ts_add_s8": 300},
        harness_bytes=264,
        measured_on=("mps2-an386", "mps3-an547"),
        by_core={"ts_conv2d_s8": {"cortex-m4": 1300, "cortex-m55": 2364}, "ts_add_s8": {"cortex-m4": 300}},
    )
    m4 = stack_reservation(get_board("nucleo-f446re"), ["ts_add_s8", "ts_conv2d_s8"], table=table)
    assert m4.measured_bytes == 1300 + 264 and "deepest kernel ts_conv2d_s8 1,300 B" in m4.basis
    m55 = stack_reservation(get_board("mps3-an547"), ["ts_add_s8", "ts_conv2d_s8"], table=table)
    assert m55.measured_bytes == 2364 + 264
    m33 = stack_reservation(get_board("mps2-an505"), ["ts_conv2d_s8"], table=table)
    assert m33.measured_bytes == 2364 + 264
    assert invoke_stack(["ts_conv2d_s8"], table, core="cortex-m4").bytes == 1300
    assert invoke_stack(["ts_conv2d_s8"], table).bytes == 2364


def test_the_shipped_stack_table_covers_the_common_kernels():
    table = kernel_stack_table()
    for kernel in ("ts_conv2d_s8", "ts_depthwise_conv2d_s8", "ts_fully_connected_s8", "ts_add_s8"):
        assert 0 < table.kernels[kernel] < 4096, kernel
    assert 0 < table.harness_bytes < 1024 and "mps2-an500" in table.measured_on


@pytest.mark.qemu
def test_build_reserves_the_measured_stack_and_the_model_stays_inside(qemu_tools, tmp_path, capsys):
    """`build` sizes the stack from the kernel table (not the board's 8 KiB), the linker reserves
    exactly that, and `measure BUILD_DIR` finds the painted stack below it."""
    import json

    from tinysched.cli import main
    from tinysched.model.modelgen import random_branching_model

    model = tmp_path / "branching.tflite"
    model.write_bytes(random_branching_model(seed=3, n_blocks=5))
    out = tmp_path / "fw"
    assert main(["build", str(model), "--board", "nucleo-f446re", "-o", str(out), "--no-report"]) == 0
    text = capsys.readouterr().out
    build = json.loads((out / "branching_metadata.json").read_text())["build"]
    reservation = build["stack_reservation"]
    assert reservation["measured_bytes"] and reservation["basis"].startswith("measured")
    assert build["stack_reserved_bytes"] == reservation["bytes"] == with_margin(reservation["measured_bytes"])
    assert build["stack_reserved_bytes"] < get_board("nucleo-f446re").stack_bytes
    assert build["size_report"]["ram_stack"] == build["stack_reserved_bytes"]
    assert f"stack       {reservation['bytes']:,} B reserved: measured" in text
    assert main(["measure", str(out), "--json", "--inputs", "2"]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert measured["ok"] and measured["stack_reserved_bytes"] == reservation["bytes"]
    assert 0 < measured["stack_bytes_total"] < reservation["bytes"]
    assert measured["ran_on"] == "mps2-an386"  # the default stand-in
    # build wrote an image for every stand-in; the second (a real STM32 under QEMU) runs the same model
    assert [e["board"] for e in build["emulated_images"]] == ["mps2-an386", "netduinoplus2"]
    assert all((out / e["elf"]).is_file() for e in build["emulated_images"])
    assert main(["measure", str(out), "--json", "--inputs", "2", "--stand-in", "netduinoplus2"]) == 0
    on_stm32 = json.loads(capsys.readouterr().out)
    assert on_stm32["ok"] and on_stm32["ran_on"] == "netduinoplus2" and on_stm32["outputs_match"] is True
    assert (
        on_stm32["arena_bytes_measured"]
        == measured["arena_bytes_measured"]
        == build["arena_high_water_bytes"]
    )
    assert main(["measure", str(out), "--stand-in", "mps2-an500"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "mps2-an500 is not one of its stand-ins" in err
