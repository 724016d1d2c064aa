/* svg.c - renders a frame tree as a standalone interactive SVG flame graph (zoom, search, tooltips). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "render/svg.h"

#define DEFAULT_WIDTH 1200
#define MIN_WIDTH 200           /* room for the title and the controls */
#define MAX_WIDTH 100000
#define DEFAULT_MINWIDTH 0.1
#define ROW_H 16                /* one frame row */
#define RECT_H 15               /* a row less a 1px gap */
#define TEXT_DY 11              /* label baseline below the top of its rect */
#define PAD 10                  /* left and right margin */
#define LABEL_PAD 3             /* between a rect's edges and its label */
#define CHAR_W 7.3              /* advance of a 12px monospace glyph (0.6em), rounded up */
#define TITLE_Y 24
#define SUBTITLE_Y 42
#define TOP 34                  /* first frame row without a subtitle */
#define TOP_SUB 52              /* ... and with one */
#define BOTTOM 30               /* below the last row: the details line */
#define LEGEND_H 18             /* the legend's row, above the details line */
#define SWATCH 10               /* a legend entry's colour square */
#define NAME_MAX_CHARS 4096     /* longer names are cut in tooltips and labels */
#define REPLACEMENT 0xFFFDu     /* written for bytes that are not valid XML text */

/* Everything the drawing pass needs, fixed before it starts. */
struct svg_ctx {
	FILE *out;
	const struct tree_node *root;
	struct svg_opts o;      /* with the defaults filled in */
	uint64_t total;         /* root's TREE_NEW samples */
	uint64_t base_total;    /* root's TREE_BASE samples */
	double base_scale;      /* multiplies a base count to the new side's total */
	double scale;           /* pixels per sample */
	double maxdelta;        /* the largest |change| among drawn frames, in samples (diff) */
	uint32_t maxdepth;      /* of the drawn frames */
	unsigned classes;       /* bit (1 << enum frame_class) of each kind drawn, the root's excepted */
	unsigned top, height;
	int decimals;           /* of x and width: enough to keep minwidth-wide frames apart */
};

/* One colour family: base + span * (a hash byte / 255) per channel. */
struct palette {
	uint8_t base[3];
	uint8_t span[3];
};

/* Indexed by enum frame_class. */
static const struct palette palettes[] = {
	[FRAME_CLASS_USER] = { { 215, 0, 0 }, { 40, 190, 55 } },       /* red .. orange .. yellow */
	[FRAME_CLASS_KERNEL] = { { 225, 135, 80 }, { 30, 40, 30 } },   /* sandy orange */
	[FRAME_CLASS_JIT] = { { 50, 185, 50 }, { 60, 45, 60 } },       /* green */
	[FRAME_CLASS_INLINED] = { { 50, 195, 195 }, { 60, 35, 35 } },  /* aqua */
	[FRAME_CLASS_UNKNOWN] = { { 175, 175, 175 }, { 30, 30, 30 } }, /* grey (all spans follow byte 0) */
	[FRAME_CLASS_PYTHON] = { { 95, 105, 215 }, { 45, 40, 35 } },    /* blue */
};

/* The legend's entries, in its order. */
static const struct {
	enum frame_class k;
	const char *label;
} legend[] = {
	{ FRAME_CLASS_USER, "native" },     { FRAME_CLASS_PYTHON, "Python" },       { FRAME_CLASS_JIT, "JIT _[j]" },
	{ FRAME_CLASS_INLINED, "inlined _[i]" }, { FRAME_CLASS_KERNEL, "kernel _[k]" }, { FRAME_CLASS_UNKNOWN, "unknown" },
};

struct rgb {
	unsigned r, g, b;
};

/* The stylesheet; every rule is ours (see the ids written by put_head()). */
static const char svg_style[] =
	"text{font-family:Menlo,\"DejaVu Sans Mono\",\"Liberation Mono\",monospace;font-size:12px;fill:#000}\n"
	"#title{font-family:Verdana,\"DejaVu Sans\",sans-serif;font-size:17px;text-anchor:middle}\n"
	"#subtitle{font-family:Verdana,\"DejaVu Sans\",sans-serif;text-anchor:middle;fill:#555}\n"
	"#empty{text-anchor:middle;fill:#555}\n"
	".c{cursor:pointer;fill:#235}.c:hover{text-decoration:underline}\n"
	"#search,#clear,#matched{text-anchor:end}\n"
	".h{display:none}\n"
	"#frames g{cursor:pointer}#frames rect{rx:2px;ry:2px}\n"
	"#frames g:hover rect{stroke:#222;stroke-width:.6}\n"
	"#frames text{pointer-events:none}\n"
	"#frames .p{opacity:.5}\n"
	"#frames .m rect{fill:#e23ee2}\n";

