"""Host side of the device link: frames with a length and CRC-32 over pyserial, retries, timeouts.

The same code talks to a real board's tty (`/dev/ttyACM0`) and to QEMU's UART exposed as a TCP
socket (`socket://127.0.0.1:PORT`): pyserial's `serial_for_url` opens either.

Frame (all integers little-endian; the device side is firmware/harness/ts_protocol.h):

    'T' 'S' | type u8 | seq u8 | length u32 | header check u16 | payload[length] | crc u32

The header check is the low 16 bits of the CRC-32 of the first 8 bytes, so a corrupted length is
caught before anyone waits for that many bytes; the CRC-32 (zlib's) covers header and payload.

A run goes: host sends RUN(seq); the device answers ACK(seq) as soon as the request arrived intact
(or NAK when it did not), runs the model and answers RESULT(seq). The host resends the request when
the ACK does not come, a frame arrives corrupted, the device NAKs, or the device announces a reboot
(an unsolicited HELLO) in the middle; after `retries` attempts it gives up with a LinkError that
says what went wrong. A FAULT frame (the device crashed) is reported at once: retrying a
deterministic crash would only crash again.
"""

from __future__ import annotations

import contextlib
import struct
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinysched.errors import TinyschedError
from tinysched.text import printable

MAGIC = b"TS"
HEADER_BYTES = 10
# 2: the hello ends with a fourth string, the image id (TS_IMAGE_ID), so the host can refuse a
# device that runs another image than the one it just flashed.
PROTOCOL_VERSION = 6  # 6: the result ends with the streamed stages' members' counts
MAX_PAYLOAD = 64 << 20  # host-side sanity bound

MSG_QUERY = ord("Q")
MSG_RUN = ord("R")
MSG_REBOOT = ord("Z")
MSG_HELLO = ord("H")
MSG_ACK = ord("A")
MSG_NAK = ord("N")
MSG_RESULT = ord("O")
MSG_FAULT = ord("F")
MSG_ERROR = ord("E")

RUN_RESET_STATE = 1
RUN_INPUTS_SEMIHOSTED = 4  # opt-in, emulated boards only: the inputs are in a host file, read by semihosting

NAK_REASONS = {1: "bad CRC", 2: "bad length", 3: "unknown frame type", 4: "bad header"}

HELLO_TOUCHED_EXACT = 1
HELLO_BUFFERS_OK = 2
HELLO_SEMIHOSTING = 4
HELLO_STREAMED_INPUT = 8  # the harness runs invoke_streamed, feeding the input's rows (--stream-input)
STATUS_INPUT_ROW_ORDER = 0x524F5753  # a streamed run's rows not asked for in order, each once
RESULT_OUTPUTS_AGREE = 1
RESULT_TOUCHED_EXACT = 2

COUNTER_KINDS = {0: "none", 1: "dwt-cycles", 2: "systick"}

FAULT_NAMES = {
    0: "unexpected interrupt",
    2: "NMI",
    3: "HardFault",
    4: "MemManage",
    5: "BusFault",
    6: "UsageFault",
    7: "SecureFault",
}


class LinkError(TinyschedError):
    """The device did not answer as the protocol says, after every retry."""


class DeviceFault(LinkError):
    """The device crashed (a fault handler reported it) while running the model."""


class DeviceReset(LinkError):
    """The device rebooted in the middle of a request."""


# ---- frames ------------------------------------------------------------------------------------------


def crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def encode_frame(msg_type: int, seq: int, payload: bytes = b"") -> bytes:
    head = MAGIC + struct.pack("<BBI", msg_type, seq & 0xFF, len(payload))
    header = head + struct.pack("<H", crc32(head) & 0xFFFF)
    return header + payload + struct.pack("<I", crc32(header + payload))


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes

    @property
    def name(self) -> str:
        return chr(self.type) if 32 <= self.type < 127 else f"0x{self.type:02x}"


@dataclass(frozen=True)
class BadFrame:
    """A frame whose header was valid but whose CRC was not (seq says which request it answered)."""

    type: int
    seq: int


