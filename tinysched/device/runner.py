"""Running an image: on QEMU (emulated boards) or a real board (flashed with openocd or pyocd), and
`measure_sources`, which builds, runs N inputs and compares outputs and arena use with the plan.

QEMU gets its UART on a local TCP port that the host binds and hands over as a listening socket
(`-chardev socket,fd=N,server=on,wait=on -serial chardev:uart0`, so two QEMUs started at once can
never share a port): QEMU waits for the connection before it starts the CPU, so the boot hello is
never lost, and the host talks to it through pyserial's socket:// URL exactly as to a board's tty.
QEMU is always killed at the end.

Counting on QEMU: QEMU has no cycle model and no DWT. The emulated boards run it with
`-icount shift=N`, which makes its virtual clock advance 2^N ns per executed instruction; the
firmware's SysTick runs on that clock at the board's nominal frequency f, so
instructions = ticks * (1e9 / f) / 2^N. Those are reported as "instructions (emulated)", never as
cycles.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinysched import children
from tinysched.boards import Board, get_board
from tinysched.build.firmware import (
    IMAGE_ID_SYMBOL,
    FirmwareImage,
    build_firmware,
    image_id_in_elf,
    selftest_sources,
)
from tinysched.build.sources import SourceSet
from tinysched.device.link import (
    STATUS_INPUT_ROW_ORDER,
    DeviceLink,
    Hello,
    LinkError,
    ResultTimeout,
    RunResult,
    open_port,
    result_timeout,
)
from tinysched.errors import TinyschedError
from tinysched.text import printable, printable_path

QEMU = "qemu-system-arm"

# Timeouts. A real board answers on its own clock; QEMU shares the host's cores with everything
# else (a second QEMU, the compiler, pytest), so under emulation every wall-clock wait is larger:
# the acknowledgement (request received intact) and the floor of the result timeout. The result
# timeout itself scales with the model (tinysched.device.link.result_timeout).
BOARD_ACK_TIMEOUT = 2.0
EMULATED_ACK_TIMEOUT = 10.0
BOARD_RESULT_FLOOR = 5.0
EMULATED_RESULT_FLOOR = 10.0
BOARD_HELLO_TIMEOUT = 15.0
EMULATED_HELLO_TIMEOUT = 30.0  # QEMU boots on the connection; on a loaded host that can take a while
EMULATED_FIRST_QUERY = 3.0  # seconds without the boot hello before asking QEMU's harness for one
# A real core's instructions take 1 cycle at best and more with flash wait states, cache misses and
# divisions: the timeout assumes at most this many cycles per instruction.
BOARD_CYCLES_PER_INSTRUCTION = 4
SEMIHOST_REFUSED = (
    "--semihost-inputs works only under emulation (QEMU): a real board gets its inputs over its serial port"
)


# ---- QEMU -------------------------------------------------------------------------------------------


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def qemu_command(board: Board, elf: Path, port: int, listen_fd: int | None = None) -> list[str]:
    """QEMU's command line, its UART a TCP server on 127.0.0.1:`port` that holds the CPU until the
    host connects; with `listen_fd`, on that already listening socket (run_qemu's way: no other
    process can take the port between choosing it and QEMU binding it)."""
    if board.qemu is None:
        raise TinyschedError(f"board {board.name} is not emulated")
    q = board.qemu
    cmd = [QEMU, "-machine", str(q["machine"])]
    if q.get("cpu"):
        cmd += ["-cpu", str(q["cpu"])]
    cmd += ["-display", "none", "-monitor", "none"]
    # QEMU gives -serial i to the machine's i-th UART: the UARTs before the harness's get `null`
    # (netduinoplus2: USART1 null, USART2 the harness)
    for _ in range(board.serial_index):
        cmd += ["-serial", "null"]
    if listen_fd is None:
        cmd += ["-serial", f"tcp:127.0.0.1:{port},server=on,wait=on"]
    else:
        cmd += ["-chardev", f"socket,id=uart0,fd={listen_fd},server=on,wait=on", "-serial", "chardev:uart0"]
    cmd += [
        "-icount", f"shift={int(q.get('icount_shift', 6))},align=off,sleep=off",
        "-semihosting-config", "enable=on,target=native",
        "-kernel", str(elf),
    ]  # fmt: skip
    return cmd


@dataclass
class QemuSession:
    board: Board
    elf: Path
    process: subprocess.Popen[bytes]
    url: str
    command: list[str]
    log_path: Path

    def log_text(self, lines: int = 5) -> str:
        """QEMU's last output lines, escaped (the guest can write to it by semihosting), in one
        line for an error message: ` / ` between them, `no output` when there is none."""
        try:
            text = self.log_path.read_bytes()
        except OSError:
            return "no output"
        return " / ".join(printable(line, 200) for line in text.strip().splitlines()[-lines:]) or "no output"


@contextlib.contextmanager
def run_qemu(board: Board, elf: Path) -> Iterator[QemuSession]:
    """Starts qemu-system-arm for `board` on `elf`; yields once the UART socket accepts connections.

    The caller connects to `session.url`; QEMU starts the CPU on that connection. QEMU is
    terminated (then killed) on exit, whatever happened.
    """
    if shutil.which(QEMU) is None:
        raise TinyschedError(f"{QEMU} not found: install Debian's qemu-system-arm (`make setup`)")
    # The UART's listening socket is bound here and handed to QEMU (`-chardev socket,fd=N`). Choosing
    # a free port and letting QEMU bind it later raced with a second QEMU started meanwhile: both
    # got the same port, one failed to bind, and its host connected to the other's UART, where it
    # waited in the listen queue for a hello that never came.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = int(listener.getsockname()[1])
        cmd = qemu_command(board, elf, port, listen_fd=listener.fileno())
        scratch = Path(tempfile.mkdtemp(prefix="tinysched-qemu-"))  # QEMU's log, opt-in semihosted inputs
        log_path = scratch / "qemu.log"
        with log_path.open("wb") as log_file:
            proc = children.popen(cmd, stdout=log_file, stderr=log_file, pass_fds=(listener.fileno(),))
    finally:
        listener.close()  # QEMU holds its own copy
    session = QemuSession(board, elf, proc, f"socket://127.0.0.1:{port}", cmd, log_path)
    try:
        time.sleep(0.05)
        if proc.poll() is not None:
            raise TinyschedError(
                f"{QEMU} exited with code {proc.returncode} at start: {session.log_text()} "
                f"($ {printable(shlex.join(cmd), 400)})"
            )
        yield session
    finally:
        children.stop(proc, grace=5.0)
        shutil.rmtree(scratch, ignore_errors=True)


def connect_qemu(
    session: QemuSession, *, timeout: float = 10.0, semihost_inputs: bool = False, **link_kwargs: Any
) -> DeviceLink:
    """Opens the session's UART socket (retrying while QEMU comes up) as a DeviceLink.

    Inputs travel over the UART, as to a board's tty. `semihost_inputs` (opt-in, a test-speed
    shortcut that leaves the serial input path unexercised): they go by semihosting instead, as files
    in the session's scratch folder (which lives as long as QEMU). The acknowledgement timeout is
    EMULATED_ACK_TIMEOUT unless given: QEMU competes with the host's other processes.
    """
    link_kwargs.setdefault("ack_timeout", EMULATED_ACK_TIMEOUT)
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if session.process.poll() is not None:
            break
        try:
            port = open_port(session.url)
            # QEMU hands the CMSDK UART one byte per main-loop turn: about 3-4 KB/s under -icount,
            # whatever the baud, and a loaded host slows it several times over (as it slows QEMU's
            # CPU, EMULATED_MIN_RATE). The link sizes its acknowledgement timeout for 1 KB/s.
            link_kwargs.setdefault("baud", 10000)
            if semihost_inputs:
                link_kwargs["semihost_dir"] = session.log_path.parent
            return DeviceLink(port, name=f"{session.board.name} (qemu)", **link_kwargs)
        except LinkError as err:
            last = err
            time.sleep(0.05)
    raise TinyschedError(
        f"cannot connect to QEMU's UART at {session.url}: {last}; QEMU's output: {session.log_text()} "
        f"($ {printable(shlex.join(session.command), 400)})"
    )


# ---- real boards ---------------------------------------------------------------------------------------


# Flashing tools, in order of preference when both are installed. Each builds its own command line
# from the board's `flash` entry (boards.yaml); the probe id selects one debug probe of several.
FLASH_TOOLS = ("openocd", "pyocd")
_PROBE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def _openocd_argv(board: Board, elf: Path, probe: str | None) -> list[str] | None:
    f = board.flash
    if not f.get("openocd_target"):
        return None
    path = str(elf)
    if any(c in path for c in "{}\\"):
        # openocd's Tcl reads the path inside braces: a brace or backslash would end or escape it
        raise TinyschedError(
            f"{printable_path(elf)}: openocd cannot be given a path with braces or backslashes"
        )
    cmd = ["openocd", "-f", f.get("openocd_interface", "interface/stlink.cfg")]
    if probe is not None:
        cmd += ["-c", f"adapter serial {probe}"]  # openocd 0.12 (Debian 12); older ones: hla_serial
    cmd += ["-f", f["openocd_target"], "-c", f"program {{{path}}} verify reset exit"]
    return cmd


def _pyocd_argv(board: Board, elf: Path, probe: str | None) -> list[str] | None:
    f = board.flash
    if not f.get("pyocd_target"):
        return None
    return ["pyocd", "flash", "--target", f["pyocd_target"], *(["--probe", probe] if probe else []), str(elf)]


_FLASH_ARGV = {"openocd": _openocd_argv, "pyocd": _pyocd_argv}


def check_probe_id(probe: str | None) -> str | None:
    """A probe id as `pyocd list` or `openocd` print them (letters, digits, . _ : -); anything else
    is refused, since it would reach openocd's Tcl interpreter."""
    if probe is None:
        return None
    if not _PROBE_ID.fullmatch(probe):
        raise TinyschedError(
            f"--probe {printable(probe, 60)}: a probe id is letters, digits and . _ : - (as `pyocd list` prints it)"
        )
    return probe