/* The script (ES5 plus Array.from). Frame data comes from the drawn elements: a frame's name is
 * its tooltip up to the last " (", x and width are its rect's, its depth follows from y. Zoom
 * keeps the frames whose middle lies inside the clicked one and are at least as deep; shallower
 * frames over the clicked one's middle are its ancestors. The first line (W, REV) is written by
 * put_script(). */
static const char svg_script[] =
	"var NS='http://www.w3.org/2000/svg',FULL=W-2*PAD,frames=[],zoomed=null,query=null;\n"
	"function $(id){return document.getElementById(id);}\n"
	"var box=$('frames'),details=$('details'),idle=details.textContent;\n"
	"Array.prototype.forEach.call(box.children,function(g,i){\n"
	" var r=g.getElementsByTagName('rect')[0],t=g.getElementsByTagName('title')[0].textContent;\n"
	" g.fi=i;\n"
	" frames.push({g:g,r:r,t:g.getElementsByTagName('text')[0],x:+r.getAttribute('x'),\n"
	"  w:+r.getAttribute('width'),y:+r.getAttribute('y'),name:t.slice(0,t.lastIndexOf(' ('))});\n"
	"});\n"
	"function deeper(a,b){return REV?a.y>b.y:a.y<b.y;}\n"
	"function label(f,x,w){\n"
	" var n=Math.floor((w-2*LPAD)/CW),s='';\n"
	" if(n>=3){f.cs=f.cs||Array.from(f.name);s=f.cs.length<=n?f.name:f.cs.slice(0,n-2).join('')+'..';}\n"
	" if(!f.t){if(!s)return;f.t=document.createElementNS(NS,'text');f.t.setAttribute('y',f.y+TDY);f.g.appendChild(f.t);}\n"
	" f.t.setAttribute('x',(x+LPAD).toFixed(2));f.t.textContent=s;\n"
	"}\n"
	"function place(f,x,w){f.r.setAttribute('x',x.toFixed(2));f.r.setAttribute('width',w.toFixed(2));label(f,x,w);}\n"
	"function zoom(c){\n"
	" var k=FULL/c.w,mid=c.x+c.w/2;\n"
	" frames.forEach(function(f){\n"
	"  var cl=f.g.classList,m=f.x+f.w/2;\n"
	"  cl.remove('h','p');\n"
	"  if(f===c||deeper(f,c)){if(m>=c.x&&m<=c.x+c.w)place(f,PAD+(f.x-c.x)*k,f.w*k);else cl.add('h');}\n"
	"  else if(f.y!==c.y&&mid>=f.x&&mid<=f.x+f.w){cl.add('p');place(f,PAD,FULL);}\n"
	"  else cl.add('h');\n"
	" });\n"
	" zoomed=c;$('unzoom').classList.remove('h');\n"
	"}\n"
	"function unzoom(){\n"
	" frames.forEach(function(f){f.g.classList.remove('h','p');place(f,f.x,f.w);});\n"
	" zoomed=null;$('unzoom').classList.add('h');\n"
	"}\n"
	"function clear(){\n"
	" frames.forEach(function(f){f.g.classList.remove('m');});\n"
	" query=null;$('matched').textContent='';$('clear').classList.add('h');\n"
	"}\n"
	"function search(q){\n"
	" var re,hit=[],sum=0,end=-1;\n"
	" try{re=new RegExp(q);}catch(e){$('matched').textContent='Bad regular expression';return;}\n"
	" frames.forEach(function(f){var m=re.test(f.name);f.g.classList.toggle('m',m);if(m)hit.push(f);});\n"
	" hit.sort(function(a,b){return a.x-b.x||b.w-a.w;});\n"
	" hit.forEach(function(f){if(f.x+f.w>end+1e-6){sum+=f.w;end=f.x+f.w;}});\n"
	" query=q;$('clear').classList.remove('h');\n"
	" $('matched').textContent='Matched: '+(FULL>0?100*sum/FULL:0).toFixed(1)+'%';\n"
	"}\n"
	"function ask(){var q=prompt('Search frames (regular expression):',query||'');if(q)search(q);}\n"
	"function frameOf(n){for(;n&&n!==box;n=n.parentNode)if(n.parentNode===box)return frames[n.fi];return null;}\n"
	"box.addEventListener('click',function(e){var f=frameOf(e.target);if(f)zoom(f);});\n"
	"box.addEventListener('mouseover',function(e){var f=frameOf(e.target);\n"
	" if(f)details.textContent=f.g.getElementsByTagName('title')[0].textContent;});\n"
	"box.addEventListener('mouseout',function(){details.textContent=idle;});\n"
	"$('unzoom').addEventListener('click',unzoom);\n"
	"$('search').addEventListener('click',ask);\n"
	"$('clear').addEventListener('click',clear);\n"
	"document.addEventListener('keydown',function(e){\n"
	" if(e.key==='Escape'){if(zoomed)unzoom();else clear();}\n"
	" else if((e.key==='f'&&(e.ctrlKey||e.metaKey))||(e.key==='/'&&!e.ctrlKey)){e.preventDefault();ask();}\n"
	"});\n"
	"try{var s=new URLSearchParams(location.search).get('s');if(s)search(s);}catch(e){}\n";

