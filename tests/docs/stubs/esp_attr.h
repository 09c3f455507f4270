/* stand-in for ESP-IDF's esp_attr.h (docs check only; see README.md) */
#ifndef DOCSTUB_ESP_ATTR_H
#define DOCSTUB_ESP_ATTR_H
#define DRAM_ATTR __attribute__((section(".dram1")))
#endif
