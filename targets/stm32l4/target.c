/*
 * stm32l4/target.c - STM32L4 (STM32L476RG, STM32L475VG): PLL from HSI16 to 80 MHz, USART v2.
 *
 * RCC (0x40021000): CR +0x00 (HSION 8, HSIRDY 10, PLLON 24, PLLRDY 25), CFGR +0x08 (SW 1:0,
 * SWS 3:2, PPRE1 10:8, PPRE2 13:11), PLLCFGR +0x0C (SRC 1:0 = 2 for HSI16, M-1 6:4, N 14:8,
 * REN 24, R/2-1 26:25), AHB2ENR +0x4C (GPIOx), APB1ENR1 +0x58, APB2ENR +0x60.
 * FLASH ACR (0x40022000): LATENCY 2:0, PRFTEN 8, ICEN 9, DCEN 10. Voltage range 1 is the reset one.
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

#include "../stm32/stm32_uart.h"

static void wait_set(uint32_t reg, uint32_t mask)
{
    while ((TS_REG32(reg) & mask) != mask) {
    }
}

void ts_target_init(void)
{
#if defined(TS_CLOCK_PLL)
    TS_REG32(RCC_CR) |= 1u << 8; /* HSION */
    wait_set(RCC_CR, 1u << 10);
    TS_REG32(RCC_PLLCFGR) = 2u | ((uint32_t)(TS_PLL_M - 1) << 4) | ((uint32_t)TS_PLL_N << 8) | (1u << 24) |
                            ((uint32_t)(TS_PLL_R / 2 - 1) << 25);
    TS_REG32(RCC_CR) |= 1u << 24; /* PLLON */
    wait_set(RCC_CR, 1u << 25);
    TS_REG32(FLASH_ACR) = (uint32_t)TS_FLASH_LATENCY | (1u << 8) | (1u << 9) | (1u << 10);
    while ((TS_REG32(FLASH_ACR) & 7u) != (uint32_t)TS_FLASH_LATENCY) {
    }
    TS_REG32(RCC_CFGR) = (TS_REG32(RCC_CFGR) & ~((7u << 8) | (7u << 11) | (0xFu << 4))) |
                         (TS_PPRE(TS_APB1_DIV) << 8) | (TS_PPRE(TS_APB2_DIV) << 11);
    TS_REG32(RCC_CFGR) |= 3u; /* SW = PLL */
    while ((TS_REG32(RCC_CFGR) & (3u << 2)) != (3u << 2)) {
    }
#endif
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
    ts_stm32_usart_init();
}