/* Decodes the character at s (not at its NUL) into *cp and returns its length in bytes. A
 * malformed UTF-8 sequence, a control character or a code point XML 1.0 does not allow becomes
 * U+FFFD (one byte of a malformed sequence at a time). */
static size_t next_char(const unsigned char *s, uint32_t *cp)
{
	unsigned char b = s[0];
	uint32_t c, min;
	size_t len;

	if (b < 0x80) {
		*cp = b < 0x20 || b == 0x7f ? REPLACEMENT : b;
		return 1;
	}
	if (b >= 0xc2 && b <= 0xdf)
		len = 2, c = b & 0x1f, min = 0x80;
	else if ((b & 0xf0) == 0xe0)
		len = 3, c = b & 0x0f, min = 0x800;
	else if (b >= 0xf0 && b <= 0xf4)
		len = 4, c = b & 0x07, min = 0x10000;
	else {
		*cp = REPLACEMENT;
		return 1;
	}
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) { /* also stops at the NUL */
			*cp = REPLACEMENT;
			return 1;
		}
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff)
		c = REPLACEMENT;
	*cp = c;
	return len;
}

/* Number of characters next_char() finds in s, counting at most max. */
static size_t char_count(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	uint32_t cp;

	for (; *p && n < max; n++)
		p += next_char(p, &cp);
	return n;
}

/* Writes the first max characters of s as XML text, safe in elements and attribute values. */
static void put_text(FILE *out, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t n = 0; *p && n < max; n++) {
		uint32_t cp;
		size_t len = next_char(p, &cp);

		switch (cp) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		case REPLACEMENT: fputs("\xef\xbf\xbd", out); break;
		default:
			if (fwrite(p, 1, len, out) != len)
				return; /* ferror(out) is set; render_svg() reports it */
		}
		p += len;
	}
}

/* Writes a frame name, cut with ".." past NAME_MAX_CHARS characters. */
static void put_name(FILE *out, const char *name)
{
	if (char_count(name, NAME_MAX_CHARS + 1) <= NAME_MAX_CHARS) {
		put_text(out, name, NAME_MAX_CHARS);
		return;
	}
	put_text(out, name, NAME_MAX_CHARS - 2);
	fputs("..", out);
}

/* Formats v with d (0..6) decimals into buf, whatever the locale's decimal point. */
static const char *fixed(char buf[40], double v, int d)
{
	static const uint64_t p10[] = { 1, 10, 100, 1000, 10000, 100000, 1000000 };
	double a = fabs(v) * (double)p10[d] + 0.5;
	uint64_t u = a < 1e18 ? (uint64_t)a : UINT64_C(1000000000000000000);
	const char *sign = v < 0 && u ? "-" : "";

	if (d)
		snprintf(buf, 40, "%s%" PRIu64 ".%0*" PRIu64, sign, u / p10[d], d, u % p10[d]);
	else
		snprintf(buf, 40, "%s%" PRIu64, sign, u);
	return buf;
}

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* FNV-1a over the name: the same function keeps its colour across graphs. */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The colour of a frame by its kind, varied within the kind's family by a hash of its name. */
static struct rgb kind_colour(const char *name)
{
	enum frame_class k = frame_classify(name);
	const struct palette *p = &palettes[(unsigned)k < sizeof(palettes) / sizeof(palettes[0]) ? k : 0];
	uint32_t h = name_hash(name);
	unsigned v[3] = { h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff };

