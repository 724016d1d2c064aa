/* jsonread.c - flamed's JSON answers read with json-c, types checked (see jsonread.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <json-c/json.h>

#include "jsonread.h"

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static const char *type_name(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null: return "null";
	case json_type_boolean: return "a boolean";
	case json_type_double: return "a fraction";
	case json_type_int: return "a number";
	case json_type_object: return "an object";
	case json_type_array: return "an array";
	case json_type_string: return "a string";
	}
	return "something else";
}

int jr_parse(const char *text, size_t len, struct json_object **out, char *why, size_t whylen)
{
	struct json_tokener *tok = json_tokener_new_ex(JSONREAD_MAX_DEPTH);
	struct json_object *o;
	enum json_tokener_error e;

	*out = NULL;
	if (!tok)
		return -ENOMEM;
	if (len > INT32_MAX) {
		json_tokener_free(tok);
		say(why, whylen, "the answer is too long to read as JSON");
		return -EPROTO;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	e = json_tokener_get_error(tok);
	if (!o || e != json_tokener_success || json_tokener_get_parse_end(tok) < len) {
		say(why, whylen, "the answer is not JSON (%s at byte %zu)",
		    e != json_tokener_success ? json_tokener_error_desc(e) : "more after the value",
		    json_tokener_get_parse_end(tok));
		json_object_put(o);
		json_tokener_free(tok);
		return -EPROTO;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(o, json_type_object)) {
		say(why, whylen, "the answer is %s, not a JSON object", type_name(o));
		json_object_put(o);
		return -EPROTO;
	}
	*out = o;
	return 0;
}

/* obj's field key when it is of type t. */
static int field(struct json_object *obj, const char *key, enum json_type t, const char *want,
		 struct json_object **v, char *why, size_t whylen)
{
	if (!json_object_object_get_ex(obj, key, v)) {
		say(why, whylen, "the answer has no \"%s\"", key);
		return -ENOENT;
	}
	if (!json_object_is_type(*v, t)) {
		say(why, whylen, "the answer's \"%s\" is %s, not %s", key, type_name(*v), want);
		return -EPROTO;
	}
	return 0;
}

int jr_u64(struct json_object *obj, const char *key, uint64_t *v, char *why, size_t whylen)
{
	struct json_object *o;
	int64_t s;
	int err = field(obj, key, json_type_int, "a whole number", &o, why, whylen);

	if (err)
		return err;
	s = json_object_get_int64(o);
	if (s < 0) {
		say(why, whylen, "the answer's \"%s\" is negative (%lld)", key, (long long)s);
		return -EPROTO;
	}
	*v = s == INT64_MAX ? json_object_get_uint64(o) : (uint64_t)s;
	return 0;
}

int jr_bool(struct json_object *obj, const char *key, bool *v, char *why, size_t whylen)
{
	struct json_object *o;
	int err = field(obj, key, json_type_boolean, "a boolean", &o, why, whylen);

	if (!err)
		*v = json_object_get_boolean(o);
	return err;
}

int jr_string(struct json_object *obj, const char *key, const char **v, char *why, size_t whylen)
{
	struct json_object *o;
	int err = field(obj, key, json_type_string, "a string", &o, why, whylen);

	if (!err)
		*v = json_object_get_string(o);
	return err;
}

int jr_object(struct json_object *obj, const char *key, struct json_object **v, char *why, size_t whylen)
{
	return field(obj, key, json_type_object, "an object", v, why, whylen);
}

int jr_array(struct json_object *obj, const char *key, struct json_object **v, size_t *n, char *why,
	     size_t whylen)
{
	int err = field(obj, key, json_type_array, "an array", v, why, whylen);

	if (!err)
		*n = json_object_array_length(*v);
	return err;
}
