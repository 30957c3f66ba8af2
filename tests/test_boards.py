"""Board database: every entry loads, aliases resolve, unknown names list the known ones."""

from __future__ import annotations

import pytest

from tinysched.boards import all_boards, get_board, normalise
from tinysched.errors import TinyschedError

REQUIRED = [
    "nucleo-f767",
    "nucleo-f446re",
    "nucleo-l476rg",
    "nucleo-h743zi",
    "disco-l475-iot01a",
    "mps2-an386",
    "mps2-an500",
    "mps2-an505",
    "mps3-an547",
    "netduinoplus2",
]


def test_required_boards_present():
    names = {b.name for b in all_boards()}
    assert set(REQUIRED) <= names


def test_nucleo_f767_facts():
    b = get_board("nucleo-f767")
    assert b.mcu == "STM32F767ZI" and b.core == "cortex-m7"
    assert b.fpu == "fpv5-d16" and b.float_abi == "hard"  # double-precision FPU
    assert b.region("flash").length == 2 * 1024 * 1024
    # the chip's RAMs as it has them: DTCM (data, stack), SRAM1 (the arena), SRAM2, contiguous
    assert [(r.name, r.origin, r.length, r.speed) for r in b.pool_regions] == [
        ("dtcm", 0x20000000, 128 * 1024, 1),
        ("sram1", 0x20020000, 368 * 1024, 2),
        ("sram2", 0x2007C000, 16 * 1024, 2),
    ]
    assert b.placed("data").name == "dtcm" and b.placed("arena").name == "sram1"
    assert b.ram_bytes == 512 * 1024
    assert b.uart["peripheral"] == "USART3" and b.uart["baud"] == 115200
    assert b.emulated_by == "mps2-an500"
    assert (0x0483, 0x374B) in b.usb
    assert b.flash["openocd_target"] and b.flash["pyocd_target"]


@pytest.mark.parametrize(
    "alias,name",
    [
        ("nucleo_f767zi", "nucleo-f767"),
        ("NUCLEO-F767ZI", "nucleo-f767"),
        ("nucleo_h743zi", "nucleo-h743zi"),
        ("disco_l475_iot1", "disco-l475-iot01a"),
        ("disco_l475vg_iot01a", "disco-l475-iot01a"),
        ("mps2/an500", "mps2-an500"),
        ("mps2/an386", "mps2-an386"),
        ("mps3/corstone300/an547", "mps3-an547"),
        ("nucleo_l476rg", "nucleo-l476rg"),
    ],
)
def test_aliases(alias, name):
    assert get_board(alias).name == name


def test_unknown_board_lists_known_ones():
    with pytest.raises(TinyschedError) as err:
        get_board("arduino-uno")
    message = str(err.value)
    assert "arduino-uno" in message
    for name in REQUIRED:
        assert name in message


@pytest.mark.parametrize("board", all_boards(), ids=lambda b: b.name)
def test_entry_is_complete_and_consistent(board):
    assert board.cflags and f"-mcpu={board.core}" in board.cflags
    assert f"-mfloat-abi={board.float_abi}" in board.cflags
    assert board.cpu_hz > 0 and board.stack_bytes % 8 == 0
    for key in ("text", "rodata", "data", "arena"):
        assert board.placed(key).length > 0
    assert board.placed("data").kind == "ram" and board.placed("arena").kind == "ram"
    regions = sorted(board.memory, key=lambda r: r.origin)
    for a, b in zip(regions, regions[1:], strict=False):
        assert a.end <= b.origin, f"{a.name} overlaps {b.name}"
    assert int(board.uart["baud"]) > 0 and int(board.uart["base"]) > 0
    if board.emulated:
        assert board.qemu["machine"] and board.counter == "systick-icount"
    else:
        stand_in = board.stand_in()
        assert stand_in.emulated and stand_in.core == board.core and stand_in.cflags == board.cflags
        assert board.usb and board.flash
        assert board.uart.get("tx") and board.uart.get("rx")


def test_normalise():
    assert normalise("Mps2/AN500") == normalise("mps2_an500") == "mps2-an500"


def test_boards_command(capsys):
    from tinysched.cli import main

    assert main(["boards"]) == 0
    out = capsys.readouterr().out
    assert "nucleo-f767" in out and "emulated by mps2-an500" in out
    assert main(["boards", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert {d["name"] for d in data} >= set(REQUIRED)


def test_netduinoplus2_stands_in_for_nucleo_f446re():
    f446, nd = get_board("nucleo-f446re"), get_board("netduino_plus_2")
    assert f446.stand_ins == ("mps2-an386", "netduinoplus2") and f446.emulated_by == "mps2-an386"
    assert f446.stand_in().name == "mps2-an386" and f446.stand_in("netduinoplus2") is nd
    # the same family code, USART and pins, and a layout the F446's image fits in
    assert nd.family == f446.family == "stm32f4" and nd.cflags == f446.cflags
    assert {k: nd.uart[k] for k in ("base", "tx", "rx", "af")} == {
        k: f446.uart[k] for k in ("base", "tx", "rx", "af")
    }
    for what in ("text", "data", "arena"):
        mine, its = f446.placed(what), nd.placed(what)
        assert its.origin == mine.origin and its.length >= mine.length
    assert nd.qemu["machine"] == "netduinoplus2" and nd.serial_index == 1 and nd.systick_hz == 168_000_000
    assert get_board("mps2-an386").serial_index == 0 and get_board("mps2-an386").systick_hz == 25_000_000
    assert nd.summary()["stand_ins"] == [] and f446.summary()["stand_ins"] == ["mps2-an386", "netduinoplus2"]
    with pytest.raises(
        TinyschedError,
        match=r"mps2-an500 is not one of its stand-ins \(stand-ins: mps2-an386, netduinoplus2\)",
    ):
        f446.stand_in("mps2-an500")


@pytest.mark.parametrize(
    "emulated_by,message",
    [
        ("[mps2-an386, nucleo-f767]", "emulated_by 'nucleo-f767' is not an emulated board"),
        ("[]", "emulated_by must be a board name or a list of them"),
        ("[mps2-an386, mps2-an500]", "stand-in mps2-an500 has other cflags"),
    ],
)
def test_bad_stand_in_lists_are_refused(tmp_path, emulated_by, message):
    from tinysched.boards import boards_path

    text = boards_path().read_text()
    text = text.replace("emulated_by: [mps2-an386, netduinoplus2]", f"emulated_by: {emulated_by}")
    path = tmp_path / "boards.yaml"
    path.write_text(text)
    with pytest.raises(TinyschedError, match=message):
        get_board("nucleo-f446re", path)


@pytest.mark.parametrize("board", all_boards(), ids=lambda b: b.name)
def test_every_board_says_which_clock_the_firmware_sets(board):
    """A board on its reset clock or a fixed one says so; the PLL boards give the factors that make hz."""
    clock = board.clock
    source = str(clock["source"])
    if source == "hsi-pll" and board.family in ("stm32f4", "stm32f7"):
        assert 16_000_000 // clock["pll_m"] * clock["pll_n"] // clock["pll_p"] == board.cpu_hz
    elif source == "hsi-pll":  # stm32l4: HSI16 / M * N / R
        assert 16_000_000 // clock["pll_m"] * clock["pll_n"] // clock["pll_r"] == board.cpu_hz
    elif source in ("hsi", "fixed"):
        assert clock.get("note"), f"{board.name}: say which clock the firmware leaves the core on"
    else:
        assert source == "fpga"
