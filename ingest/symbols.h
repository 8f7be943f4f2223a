#ifndef INGEST_SYMBOLS_H
#define INGEST_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "ingest.h" /* error codes */

/*
 * Function names for XRay ids (symbols.c): from an instrumented ELF binary
 * (xray_instr_map section + symbol table, demangled) or from the YAML that
 * `llvm-xray extract --symbolize` prints.
 */
struct xray_symbols;
int xray_symbols_load(const uint8_t *buf, size_t n, struct xray_symbols **out, char *err, size_t errlen);
/* The name of function id, or NULL. */
const char *xray_symbols_name(const struct xray_symbols *s, uint32_t id);
/* The largest function id in the map. */
uint32_t xray_symbols_max_id(const struct xray_symbols *s);
void xray_symbols_free(struct xray_symbols *s);

#endif
