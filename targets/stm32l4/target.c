/*
 * stm32l4/target.c - STM32L4 (STM32L476RG, STM32L475VG): PLL from HSI16 to 80 MHz, USART v2.
 *
 * RCC (0x40021000): CR +0x00 (HSION 8, HSIRDY 10, PLLON 24, PLLRDY 25), CFGR +0x08 (SW 1:0,
 * SWS 3:2, PPRE1 10:8, PPRE2 13:11), PLLCFGR +0x0C (SRC 1:0 = 2 for HSI16, M-1 6:4, N 14:8,
 * REN 24, R/2-1 26:25), AHB2ENR +0x4C (GPIOx), APB1ENR1 +0x58, APB2ENR +0x60.
 * FLASH ACR (0x40022000): LATENCY 2:0, PRFTEN 8, ICEN 9, DCEN 10. Voltage range 1 is the reset one.
 *
 * The reset clock is MSI 4 MHz. Every wait is bounded (../stm32/clock_wait.h): a step that does not
 * complete leaves the core on MSI with the APB prescalers at 1, and the UART reports it.
 */
#include <stdint.h>

#include "ts_target.h"

#define RCC_BASE 0x40021000u
#define RCC_CR (RCC_BASE + 0x00u)
#define RCC_CFGR (RCC_BASE + 0x08u)
#define RCC_PLLCFGR (RCC_BASE + 0x0Cu)
#define RCC_AHB2ENR (RCC_BASE + 0x4Cu)
#define RCC_APB1ENR1 (RCC_BASE + 0x58u)
#define RCC_APB2ENR (RCC_BASE + 0x60u)
#define FLASH_ACR 0x40022000u

#define TS_GPIO_BASE(port) (0x48000000u + 0x400u * (port))
#define TS_PPRE(div) ((div) == 1 ? 0u : (div) == 2 ? 4u : (div) == 4 ? 5u : (div) == 8 ? 6u : 7u)

#define TS_RESET_HZ 4000000u
#define TS_RESET_CLOCK_NAME "MSI"
#include "../stm32/clock_wait.h"
#include "../stm32/stm32_uart.h"

/* Back to the reset clock: SYSCLK = MSI, APB prescalers 1 (more flash wait states are safe). */
static void clock_fallback(void)
{
    TS_REG32(RCC_CFGR) &= ~(3u | (7u << 8) | (7u << 11));
    for (uint32_t n = 0; n < TS_CLOCK_WAIT_POLLS && (TS_REG32(RCC_CFGR) & (3u << 2)) != 0u; n++) {
    }
    clock_now_hz = TS_RESET_HZ;
}

/* The PLL from HSI16; 1 when SYSCLK runs from it at TS_CPU_HZ, else 0 (on MSI). */
static int clock_init(void)
{
#if defined(TS_CLOCK_PLL)
    TS_REG32(RCC_CR) |= 1u << 8; /* HSION */
    if (!ts_wait_set(RCC_CR, 1u << 10, "HSIRDY (RCC_CR bit 10)")) {
        clock_fallback();
        return 0;
    }
    TS_REG32(RCC_PLLCFGR) = 2u | ((uint32_t)(TS_PLL_M - 1) << 4) | ((uint32_t)TS_PLL_N << 8) | (1u << 24) |
                            ((uint32_t)(TS_PLL_R / 2 - 1) << 25);
    TS_REG32(RCC_CR) |= 1u << 24; /* PLLON */
    if (!ts_wait_set(RCC_CR, 1u << 25, "PLLRDY (RCC_CR bit 25)")) {
        clock_fallback();
        return 0;
    }
    TS_REG32(FLASH_ACR) = (uint32_t)TS_FLASH_LATENCY | (1u << 8) | (1u << 9) | (1u << 10);
    if (!ts_wait_field(FLASH_ACR, 7u, (uint32_t)TS_FLASH_LATENCY, "FLASH_ACR LATENCY (bits 2:0)")) {
        clock_fallback();
        return 0;
    }
    TS_REG32(RCC_CFGR) = (TS_REG32(RCC_CFGR) & ~((7u << 8) | (7u << 11) | (0xFu << 4))) |
                         (TS_PPRE(TS_APB1_DIV) << 8) | (TS_PPRE(TS_APB2_DIV) << 11);
    TS_REG32(RCC_CFGR) |= 3u; /* SW = PLL */
    if (!ts_wait_field(RCC_CFGR, 3u << 2, 3u << 2, "SWS = PLL (RCC_CFGR bits 3:2)")) {
        clock_fallback();
        return 0;
    }
#endif
    clock_now_hz = TS_CPU_HZ;
    return 1;
}

void ts_target_init(void)
{
    int clock_ok = clock_init();
    TS_REG32(RCC_AHB2ENR) |= (1u << TS_UART_TX_PORT) | (1u << TS_UART_RX_PORT);
#if TS_UART_BASE == 0x40013800u /* USART1 */
    TS_REG32(RCC_APB2ENR) |= 1u << 14;
#elif TS_UART_BASE == 0x40004400u /* USART2 */
    TS_REG32(RCC_APB1ENR1) |= 1u << 17;
#elif TS_UART_BASE == 0x40004800u /* USART3 */
    TS_REG32(RCC_APB1ENR1) |= 1u << 18;
#else
#error "stm32l4: no clock-enable bit known for this TS_UART_BASE"
#endif
    (void)TS_REG32(RCC_APB1ENR1);
    ts_stm32_usart_init(clock_ok ? (uint32_t)TS_UART_CLOCK_HZ : (uint32_t)TS_RESET_HZ);
    ts_clock_report();
}
