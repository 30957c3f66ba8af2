/*
 * ts_target.h - what a target's board support gives the application (the device harness), and the
 * two hooks its start-up calls in the application.
 *
 * Every board is described by defines that tinysched/firmware.py derives from boards.yaml:
 *   TS_BOARD_NAME   "nucleo-f767"             TS_CPU_HZ       core clock in Hz
 *   TS_UART_BASE    UART peripheral address   TS_UART_BAUD    line speed
 *   TS_UART_CLOCK_HZ clock feeding the UART   TS_COUNTER_DWT / TS_COUNTER_SYSTICK
 * plus family-specific ones (pins, PLL factors) read only by targets/<family>/.
 */
#ifndef TS_TARGET_H
#define TS_TARGET_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TS_REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* Clocks and the harness UART; called once from the reset handler before main(). Never hangs:
 * every wait on a clock's ready flag is bounded, and a clock that does not come up leaves the core
 * on its reset clock, reported over the UART in one text line (targets/stm32/clock_wait.h). */
void ts_target_init(void);

/* The core clock in Hz that ts_target_init set up: TS_CPU_HZ, or the reset clock when the board's
 * clock did not come up. The harness sends this in its hello. */
uint32_t ts_cpu_hz(void);
/* NULL when the board's clock came up; else the name of the ready flag that did not. */
const char *ts_clock_failure(void);

/* Polled UART. getc blocks; rx_ready says whether a byte waits. */
void ts_uart_putc(uint8_t c);
int ts_uart_rx_ready(void);
uint8_t ts_uart_getc(void);
void ts_uart_flush(void);

/* Counter used to time one inference. */
enum {
    TS_COUNTER_NONE = 0,
    TS_COUNTER_KIND_DWT = 1,     /* DWT CYCCNT: core cycles */
    TS_COUNTER_KIND_SYSTICK = 2, /* SysTick on the core clock: cycles on silicon; under QEMU
                                  * -icount, ticks of the instruction-driven virtual clock */
};
/* Sets the counter up; returns its kind (the DWT falls back to SysTick when it does not count). */
int ts_counter_init(void);
void ts_counter_start(void);
/* Ticks since ts_counter_start (64 bits: SysTick wraps are counted by its interrupt). */
uint64_t ts_counter_stop(void);
/* Ticks since ts_counter_start, the counter left running (per-step profiling). */
uint64_t ts_counter_now(void);

/* Linker-script symbols (targets/linker.ld.j2). */
extern uint32_t __stack_limit[], __stack_top[];
extern uint8_t __heap_start[], __heap_end[];

/* Reboots the device (SCB AIRCR SYSRESETREQ; common/reset.c). */
void ts_system_reset(void) __attribute__((noreturn));

/* ---- the application's hooks: start-up (common/startup.c) calls these, the application defines
 * them; start-up is called by nothing. ---- */

/* The application's entry, called once by the reset handler after ts_target_init; the core is
 * reset (ts_system_reset) if it returns. */
int main(void);

/* Called by the fault handlers with the stacked PC and the fault status registers; the harness
 * reports it to the host. Must not return. */
void ts_fault(uint32_t pc, uint32_t cfsr, uint32_t hfsr, uint32_t kind) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif

#endif /* TS_TARGET_H */