	if (k == FRAME_CLASS_UNKNOWN)
		v[1] = v[2] = v[0]; /* a grey stays grey */
	return (struct rgb){ p->base[0] + p->span[0] * v[0] / 255, p->base[1] + p->span[1] * v[1] / 255,
			     p->base[2] + p->span[2] * v[2] / 255 };
}

/* A frame's change in samples: new minus base scaled to the new side's total. */
static double change(const struct svg_ctx *c, const struct tree_node *n)
{
	return (double)n->value[TREE_NEW] - (double)n->value[TREE_BASE] * c->base_scale;
}

/* Diff colour: red for growth, blue for shrinkage, paler the smaller the change against the
 * largest one drawn; near white for none. */
static struct rgb diff_colour(const struct svg_ctx *c, const struct tree_node *n)
{
	double d = change(c, n), i = c->maxdelta > 0 ? fabs(d) / c->maxdelta : 0;
	unsigned v = (unsigned)lround(245.0 - 190.0 * (i > 1 ? 1 : i));

	if (i < 0.005)
		return (struct rgb){ 245, 245, 245 };
	return d > 0 ? (struct rgb){ 255, v, v } : (struct rgb){ v, v, 255 };
}

/* A frame is drawn when it has new samples and is at least minwidth pixels wide. */
static bool drawn(const struct svg_ctx *c, const struct tree_node *n)
{
	return n->value[TREE_NEW] && (double)n->value[TREE_NEW] * c->scale >= c->o.minwidth;
}

/* Finds the depth of the deepest drawn frame and the largest change among drawn frames. The
 * recursion is as deep as the tree (tree_add() caps stacks at about a thousand frames). */
static void measure(struct svg_ctx *c, const struct tree_node *n)
{
	if (n->depth > c->maxdepth)
		c->maxdepth = n->depth;
	if (n->depth)
		c->classes |= 1u << frame_classify(n->name);
	if (c->o.diff && fabs(change(c, n)) > c->maxdelta)
		c->maxdelta = fabs(change(c, n));
	for (uint32_t i = 0; i < n->nchildren; i++)
		if (drawn(c, n->children[i]))
			measure(c, n->children[i]);
}

static unsigned row_y(const struct svg_ctx *c, uint32_t depth)
{
	return c->top + ROW_H * (c->o.reverse ? depth : c->maxdepth - depth);
}

/* Writes the tooltip's counts: " (N samples, P%)" or " (12.50 ms, P%)", for a diff also "; base M, Q%;
 * +X.XX pts". */
static void put_counts(const struct svg_ctx *c, const struct tree_node *n)
{
	char a[UNIT_BUF], b[40], d[40], e[40];
	uint64_t v = n->value[TREE_NEW];

	fprintf(c->out, " (%s, %s%%", unit_amount(a, v, c->o.unit), fixed(b, percent(v, c->total), 2));
	if (c->o.diff) {
		double pn = percent(v, c->total), pb = percent(n->value[TREE_BASE], c->base_total);

		fprintf(c->out, "; base %s, %s%%; %s%s pts",
			c->o.unit == UNIT_SAMPLES ? unit_count(a, n->value[TREE_BASE]) :
						    unit_amount(a, n->value[TREE_BASE], c->o.unit),
			fixed(d, pb, 2),
			pn - pb >= 0 ? "+" : "", fixed(e, pn - pb, 2));
	}
	fputs(")", c->out);
}

/* Writes the label of a frame x..x+w wide: its name, cut with ".." to the characters that fit,
 * or nothing when fewer than three fit. The script's label() does the same after a zoom. */
static void put_label(const struct svg_ctx *c, const struct tree_node *n, double x, unsigned y, double w)
{
	double fit = floor((w - 2 * LABEL_PAD) / CHAR_W);
	size_t len;
	char bx[40];

	if (fit < 3)
		return;
	len = char_count(n->name, NAME_MAX_CHARS + 1);
	if (len > NAME_MAX_CHARS)
		len = NAME_MAX_CHARS; /* as put_name() wrote it: the cut is longer than any label */
	fprintf(c->out, "<text x=\"%s\" y=\"%u\">", fixed(bx, x + LABEL_PAD, 2), y + TEXT_DY);
	if ((double)len <= fit) {
		put_name(c->out, n->name);
	} else {
		put_text(c->out, n->name, (size_t)fit - 2);
		fputs("..", c->out);
	}
	fputs("</text>", c->out);
}