def flash_command(board: Board, elf: Path, tool: str, probe: str | None = None) -> list[str]:
    """The exact command line with which `tool` (openocd or pyocd) flashes `elf` onto `board`."""
    if board.emulated:
        raise TinyschedError(f"board {board.name} exists only under emulation: there is nothing to flash")
    if tool not in _FLASH_ARGV:
        raise TinyschedError(f"unknown flashing tool {tool!r} (known: {', '.join(FLASH_TOOLS)})")
    cmd = _FLASH_ARGV[tool](board, Path(elf), check_probe_id(probe))
    if cmd is None:
        raise TinyschedError(f"board {board.name}: boards.yaml gives no {tool} target (flash.{tool}_target)")
    return cmd


def flash_commands(board: Board, elf: Path, probe: str | None = None) -> list[list[str]]:
    """The command lines that flash `elf` onto a real board, in order of preference."""
    if board.emulated:
        return []
    probe = check_probe_id(probe)
    cmds = [_FLASH_ARGV[tool](board, Path(elf), probe) for tool in FLASH_TOOLS]
    return [c for c in cmds if c is not None]


def flash_tool(
    board: Board, tool: str | None = None, which: Callable[[str], str | None] = shutil.which
) -> str:
    """The tool that flashes `board` here: `tool` when given (it must be installed), else the first
    of FLASH_TOOLS that is installed and that the board's entry has a target for."""
    wanted = [tool] if tool else [t for t in FLASH_TOOLS if board.flash.get(f"{t}_target")]
    for t in wanted:
        if which(t) is not None:
            return t
    if tool:
        raise TinyschedError(f"{tool} is not installed ({_INSTALL_HINT[tool]})")
    raise TinyschedError(
        f"neither openocd nor pyocd is installed: {_INSTALL_HINT['openocd']}, or {_INSTALL_HINT['pyocd']}"
    )


