/*
 * counter.c - timing one inference.
 *
 * Cores with a DWT (Cortex-M3/M4/M7/M33/M55 as ST and Arm ship them) count core cycles in
 * DWT_CYCCNT. The DWT is optional, and QEMU does not model it (its registers read as zero), so
 * ts_counter_init() checks that CYCCNT really advances and otherwise falls back to SysTick.
 *
 * SysTick counts down from a 24-bit reload on the core clock; its interrupt counts the wraps so a
 * long inference still gets a 64-bit count. On silicon that is core cycles. Under QEMU, which has
 * no cycle model, the SysTick follows QEMU's virtual clock, and with `-icount shift=N` that clock
 * advances 2^N ns per executed instruction: the host converts ticks to instructions (see
 * tinysched/device/runner.py). Builds for emulated boards define TS_COUNTER_SYSTICK and never try the DWT.
 */
#include <stdint.h>

#include "ts_target.h"

#define DEMCR 0xE000EDFCu
#define DWT_CTRL 0xE0001000u
#define DWT_CYCCNT 0xE0001004u
#define DWT_LAR 0xE0001FB0u
#define SYST_CSR 0xE000E010u
#define SYST_RVR 0xE000E014u
#define SYST_CVR 0xE000E018u
#define SCB_ICSR 0xE000ED04u
#define ICSR_PENDSTSET (1u << 26)
#define SYST_RELOAD 0x00FFFFFFu

static int counter_kind = TS_COUNTER_NONE;
static uint32_t dwt_start;
static volatile uint32_t systick_wraps;

void SysTick_Handler(void)
{
    systick_wraps++;
}

#if defined(TS_COUNTER_DWT)
static int dwt_works(void)
{
    TS_REG32(DEMCR) |= 1u << 24; /* TRCENA */
    TS_REG32(DWT_LAR) = 0xC5ACCE55u; /* unlock where a lock is implemented (Cortex-M7) */
    TS_REG32(DWT_CYCCNT) = 0;
    TS_REG32(DWT_CTRL) |= 1u; /* CYCCNTENA */
    uint32_t before = TS_REG32(DWT_CYCCNT);
    for (volatile int i = 0; i < 16; i++) {
    }
    return TS_REG32(DWT_CYCCNT) != before;
}
#endif

int ts_counter_init(void)
{
#if defined(TS_COUNTER_DWT)
    if (dwt_works()) {
        counter_kind = TS_COUNTER_KIND_DWT;
        return counter_kind;
    }
#endif
    counter_kind = TS_COUNTER_KIND_SYSTICK;
    TS_REG32(SYST_CSR) = 0;
    return counter_kind;
}

void ts_counter_start(void)
{
    if (counter_kind == TS_COUNTER_KIND_DWT) {
        dwt_start = TS_REG32(DWT_CYCCNT);
        return;
    }
    TS_REG32(SYST_CSR) = 0;
    TS_REG32(SYST_RVR) = SYST_RELOAD;
    TS_REG32(SYST_CVR) = 0; /* any write clears it; it reloads on the next tick */
    systick_wraps = 0;
    TS_REG32(SYST_CSR) = 0x7u; /* ENABLE | TICKINT | CLKSOURCE = core clock */
}

static uint64_t systick_elapsed(uint32_t value, uint32_t wraps)
{
    /* The write in ts_counter_start left 0; the first tick reloads SYST_RELOAD and each wrap
     * (1 -> 0) is one interrupt. So after k ticks, k = wraps * 2^24 + ((2^24 - value) mod 2^24). */
    return (uint64_t)wraps * (SYST_RELOAD + 1u) + ((SYST_RELOAD + 1u - value) & SYST_RELOAD);
}

/* With interrupts off: the SysTick value and the wraps counted so far, a wrap whose interrupt is
 * still pending included (then the value is read again). */
static void systick_read(uint32_t *value, uint32_t *wraps)
{
    *value = TS_REG32(SYST_CVR);
    *wraps = systick_wraps;
    if (TS_REG32(SCB_ICSR) & ICSR_PENDSTSET) {
        *value = TS_REG32(SYST_CVR);
        *wraps += 1u;
    }
}

uint64_t ts_counter_now(void)
{
    if (counter_kind == TS_COUNTER_KIND_DWT) {
        return (uint32_t)(TS_REG32(DWT_CYCCNT) - dwt_start);
    }
    uint32_t value, wraps;
    __asm volatile("cpsid i" ::: "memory");
    systick_read(&value, &wraps);
    __asm volatile("cpsie i" ::: "memory");
    return systick_elapsed(value, wraps);
}

uint64_t ts_counter_stop(void)
{
    if (counter_kind == TS_COUNTER_KIND_DWT) {
        return ts_counter_now();
    }
    uint32_t value, wraps;
    __asm volatile("cpsid i" ::: "memory");
    systick_read(&value, &wraps);
    TS_REG32(SYST_CSR) = 0;
    TS_REG32(SCB_ICSR) = 1u << 25; /* PENDSTCLR */
    __asm volatile("cpsie i" ::: "memory");
    return systick_elapsed(value, wraps);
}