/* Writes one frame whose left edge is off samples from the graph's. */
static void put_frame(const struct svg_ctx *c, const struct tree_node *n, uint64_t off)
{
	double x = PAD + (double)off * c->scale, w = (double)n->value[TREE_NEW] * c->scale;
	struct rgb col = c->o.diff ? diff_colour(c, n) : kind_colour(n->name);
	unsigned y = row_y(c, n->depth);
	char bx[40], bw[40];

	fputs("<g><title>", c->out);
	put_name(c->out, n->name);
	put_counts(c, n);
	fprintf(c->out, "</title><rect x=\"%s\" y=\"%u\" width=\"%s\" height=\"%d\" fill=\"rgb(%u,%u,%u)\"/>",
		fixed(bx, x, c->decimals), y, fixed(bw, w, c->decimals), RECT_H, col.r, col.g, col.b);
	put_label(c, n, x, y, w);
	fputs("</g>\n", c->out);
}

/* Writes n and its drawn descendants, children left to right in the tree's order; a child too
 * narrow to draw still takes its share of the parent's width. Stops at the first write error. */
static int draw(const struct svg_ctx *c, const struct tree_node *n, uint64_t off)
{
	put_frame(c, n, off);
	if (ferror(c->out))
		return -EIO;
	for (uint32_t i = 0; i < n->nchildren; i++) {
		const struct tree_node *ch = n->children[i];

		if (drawn(c, ch)) {
			int r = draw(c, ch, off);

			if (r < 0)
				return r;
		}
		off += ch->value[TREE_NEW];
	}
	return 0;
}

static const char *default_title(const struct svg_opts *o)
{
	if (o->diff)
		return o->reverse ? "Differential Icicle Graph" : "Differential Flame Graph";
	return o->reverse ? "Icicle Graph" : "Flame Graph";
}

/* Writes the line shown under the graph when no frame is hovered: the totals. */
static void put_idle_details(const struct svg_ctx *c, const struct tree *t)
{
	char a[UNIT_BUF];
	uint64_t cut = tree_truncated(t);

	fprintf(c->out, "Total: %s", unit_amount(a, c->total, c->o.unit));
	if (c->o.diff)
		fprintf(c->out, "; base: %s", unit_amount(a, c->base_total, c->o.unit));
	if (cut)
		fprintf(c->out, "; %s cut short at the frame limit", unit_amount(a, cut, c->o.unit));
}

/* Writes the legend of the frame colours drawn (none for a diff, coloured by change): a swatch in the
 * middle of each kind's family, then its name. */
static void put_legend(const struct svg_ctx *c)
{
	unsigned y = c->height - BOTTOM - LEGEND_H + 14;
	double x = PAD;

	if (c->o.diff || !c->total)
		return;
	fputs("<g id=\"legend\">", c->out);
	for (size_t i = 0; i < sizeof(legend) / sizeof(legend[0]); i++) {
		const struct palette *p = &palettes[legend[i].k];
		char bx[40];

		if (!(c->classes & 1u << legend[i].k))
			continue;
		fprintf(c->out, "<rect x=\"%s\" y=\"%u\" width=\"%d\" height=\"%d\" fill=\"rgb(%u,%u,%u)\"/>",
			fixed(bx, x, 2), y - SWATCH, SWATCH, SWATCH, p->base[0] + p->span[0] / 2,
			p->base[1] + p->span[1] / 2, p->base[2] + p->span[2] / 2);
		fprintf(c->out, "<text x=\"%s\" y=\"%u\">%s</text>", fixed(bx, x + SWATCH + 4, 2), y - 1, legend[i].label);
		x += SWATCH + 4 + CHAR_W * (double)strlen(legend[i].label) + 14;
	}
	fputs("</g>\n", c->out);
}

