/* stm32f4/target.c - STM32F4 (e.g. STM32F446RE): PLL from HSI, over-drive, USART v1 layout. */
#include <stdint.h>

#include "ts_target.h"

#define TS_USART_V1 1
#include "../stm32/rcc_f4f7.h"
#include "../stm32/stm32_uart.h"

void ts_target_init(void)
{
    /* FLASH ACR: PRFTEN | ICEN | DCEN */
    int clock_ok = ts_clock_init_f4f7((1u << 8) | (1u << 9) | (1u << 10));
    ts_uart_clock_enable_f4f7();
    ts_stm32_usart_init(ts_uart_clock_f4f7(clock_ok));
    ts_clock_report();
}