_INSTALL_HINT = {"openocd": "Debian: apt install openocd", "pyocd": "PyPI: pip install pyocd"}


def flash(
    board: Board,
    elf: Path,
    log: Callable[[str], None] = print,
    *,
    probe: str | None = None,
    tool: str | None = None,
    timeout: float = 120.0,
) -> list[str]:
    """Flashes a real board with `tool` or the first one installed; returns the command it ran."""
    cmd = flash_command(board, elf, flash_tool(board, tool), probe)
    log(f"flashing: {shlex.join(cmd)}")
    try:
        proc = children.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TinyschedError(
            f"flashing {board.name} took more than {timeout:.0f} s: $ {shlex.join(cmd)}"
        ) from None
    except OSError as err:
        raise TinyschedError(f"cannot run {cmd[0]}: {err.strerror or err}") from None
    if proc.returncode != 0:
        out = (proc.stderr or proc.stdout).strip().splitlines()
        last = printable(out[-1], 300) if out else "no output"
        raise TinyschedError(
            f"flashing {board.name} failed (exit {proc.returncode}): {last}; command: {shlex.join(cmd)}"
        )
    return cmd


def find_board_port(board: Board) -> str | None:
    """The tty of the board's debug probe, by USB vid/pid (None when there is none or several)."""
    try:
        from serial.tools import list_ports
    except ImportError:  # pragma: no cover
        return None
    ids = set(board.usb)
    found = [p.device for p in list_ports.comports() if (p.vid, p.pid) in ids]
    return found[0] if len(found) == 1 else None


# ---- measuring ------------------------------------------------------------------------------------------


