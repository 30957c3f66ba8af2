"""A C program run bare metal under QEMU with newlib's semihosting (stdio, files, exit code), for the
kernel harnesses that need no model: bench/bench_expand_dw.py (instructions by SysTick under
-icount) and tests/test_expand_dw_kernel.py (bit-exactness on the DSP and Helium cores).

The start: the vector table at 0 (the initial stack STACK_TOP, reset, SysTick counting its wraps in
`wraps`), the FPU (and MVE) enabled where the core has one, main's exit code as QEMU's; with CASES
defined, main gets it as argv[1].
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

STARTUP = r"""
#include <stdint.h>
#include <stdlib.h>
extern int main(int argc, char **argv);
extern void initialise_monitor_handles(void);
void _init(void);
void _fini(void);
void _init(void) {}
void _fini(void) {}
volatile uint32_t wraps; /* SysTick's wraps: a clock under -icount */
static void systick(void) { wraps++; }
#ifdef CASES
static char name[] = "harness", cases[] = CASES;
static char *args[] = {name, cases, NULL};
#define ARGC 2
#else
static char *args[] = {NULL};
#define ARGC 0
#endif
static void reset(void)
{
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CPACR: CP10, CP11 full access */
    __asm volatile("dsb\n isb");
#endif
    initialise_monitor_handles();
    exit(main(ARGC, args));
}
__attribute__((section(".vectors"), used)) const void *const vectors[16] = {(const void *)STACK_TOP,
    (const void *)reset, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (const void *)systick};
"""


def build(
    sources: Sequence[Path],
    flags: Sequence[str],
    stack_top: int,
    elf: Path,
    defines: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`sources` with the start above linked at 0 (code from 0x400) into `elf`; the compiler's result."""
    startup = elf.with_name(elf.stem + "_startup.c")
    startup.write_text(STARTUP)
    cmd = ["arm-none-eabi-gcc", *flags, f"-DSTACK_TOP={stack_top:#x}u", *(f"-D{d}" for d in defines),
           "--specs=rdimon.specs", "-nostartfiles", "-Wl,-e,0", "-Wl,--section-start=.vectors=0",
           "-Wl,-Ttext-segment=0x400", "-Wl,--no-warn-rwx-segments", str(startup), *map(str, sources),
           "-o", str(elf)]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True)


def run(machine: str, elf: Path, icount: bool = False) -> subprocess.CompletedProcess[str]:
    """`elf` on QEMU's `machine`, semihosting on (with `icount`: -icount shift=6, for SysTick counts)."""
    cmd = ["qemu-system-arm", "-M", machine, "-nographic", "-semihosting", "-monitor", "none", "-serial", "none",
           *(["-icount", "shift=6,align=off,sleep=off"] if icount else []), "-kernel", str(elf)]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)
