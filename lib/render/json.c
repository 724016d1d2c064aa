/* json.c - JSON strings and the {name, value, children} tree that flame-graph libraries draw. */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "render/json.h"
#include "util/utf8.h"

void json_write_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;

	fputc('"', out);
	while (*s) {
		size_t n = utf8_decode(s, &cp);

		if (n == 0) {
			fputs("\\ufffd", out);
			s++;
		} else if (*s == '"' || *s == '\\') {
			fputc('\\', out);
			fputc(*s++, out);
		} else if (*s < 0x20 || *s == 0x7f) {
			fprintf(out, "\\u%04x", *s++);
		} else {
			fwrite(s, 1, n, out);
			s += n;
		}
	}
	fputc('"', out);
}

/* The root's new total over its base total: what a base count is multiplied by to compare. */
static double base_scale(const struct tree_node *root)
{
	return root->value[TREE_BASE] ? (double)root->value[TREE_NEW] / root->value[TREE_BASE] : 0.0;
}

/* Writes node n and its children; unit (the root's only) when not NULL. */
static void write_node(FILE *out, const struct tree_node *n, bool diff, double scale, const char *unit)
{
	fputs("{\"name\":", out);
	json_write_string(out, n->name);
	if (unit)
		fprintf(out, ",\"unit\":\"%s\"", unit);
	fprintf(out, ",\"value\":%llu", (unsigned long long)n->value[TREE_NEW]);
	if (diff)
		fprintf(out, ",\"delta\":%lld",
			(long long)llround((double)n->value[TREE_NEW] - scale * n->value[TREE_BASE]));
	if (n->file) { /* a Python frame: its source, and its samples by the line run */
		fputs(",\"file\":", out);
		json_write_string(out, n->file);
		fprintf(out, ",\"start_line\":%d,\"lines\":[", n->start_line);
		for (uint32_t i = 0; i < n->nlines; i++)
			fprintf(out, "%s[%d,%llu]", i ? "," : "", n->lines[i].line,
				(unsigned long long)n->lines[i].value[TREE_NEW]);
		fputc(']', out);
	}
	fputs(",\"children\":[", out);
	for (uint32_t i = 0; i < n->nchildren; i++) {
		if (i)
			fputc(',', out);
		write_node(out, n->children[i], diff, scale, NULL);
	}
	fputs("]}", out);
}

int render_json_tree(FILE *out, const struct tree *t, bool diff, enum unit unit)
{
	const struct tree_node *root = tree_root(t);

	write_node(out, root, diff, base_scale(root), unit_name(unit));
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}