@dataclass
class MeasureResult:
    board: str
    emulated_by: str | None
    ran_on: str
    arena_bytes_planned: int  # the allocation: the plan's arena_bytes (top rounded to the alignment)
    arena_high_water_planned: int  # max over tensors of offset + bytes: what the program can touch
    arena_bytes_measured: int  # the measured high-water: highest touched offset + 1
    arena_bytes_touched: int
    stack_bytes_measured: int
    stack_bytes_total: int
    outputs_match: bool | None
    outputs_agree_on_device: bool
    inputs: int
    counter: str
    count_unit: str
    cycles: int | None
    instructions: int | None
    ticks: list[int]
    mismatches: list[str]
    retries: int
    hello: dict[str, Any]
    size: dict[str, Any]
    flash_command: list[str] | None = None
    qemu_command: list[str] | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    # --semihost-inputs (QEMU only): every input set went by semihosting, not over the UART, so the
    # serial input path was not exercised
    inputs_semihosted: bool = False
    # the count (cycles, or instructions under QEMU) of each step of the first input's timed invoke
    step_counts: list[int] = field(default_factory=list)
    board_cpu_hz: int = 0  # the clock the board entry says the firmware sets (the hello says what it did)
    # a split arena: per region {region, address, bytes, high_water_planned, high_water_measured,
    # touched, matches} (the painted high-water inside each region against the plan's)
    regions: list[dict[str, Any]] = field(default_factory=list)
    # each step's output after the first run, against TFLite's tensor of the same name (CRC-32 of
    # the bytes): how many steps were compared over the inputs, and the steps that differed in any
    steps_compared: int = 0
    steps_differing: list[int] = field(default_factory=list)
    # each operator run inside a streamed stage, in slot order (the stages in step order, each one's
    # members in order), from the first input's members' pass: {step, count, calls} (its count in
    # the step_counts unit, the hook's own taken off per call; calls: of its row kernel), and one
    # hook call's count, as measured on the device
    member_counts: list[dict[str, int]] = field(default_factory=list)
    member_hook_count: int = 0

    @property
    def arena_matches_plan(self) -> bool:
        return self.arena_bytes_measured == self.arena_high_water_planned and all(
            r["matches"] for r in self.regions
        )

    @property
    def ok(self) -> bool:
        return (
            self.arena_matches_plan
            and self.outputs_match is not False
            and self.outputs_agree_on_device
            and not self.steps_differing
        )

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["arena_matches_plan"] = self.arena_matches_plan
        d["ok"] = self.ok
        return d

    def lines(self) -> list[str]:
        where = (
            f"{self.ran_on} (emulated by qemu-system-arm, standing in for {self.board})"
            if self.emulated_by
            else self.ran_on
        )
        count = (
            f"{self.cycles:,} cycles" if self.cycles is not None
            else f"{self.instructions:,} instructions (emulated, QEMU -icount)" if self.instructions is not None
            else "not available"
        )  # fmt: skip
        verdict = "equal to the plan" if self.arena_matches_plan else "DIFFERS from the plan"
        match = {
            True: "bit-identical to the reference",
            False: "DIFFER from the reference",
            None: "not compared",
        }
        out = [
            f"ran on          {where}",
            f"inputs          {self.inputs}",
            f"outputs         {match[self.outputs_match]}"
            + ("" if self.outputs_agree_on_device else " (and the device's runs disagreed with each other)"),
            f"arena planned   {self.arena_high_water_planned:,} B high-water "
            f"({self.arena_bytes_planned:,} B allocated, aligned)",
            f"arena measured  {self.arena_bytes_measured:,} B high-water, {self.arena_bytes_touched:,} B touched: {verdict}",
            f"stack measured  {self.stack_bytes_measured:,} B in the model ({self.stack_bytes_total:,} B with the harness)",
            f"per inference   {count} (max over inputs)",
        ]
        if self.steps_compared:
            out.append(
                f"steps           {self.steps_compared:,} step outputs compared with TFLite's tensors: "
                + (
                    "all bit-identical"
                    if not self.steps_differing
                    else f"steps {', '.join(str(k) for k in self.steps_differing[:8])} DIFFER"
                )
            )
        running_hz = int(self.hello.get("cpu_hz") or 0)
        if running_hz and not self.emulated_by and running_hz != self.board_cpu_hz:
            out.append(
                f"clock           the device runs at {running_hz / 1e6:,.1f} MHz, not the board's "
                f"{self.board_cpu_hz / 1e6:,.1f} MHz (its clock set-up failed: see the device's message)"
            )
        if self.hello.get("streamed_input"):
            out.append(
                "input streamed  the harness fed the input's rows to invoke_streamed from its own input "
                "buffer (outside the arena, not in the high-water), checking rows ascending, each once"
            )
        if self.inputs_semihosted:
            out.append(
                "inputs sent     by SEMIHOSTING (--semihost-inputs, QEMU only): the serial input path "
                "was not exercised"
            )
        if self.retries:
            out.append(f"link            {self.retries} retried request(s)")
        for r in self.regions:
            verdict = "equal to the plan" if r["matches"] else "DIFFERS from the plan"
            out.append(
                f"region {r['region']:<8} {r['high_water_measured']:,} B high-water of {r['bytes']:,} B at "
                f"{r['address']:#010x} (planned {r['high_water_planned']:,} B): {verdict}"
            )
        out += [f"mismatch        {m}" for m in self.mismatches[:10]]
        return out


def ticks_to_count(board: Board, hello: Hello, ticks: int) -> tuple[str, int | None, int | None]:
    """(unit, cycles, instructions) for a tick count from `board`'s counter."""
    if board.emulated:
        shift = int((board.qemu or {}).get("icount_shift", 6))
        # QEMU drives the SysTick at the machine's clock, whatever clock the image believes it set
        # (a real board's image on netduinoplus2 says 180 MHz; QEMU's F405 runs 168 MHz)
        hz = board.systick_hz if "systick_hz" in (board.qemu or {}) else hello.cpu_hz or board.cpu_hz
        return "instructions (emulated)", None, round(ticks * 1e9 / hz / (1 << shift))
    if hello.counter in ("dwt-cycles", "systick"):
        return "cycles", ticks, None
    return "none", None, None


def step_counts(board: Board, hello: Hello, step_ticks: Sequence[int]) -> list[int]:
    """Each step's ticks in the run's unit: cycles on a board, instructions under QEMU."""
    counts = []
    for ticks in step_ticks:
        _unit, cycles, instructions = ticks_to_count(board, hello, ticks)
        counts.append(int(cycles if cycles is not None else instructions or 0))
    return counts


