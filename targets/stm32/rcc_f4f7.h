/*
 * rcc_f4f7.h - clock tree set-up shared by STM32F4 and STM32F7 (same RCC, PWR and FLASH layout).
 *
 * From HSI (16 MHz): PLL input = 16 MHz / M, VCO = input * N, SYSCLK = VCO / P; AHB undivided,
 * APB1 and APB2 divided as the board says. Above 168 MHz (F4) / 180 MHz (F7) the regulator's
 * over-drive must be on, and the flash needs the board's number of wait states.
 *
 * RCC (0x40023800): CR +0x00 (HSION 0, HSIRDY 1, PLLON 24, PLLRDY 25), PLLCFGR +0x04 (M 5:0,
 * N 14:6, P 17:16 as P/2-1, SRC 22 = 0 for HSI, Q 27:24), CFGR +0x08 (SW 1:0, SWS 3:2, PPRE1 12:10,
 * PPRE2 15:13), AHB1ENR +0x30, APB1ENR +0x40 (PWREN 28), APB2ENR +0x44.
 * PWR (0x40007000): CR +0x00 (VOS 15:14, ODEN 16, ODSWEN 17), CSR +0x04 (ODRDY 16, ODSWRDY 17).
 * FLASH ACR (0x40023C00): LATENCY 3:0, PRFTEN 8, (F4) ICEN 9 DCEN 10, (F7) ARTEN 9.
 *
 * Every wait is bounded (clock_wait.h): a step that does not complete leaves the core on HSI
 * 16 MHz, the reset clock, and ts_clock_report() says which flag did not come up.
 */
#ifndef TS_RCC_F4F7_H
#define TS_RCC_F4F7_H

#include "ts_target.h"

#define TS_RESET_HZ 16000000u
#define TS_RESET_CLOCK_NAME "HSI"
#include "clock_wait.h"

#define RCC_BASE 0x40023800u
#define RCC_CR (RCC_BASE + 0x00u)
#define RCC_PLLCFGR (RCC_BASE + 0x04u)
#define RCC_CFGR (RCC_BASE + 0x08u)
#define RCC_AHB1ENR (RCC_BASE + 0x30u)
#define RCC_APB1ENR (RCC_BASE + 0x40u)
#define RCC_APB2ENR (RCC_BASE + 0x44u)
#define PWR_CR (0x40007000u + 0x00u)
#define PWR_CSR (0x40007000u + 0x04u)
#define FLASH_ACR 0x40023C00u

#define TS_GPIO_BASE(port) (0x40020000u + 0x400u * (port))

/* APB prescaler field for a divisor of 1, 2, 4, 8 or 16 */
#define TS_PPRE(div) ((div) == 1 ? 0u : (div) == 2 ? 4u : (div) == 4 ? 5u : (div) == 8 ? 6u : 7u)

/* Back to the reset clock after a failed set-up: SYSCLK = HSI, APB prescalers 1. The flash wait
 * states stay as set (more than the reset clock needs is safe). */
static inline void ts_clock_fallback_f4f7(void)
{
    TS_REG32(RCC_CFGR) &= ~(3u | (7u << 10) | (7u << 13)); /* SW = HSI, PPRE1 = PPRE2 = 1 */
    for (uint32_t n = 0; n < TS_CLOCK_WAIT_POLLS && (TS_REG32(RCC_CFGR) & (3u << 2)) != 0u; n++) {
    }
    clock_now_hz = TS_RESET_HZ;
}