/* Writes the prolog, style, background, title, controls and the details line; opens #frames. */
static void put_head(const struct svg_ctx *c, const struct tree *t)
{
	unsigned w = c->o.width, h = c->height;

	fprintf(c->out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" height=\"%u\" "
		"viewBox=\"0 0 %u %u\">\n<style>\n%s</style>\n",
		w, h, w, h, svg_style);
	fputs("<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
	      "<stop offset=\"0\" stop-color=\"#f7f7f7\"/><stop offset=\"1\" stop-color=\"#e7e7ef\"/>"
	      "</linearGradient></defs>\n", c->out);
	fprintf(c->out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#bg)\"/>\n", w, h);
	fprintf(c->out, "<text id=\"title\" x=\"%u\" y=\"%d\">", w / 2, TITLE_Y);
	put_text(c->out, c->o.title, NAME_MAX_CHARS);
	fputs("</text>\n", c->out);
	if (c->o.subtitle) {
		fprintf(c->out, "<text id=\"subtitle\" x=\"%u\" y=\"%d\">", w / 2, SUBTITLE_Y);
		put_text(c->out, c->o.subtitle, NAME_MAX_CHARS);
		fputs("</text>\n", c->out);
	}
	fprintf(c->out, "<text id=\"unzoom\" class=\"c h\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n", PAD, TITLE_Y);
	fprintf(c->out, "<text id=\"search\" class=\"c\" x=\"%u\" y=\"%d\">Search</text>\n", w - PAD, TITLE_Y);
	fprintf(c->out, "<text id=\"clear\" class=\"c h\" x=\"%u\" y=\"%d\">Clear</text>\n", w - PAD - 70, TITLE_Y);
	fprintf(c->out, "<text id=\"details\" x=\"%d\" y=\"%u\">", PAD, h - 10);
	put_idle_details(c, t);
	fprintf(c->out, "</text>\n<text id=\"matched\" x=\"%u\" y=\"%u\"></text>\n", w - PAD, h - 10);
	if (!c->total)
		fprintf(c->out, "<text id=\"empty\" x=\"%u\" y=\"%u\">No samples</text>\n", w / 2, c->top + ROW_H);
	put_legend(c);
	fputs("<g id=\"frames\">\n", c->out);
}

/* Closes #frames, writes the script and closes the document. */
static void put_tail(const struct svg_ctx *c)
{
	char cw[40];

	fprintf(c->out,
		"</g>\n<script><![CDATA[\n(function(){\n\"use strict\";\n"
		"var W=%u,PAD=%d,LPAD=%d,CW=%s,TDY=%d,REV=%s;\n",
		c->o.width, PAD, LABEL_PAD, fixed(cw, CHAR_W, 2), TEXT_DY, c->o.reverse ? "true" : "false");
	fputs(svg_script, c->out);
	fputs("})();\n]]></script>\n</svg>\n", c->out);
}

/* Fills in the defaults and measures the tree. */
static void setup(struct svg_ctx *c, FILE *out, const struct tree *t, const struct svg_opts *opts)
{
	memset(c, 0, sizeof(*c));
	c->out = out;
	c->root = tree_root(t);
	if (opts)
		c->o = *opts;
	else
		c->o.minwidth = -1;
	if (!c->o.width)
		c->o.width = DEFAULT_WIDTH;
	c->o.width = c->o.width < MIN_WIDTH ? MIN_WIDTH : c->o.width > MAX_WIDTH ? MAX_WIDTH : c->o.width;
	if (c->o.minwidth < 0 || isnan(c->o.minwidth))
		c->o.minwidth = DEFAULT_MINWIDTH;
	if (!c->o.title)
		c->o.title = default_title(&c->o);
	c->decimals = c->o.minwidth >= 0.1 ? 2 : c->o.minwidth >= 0.01 ? 3 : 4;
	c->total = c->root->value[TREE_NEW];
	c->base_total = c->root->value[TREE_BASE];
	c->base_scale = c->base_total ? (double)c->total / (double)c->base_total : 0;
	c->top = c->o.subtitle ? TOP_SUB : TOP;
	if (c->total) {
		c->scale = (double)(c->o.width - 2 * PAD) / (double)c->total;
		measure(c, c->root);
	}
	c->height = c->top + ROW_H * (c->maxdepth + 1) + BOTTOM + (c->o.diff || !c->total ? 0 : LEGEND_H);
}

int render_svg(FILE *out, const struct tree *t, const struct svg_opts *opts)
{
	struct svg_ctx c;

	if (!out || !t)
		return -EIO;
	setup(&c, out, t, opts);
	put_head(&c, t);
	if (c.total && draw(&c, c.root, 0) < 0)
		return -EIO;
	put_tail(&c);
	if (fflush(out) || ferror(out))
		return -EIO;
	return 0;
}