def member_counts(board: Board, hello: Hello, result: RunResult | None) -> list[dict[str, int]]:
    """Each streamed member's {step, count, calls}: its ticks less one hook call's per call, in the
    run's unit as step_counts."""
    if result is None:
        return []
    hook = result.member_hook_ticks
    net = [max(0, ticks - calls * hook) for _step, ticks, calls in result.member_ticks]
    return [
        {"step": step, "count": count, "calls": calls}
        for (step, _ticks, calls), count in zip(
            result.member_ticks, step_counts(board, hello, net), strict=True
        )
    ]


# ---- how long a run may take ---------------------------------------------------------------------------

INSTRUCTIONS_PER_MAC = 20  # docs/BENCHMARKS.md measures 6.7 to 16.9 instructions per MAC (emulated M7)
INSTRUCTIONS_PER_WEIGHT_BYTE = 2000  # without a MAC count: measured up to ~1,000 (mobilenets reuse weights)
INSTRUCTIONS_PER_ARENA_BYTE = 200  # ... plus a term for big activations on few weights
INSTRUCTIONS_FIXED = 20_000  # kernel set-up, operator calls


def invoke_instructions_estimate(macs: int | None = None, weight_bytes: int = 0, arena_bytes: int = 0) -> int:
    """An upper estimate of one invoke's instructions, for the result timeout only.

    From the model's MACs when known (tinysched.order.recompute.total_macs): INSTRUCTIONS_PER_MAC per MAC.
    Otherwise from its sizes (the image's weight bytes and arena bytes), which bounds every shared
    model of docs/BENCHMARKS.md with room to spare (1.4x to 6x its measured count).
    """
    if macs is not None:
        return INSTRUCTIONS_PER_MAC * int(macs) + INSTRUCTIONS_FIXED
    return (
        INSTRUCTIONS_PER_WEIGHT_BYTE * int(weight_bytes)
        + INSTRUCTIONS_PER_ARENA_BYTE * int(arena_bytes)
        + INSTRUCTIONS_FIXED
    )


# QEMU's wall-clock speed at the slowest, for timeouts. Under `-icount shift=N,align=off` the
# virtual clock advances 2^N ns an instruction but does not pace QEMU against real time, so the
# virtual rate (15.6 M instructions/s for N = 6) says nothing about how long QEMU takes. Measured on
# the 2-core development machine (a 1.8e9-instruction spin on mps2-an500): 550 M instructions/s
# idle, 100 M/s with two CPU burners and a second QEMU beside it (load average 8). A quarter of the
# loaded speed:
EMULATED_MIN_RATE = 25e6


def instructions_per_second(board: Board) -> tuple[float, str]:
    """(rate, what it is) at which `board` is assumed to execute, at the slowest, for timeouts.

    A real board: its core clock over BOARD_CYCLES_PER_INSTRUCTION. QEMU: EMULATED_MIN_RATE.
    """
    if board.emulated:
        return EMULATED_MIN_RATE, "QEMU's slowest assumed speed, a quarter of its speed on a loaded host"
    return board.cpu_hz / BOARD_CYCLES_PER_INSTRUCTION, (
        f"{board.cpu_hz / 1e6:,.0f} MHz at up to {BOARD_CYCLES_PER_INSTRUCTION} cycles per instruction"
    )


def run_timeout_for(board: Board, hello: Hello, invoke_instructions: int) -> ResultTimeout:
    """The result timeout for `board` running the model that `hello` describes."""
    rate, note = instructions_per_second(board)
    floor = EMULATED_RESULT_FLOOR if board.emulated else BOARD_RESULT_FLOOR
    return result_timeout(hello, invoke_instructions, rate, floor, note)


# ---- which image the device runs ------------------------------------------------------------------------


def check_image_id(hello: Hello, expected: str, where: str) -> None:
    """Refuses (one line) a device whose hello names another image than `expected`."""
    if hello.image_id != expected:
        got = f"image {printable(hello.image_id, 40)}" if hello.image_id else "an image without an id"
        raise TinyschedError(
            f"{printable(where)} runs {got} (model {printable(hello.model, 40)}), not the image just flashed "
            f"({printable(expected, 40)}): flashing did not take or another device answers; flash it again"
        )


