/*
 * The provider transport's wire format (docs/PROVIDER-PROTOCOL.md) as the
 * trace manager uses it: the packets and their codec are the protocol's
 * one definition, provider/protocol.h, which the provider library includes
 * too. The framing check the manager applies to the records a provider
 * sends, and the FXT metadata records it writes around each provider's
 * records, are FXT's own (ingest/fxtrec.h).
 */
#ifndef CAPTURE_FIFO_H
#define CAPTURE_FIFO_H

#include "../ingest/fxtrec.h" /* the records the manager checks and writes */
#include "../provider/protocol.h"

#endif
