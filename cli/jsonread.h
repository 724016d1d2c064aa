/* jsonread.h - flamed's JSON answers read with json-c: each field flamectl uses is looked up by name
 * and its type checked, so an answer shaped otherwise (a field renamed, of another type, nested
 * elsewhere) is an error that names the field, never a wrong number. */
#ifndef FLAMECTL_JSONREAD_H
#define FLAMECTL_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONREAD_MAX_DEPTH 64 /* nesting of an answer accepted */

struct json_object;

/* Parses the len bytes of text (the whole of it: one JSON value) into *out (json_object_put it) when
 * it is an object. Returns 0, -EPROTO (not JSON, too deep, or not an object; why says which) or
 * -ENOMEM. */
int jr_parse(const char *text, size_t len, struct json_object **out, char *why, size_t whylen);

/* obj's field key, when it is of the type named. Each returns 0, -ENOENT (no such field; why says so)
 * or -EPROTO (another type; why names the field and both types). */
int jr_u64(struct json_object *obj, const char *key, uint64_t *v, char *why, size_t whylen); /* whole >= 0 */
int jr_bool(struct json_object *obj, const char *key, bool *v, char *why, size_t whylen);
int jr_string(struct json_object *obj, const char *key, const char **v, char *why, size_t whylen);
int jr_object(struct json_object *obj, const char *key, struct json_object **v, char *why, size_t whylen);
/* An array: its length in *n, its elements by json_object_array_get_idx. */
int jr_array(struct json_object *obj, const char *key, struct json_object **v, size_t *n, char *why,
	     size_t whylen);

#endif