class FrameDecoder:
    """Incremental parser: feed bytes, get Frames (and BadFrames); junk between frames is skipped."""

    def __init__(self, max_payload: int = MAX_PAYLOAD):
        self.buf = bytearray()
        self.max_payload = max_payload
        self.skipped = 0  # junk bytes dropped while resynchronising
        self.bad = 0  # frames dropped for a bad header or CRC

    def feed(self, data: bytes) -> list[Frame | BadFrame]:
        self.buf += data
        out: list[Frame | BadFrame] = []
        while True:
            start = self.buf.find(MAGIC)
            if start < 0:
                keep = 1 if self.buf.endswith(MAGIC[:1]) else 0
                self.skipped += len(self.buf) - keep
                del self.buf[: len(self.buf) - keep]
                return out
            if start:
                self.skipped += start
                del self.buf[:start]
            if len(self.buf) < HEADER_BYTES:
                return out
            msg_type, seq, length = struct.unpack_from("<BBI", self.buf, 2)
            (check,) = struct.unpack_from("<H", self.buf, 8)
            if check != crc32(bytes(self.buf[:8])) & 0xFFFF or length > self.max_payload:
                self.bad += 1
                del self.buf[:1]  # not a real frame start: look for the next magic
                continue
            total = HEADER_BYTES + length + 4
            if len(self.buf) < total:
                return out
            body = bytes(self.buf[: HEADER_BYTES + length])
            (crc,) = struct.unpack_from("<I", self.buf, HEADER_BYTES + length)
            del self.buf[:total]
            if crc != crc32(body):
                self.bad += 1
                out.append(BadFrame(msg_type, seq))
            else:
                out.append(Frame(msg_type, seq, body[HEADER_BYTES:]))