def measure_image(
    image: FirmwareImage,
    run_board: Board,
    inputs: Sequence[Sequence[bytes]],
    expected: Sequence[Sequence[bytes]] | None,
    arena_bytes_planned: int,
    *,
    arena_high_water_planned: int | None = None,
    regions_planned: Sequence[dict[str, Any]] = (),
    requested: Board | None = None,
    port: str | None = None,
    run_timeout: float | None = None,
    invoke_instructions: int | None = None,
    expected_image_id: str | None = None,
    log: Callable[[str], None] = lambda _m: None,
    link_hook: Callable[[DeviceLink], None] | None = None,
    semihost_inputs: bool = False,
    flash_first: bool = True,
    probe: str | None = None,
    expected_steps: Sequence[Sequence[tuple[int, int] | None]] | None = None,
) -> MeasureResult:
    """Runs a built image on `run_board` (QEMU when emulated, else the board on `port`).

    `expected_steps` (per input, per step: TFLite's (bytes, CRC-32) of the tensor the step's first
    output is, None where there is none to compare) checks every step's output the device reports.

    A real board is flashed first (with `probe`, see `flash`) unless `flash_first` is off (it was
    flashed already, e.g. by `tinysched flash`): the hello's image id is checked either way.

    Every input goes over the serial link unless `semihost_inputs` (emulated boards only). The
    device must name `expected_image_id` in its hello (default: the id compiled into image.elf),
    or nothing is measured. The result timeout scales with the model (`run_timeout_for`, from
    `invoke_instructions`, default an estimate from the image's sizes) unless `run_timeout` is given.
    """
    if semihost_inputs and not run_board.emulated:
        raise TinyschedError(SEMIHOST_REFUSED)
    requested = requested or run_board
    high_water_planned = arena_bytes_planned if arena_high_water_planned is None else arena_high_water_planned
    want_id = expected_image_id if expected_image_id is not None else image_id_in_elf(image.elf)
    if not want_id:
        raise TinyschedError(
            f"{printable_path(image.elf)} carries no image id ({IMAGE_ID_SYMBOL}): a stale image on the "
            "device could not be told from it; rebuild it"
        )
    results: list[RunResult] = []
    flash_cmd: list[str] | None = None
    qemu_cmd: list[str] | None = None

    def drive(link: DeviceLink) -> Hello:
        if link_hook:
            link_hook(link)
        # Under QEMU the CPU waits for the connection, but pyserial's open discards whatever has
        # arrived by then, so on a loaded host the boot hello can lose its first bytes; a QUERY
        # after a few seconds asks the harness for another instead of waiting on.
        hello = link.wait_hello(
            timeout=EMULATED_HELLO_TIMEOUT if run_board.emulated else BOARD_HELLO_TIMEOUT,
            first_query=EMULATED_FIRST_QUERY if run_board.emulated else 0.5,
        )
        check_image_id(hello, want_id, link.name)
        if hello.arena_bytes != arena_bytes_planned:
            log(
                f"note: the image's model declares {hello.arena_bytes:,} B of arena, the plan {arena_bytes_planned:,} B"
            )
        if run_timeout is not None:
            link.set_run_timeout(run_timeout)
        else:
            per_invoke = invoke_instructions
            if per_invoke is None:
                per_invoke = invoke_instructions_estimate(
                    weight_bytes=image.size.flash_weights, arena_bytes=hello.arena_bytes
                )
            link.set_run_timeout(run_timeout_for(run_board, hello, per_invoke))
        log(
            f"booted: {printable(hello.board, 40)} runs {printable(hello.model, 40)}; {len(inputs)} input(s) to run"
        )
        for i, xs in enumerate(inputs):
            results.append(link.run(list(xs), reset_state=(i == 0)))
            log(f"input {i + 1}/{len(inputs)}: {results[-1].ticks:,} counter ticks")
        return hello

    with contextlib.ExitStack() as stack:
        if run_board.emulated:
            session = stack.enter_context(run_qemu(run_board, image.elf))
            qemu_cmd = session.command
            log(f"emulating: {printable(shlex.join(session.command), 400)}")
            link = stack.enter_context(connect_qemu(session, log=log, semihost_inputs=semihost_inputs))
        else:
            if flash_first:
                flash_cmd = flash(run_board, image.elf, log, probe=probe)
            else:
                log(f"not flashing: the board must already run image {want_id}")
            url = port or find_board_port(run_board)
            if url is None:
                raise TinyschedError(
                    f"no serial port given for {run_board.name} and none found by USB id: pass --port"
                )
            link = stack.enter_context(
                DeviceLink.open(url, baud=int(run_board.uart["baud"]), ack_timeout=BOARD_ACK_TIMEOUT, log=log)
            )
        hello = drive(link)
        retries = link.retries_used
        semihosted = link.inputs_semihosted > 0

    mismatches: list[str] = []
    outputs_match: bool | None = None
    if expected is not None:
        outputs_match = True
        for i, (got, want) in enumerate(zip(results, expected, strict=True)):
            for j, (g, w) in enumerate(zip(got.outputs, want, strict=True)):
                if bytes(g) != bytes(w):
                    outputs_match = False
                    diff = sum(1 for a, b in zip(g, w, strict=False) if a != b) + abs(len(g) - len(w))
                    mismatches.append(f"input {i} output {j}: {diff} of {len(w)} bytes differ")
    for i, r in enumerate(results):
        if r.status == STATUS_INPUT_ROW_ORDER:
            mismatches.append(f"input {i}: the streamed input's rows were not asked for in order, each once")
            outputs_match = False if expected is not None else outputs_match
        elif r.status != 0:
            mismatches.append(f"input {i}: invoke returned {r.status}")
            outputs_match = False if expected is not None else outputs_match
    measured = max((r.arena_high_water for r in results), default=0)
    if measured > arena_bytes_planned:
        mismatches.append(f"the model wrote {measured - arena_bytes_planned:,} B past the planned arena")
    elif measured > high_water_planned:
        mismatches.append(
            f"the model touched {measured - high_water_planned:,} B above the plan's high-water "
            "(inside the alignment padding)"
        )
    elif measured < high_water_planned:
        mismatches.append(
            f"the top {high_water_planned - measured:,} B below the plan's high-water are never touched"
        )
    regions = region_measures(hello, results, regions_planned, mismatches)
    compared, differing = compare_steps(results, expected_steps, mismatches)
    max_ticks = max((r.ticks for r in results), default=0)
    unit, cycles, instructions = ticks_to_count(run_board, hello, max_ticks)
    return MeasureResult(
        board=requested.name,
        emulated_by=run_board.name if run_board is not requested and run_board.emulated else None,
        ran_on=run_board.name,
        board_cpu_hz=run_board.cpu_hz,
        arena_bytes_planned=arena_bytes_planned,
        arena_high_water_planned=high_water_planned,
        arena_bytes_measured=measured,
        arena_bytes_touched=max((r.arena_touched for r in results), default=0),
        stack_bytes_measured=max((r.stack_bytes for r in results), default=0),
        stack_bytes_total=max((r.stack_total for r in results), default=0),
        outputs_match=outputs_match,
        outputs_agree_on_device=all(r.outputs_agree for r in results),
        inputs=len(results),
        counter=hello.counter if not run_board.emulated else "systick-icount",
        count_unit=unit,
        cycles=cycles,
        instructions=instructions,
        ticks=[r.ticks for r in results],
        mismatches=mismatches,
        retries=retries,
        hello=hello.to_json(),
        size=image.size.to_json(),
        flash_command=flash_cmd,
        qemu_command=qemu_cmd,
        runs=[{k: v for k, v in r.to_json().items() if k != "outputs"} for r in results],
        inputs_semihosted=semihosted,
        step_counts=step_counts(run_board, hello, results[0].step_ticks if results else ()),
        member_counts=member_counts(run_board, hello, results[0] if results else None),
        member_hook_count=step_counts(run_board, hello, [results[0].member_hook_ticks if results else 0])[0],
        regions=regions,
        steps_compared=compared,
        steps_differing=differing,
    )


