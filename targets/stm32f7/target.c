/* stm32f7/target.c - STM32F7 (e.g. STM32F767ZI): PLL from HSI, over-drive, USART v2 layout. */
#include <stdint.h>

#include "ts_target.h"

#include "../stm32/rcc_f4f7.h"
#include "../stm32/stm32_uart.h"

void ts_target_init(void)
{
    /* FLASH ACR: PRFTEN | ARTEN. The L1 caches stay off: timing then depends on no cache state. */
    int clock_ok = ts_clock_init_f4f7((1u << 8) | (1u << 9));
    ts_uart_clock_enable_f4f7();
    ts_stm32_usart_init(ts_uart_clock_f4f7(clock_ok));
    ts_clock_report();
}
