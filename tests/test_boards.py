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
]


def test_required_boards_present():
    names = {b.name for b in all_boards()}
    assert set(REQUIRED) <= names


def test_nucleo_f767_facts():
    b = get_board("nucleo-f767")
    assert b.mcu == "STM32F767ZI" and b.core == "cortex-m7"
    assert b.fpu == "fpv5-d16" and b.float_abi == "hard"  # double-precision FPU
    assert b.region("flash").length == 2 * 1024 * 1024
    assert b.placed("data").length == 512 * 1024
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