def compare_steps(
    results: Sequence[RunResult],
    expected: Sequence[Sequence[tuple[int, int] | None]] | None,
    mismatches: list[str],
) -> tuple[int, list[int]]:
    """Each input's step outputs (bytes, CRC-32) against TFLite's: (steps compared over the inputs,
    the steps that differed in any), noting the first input's differences in `mismatches`. A step
    is compared where the device reported its output and the reference has a tensor of its size."""
    if expected is None:
        return 0, []
    compared, differing = 0, set()
    for i, (r, want) in enumerate(zip(results, expected, strict=False)):
        here = []
        for k, (got, w) in enumerate(zip(r.step_outputs, want, strict=False)):
            if w is None or got[0] == 0 or got[0] != w[0]:
                continue
            compared += 1
            if got[1] != w[1]:
                here.append(k)
        if here and not differing:  # the first step to differ; the later ones may only follow from it
            mismatches.append(
                f"input {i} step {here[0]}: its output differs from TFLite's tensor (the first of "
                f"{len(here)} step(s) that differ)"
            )
        differing.update(here)
    return compared, sorted(differing)


def region_measures(
    hello: Hello, results: Sequence[Any], planned: Sequence[dict[str, Any]], mismatches: list[str]
) -> list[dict[str, Any]]:
    """Each region of a split arena: the painted high-water inside it (max over the inputs)
    against the plan's (`planned`: the plan's pools as JSON, in offset order), noting mismatches."""
    if not planned and not hello.regions:
        return []
    if len(planned) != len(hello.regions):
        mismatches.append(
            f"the plan splits the arena over {len(planned)} regions, the device reports {len(hello.regions)}"
        )
        return []
    rows = []
    for k, (pool, (address, nbytes)) in enumerate(zip(planned, hello.regions, strict=True)):
        measured = max((r.region_high_water[k] for r in results if len(r.region_high_water) > k), default=0)
        touched = max((r.region_touched[k] for r in results if len(r.region_touched) > k), default=0)
        want = int(pool["high_water_bytes"])
        if measured != want:
            mismatches.append(f"region {pool['region']}: high-water {measured:,} B, the plan's {want:,} B")
        rows.append(
            {
                "region": pool["region"],
                "address": address,
                "bytes": nbytes,
                "high_water_planned": want,
                "high_water_measured": measured,
                "touched": touched,
                "matches": measured == want and nbytes == int(pool["bytes"]),
            }
        )
    return rows


