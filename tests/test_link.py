"""The host side of the device link: frame codec, and serial faults against a fake device.

The fake device is a real TCP server on 127.0.0.1 speaking the harness's protocol, reached through
pyserial's socket:// URL exactly as QEMU's UART is. Each fault (a corrupted frame, a silent device,
a reset in the middle of a run, a crash) must end in a successful retry or a clear error, within a
bounded time.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import require

from tinysched.device.link import (
    MSG_ACK,
    MSG_ERROR,
    MSG_FAULT,
    MSG_HELLO,
    MSG_NAK,
    MSG_QUERY,
    MSG_RESULT,
    MSG_RUN,
    PROTOCOL_VERSION,
    RUN_INPUTS_SEMIHOSTED,
    RUN_RESET_STATE,
    BadFrame,
    DeviceFault,
    DeviceLink,
    Frame,
    FrameDecoder,
    Hello,
    LinkError,
    RunResult,
    crc32,
    encode_frame,
    encode_hello,
    encode_result,
    parse_hello,
    parse_result,
    result_timeout,
)

# ---- codec --------------------------------------------------------------------------------------


def test_roundtrip_byte_by_byte():
    frames = [encode_frame(MSG_HELLO, 0, b"abc"), encode_frame(MSG_RESULT, 9, bytes(range(256)) * 3)]
    dec = FrameDecoder()
    got = []
    for b in b"".join(frames):
        got += dec.feed(bytes([b]))
    assert got == [Frame(MSG_HELLO, 0, b"abc"), Frame(MSG_RESULT, 9, bytes(range(256)) * 3)]


def test_bad_crc_reported_and_junk_skipped():
    good = encode_frame(MSG_ACK, 3)
    bad = bytearray(encode_frame(MSG_RESULT, 4, b"payload"))
    bad[12] ^= 1
    dec = FrameDecoder()
    out = dec.feed(b"\x00junkT" + bytes(bad) + b"TS\xff" + good)
    assert out == [BadFrame(MSG_RESULT, 4), Frame(MSG_ACK, 3, b"")]
    assert dec.skipped > 0


def test_corrupted_length_is_caught_by_the_header_check():
    frame = bytearray(encode_frame(MSG_RESULT, 1, b"x" * 10))
    frame[6] ^= 0x40  # length now ~4 MiB
    dec = FrameDecoder()
    assert dec.feed(bytes(frame) + encode_frame(MSG_ACK, 2)) == [Frame(MSG_ACK, 2, b"")]


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=64), st.binary(max_size=300), st.integers(0, 255))
def test_frames_survive_surrounding_junk(junk, payload, seq):
    dec = FrameDecoder()
    frames = [
        f for f in dec.feed(junk + encode_frame(MSG_RESULT, seq, payload) + junk) if isinstance(f, Frame)
    ]
    assert Frame(MSG_RESULT, seq, payload) in frames


HELLO = Hello(
    protocol=PROTOCOL_VERSION, counter="systick", cpu_hz=25_000_000, arena_bytes=300, arena_alignment=16,
    arena_address=0x20000000, state_bytes=0, stack_bytes=16384, free_ram_bytes=100000, watched_bytes=368,
    input_bytes=(4,), output_bytes=(2,), board="fake-board", build_id="fake-1", model="fake",
    touched_exact=True, buffers_ok=True, image_id="0123456789abcdef",
)  # fmt: skip


def test_hello_and_result_payloads_roundtrip():
    assert parse_hello(encode_hello(HELLO)) == HELLO
    r = RunResult(0, True, True, 2**33 + 5, 300, 300, 0, 40, 224, (b"\x01\x02",))
    assert parse_result(encode_result(r), (2,)) == r
    with pytest.raises(LinkError):
        parse_result(encode_result(r), (3,))


# ---- fake device ------------------------------------------------------------------------------------


def fake_output(x: bytes) -> bytes:
    return bytes([sum(x) & 0xFF, len(x)])


class FakeDevice:
    """One-connection TCP server that behaves like the harness, with scripted faults.

    faults: list, one entry per RUN request in order (then "ok"): "ok", "corrupt" (the result's CRC
    is wrong), "silent" (no answer), "reset" (ACK, then a boot hello), "nak", "fault", "garbage"
    (junk bytes before the answer), "slow" (result after a pause), "late-dup" (a stale frame first),
    "hung" (ACK, then nothing: the model never returns), "error" (an error frame with `error_text`).
    `hello_payload` replaces the encoded hello (a malformed one, say).
    """

    def __init__(self, faults=(), hello=True, hello_msg=HELLO, hello_payload=None, error_text=b""):
        self.faults = list(faults)
        self.hello = hello
        self.hello_payload = encode_hello(hello_msg) if hello_payload is None else hello_payload
        self.error_text = error_text
        self.payloads = []  # every RUN request's payload, in order
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(10)
        self.url = f"socket://127.0.0.1:{self.server.getsockname()[1]}"
        self.requests = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        self.server.close()
        self.thread.join(timeout=5)

    def _serve(self):
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        conn.settimeout(0.05)
        dec = FrameDecoder()
        with conn:
            if self.hello:
                conn.sendall(encode_frame(MSG_HELLO, 0, self.hello_payload))
            while not self.stop.is_set():
                try:
                    data = conn.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                for f in dec.feed(data):
                    if isinstance(f, BadFrame):
                        conn.sendall(encode_frame(MSG_NAK, f.seq, b"\x01"))
                    elif f.type == MSG_QUERY and self.hello:
                        conn.sendall(encode_frame(MSG_HELLO, f.seq, self.hello_payload))
                    elif f.type == MSG_RUN:
                        self._run(conn, f)

    def _run(self, conn, f):
        self.requests += 1
        self.payloads.append(f.payload)
        fault = self.faults.pop(0) if self.faults else "ok"
        x = f.payload[8:]
        result = encode_frame(
            MSG_RESULT,
            f.seq,
            encode_result(RunResult(0, True, True, 1234, 300, 300, 0, 40, 224, (fake_output(x),))),
        )
        if fault == "silent":
            return
        if fault == "nak":
            conn.sendall(encode_frame(MSG_NAK, f.seq, b"\x01"))
            return
        if fault == "error":
            conn.sendall(encode_frame(MSG_ERROR, f.seq, self.error_text))
            return
        conn.sendall(encode_frame(MSG_ACK, f.seq))
        if fault == "hung":
            return
        if fault == "reset":
            time.sleep(0.05)
            conn.sendall(b"\x00\xff" + encode_frame(MSG_HELLO, 0, self.hello_payload))
            return
        if fault == "fault":
            conn.sendall(encode_frame(MSG_FAULT, 0, struct.pack("<4I", 0x1234, 0x100, 0x40000000, 3)))
            return
        if fault == "corrupt":
            bad = bytearray(result)
            bad[-6] ^= 0x10
            result = bytes(bad)
        if fault == "garbage":
            conn.sendall(b"TS\x00garbage\xffTTT")
        if fault == "slow":
            time.sleep(0.6)
        if fault == "late-dup":
            conn.sendall(encode_frame(MSG_RESULT, (f.seq - 1) % 256, b"stale"))
        conn.sendall(result)


@pytest.fixture
def device_factory():
    made = []

    def make(faults=(), hello=True, hello_msg=HELLO, hello_payload=None, error_text=b"", **link_kwargs):
        dev = FakeDevice(faults, hello, hello_msg, hello_payload, error_text)
        kwargs = {"ack_timeout": 0.4, "run_timeout": 2.0, "retries": 3, **link_kwargs}
        link = DeviceLink.open(dev.url, **kwargs)
        made.append((dev, link))
        return dev, link

    yield make
    for dev, link in made:
        link.close()
        dev.close()


def bounded(seconds):
    """Asserts the block finishes within `seconds` (the link must never hang)."""

    class _Timer:
        def __enter__(self):
            self.t = time.monotonic()

        def __exit__(self, *exc):
            assert time.monotonic() - self.t < seconds, "took too long"

    return _Timer()


X = b"\x01\x02\x03\x04"


def test_clean_run(device_factory):
    dev, link = device_factory()
    assert link.wait_hello(timeout=2).board == "fake-board"
    r = link.run([X])
    assert r.outputs == (fake_output(X),) and r.attempts == 1 and r.arena_high_water == 300


@pytest.mark.parametrize("fault", ["corrupt", "silent", "reset", "nak"])
def test_single_fault_then_successful_retry(device_factory, fault):
    dev, link = device_factory([fault])
    link.wait_hello(timeout=2)
    with bounded(5):
        r = link.run([X])
    assert r.outputs == (fake_output(X),)
    assert r.attempts == 2 and dev.requests == 2
    if fault == "reset":
        assert link.resets_seen == 1


@pytest.mark.parametrize("fault", ["garbage", "slow", "late-dup"])
def test_noise_needs_no_retry(device_factory, fault):
    dev, link = device_factory([fault])
    link.wait_hello(timeout=2)
    r = link.run([X])
    assert r.outputs == (fake_output(X),) and r.attempts == 1


def test_silent_device_gives_up_with_a_clear_error(device_factory):
    dev, link = device_factory(["silent"] * 10)
    link.wait_hello(timeout=2)
    with bounded(5), pytest.raises(LinkError, match=r"gave up after 3 attempts.*device silent"):
        link.run([X])


def test_device_resetting_every_time_gives_up(device_factory):
    dev, link = device_factory(["reset"] * 10)
    link.wait_hello(timeout=2)
    with bounded(5), pytest.raises(LinkError, match="rebooted in the middle"):
        link.run([X])


def test_device_that_never_says_hello(device_factory):
    dev, link = device_factory(hello=False)
    with bounded(4), pytest.raises(LinkError, match="no hello from the device within 1.0 s"):
        link.wait_hello(timeout=1.0)


def test_crash_is_reported_at_once(device_factory):
    dev, link = device_factory(["fault"])
    link.wait_hello(timeout=2)
    with bounded(3), pytest.raises(DeviceFault, match=r"HardFault at pc 0x00001234"):
        link.run([X])
    assert dev.requests == 1


def test_wrong_input_size_is_refused_before_sending(device_factory):
    dev, link = device_factory()
    link.wait_hello(timeout=2)
    with pytest.raises(LinkError, match="inputs of"):
        link.run([b"\x00"])
    assert dev.requests == 0


def test_unreachable_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LinkError, match="cannot open"):
        DeviceLink.open(f"socket://127.0.0.1:{port}")


# ---- inputs over the serial link; semihosting only on request ------------------------------------------

QEMU_HELLO = Hello(**{**HELLO.__dict__, "semihosting": True})  # a harness built for an emulated board


def test_inputs_go_over_the_serial_link_by_default(device_factory):
    """Even a harness that could read inputs by semihosting (QEMU) gets them over the link."""
    dev, link = device_factory(hello_msg=QEMU_HELLO)
    assert link.wait_hello(timeout=2).semihosting
    r = link.run([X], reset_state=True)
    assert r.outputs == (fake_output(X),)
    assert dev.payloads == [struct.pack("<II", RUN_RESET_STATE, 0) + X]
    assert link.inputs_semihosted == 0


def test_semihosted_inputs_are_opt_in(device_factory, tmp_path):
    """With a semihost folder the request carries the flag, the inputs' CRC-32 and a file's path."""
    dev, link = device_factory(hello_msg=QEMU_HELLO, semihost_dir=tmp_path)
    link.wait_hello(timeout=2)
    link.run([X])
    (payload,) = dev.payloads
    flags, _reserved, crc = struct.unpack_from("<III", payload)
    path = Path(payload[12:].rstrip(b"\0").decode())
    assert flags & RUN_INPUTS_SEMIHOSTED and crc == crc32(X)
    assert path.parent == tmp_path and path.read_bytes() == X
    assert link.inputs_semihosted == 1


def test_semihosted_inputs_refused_by_a_board_harness(device_factory, tmp_path):
    dev, link = device_factory(semihost_dir=tmp_path)  # HELLO: no semihosting (a real board)
    link.wait_hello(timeout=2)
    with pytest.raises(LinkError, match="does not take inputs by semihosting"):
        link.run([X])
    assert dev.requests == 0


# ---- what a hostile or broken device can put on the screen ---------------------------------------------

HOSTILE = b"\x1b[2J\x1b]0;owned\x07\rok: all outputs match\n\x9b31m\xe2\x80\xae\x00" + b"A" * 500


def test_error_frame_text_is_one_escaped_shortened_line(device_factory):
    dev, link = device_factory(["error"], error_text=HOSTILE)
    link.wait_hello(timeout=2)
    with pytest.raises(LinkError) as info:
        link.run([X])
    msg = str(info.value)
    assert msg.startswith(
        f"{link.label}: device error: \\x1b[2J\\x1b]0;owned\\x07\\rok: all outputs match\\n"
    )
    assert "\\xc2\\x9b31m" not in msg and "\\x9b31m\\u202e\\x00AAA" in msg  # bad byte, bidi override, NUL
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c == "\u202e" for c in msg)
    assert "…" in msg and len(msg) < len(link.label) + 20 + 200
    assert dev.requests == 1  # an error frame is final, not retried


def _hello_head(n_in: int, n_out: int, version: int = PROTOCOL_VERSION) -> bytes:
    return struct.pack("<BBH", version, 2, 3) + struct.pack("<10I", 1, 2, 3, 4, 5, 6, 7, 8, n_in, n_out)


@pytest.mark.parametrize(
    "payload,message",
    [
        (b"", r"empty payload"),
        (
            _hello_head(1, 1)[:30],
            r"hello frame from the device \(30 bytes\): the ten u32 sizes and counts at byte 4 needs 40 bytes, 26 left",
        ),
        # the count that made struct ask for "a buffer of at least 17179869224 bytes"
        (
            _hello_head(0xFFFFFFFF, 1),
            r"the sizes of 4,294,967,295 inputs at byte 44 needs 17,179,869,180 bytes, 0 left",
        ),
        (
            _hello_head(1, 1) + struct.pack("<2I", 4, 2) + b"\x05\x00board" + b"\x40\x00abc",
            r"the build id \(64 bytes declared\) at byte 61 needs 64 bytes, 3 left",
        ),
        (encode_hello(HELLO) + b"xy", r"2 bytes after the last field \(the arena regions\)"),
        (_hello_head(1, 1, version=1), r"device speaks protocol 1, this host speaks 6: rebuild the firmware"),
    ],
    ids=["empty", "short", "huge-count", "string-past-end", "trailing", "old-protocol"],
)
def test_malformed_hello_is_described_in_protocol_terms(payload, message):
    with pytest.raises(LinkError, match=message) as info:
        parse_hello(payload)
    assert "unpack" not in str(info.value) and "buffer" not in str(info.value)


def test_malformed_hello_from_a_device(device_factory):
    dev, link = device_factory(hello_payload=_hello_head(0xFFFFFFFF, 1))
    with bounded(3), pytest.raises(LinkError, match=r": malformed hello frame .* 4,294,967,295 inputs"):
        link.wait_hello(timeout=2)


def test_hello_strings_keep_their_exact_text():
    odd = Hello(**{**HELLO.__dict__, "model": "m\x1b[31m\u202e", "image_id": "id\n"})
    assert parse_hello(encode_hello(odd)) == odd


# ---- a device that acknowledges and never answers ----------------------------------------------------


def test_result_timeout_scales_with_the_model_and_has_a_floor():
    small = result_timeout(HELLO, 1_000, 1e6, floor=1.0)
    assert small.seconds == 1.0  # 192,280 instructions at 1 M/s, x2 = 0.38 s: the floor holds
    big = result_timeout(HELLO, 2_000_000, 1e6, floor=0.3)
    harness = 64 * HELLO.watched_bytes + 4 * HELLO.stack_bytes + 32 * 6 + 100_000
    assert big.seconds == pytest.approx(2 * (3 * 2_000_000 + harness) / 1e6)
    bigger = result_timeout(HELLO, 4_000_000, 1e6, floor=0.3)
    assert bigger.seconds - big.seconds == pytest.approx(2 * 3 * 2_000_000 / 1e6)
    assert "3 runs of ~2,000,000 instructions" in big.basis and "floor 0.3 s" in big.basis


def test_acknowledged_but_silent_device_waits_the_scaled_time_and_says_for_what(device_factory):
    timeout = result_timeout(HELLO, 50_000, 1e6, floor=0.1, rate_note="test rate")
    assert timeout.seconds == pytest.approx(2 * (150_000 + 64 * 368 + 4 * 16384 + 32 * 6 + 100_000) / 1e6)
    dev, link = device_factory(["hung"] * 3, run_timeout=timeout, retries=2)
    link.wait_hello(timeout=2)
    t0 = time.monotonic()
    with pytest.raises(LinkError) as info:
        link.run([X])
    took = time.monotonic() - t0
    assert 2 * timeout.seconds <= took < 2 * timeout.seconds + 1.5
    msg = str(info.value)
    assert msg.count(f"no result within {timeout.seconds:.1f} s after the acknowledgement") == 2
    assert "waited for 3 runs of ~50,000 instructions plus the harness's painting" in msg
    assert "at 1.0 M instructions/s (test rate)" in msg and dev.requests == 2


def test_board_and_emulation_timeouts():
    from tinysched.boards import get_board
    from tinysched.device.runner import (
        EMULATED_MIN_RATE,
        EMULATED_RESULT_FLOOR,
        instructions_per_second,
        run_timeout_for,
    )

    rate, note = instructions_per_second(get_board("mps2-an386"))
    assert rate == EMULATED_MIN_RATE == 25e6 and "QEMU" in note
    rate, note = instructions_per_second(get_board("nucleo-f767"))
    assert rate == 216e6 / 4 and "216 MHz" in note
    assert run_timeout_for(get_board("mps2-an386"), HELLO, 1000).seconds == EMULATED_RESULT_FLOOR
    # mobilenet-v2 sized: 3.4e9 instructions an invoke at 25 M/s, x2
    assert run_timeout_for(get_board("mps2-an386"), HELLO, 3_400_000_000).seconds == pytest.approx(
        2 * (3 * 3.4e9 + 64 * 368 + 4 * 16384 + 192 + 100_000) / 25e6
    )


# ---- which image the device runs ---------------------------------------------------------------------


def test_stale_image_is_refused_in_one_line(device_factory):
    from tinysched.device.runner import check_image_id
    from tinysched.errors import TinyschedError

    dev, link = device_factory()
    hello = link.wait_hello(timeout=2)
    check_image_id(hello, "0123456789abcdef", link.name)  # the image flashed: accepted
    with pytest.raises(TinyschedError) as info:
        check_image_id(hello, "fedcba9876543210", link.name)
    msg = str(info.value)
    assert "runs image 0123456789abcdef (model fake), not the image just flashed (fedcba9876543210)" in msg
    assert "\n" not in msg
    old = Hello(**{**HELLO.__dict__, "image_id": ""})
    with pytest.raises(TinyschedError, match="runs an image without an id"):
        check_image_id(old, "fedcba9876543210", "dev")


def test_image_id_follows_the_sources(tmp_path):
    from tinysched.boards import get_board
    from tinysched.build.firmware import image_id
    from tinysched.build.sources import SourceSet

    src = tmp_path / "m.c"
    src.write_text("int x = 1;\n")
    (tmp_path / "m.h").write_text("#define A 1\n")
    board = get_board("mps2-an386")
    sources = SourceSet(tmp_path, (src,), (tmp_path,), "m_info")
    a = image_id(sources, board)
    assert a == image_id(sources, board) and len(a) == 16
    assert image_id(sources, get_board("mps2-an500")) != a
    assert image_id(sources, board, ["-DX=1"]) != a
    (tmp_path / "m.h").write_text("#define A 2\n")
    assert image_id(sources, board) != a


@pytest.mark.qemu
def test_qemu_image_carries_its_id_and_a_wrong_one_is_refused(tmp_path):
    from tinysched.boards import get_board
    from tinysched.build.firmware import build_firmware, image_id, image_id_in_elf, selftest_sources
    from tinysched.device.runner import measure_image, selftest_inputs
    from tinysched.errors import TinyschedError

    require("qemu")
    board = get_board("mps2-an386")
    ident = image_id(selftest_sources(), board)
    image = build_firmware(selftest_sources(), board, tmp_path)  # the id is compiled in by the build
    assert image_id_in_elf(image.elf) == ident == image.image_id
    inputs = selftest_inputs(1)
    result = measure_image(image, board, inputs, None, 300)
    assert result.hello["image_id"] == ident and result.inputs == 1
    with pytest.raises(
        TinyschedError, match=rf"runs image {ident} \(model selftest\), not the image just flashed"
    ):
        measure_image(image, board, inputs, None, 300, expected_image_id="0" * 16)


# ---- printable ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,shown",
    [
        ("conv_1/relu6", "conv_1/relu6"),
        ("café ∑ 日本", "café ∑ 日本"),  # visible non-ASCII stays
        ("a\x1b[31mred", "a\\x1b[31mred"),
        ("line1\nline2\r\tx\x00\x7f", "line1\\nline2\\r\\tx\\x00\\x7f"),
        ("c1 \x85 \x9b", "c1 \\u0085 \\u009b"),
        ("abc\u202edef\u2066\u200f", "abc\\u202edef\\u2066\\u200f"),  # bidi override, isolate, mark
        ("back\\slash", "back\\\\slash"),  # so an escape in the output is never ambiguous
        ("sep\u2028end", "sep\\u2028end"),
        (b"ok\xff\xfe\xc3\xa9", "ok\\xff\\xfeé"),  # bytes: UTF-8 decoded, the rest as \xNN
        ("x\udcff", "x\\xff"),  # a surrogateescape'd byte (os.fsdecode)
    ],
)
def test_printable_escapes(raw, shown):
    from tinysched.text import printable

    assert printable(raw) == shown


def test_printable_shortens_without_splitting_an_escape():
    from tinysched.text import printable

    s = "a" * 50 + "\x1b" * 10 + "z" * 50
    mid = printable(s, 40)
    assert mid == "a" * 20 + "…" + "z" * 19
    end = printable(s, 40, cut="end")
    assert end == "a" * 39 + "…"
    cut_in_escape = printable("ab" + "\x1b" * 20, 10, cut="end")
    assert cut_in_escape == "ab\\x1b…"  # the next \x1b would not fit whole
    assert printable("x" * 500, None) == "x" * 500
    assert printable("short", 5) == "short"


def test_printable_path_keeps_the_exact_bytes(tmp_path):
    import os

    from tinysched.text import printable_path

    name = os.fsdecode(b"model\xff\x1b[2J.tflite")
    assert printable_path(Path("/models") / name) == "/models/model\\xff\\x1b[2J.tflite"
    assert printable_path(b"/m/\xe2\x80\xaeevil") == "/m/\\u202eevil"
    long = printable_path("/very/" + "deep/" * 60 + "model.tflite", 60)
    assert len(long) == 60 and long.startswith("/very/deep") and long.endswith("model.tflite")


@pytest.mark.qemu
def test_concurrent_qemus_each_reach_their_own_device(tmp_path):
    """run_qemu binds the UART's socket itself and hands it to QEMU, so two QEMUs started at once
    cannot end up on one port (the cause of a "no hello"/"no acknowledgement" under parallel runs)."""
    from concurrent.futures import ThreadPoolExecutor

    from tinysched.boards import get_board
    from tinysched.build.firmware import build_firmware, selftest_sources
    from tinysched.device.runner import connect_qemu, run_qemu

    require("qemu")
    board = get_board("mps2-an386")
    images = {
        arena: build_firmware(
            selftest_sources(), board, tmp_path / str(arena), defines=[f"-DSELFTEST_ARENA={arena}"]
        )
        for arena in (300, 400, 500, 600)
    }

    def hello_of(arena):
        with run_qemu(board, images[arena].elf) as session, connect_qemu(session) as link:
            # as measure_image does: the boot hello, or (after 3 s without it) the answer to a QUERY
            return link.wait_hello(timeout=30, first_query=3.0).arena_bytes

    for _ in range(3):  # the old free-port race hit about one round in five
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(hello_of, images)) == list(images)


def test_one_line_escapes_every_line_break_and_is_idempotent_on_printable_output():
    from tinysched.text import one_line, printable

    assert (
        one_line("qemu failed:\n$ cmd\x1b[2J\r\n\u202elog") == "qemu failed:\\n$ cmd\\x1b[2J\\r\\n\\u202elog"
    )
    once = printable("a\\b\x1bc\n")
    assert one_line(f"x: {once}") == f"x: {once}"


def test_first_error_line_is_the_diagnostic_not_its_context():
    from tinysched.text import first_error_line

    gcc = (
        "In file included from m.c:3:\n"
        "In function 'ts_window_slide',\n"
        "    inlined from 'm_invoke' at m.c:40:5:\n"
        "w.h:12:5: error: 'memmove' forming offset [320, 367] is out of the bounds [0, 320] [-Werror=array-bounds]\n"
        "   12 |     memmove(dst, src, n);\n"
        "cc1: all warnings being treated as errors\n"
    )
    assert first_error_line(gcc).startswith("w.h:12:5: error: 'memmove' forming offset [320, 367]")
    assert first_error_line("ld: region `RAM' overflowed by 12 bytes\ncollect2: error: ld returned 1") == (
        "ld: region `RAM' overflowed by 12 bytes"
    )
    assert first_error_line("") == "no output" and first_error_line("x\x1b[2J\n") == "x\\x1b[2J"


def test_result_carries_per_step_counts_and_outputs_and_refuses_a_short_profile():
    from tinysched.device.link import RunResult, encode_result, parse_result

    outputs = ((18432, 0xDEADBEEF), (0, 0), (40, 7))
    r = RunResult(
        0, True, True, 1000, 64, 64, 0, 100, 200, outputs=(b"\x01\x02",), step_ticks=(600, 300, 100),
        step_outputs=outputs,
    )  # fmt: skip
    back = parse_result(encode_result(r), [2])
    assert back.step_ticks == (600, 300, 100) and back.step_outputs == outputs
    with pytest.raises(LinkError, match="declares 3 steps and carries 32 bytes"):
        parse_result(encode_result(r)[:-16], [2])  # the members, region count, last step's CRC cut off


def test_a_split_arena_reports_each_region_in_hello_and_result():
    from tinysched.device.link import RunResult, encode_result, parse_result

    hello = Hello(**{**HELLO.__dict__, "regions": ((0x20000000, 8192), (0x60000000, 10240))})
    assert parse_hello(encode_hello(hello)).regions == ((0x20000000, 8192), (0x60000000, 10240))
    r = RunResult(
        0, True, True, 1000, 18432, 18000, 0, 100, 200, outputs=(b"\x01\x02",), step_ticks=(5,),
        region_high_water=(8192, 10240), region_touched=(8000, 10000),
    )  # fmt: skip
    back = parse_result(encode_result(r), [2])
    assert (back.region_high_water, back.region_touched) == ((8192, 10240), (8000, 10000))
    with pytest.raises(LinkError, match="declares 2 arena regions and carries 12 bytes for them"):
        parse_result(encode_result(r)[:-12], [2])  # the members (8 bytes) and 4 of the regions'


def test_result_carries_the_streamed_members_counts_after_the_regions():
    from tinysched.device.link import RunResult, encode_result, parse_result

    members = ((0, 5000, 32), (0, 7000, 32), (2, 900, 16))
    r = RunResult(
        0, True, True, 1000, 64, 64, 0, 100, 200, outputs=(b"\x01\x02",), step_ticks=(13000, 5, 1000),
        region_high_water=(64,), region_touched=(60,), member_ticks=members, member_hook_ticks=33,
    )  # fmt: skip
    back = parse_result(encode_result(r), [2])
    assert back.member_ticks == members and back.member_hook_ticks == 33
    assert (back.step_ticks, back.region_high_water) == ((13000, 5, 1000), (64,))
    with pytest.raises(LinkError, match="declares 3 streamed members and carries 24 bytes"):
        parse_result(encode_result(r)[:-12], [2])
    with pytest.raises(LinkError, match="member count and hook ticks are missing"):
        parse_result(encode_result(r)[:-44], [2])  # a protocol-5 result: nothing after the regions
