/*
 * reset.c - reboot the core: board support the application calls (the harness after a fault or a
 * REBOOT message, start-up when main() returns).
 */
#include <stdint.h>

#include "ts_target.h"

#define SCB_AIRCR 0xE000ED0Cu

void ts_system_reset(void)
{
    __asm volatile("dsb" ::: "memory");
    TS_REG32(SCB_AIRCR) = (0x05FAu << 16) | (1u << 2); /* VECTKEY | SYSRESETREQ */
    __asm volatile("dsb" ::: "memory");
    for (;;) {
    }
}
