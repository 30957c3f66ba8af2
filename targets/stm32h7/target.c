/*
 * stm32h7/target.c - STM32H7 (STM32H743ZI): stays on the reset clock, HSI 64 MHz (APB1 64 MHz),
 * with the LDO supply configured as the reference manual asks once after reset. USART v2 layout.
 *
 * PWR (0x58024800): CR3 +0x0C (LDOEN 1, SCUEN 2), CSR1 +0x04 (ACTVOSRDY 13).
 * RCC (0x58024400): AHB4ENR +0xE0 (GPIOx), APB1LENR +0xE8 (USART2 17, USART3 18), APB2ENR +0xF0.
 *
 * The 480 MHz PLL set-up (VOS0 through SYSCFG over-drive, PLL1, four flash wait states, the D1/D2/D3
 * prescalers) is not done: boards.yaml says the board runs at 64 MHz, and so does every report. The
 * one wait there is (the regulator's ACTVOSRDY) is bounded and reported like the other families'.
 */
#include <stdint.h>

#include "ts_target.h"

#define PWR_CR3 (0x58024800u + 0x0Cu)
#define PWR_CSR1 (0x58024800u + 0x04u)
#define RCC_BASE 0x58024400u
#define RCC_AHB4ENR (RCC_BASE + 0xE0u)
#define RCC_APB1LENR (RCC_BASE + 0xE8u)
#define RCC_APB2ENR (RCC_BASE + 0xF0u)

#define TS_GPIO_BASE(port) (0x58020000u + 0x400u * (port))

#define TS_RESET_HZ 64000000u
#define TS_RESET_CLOCK_NAME "HSI"
#include "../stm32/clock_wait.h"
#include "../stm32/stm32_uart.h"

void ts_target_init(void)
{
    TS_REG32(PWR_CR3) = (TS_REG32(PWR_CR3) & ~7u) | (1u << 1) | (1u << 2); /* LDO supply */
    /* the core already runs on HSI 64 MHz, the clock the board entry names, whether or not it comes */
    (void)ts_wait_set(PWR_CSR1, 1u << 13, "ACTVOSRDY (PWR_CSR1 bit 13, LDO supply)");
    clock_now_hz = TS_CPU_HZ;
    TS_REG32(RCC_AHB4ENR) |= (1u << TS_UART_TX_PORT) | (1u << TS_UART_RX_PORT);
#if TS_UART_BASE == 0x40011000u /* USART1 */
    TS_REG32(RCC_APB2ENR) |= 1u << 4;
#elif TS_UART_BASE == 0x40004400u /* USART2 */
    TS_REG32(RCC_APB1LENR) |= 1u << 17;
#elif TS_UART_BASE == 0x40004800u /* USART3 */
    TS_REG32(RCC_APB1LENR) |= 1u << 18;
#else
#error "stm32h7: no clock-enable bit known for this TS_UART_BASE"
#endif
    (void)TS_REG32(RCC_APB1LENR);
    ts_stm32_usart_init((uint32_t)TS_UART_CLOCK_HZ);
    ts_clock_report();
}