# ---- payloads ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hello:
    protocol: int
    counter: str
    cpu_hz: int
    arena_bytes: int
    arena_alignment: int
    arena_address: int
    state_bytes: int
    stack_bytes: int
    free_ram_bytes: int
    watched_bytes: int
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    board: str
    build_id: str
    model: str
    touched_exact: bool
    buffers_ok: bool
    semihosting: bool = False  # accepts inputs by semihosting (a harness built for QEMU)
    image_id: str = ""  # the firmware image's id (TS_IMAGE_ID), checked against the image flashed
    regions: tuple[tuple[int, int], ...] = ()  # a split arena's regions: (address, bytes) each (protocol 4)
    streamed_input: bool = False  # the harness feeds the input's rows to invoke_streamed (--stream-input)

    def to_json(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


HELLO_STRINGS = ("board name", "build id", "model name", "image id")


class _Fields:
    """Reads a frame's payload field by field; a field that runs past the end is one LinkError
    naming the frame, the field, where it starts and how many bytes it needed."""

    def __init__(self, payload: bytes, frame: str):
        self.payload = payload
        self.frame = frame
        self.off = 0

    def take(self, n: int, field: str) -> bytes:
        left = len(self.payload) - self.off
        if n > left:
            raise LinkError(
                f"malformed {self.frame} frame from the device ({len(self.payload)} bytes): {field} at "
                f"byte {self.off} needs {n:,} bytes, {max(left, 0):,} left"
            )
        out = self.payload[self.off : self.off + n]
        self.off += n
        return out

    def u32s(self, n: int, field: str) -> tuple[int, ...]:
        return struct.unpack(f"<{n}I", self.take(4 * n, field))

    def string(self, field: str) -> str:
        (n,) = struct.unpack("<H", self.take(2, f"the length of the {field}"))
        return self.take(n, f"the {field} ({n:,} bytes declared)").decode("utf-8", "replace")


def parse_hello(payload: bytes) -> Hello:
    """The device's hello; a payload that does not follow the layout is one LinkError in the
    protocol's terms (which field, at which byte, how long), never a struct message."""
    if not payload:
        raise LinkError("malformed hello frame from the device: empty payload (no protocol version)")
    if payload[0] != PROTOCOL_VERSION:  # another version has another layout: say that first
        raise LinkError(
            f"device speaks protocol {payload[0]}, this host speaks {PROTOCOL_VERSION}: rebuild the firmware"
        )
    f = _Fields(payload, "hello")
    protocol, counter, flags = struct.unpack("<BBH", f.take(4, "the header (version, counter, flags)"))
    (cpu_hz, arena_bytes, align, addr, state_bytes, stack_bytes, free_ram, watched, n_in, n_out) = f.u32s(
        10, "the ten u32 sizes and counts"
    )
    ins = f.u32s(n_in, f"the sizes of {n_in:,} inputs")
    outs = f.u32s(n_out, f"the sizes of {n_out:,} outputs")
    board, build_id, model, image_id = (f.string(name) for name in HELLO_STRINGS)
    (n_regions,) = f.u32s(1, "the number of arena regions")
    flat = f.u32s(2 * n_regions, f"the address and size of {n_regions:,} arena regions")
    if f.off != len(payload):
        raise LinkError(
            f"malformed hello frame from the device ({len(payload)} bytes): {len(payload) - f.off:,} "
            "bytes after the last field (the arena regions)"
        )
    return Hello(
        protocol=protocol,
        counter=COUNTER_KINDS.get(counter, f"unknown({counter})"),
        cpu_hz=cpu_hz,
        arena_bytes=arena_bytes,
        arena_alignment=align,
        arena_address=addr,
        state_bytes=state_bytes,
        stack_bytes=stack_bytes,
        free_ram_bytes=free_ram,
        watched_bytes=watched,
        input_bytes=tuple(ins),
        output_bytes=tuple(outs),
        board=board,
        build_id=build_id,
        model=model,
        touched_exact=bool(flags & HELLO_TOUCHED_EXACT),
        buffers_ok=bool(flags & HELLO_BUFFERS_OK),
        semihosting=bool(flags & HELLO_SEMIHOSTING),
        image_id=image_id,
        streamed_input=bool(flags & HELLO_STREAMED_INPUT),
        regions=tuple(zip(flat[0::2], flat[1::2], strict=True)),
    )


def encode_hello(h: Hello) -> bytes:
    """The device's hello payload (used by fake devices in tests)."""
    counter = {v: k for k, v in COUNTER_KINDS.items()}.get(h.counter, 0)
    flags = (HELLO_TOUCHED_EXACT if h.touched_exact else 0) | (HELLO_BUFFERS_OK if h.buffers_ok else 0)
    flags |= HELLO_SEMIHOSTING if h.semihosting else 0
    flags |= HELLO_STREAMED_INPUT if h.streamed_input else 0
    out = struct.pack("<BBH", h.protocol, counter, flags)
    out += struct.pack(
        "<10I",
        h.cpu_hz,
        h.arena_bytes,
        h.arena_alignment,
        h.arena_address,
        h.state_bytes,
        h.stack_bytes,
        h.free_ram_bytes,
        h.watched_bytes,
        len(h.input_bytes),
        len(h.output_bytes),
    )
    out += struct.pack(f"<{len(h.input_bytes)}I", *h.input_bytes)
    out += struct.pack(f"<{len(h.output_bytes)}I", *h.output_bytes)
    for s in (h.board, h.build_id, h.model, h.image_id):
        b = s.encode()
        out += struct.pack("<H", len(b)) + b
    out += struct.pack(f"<I{2 * len(h.regions)}I", len(h.regions), *(v for r in h.regions for v in r))
    return out


@dataclass(frozen=True)
class RunResult:
    status: int
    outputs_agree: bool  # the three runs on the device gave the same outputs
    touched_exact: bool
    ticks: int
    arena_high_water: int  # highest touched offset + 1 (may exceed the plan: guard bytes are watched)
    arena_touched: int
    arena_low: int
    stack_bytes: int  # stack the model's invoke used, below the harness's call
    stack_total: int  # stack high-water from the top, harness included
    outputs: tuple[bytes, ...] = field(default=())
    attempts: int = 1
    step_ticks: tuple[int, ...] = ()  # counter ticks of each step of the timed invoke (protocol 3)
    # each step's output after the first run: (bytes, CRC-32 as zlib's; (0, 0): none) (protocol 5)
    step_outputs: tuple[tuple[int, int], ...] = ()
    # a split arena, per region in the hello's order: highest touched offset + 1 inside the region,
    # and the bytes touched in it (protocol 4); the arena_* fields above are over the regions laid
    # end to end, as the plan's offsets are
    region_high_water: tuple[int, ...] = ()
    region_touched: tuple[int, ...] = ()
    # each operator run inside a streamed stage (ts_model.h TS_MEMBER_DONE), the stages in step order
    # and each stage's members in order: (step, counter ticks, kernel calls) from the harness's
    # members' pass before the timed invoke, and the ticks of one hook call, which each of a
    # member's calls adds to its ticks (protocol 6)
    member_ticks: tuple[tuple[int, int, int], ...] = ()
    member_hook_ticks: int = 0

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["outputs"] = [o.hex() for o in self.outputs]
        return d


_RESULT_HEAD = struct.Struct("<iIIIIIIIII")


def parse_result(payload: bytes, output_bytes: Sequence[int]) -> RunResult:
    f = _Fields(payload, "result")
    (status, flags, lo, hi, hw, touched, low, stack, stack_total, n) = _RESULT_HEAD.unpack(
        f.take(_RESULT_HEAD.size, "the header (status, flags, ticks, arena, stack, output count)")
    )
    data = payload[_RESULT_HEAD.size : _RESULT_HEAD.size + n]
    if n != len(data) or n != sum(output_bytes):
        raise LinkError(
            f"result frame declares {n:,} output bytes and carries {len(data):,}; the model has "
            f"{sum(output_bytes):,}"
        )
    profile = payload[_RESULT_HEAD.size + n :]
    if len(profile) < 4:
        raise LinkError(
            f"result frame ends after the outputs: the step count is missing ({len(profile)} bytes)"
        )
    (steps,) = struct.unpack_from("<I", profile)
    if len(profile) < 8 + 12 * steps:
        raise LinkError(
            f"result frame declares {steps:,} steps and carries {len(profile) - 4:,} bytes for them "
            "(12 each) and the region count"
        )
    per_step = struct.unpack_from(f"<{3 * steps}I", profile, 4)
    (n_regions,) = struct.unpack_from("<I", profile, 4 + 12 * steps)
    if len(profile) < 8 + 12 * steps + 8 * n_regions:
        raise LinkError(
            f"result frame declares {n_regions:,} arena regions and carries "
            f"{len(profile) - 8 - 12 * steps:,} bytes for them"
        )
    per_region = struct.unpack_from(f"<{2 * n_regions}I", profile, 8 + 12 * steps)
    members = profile[8 + 12 * steps + 8 * n_regions :]
    if len(members) < 8:
        raise LinkError(
            f"result frame ends after the regions: the member count and hook ticks are missing "
            f"({len(members)} bytes)"
        )
    (n_members, hook) = struct.unpack_from("<II", members)
    if len(members) != 8 + 12 * n_members:
        raise LinkError(
            f"result frame declares {n_members:,} streamed members and carries {len(members) - 8:,} bytes "
            "for them (12 each)"
        )
    per_member = struct.unpack_from(f"<{3 * n_members}I", members, 8)
    outs, off = [], 0
    for size in output_bytes:
        outs.append(data[off : off + size])
        off += size
    return RunResult(
        status=status,
        outputs_agree=bool(flags & RESULT_OUTPUTS_AGREE),
        touched_exact=bool(flags & RESULT_TOUCHED_EXACT),
        ticks=lo | (hi << 32),
        arena_high_water=hw,
        arena_touched=touched,
        arena_low=low,
        stack_bytes=stack,
        stack_total=stack_total,
        outputs=tuple(outs),
        step_ticks=tuple(per_step[0::3]),
        step_outputs=tuple(zip(per_step[1::3], per_step[2::3], strict=True)),
        region_high_water=tuple(per_region[0::2]),
        region_touched=tuple(per_region[1::2]),
        member_ticks=tuple(zip(per_member[0::3], per_member[1::3], per_member[2::3], strict=True)),
        member_hook_ticks=hook,
    )


def encode_result(r: RunResult) -> bytes:
    """The device's result payload (used by fake devices in tests)."""
    data = b"".join(r.outputs)
    flags = (RESULT_OUTPUTS_AGREE if r.outputs_agree else 0) | (
        RESULT_TOUCHED_EXACT if r.touched_exact else 0
    )
    return (
        _RESULT_HEAD.pack(
            r.status,
            flags,
            r.ticks & 0xFFFFFFFF,
            r.ticks >> 32,
            r.arena_high_water,
            r.arena_touched,
            r.arena_low,
            r.stack_bytes,
            r.stack_total,
            len(data),
        )
        + data
        + struct.pack(
            f"<I{3 * len(r.step_ticks)}I",
            len(r.step_ticks),
            *(
                v
                for k, ticks in enumerate(r.step_ticks)
                for v in (ticks, *(r.step_outputs[k] if k < len(r.step_outputs) else (0, 0)))
            ),
        )
        + struct.pack(
            f"<I{2 * len(r.region_high_water)}I",
            len(r.region_high_water),
            *(v for pair in zip(r.region_high_water, r.region_touched, strict=True) for v in pair),
        )
        + struct.pack(
            f"<II{3 * len(r.member_ticks)}I",
            len(r.member_ticks),
            r.member_hook_ticks,
            *(v for m in r.member_ticks for v in m),
        )
    )


def describe_fault(payload: bytes) -> str:
    if len(payload) < 16:
        return "device fault (short report)"
    pc, cfsr, hfsr, kind = struct.unpack_from("<4I", payload, 0)
    return f"{FAULT_NAMES.get(kind, f'exception {kind}')} at pc {pc:#010x} (CFSR {cfsr:#010x}, HFSR {hfsr:#010x})"


# ---- how long a run may take ------------------------------------------------------------------------
#
# After the ACK the harness runs the model three times (two painted runs, one timed), paints and
# scans the watched arena bytes and the free stack before and after each painted run, then sends
# the result frame. The host waits
#
#     seconds = max(floor, RESULT_SAFETY * work / rate) + the result frame's time on the line
#     work    = 3 * invoke_instructions + HARNESS_PER_WATCHED_BYTE * watched_bytes
#               + HARNESS_PER_STACK_BYTE * stack_bytes + HARNESS_PER_IO_BYTE * (input + output bytes)
#               + HARNESS_FIXED
#
# with the sizes from the device's hello, the model's instructions per invoke from the caller (an
# estimate from its MACs or sizes: tinysched.device.runner.invoke_instructions_estimate) and the rate
# from the board (tinysched.device.runner.instructions_per_second: the core clock at several cycles per
# instruction, or under QEMU a measured slowest speed on a loaded host).

RUNS_PER_REQUEST = 3
HARNESS_PER_WATCHED_BYTE = 64  # paint + scan, two painted runs (about 20 instructions a byte each way)
HARNESS_PER_STACK_BYTE = 4  # paint + scan of the free stack, two painted runs (a word loop)
HARNESS_PER_IO_BYTE = 32  # receive, CRC-32 (nibble table), copy and compare
HARNESS_FIXED = 100_000
RESULT_SAFETY = 2.0


@dataclass(frozen=True)
class ResultTimeout:
    """How long to wait for a result after the ACK, and what that was sized for (said on expiry)."""

    seconds: float
    basis: str


def result_timeout(
    hello: Hello, invoke_instructions: int, instructions_per_second: float, floor: float, rate_note: str = ""
) -> ResultTimeout:
    """The result timeout for one run request to the device that sent `hello` (formula above)."""
    io = sum(hello.input_bytes) + sum(hello.output_bytes)
    work = (
        RUNS_PER_REQUEST * max(invoke_instructions, 0)
        + HARNESS_PER_WATCHED_BYTE * hello.watched_bytes
        + HARNESS_PER_STACK_BYTE * hello.stack_bytes
        + HARNESS_PER_IO_BYTE * io
        + HARNESS_FIXED
    )
    rate = max(float(instructions_per_second), 1.0)
    computed = RESULT_SAFETY * work / rate
    seconds = max(floor, computed)
    note = f" ({rate_note})" if rate_note else ""
    basis = (
        f"{RUNS_PER_REQUEST} runs of ~{invoke_instructions:,} instructions plus the harness's painting: "
        f"~{work:,} instructions at {rate / 1e6:,.1f} M instructions/s{note}, x{RESULT_SAFETY:g} = "
        f"{computed:,.1f} s, floor {floor:g} s"
    )
    return ResultTimeout(seconds, basis)


# ---- the link --------------------------------------------------------------------------------------------


def open_port(url: str, baud: int = 115200, timeout: float = 0.05) -> Any:
    """A pyserial port for a tty path or a URL such as socket://127.0.0.1:4321."""
    import serial

    try:
        return serial.serial_for_url(url, baudrate=baud, timeout=timeout, write_timeout=10)
    except (serial.SerialException, OSError, ValueError) as err:
        raise LinkError(f"cannot open {printable(url)}: {printable(str(err), 200)}") from None


class DeviceLink:
    """Talks to one device harness over an open pyserial port (or anything with read/write)."""

    def __init__(
        self,
        port: Any,
        *,
        name: str = "device",
        ack_timeout: float = 2.0,
        run_timeout: float | ResultTimeout = 60.0,
        retries: int = 3,
        baud: int = 115200,
        log: Callable[[str], None] | None = None,
        semihost_dir: str | Path | None = None,
    ):
        self.port = port
        self.name = name
        self.label = printable(name)  # the name as error lines show it (a tty path or URL, escaped)
        self.ack_timeout = ack_timeout
        self.set_run_timeout(run_timeout)
        self.retries = retries
        self.baud = baud
        self.log = log or (lambda _msg: None)
        self.decoder = FrameDecoder()
        self.pending: list[Frame | BadFrame] = []
        self.hello: Hello | None = None
        self.seq = 0
        self.resets_seen = 0
        self.retries_used = 0
        # None (the default): every input set travels over the serial link, as on a board's tty.
        # A folder (opt-in, QEMU only: `measure --semihost-inputs`): every input set goes through a
        # file in it that the harness reads by semihosting, a test-speed shortcut (QEMU's UART takes
        # 3-10 KB/s) that leaves the serial input path unexercised.
        self.semihost_dir = Path(semihost_dir) if semihost_dir is not None else None
        self.inputs_semihosted = 0

    @classmethod
    def open(cls, url: str, **kwargs: Any) -> DeviceLink:
        baud = int(kwargs.get("baud", 115200))
        return cls(open_port(url, baud), name=url, **kwargs)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a dead port must not hide the real error
            self.port.close()

    def __enter__(self) -> DeviceLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_run_timeout(self, timeout: float | ResultTimeout) -> None:
        """Seconds to wait for a result after the ACK (a ResultTimeout also says what it was sized for)."""
        if isinstance(timeout, ResultTimeout):
            self.run_timeout, self.run_timeout_basis = float(timeout.seconds), timeout.basis
        else:
            self.run_timeout, self.run_timeout_basis = float(timeout), "a fixed timeout"

    # -- low level

    def _next_seq(self) -> int:
        self.seq = (self.seq + 1) % 256 or 1  # 0 is the device's unsolicited hello
        return self.seq

    def send(self, msg_type: int, seq: int, payload: bytes = b"") -> None:
        import serial

        try:
            self.port.write(encode_frame(msg_type, seq, payload))
            self.port.flush()
        except (serial.SerialException, OSError) as err:
            raise LinkError(f"{self.label}: write failed: {printable(str(err), 200)}") from None

    def receive(self, deadline: float) -> Frame | BadFrame | None:
        """The next frame before `deadline` (time.monotonic), or None."""
        import serial

        while True:
            if self.pending:
                return self.pending.pop(0)
            if time.monotonic() >= deadline:
                return None
            try:
                waiting = getattr(self.port, "in_waiting", 0) or 1
                data = self.port.read(min(max(waiting, 1), 65536))
            except (serial.SerialException, OSError) as err:
                raise LinkError(
                    f"{self.label}: read failed (device gone?): {printable(str(err), 200)}"
                ) from None
            if data:
                self.pending.extend(self.decoder.feed(data))

    def _transfer_time(self, nbytes: int) -> float:
        """Seconds the line needs for nbytes (10 bits a byte), plus slack."""
        return nbytes * 10.0 / max(self.baud, 1) * 1.5

    # -- hello

    def wait_hello(self, timeout: float = 10.0, query: bool = True, first_query: float = 0.5) -> Hello:
        """The device's hello: the one it sent on boot, or (if query) the answer to a QUERY sent
        when none came within `first_query` seconds (and every second after)."""
        deadline = time.monotonic() + timeout
        next_query = time.monotonic() + (first_query if query else timeout)
        while time.monotonic() < deadline:
            frame = self.receive(min(deadline, next_query))
            if frame is None:
                if query and time.monotonic() >= next_query:
                    self.send(MSG_QUERY, self._next_seq())
                    next_query = time.monotonic() + min(1.0, max(deadline - time.monotonic(), 0.05))
                continue
            if isinstance(frame, Frame) and frame.type == MSG_HELLO:
                try:
                    self.hello = parse_hello(frame.payload)
                except LinkError as err:
                    raise LinkError(f"{self.label}: {err}") from None
                return self.hello
            if isinstance(frame, Frame) and frame.type == MSG_FAULT:
                raise DeviceFault(f"{self.label}: device faulted: {describe_fault(frame.payload)}")
        raise LinkError(
            f"{self.label}: no hello from the device within {timeout:.1f} s "
            f"({self.decoder.skipped} junk bytes, {self.decoder.bad} bad frames): is the harness "
            "flashed, the port right and the baud rate the board's?"
        )

    # -- run

    def run(self, inputs: Sequence[bytes], reset_state: bool = False) -> RunResult:
        """Runs the model on one set of inputs; retries per the class docstring."""
        if self.hello is None:
            raise LinkError(f"{self.label}: no hello yet")
        hello = self.hello
        if len(inputs) != len(hello.input_bytes) or any(
            len(x) != n for x, n in zip(inputs, hello.input_bytes, strict=False)
        ):
            raise LinkError(
                f"inputs of {[len(x) for x in inputs]} bytes given; the device's model takes {list(hello.input_bytes)}"
            )
        if not hello.buffers_ok:
            raise LinkError(
                f"{self.label}: the harness's buffers do not fit the device's free RAM ({hello.free_ram_bytes:,} B)"
            )
        flags = RUN_RESET_STATE if reset_state else 0
        blob = b"".join(inputs)
        if self.semihost_dir is not None:
            if not hello.semihosting:
                raise LinkError(
                    f"{self.label}: the harness does not take inputs by semihosting (built for a real board)"
                )
            self.inputs_semihosted += 1
            path = self.semihost_dir / f"inputs-{self.inputs_semihosted}.bin"
            path.write_bytes(blob)
            payload = struct.pack("<III", flags | RUN_INPUTS_SEMIHOSTED, 0, crc32(blob)) + str(path).encode()
            if len(payload) == 8 + len(blob):  # would read as an ordinary request: make it longer
                payload += b"\0"
        else:
            payload = struct.pack("<II", flags, 0) + blob
        problems: list[str] = []
        for attempt in range(1, self.retries + 1):
            seq = self._next_seq()
            self.send(MSG_RUN, seq, payload)
            outcome = self._await_result(seq, len(payload), hello)
            if isinstance(outcome, RunResult):
                if attempt > 1:
                    self.retries_used += attempt - 1
                return RunResult(**{**outcome.__dict__, "attempts": attempt})
            problems.append(outcome)
            self.log(
                f"{self.label}: attempt {attempt}: {outcome}; retrying" if attempt < self.retries else outcome
            )
        raise LinkError(f"{self.label}: gave up after {self.retries} attempts: " + "; ".join(problems))

    def _await_result(self, seq: int, sent_bytes: int, hello: Hello) -> RunResult | str:
        ack_deadline = time.monotonic() + self.ack_timeout + self._transfer_time(sent_bytes + 16)
        acked = False
        deadline = ack_deadline
        while True:
            frame = self.receive(deadline)
            if frame is None:
                if not acked:
                    waited = self.ack_timeout + self._transfer_time(sent_bytes + 16)
                    return (
                        f"no acknowledgement within {waited:.1f} s (device silent; waited {self.ack_timeout:g} s "
                        f"plus {sent_bytes + 16:,} request bytes at {self.baud:,} baud)"
                    )
                return (
                    f"no result within {self.run_timeout:.1f} s after the acknowledgement (waited for "
                    f"{self.run_timeout_basis}, plus the result frame at {self.baud:,} baud)"
                )
            if isinstance(frame, BadFrame):
                if frame.seq == seq or frame.type in (MSG_RESULT, MSG_ACK):
                    return f"corrupted {chr(frame.type) if 32 <= frame.type < 127 else frame.type} frame (bad CRC)"
                continue
            if frame.type == MSG_FAULT:
                raise DeviceFault(
                    f"{self.label}: device faulted while running the model: {describe_fault(frame.payload)}"
                )
            if frame.type == MSG_HELLO:
                self.resets_seen += 1
                with contextlib.suppress(LinkError):
                    self.hello = parse_hello(frame.payload)
                return "device rebooted in the middle of the request"
            if frame.type == MSG_ERROR:
                raise LinkError(f"{self.label}: device error: {printable(frame.payload, 200)}")
            if frame.seq != seq:
                continue  # a late answer to an earlier attempt
            if frame.type == MSG_NAK:
                reason = NAK_REASONS.get(frame.payload[0] if frame.payload else 0, "unknown reason")
                return f"device rejected the request ({reason})"
            if frame.type == MSG_ACK:
                acked = True
                result_bytes = HEADER_BYTES + _RESULT_HEAD.size + sum(hello.output_bytes) + 4
                deadline = time.monotonic() + self.run_timeout + self._transfer_time(result_bytes)
                continue
            if frame.type == MSG_RESULT:
                return parse_result(frame.payload, hello.output_bytes)

    def reboot(self) -> None:
        self.send(MSG_REBOOT, self._next_seq())
