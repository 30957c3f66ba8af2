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

from tinysched.link import (
    MSG_ACK,
    MSG_FAULT,
    MSG_HELLO,
    MSG_NAK,
    MSG_QUERY,
    MSG_RESULT,
    MSG_RUN,
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
    protocol=1, counter="systick", cpu_hz=25_000_000, arena_bytes=300, arena_alignment=16,
    arena_address=0x20000000, state_bytes=0, stack_bytes=16384, free_ram_bytes=100000, watched_bytes=368,
    input_bytes=(4,), output_bytes=(2,), board="fake-board", build_id="fake-1", model="fake",
    touched_exact=True, buffers_ok=True,
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
    (junk bytes before the answer), "slow" (result after a pause), "late-dup" (a stale frame first).
    """

    def __init__(self, faults=(), hello=True, hello_msg=HELLO):
        self.faults = list(faults)
        self.hello = hello
        self.hello_payload = encode_hello(hello_msg)
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
        conn.sendall(encode_frame(MSG_ACK, f.seq))
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

    def make(faults=(), hello=True, hello_msg=HELLO, **link_kwargs):
        dev = FakeDevice(faults, hello, hello_msg)
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