/* The PLL from HSI; returns 1 when SYSCLK runs from it at TS_CPU_HZ, else 0 (on the reset clock). */
static inline int ts_clock_init_f4f7(uint32_t flash_acr_cache_bits)
{
#if defined(TS_CLOCK_PLL)
    TS_REG32(RCC_APB1ENR) |= 1u << 28; /* PWREN */
    (void)TS_REG32(RCC_APB1ENR);
    TS_REG32(PWR_CR) |= 3u << 14; /* VOS: scale 1 (set while the PLL is off) */
    TS_REG32(RCC_CR) |= 1u << 0;  /* HSION */
    if (!ts_wait_set(RCC_CR, 1u << 1, "HSIRDY (RCC_CR bit 1)")) {
        ts_clock_fallback_f4f7();
        return 0;
    }
    /* PLLR (bits 30:28, F446/F76x) keeps its reset value: 0 and 1 are invalid settings. */
    TS_REG32(RCC_PLLCFGR) = (TS_REG32(RCC_PLLCFGR) & 0xF0000000u) | (uint32_t)TS_PLL_M | ((uint32_t)TS_PLL_N << 6) |
                            ((uint32_t)(TS_PLL_P / 2 - 1) << 16) | ((uint32_t)TS_PLL_Q << 24);
    TS_REG32(RCC_CR) |= 1u << 24; /* PLLON */
    if (!ts_wait_set(RCC_CR, 1u << 25, "PLLRDY (RCC_CR bit 25)")) {
        ts_clock_fallback_f4f7();
        return 0;
    }
#if TS_OVERDRIVE
    TS_REG32(PWR_CR) |= 1u << 16; /* ODEN */
    if (!ts_wait_set(PWR_CSR, 1u << 16, "ODRDY (PWR_CSR bit 16, over-drive)")) {
        ts_clock_fallback_f4f7();
        return 0;
    }
    TS_REG32(PWR_CR) |= 1u << 17; /* ODSWEN */
    if (!ts_wait_set(PWR_CSR, 1u << 17, "ODSWRDY (PWR_CSR bit 17, over-drive switch)")) {
        ts_clock_fallback_f4f7();
        return 0;
    }
#endif
    TS_REG32(FLASH_ACR) = (uint32_t)TS_FLASH_LATENCY | flash_acr_cache_bits;
    if (!ts_wait_field(FLASH_ACR, 0xFu, (uint32_t)TS_FLASH_LATENCY, "FLASH_ACR LATENCY (bits 3:0)")) {
        ts_clock_fallback_f4f7();
        return 0;
    }
    TS_REG32(RCC_CFGR) = (TS_REG32(RCC_CFGR) & ~((7u << 10) | (7u << 13) | (0xFu << 4))) |
                         (TS_PPRE(TS_APB1_DIV) << 10) | (TS_PPRE(TS_APB2_DIV) << 13);
    TS_REG32(RCC_CFGR) = (TS_REG32(RCC_CFGR) & ~3u) | 2u; /* SW = PLL */
    if (!ts_wait_field(RCC_CFGR, 3u << 2, 2u << 2, "SWS = PLL (RCC_CFGR bits 3:2)")) {
        ts_clock_fallback_f4f7();
        return 0;
    }
    clock_now_hz = TS_CPU_HZ;
    return 1;
#else
    (void)flash_acr_cache_bits; /* stays on HSI 16 MHz, zero wait states */
    clock_now_hz = TS_CPU_HZ;
    return 1;
#endif
}

/* The clock feeding the harness USART: the board's, or HSI when the set-up fell back. */
static inline uint32_t ts_uart_clock_f4f7(int clock_ok)
{
    return clock_ok ? (uint32_t)TS_UART_CLOCK_HZ : (uint32_t)TS_RESET_HZ;
}

static inline void ts_uart_clock_enable_f4f7(void)
{
    TS_REG32(RCC_AHB1ENR) |= (1u << TS_UART_TX_PORT) | (1u << TS_UART_RX_PORT);
#if TS_UART_BASE == 0x40011000u /* USART1 */
    TS_REG32(RCC_APB2ENR) |= 1u << 4;
#elif TS_UART_BASE == 0x40004400u /* USART2 */
    TS_REG32(RCC_APB1ENR) |= 1u << 17;
#elif TS_UART_BASE == 0x40004800u /* USART3 */
    TS_REG32(RCC_APB1ENR) |= 1u << 18;
#elif TS_UART_BASE == 0x40011400u /* USART6 */
    TS_REG32(RCC_APB2ENR) |= 1u << 5;
#else
#error "stm32f4/f7: no clock-enable bit known for this TS_UART_BASE"
#endif
    (void)TS_REG32(RCC_APB1ENR);
}

#endif /* TS_RCC_F4F7_H */
