/*
 * stm32_uart.h - GPIO alternate-function set-up and the polled USART shared by the STM32 families.
 *
 * Two USART register layouts exist:
 *   v1 (STM32F4):        SR +0x00, DR +0x04, BRR +0x08, CR1 +0x0C (UE bit 13, TE bit 3, RE bit 2)
 *   v2 (STM32F7/L4/H7):  CR1 +0x00 (UE bit 0, RE bit 2, TE bit 3), BRR +0x0C, ISR +0x1C, ICR +0x20,
 *                        RDR +0x24, TDR +0x28
 * Status bits are the same in both: RXNE bit 5, TC bit 6, TXE bit 7, ORE bit 3.
 * GPIO: MODER +0x00 (2 bits per pin, 0b10 = alternate function), OSPEEDR +0x08, PUPDR +0x0C,
 * AFRL +0x20 / AFRH +0x24 (4 bits per pin).
 *
 * The including family defines TS_GPIO_BASE(port) and the TS_UART_* pin defines come from the board.
 */
#ifndef TS_STM32_UART_H
#define TS_STM32_UART_H

#include <stdint.h>

#include "ts_target.h"

#define USART_RXNE (1u << 5)
#define USART_TC (1u << 6)
#define USART_TXE (1u << 7)
#define USART_ORE (1u << 3)

#if defined(TS_USART_V1)
#define USART_STATUS (TS_UART_BASE + 0x00u)
#define USART_RDR (TS_UART_BASE + 0x04u)
#define USART_TDR (TS_UART_BASE + 0x04u)
#define USART_BRR (TS_UART_BASE + 0x08u)
#define USART_CR1 (TS_UART_BASE + 0x0Cu)
#define USART_CR1_ENABLE ((1u << 13) | (1u << 3) | (1u << 2))
#else
#define USART_CR1 (TS_UART_BASE + 0x00u)
#define USART_BRR (TS_UART_BASE + 0x0Cu)
#define USART_STATUS (TS_UART_BASE + 0x1Cu)
#define USART_ICR (TS_UART_BASE + 0x20u)
#define USART_RDR (TS_UART_BASE + 0x24u)
#define USART_TDR (TS_UART_BASE + 0x28u)
#define USART_CR1_ENABLE ((1u << 0) | (1u << 3) | (1u << 2))
#endif

static inline void ts_gpio_alternate(uint32_t port, uint32_t pin, uint32_t af)
{
    uint32_t base = TS_GPIO_BASE(port);
    uint32_t moder = TS_REG32(base + 0x00u);
    moder &= ~(3u << (2u * pin));
    moder |= 2u << (2u * pin);
    TS_REG32(base + 0x00u) = moder;
    TS_REG32(base + 0x08u) |= 2u << (2u * pin); /* high speed */
    uint32_t afr = base + (pin < 8u ? 0x20u : 0x24u);
    uint32_t shift = 4u * (pin & 7u);
    TS_REG32(afr) = (TS_REG32(afr) & ~(0xFu << shift)) | (af << shift);
}

static inline void ts_stm32_usart_init(void)
{
    ts_gpio_alternate(TS_UART_TX_PORT, TS_UART_TX_PIN, TS_UART_AF);
    ts_gpio_alternate(TS_UART_RX_PORT, TS_UART_RX_PIN, TS_UART_AF);
    /* the RX line idles high: pull it up so an unconnected pin reads no noise */
    uint32_t rx = TS_GPIO_BASE(TS_UART_RX_PORT);
    TS_REG32(rx + 0x0Cu) = (TS_REG32(rx + 0x0Cu) & ~(3u << (2u * TS_UART_RX_PIN))) | (1u << (2u * TS_UART_RX_PIN));
    TS_REG32(USART_CR1) = 0;
    /* 16x oversampling: BRR = USART clock / baud, rounded */
    TS_REG32(USART_BRR) = (uint32_t)((TS_UART_CLOCK_HZ + TS_UART_BAUD / 2u) / TS_UART_BAUD);
    TS_REG32(USART_CR1) = USART_CR1_ENABLE;
}

void ts_uart_putc(uint8_t c)
{
    while (!(TS_REG32(USART_STATUS) & USART_TXE)) {
    }
    TS_REG32(USART_TDR) = c;
}

int ts_uart_rx_ready(void)
{
    uint32_t status = TS_REG32(USART_STATUS);
#if defined(TS_USART_V1)
    if ((status & USART_ORE) && !(status & USART_RXNE)) {
        (void)TS_REG32(USART_RDR); /* reading SR then DR clears ORE */
    }
#else
    if (status & USART_ORE) {
        TS_REG32(USART_ICR) = USART_ORE; /* ORECF: reception stops until it is cleared */
    }
#endif
    return (status & USART_RXNE) != 0;
}

uint8_t ts_uart_getc(void)
{
    while (!ts_uart_rx_ready()) {
    }
    return (uint8_t)TS_REG32(USART_RDR);
}

void ts_uart_flush(void)
{
    while (!(TS_REG32(USART_STATUS) & USART_TC)) {
    }
}

#endif /* TS_STM32_UART_H */
