/* token.h - the API token of --auth-token-file, read once at start. */
#ifndef FLAMED_TOKEN_H
#define FLAMED_TOKEN_H

#include <stddef.h>

/* Reads the token of --auth-token-file path into buf (len bytes): its first line, at least 16 bytes; the
 * file must be private to its owner. Logs and returns 0 or -errno. */
int token_read(const char *path, char *buf, size_t len);

#endif
