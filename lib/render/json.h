/* json.h - JSON output: string escaping and the {name, value, children} tree flame-graph libraries take. */
#ifndef FLAMED_RENDER_JSON_H
#define FLAMED_RENDER_JSON_H

#include <stdbool.h>
#include <stdio.h>
#include "render/tree.h"
#include "render/unit.h"

/* Writes s as a JSON string literal (quotes included), escaping what JSON requires; invalid UTF-8
 * bytes become U+FFFD. */
void json_write_string(FILE *out, const char *s);

/* Writes the tree as nested {"name", "value", "children"} objects (d3-flame-graph's shape), the root
 * with "unit": what the values count ("samples" or "microseconds"). With diff, each node also has
 * "delta": its TREE_NEW value minus its TREE_BASE value scaled to the TREE_NEW total. Returns 0 or
 * -EIO. */
int render_json_tree(FILE *out, const struct tree *t, bool diff, enum unit unit);

#endif