def measure_sources(
    sources: SourceSet,
    board: Board | str,
    inputs: Sequence[Sequence[bytes]],
    expected: Sequence[Sequence[bytes]] | None,
    arena_bytes_planned: int,
    out_dir: Path,
    *,
    port: str | None = None,
    emulate: bool | None = None,
    defines: Sequence[str] = (),
    run_timeout: float | None = None,
    log: Callable[[str], None] = lambda _m: None,
    arena_high_water_planned: int | None = None,
    semihost_inputs: bool = False,
    invoke_instructions: int | None = None,
    stand_in: str | None = None,
    regions_planned: Sequence[dict[str, Any]] = (),
    expected_steps: Sequence[Sequence[tuple[int, int] | None]] | None = None,
) -> MeasureResult:
    """Builds already-generated model sources for `board` and measures them on the device.

    The image carries its id (`image_id`, compiled in as TS_IMAGE_ID) and the device must name it.
    `invoke_instructions` (e.g. `invoke_instructions_estimate(macs=...)`) sizes the result timeout;
    without it the timeout comes from the image's sizes.

    Emulation is the default when no port is given: a real board then runs on its emulated
    stand-in (same core and compiler flags), and the size report is still checked against the
    requested board (the image must fit it). `inputs[i]` is one input set (bytes per graph input);
    `expected[i]` the reference outputs for it, compared byte for byte (None: not compared).
    Inputs go over the serial link; `semihost_inputs` (emulated runs only) sends them by semihosting.
    `stand_in` names another of the board's stand-ins than the default (boards.yaml emulated_by).
    `regions_planned` (a split arena: the plan's pools as JSON) is checked region by region, and
    `expected_steps` (see `measure_image`) step by step.
    """
    board = get_board(board) if isinstance(board, str) else board
    if emulate is None:
        emulate = port is None
    if not emulate and board.emulated:
        raise TinyschedError(f"board {board.name} exists only under emulation: drop --port")
    if emulate and port is not None:
        raise TinyschedError("give either a port or --emulate, not both")
    if semihost_inputs and not emulate:
        raise TinyschedError(SEMIHOST_REFUSED)
    out_dir = Path(out_dir)
    if stand_in is not None and not emulate:
        raise TinyschedError("a stand-in runs only under emulation: drop --port")
    run_board = board.stand_in(stand_in) if emulate else board
    if run_board is not board:
        # the requested board's own image: proves the model fits it and gives its size report
        real = build_firmware(sources, board, out_dir / board.name, defines=list(defines))
        log("\n".join(real.size.lines()))
    image = build_firmware(sources, run_board, out_dir / run_board.name, defines=list(defines))
    if run_board is board:
        log("\n".join(image.size.lines()))
    result = measure_image(
        image, run_board, inputs, expected, arena_bytes_planned,
        arena_high_water_planned=arena_high_water_planned, regions_planned=regions_planned,
        requested=board, port=port, run_timeout=run_timeout, log=log, semihost_inputs=semihost_inputs,
        invoke_instructions=invoke_instructions, expected_image_id=image.image_id, expected_steps=expected_steps,
    )  # fmt: skip
    if run_board is not board:
        result.size = real.size.to_json()
        result.size["emulated_image"] = image.size.to_json()
    return result


# ---- the self-test model (firmware/harness/selftest_model.c) ----------------------------------------------

SELFTEST_SYMBOL = "selftest_info"
SELFTEST_ARENA = 300
SELFTEST_INPUT = 64
SELFTEST_OUTPUT = 16


def selftest_reference(inp: bytes, arena_bytes: int = SELFTEST_ARENA) -> bytes:
    """What selftest_model.c computes, in Python: the expected output for one input."""
    assert len(inp) == SELFTEST_INPUT
    n1 = arena_bytes - SELFTEST_INPUT - SELFTEST_OUTPUT
    t1 = [(3 * inp[j % SELFTEST_INPUT] + j) & 0xFF for j in range(n1)]
    return bytes((sum(t1[k::SELFTEST_OUTPUT]) ^ k) & 0xFF for k in range(SELFTEST_OUTPUT))


def selftest_instructions(arena_bytes: int = SELFTEST_ARENA, spin: int = 0) -> int:
    """An upper estimate of one self-test invoke: 3,217 instructions measured for the 300-byte arena
    (emulated M7), about 12 per arena byte, plus the spin loop's 2N + 1."""
    return 16 * arena_bytes + 2 * spin + 1000


def selftest_inputs(n: int, seed: int = 0) -> list[list[bytes]]:
    import random

    rng = random.Random(seed)
    return [[bytes(rng.randrange(256) for _ in range(SELFTEST_INPUT))] for _ in range(n)]


def measure_selftest(
    board: Board | str,
    out_dir: Path,
    *,
    n_inputs: int = 3,
    port: str | None = None,
    emulate: bool | None = None,
    arena_bytes: int = SELFTEST_ARENA,
    overrun: bool = False,
    fault: bool = False,
    spin: int | None = None,
    log: Callable[[str], None] = lambda _m: None,
    semihost_inputs: bool = False,
    stand_in: str | None = None,
) -> MeasureResult:
    """`measure` on the hand-written self-test model: the harness and link end to end."""
    inputs = selftest_inputs(n_inputs)
    expected = [[selftest_reference(x[0], arena_bytes)] for x in inputs]
    defines = [f"-DSELFTEST_ARENA={arena_bytes}"] + (["-DSELFTEST_OVERRUN"] if overrun else [])
    defines += ["-DSELFTEST_FAULT"] if fault else []
    defines += [f"-DSELFTEST_SPIN={spin}"] if spin else []
    return measure_sources(
        selftest_sources(), board, inputs, expected, arena_bytes, out_dir,
        port=port, emulate=emulate, defines=defines, log=log, semihost_inputs=semihost_inputs,
        invoke_instructions=selftest_instructions(arena_bytes, spin or 0), stand_in=stand_in,
    )  # fmt: skip
