/* stand-in for pico-sdk's hardware/sync.h (docs check only; see ../README.md) */
#ifndef DOCSTUB_HARDWARE_SYNC_H
#define DOCSTUB_HARDWARE_SYNC_H
void __sev(void);
void __wfe(void);
void __wfi(void);
void __dmb(void);
void __dsb(void);
#endif
