/*
 * startup.c - vector table and reset handler for every Cortex-M target of tinysched.
 *
 * The reset handler enables the FPU (when the build uses one), sets the stack limit register on
 * Armv8-M cores, copies .data from its load image, zeroes .bss and the arena section, brings the
 * clocks and the harness UART up (ts_target_init) and calls the application's entry, main().
 *
 * Fault handlers hand the stacked PC and the fault status registers to the application's fault hook,
 * ts_fault(). Start-up calls the application only through these two hooks (declared in ts_target.h)
 * and offers it nothing of its own: what the application calls (ts_system_reset, the UART, the
 * counter) is board support, in the other files of targets/.
 */
#include <stdint.h>

#include "ts_target.h"

extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];
extern uint32_t __arena_start[], __arena_end[];

void Reset_Handler(void);
void NMI_Handler(void);
void HardFault_Handler(void);
void MemManage_Handler(void);
void BusFault_Handler(void);
void UsageFault_Handler(void);
void SecureFault_Handler(void);
void Default_Handler(void);
void SVC_Handler(void) __attribute__((weak, alias("Default_Handler")));
void DebugMon_Handler(void) __attribute__((weak, alias("Default_Handler")));
void PendSV_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));
void ts_fault_entry(const uint32_t *frame, uint32_t kind) __attribute__((noreturn, used));

typedef void (*ts_vector)(void);

/* 16 system exceptions + 16 external interrupts; the harness enables no external interrupt, so
 * their entries only catch the unexpected. */
__attribute__((section(".vectors"), used)) const ts_vector ts_vector_table[32] = {
    (ts_vector)(uintptr_t)__stack_top,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    SecureFault_Handler, /* reserved before Armv8-M */
    0,
    0,
    0,
    SVC_Handler,
    DebugMon_Handler,
    0,
    PendSV_Handler,
    SysTick_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, Default_Handler,
};

#define SCB_CPACR 0xE000ED88u
#define SCB_CFSR 0xE000ED28u
#define SCB_HFSR 0xE000ED2Cu

static void copy_words(uint32_t *dst, const uint32_t *src, const uint32_t *end)
{
    while (dst < end) {
        *dst++ = *src++;
    }
}

static void zero_words(uint32_t *dst, const uint32_t *end)
{
    while (dst < end) {
        *dst++ = 0;
    }
}

__attribute__((noreturn)) void Reset_Handler(void)
{
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    /* CP10 and CP11 full access: the FPU (and Helium on Armv8.1-M). */
    TS_REG32(SCB_CPACR) |= 0xFu << 20;
    __asm volatile("dsb\n\tisb" ::: "memory");
#endif
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
    /* A stack overflow faults (UsageFault STKOF) instead of silently corrupting memory. */
    __asm volatile("msr msplim, %0" ::"r"(__stack_limit));
#endif
    copy_words(__data_start, __data_load, __data_end);
    zero_words(__bss_start, __bss_end);
    zero_words(__arena_start, __arena_end);
    ts_target_init();
    (void)main();
    ts_system_reset();
}

void ts_fault_entry(const uint32_t *frame, uint32_t kind)
{
    ts_fault(frame[6], TS_REG32(SCB_CFSR), TS_REG32(SCB_HFSR), kind);
}

/* Each fault handler finds the exception frame (MSP or PSP, from EXC_RETURN bit 2) and passes it,
 * with the exception number, to ts_fault_entry. */
#define TS_FAULT_HANDLER(name, number)                                                             \
    __attribute__((naked)) void name(void)                                                         \
    {                                                                                              \
        __asm volatile("tst lr, #4\n\t"                                                            \
                       "ite eq\n\t"                                                                \
                       "mrseq r0, msp\n\t"                                                         \
                       "mrsne r0, psp\n\t"                                                         \
                       "movs r1, #" #number "\n\t"                                                 \
                       "b ts_fault_entry\n\t");                                                    \
    }

TS_FAULT_HANDLER(NMI_Handler, 2)
TS_FAULT_HANDLER(HardFault_Handler, 3)
TS_FAULT_HANDLER(MemManage_Handler, 4)
TS_FAULT_HANDLER(BusFault_Handler, 5)
TS_FAULT_HANDLER(UsageFault_Handler, 6)
TS_FAULT_HANDLER(SecureFault_Handler, 7)
TS_FAULT_HANDLER(Default_Handler, 0)
