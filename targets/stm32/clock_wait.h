/*
 * clock_wait.h - bounded waits for the STM32 clock set-up, and what happens when a clock does not
 * come up.
 *
 * Every wait on a ready flag polls at most TS_CLOCK_WAIT_POLLS times: 200,000 polls of a few cycles
 * each are tens of milliseconds at a reset clock, far above the start-up times the datasheets give
 * (a crystal oscillator a few ms, a PLL lock or the regulator's over-drive well under 1 ms). A flag
 * that does not come up in time stops the set-up there: the core stays on (or goes back to) its
 * reset clock, the APB prescalers go back to 1, the UART is set up for that clock, and
 * ts_clock_report() sends one text line saying which flag did not come up (a board without its
 * crystal, a bad PLL setting, or an emulator that does not model the RCC all end the same way).
 * The line is plain text before the first frame: a terminal shows it, and the host's frame decoder
 * skips it as it skips any junk between frames.
 *
 * The including family defines TS_RESET_HZ (its reset clock) and TS_RESET_CLOCK_NAME.
 */
#ifndef TS_CLOCK_WAIT_H
#define TS_CLOCK_WAIT_H

#include <stdint.h>

#include "ts_target.h"

#ifndef TS_CLOCK_WAIT_POLLS
#define TS_CLOCK_WAIT_POLLS 200000u
#endif

/* What did not come up (NULL: everything did), the register polled and its last value. */
static const char *clock_failed_flag;
static uint32_t clock_failed_reg;
static uint32_t clock_failed_value;
/* The core clock in use now: TS_RESET_HZ until the set-up has switched to the board's clock. */
static uint32_t clock_now_hz = TS_RESET_HZ;

/* Waits until (reg & mask) == value, at most TS_CLOCK_WAIT_POLLS reads; 0 (and the failure noted
 * under `flag`) when it did not happen. */
static inline int ts_wait_field(uint32_t reg, uint32_t mask, uint32_t value, const char *flag)
{
    for (uint32_t n = 0; n < TS_CLOCK_WAIT_POLLS; n++) {
        if ((TS_REG32(reg) & mask) == value) {
            return 1;
        }
    }
    clock_failed_flag = flag;
    clock_failed_reg = reg;
    clock_failed_value = TS_REG32(reg);
    return 0;
}

static inline int ts_wait_set(uint32_t reg, uint32_t mask, const char *flag)
{
    return ts_wait_field(reg, mask, mask, flag);
}

uint32_t ts_cpu_hz(void)
{
    return clock_now_hz;
}

const char *ts_clock_failure(void)
{
    return clock_failed_flag;
}

#endif /* TS_CLOCK_WAIT_H */
