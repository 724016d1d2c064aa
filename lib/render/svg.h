/* svg.h - renders a frame tree as a standalone interactive SVG flame graph (zoom, search, tooltips). */
#ifndef FLAMED_RENDER_SVG_H
#define FLAMED_RENDER_SVG_H

#include <stdbool.h>
#include <stdio.h>
#include "render/tree.h"
#include "render/unit.h"

struct svg_opts {
	const char *title;    /* NULL: "Flame Graph" (or "Icicle Graph", "Differential Flame Graph") */
	const char *subtitle; /* NULL: none; e.g. the window and pid */
	unsigned width;       /* image width in pixels; 0: 1200 */
	double minwidth;      /* frames narrower than this many pixels are not drawn (their samples
			       * still count in their parents); < 0: 0.1 */
	bool reverse;         /* icicle: the tree was built with reverse; draw roots at the top */
	bool diff;            /* differential: widths from TREE_NEW, colour from the change against
			       * TREE_BASE scaled to the same total (red: grew, blue: shrank) */
	enum unit unit;       /* what the tree's values count: tooltips and totals say samples or time */
};

/* Writes the SVG document to out, frame by frame (memory stays bounded by the tree's depth), then
 * flushes out. opts NULL: every default (minwidth 0.1). A zeroed struct svg_opts means minwidth 0:
 * every frame with samples is drawn; set minwidth = -1 for the default. The width is kept within
 * 200..100000 pixels. The default title of a diff drawn reversed is "Differential Icicle Graph".
 * Names and titles are written as valid XML whatever their bytes (invalid UTF-8 and control
 * characters become U+FFFD; names past 4096 characters are cut with ".."). The script finds its
 * elements by id, so serve the document on its own (a page, <object>, <iframe> or <img>, where it
 * is static), not inlined twice into one HTML page. Returns 0, or -EIO when out or t is NULL or a
 * write failed (ferror(out)). */
int render_svg(FILE *out, const struct tree *t, const struct svg_opts *opts);

#endif
