/* startup.c - this project's own Cortex-M start-up: the vector table, a reset handler that copies
 * .data, zeroes .bss and turns the FPU on, and an exit through Arm semihosting (QEMU ends with 0 on
 * success, 1 otherwise). */
#include <stdint.h>

#include "app.h"

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _estack[];
int main(void);

void app_exit(int code)
{
    register uint32_t op __asm__("r0") = 0x18u;                         /* SYS_EXIT */
    register uint32_t why __asm__("r1") = code == 0 ? 0x20026u : 0x20024u; /* ApplicationExit / RunTimeError */
    __asm__ volatile("bkpt 0xab" : : "r"(op), "r"(why) : "memory");
    for (;;) {
    }
}

void reset_handler(void)
{
    uint32_t *src = _sidata, *dst = _sdata;
    while (dst < _edata) {
        *dst++ = *src++;
    }
    for (dst = _sbss; dst < _ebss; ++dst) {
        *dst = 0u;
    }
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CPACR: CP10 and CP11 full access */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    app_exit(main());
}

void fault_handler(void)
{
    console_puts("\nFAULT\n");
    app_exit(99);
}

__attribute__((section(".vectors"), used)) const uintptr_t vectors[16] = {
    (uintptr_t)_estack,
    (uintptr_t)reset_handler,
    (uintptr_t)fault_handler, /* NMI */
    (uintptr_t)fault_handler, /* HardFault */
    (uintptr_t)fault_handler, /* MemManage */
    (uintptr_t)fault_handler, /* BusFault */
    (uintptr_t)fault_handler, /* UsageFault */
};
