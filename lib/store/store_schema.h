/* store_schema.h - the schema, for store_open.c only. */
#ifndef FLAMED_STORE_SCHEMA_H
#define FLAMED_STORE_SCHEMA_H

#include <stdint.h>

#include "store/store_impl.h"

/* Checks that this is a flamed database of a version this build understands; *version its version. */
int store_check_schema(struct store *st, int64_t *version);

/* Read-write setup: WAL, synchronous=NORMAL, the schema when the database is empty or older. */
int store_setup_write(struct store *st);

#endif
