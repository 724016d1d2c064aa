/* tree.c - builds a flame graph's frame tree from folded stacks, with a hash table of (parent, name). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "render/tree.h"

#define DEFAULT_MAX_NODES 1000000

/* A node and what only the builder needs. */
struct node {
	struct tree_node pub;   /* first: a struct tree_node * is a struct node * */
	struct node *parent;
	uint64_t hash;          /* of (parent, name) */
	uint32_t children_cap;
	char name[];
};

struct tree {
	struct tree_opts opts;
	struct node *root;
	struct node **slots;    /* open addressing on hash; NULL: empty */
	size_t cap, n;          /* n: nodes other than the root */
	uint64_t truncated;
};

static uint64_t hash_name(const struct node *parent, const char *s, size_t len)
{
	uint64_t h = hash_bytes(HASH_FNV_OFFSET ^ (uint64_t)(uintptr_t)parent, s, len);

	return h ? h : 1;
}

static struct node *node_new(struct node *parent, const char *name, size_t len, uint64_t hash)
{
	struct node *n = calloc(1, sizeof(*n) + len + 1);

	if (!n)
		return NULL;
	memcpy(n->name, name, len);
	n->pub.name = n->name;
	n->parent = parent;
	n->hash = hash;
	n->pub.depth = parent ? parent->pub.depth + 1 : 0;
	return n;
}

int tree_new(const struct tree_opts *opts, struct tree **out)
{
	struct tree *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (opts)
		t->opts = *opts;
	if (!t->opts.max_nodes)
		t->opts.max_nodes = DEFAULT_MAX_NODES;
	t->cap = 1024;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	t->root = node_new(NULL, "all", 3, 0);
	if (!t->slots || !t->root) {
		tree_free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

static int grow_slots(struct tree *t)
{
	size_t cap = t->cap * 2;
	struct node **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct node *n = t->slots[i];

		if (!n)
			continue;
		size_t j = n->hash & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = n;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

static int add_child(struct node *parent, struct node *child)
{
	if (parent->pub.nchildren == parent->children_cap) {
		uint32_t cap = parent->children_cap ? parent->children_cap * 2 : 4;
		struct tree_node **c = realloc(parent->pub.children, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		parent->pub.children = c;
		parent->children_cap = cap;
	}
	parent->pub.children[parent->pub.nchildren++] = &child->pub;
	return 0;
}

/* Finds parent's child named name[0..len), creating it. NULL with *err set: -ENOMEM, or -ENOSPC
 * when the tree is full. */
static struct node *child(struct tree *t, struct node *parent, const char *name, size_t len, int *err)
{
	uint64_t h = hash_name(parent, name, len);
	size_t i = h & (t->cap - 1);
	struct node *n;

	for (; (n = t->slots[i]); i = (i + 1) & (t->cap - 1))
		if (n->hash == h && n->parent == parent && !strncmp(n->name, name, len) && !n->name[len])
			return n;
	if (t->n + 1 >= t->opts.max_nodes) {
		*err = -ENOSPC;
		return NULL;
	}
	n = node_new(parent, name, len, h);
	if (!n || add_child(parent, n)) {
		free(n);
		*err = -ENOMEM;
		return NULL;
	}
	t->slots[i] = n;
	t->n++;
	if (t->n * 2 > t->cap && grow_slots(t)) {
		*err = -ENOMEM; /* the node is in; only the table could not grow */
		return NULL;
	}
	return n;
}

/* Splits comm and folded into frames in the order the tree takes them; returns the count, and sets
 * *cut when the stack had more than max frames (the root-most are kept). */
static size_t split(const struct tree *t, const char *comm, const char *folded, const char **s, size_t *len,
		    size_t max, bool *cut)
{
	size_t n = 0;

	if (!t->opts.no_comm && n < max) {
		s[n] = comm && comm[0] ? comm : "[unknown]";
		len[n] = strlen(s[n]);
		n++;
	}
	for (const char *p = folded; *p && n < max;) {
		const char *e = strchr(p, ';');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l) {
			s[n] = p;
			len[n++] = l;
		}
		p += l + (e ? 1 : 0);
	}
	*cut = n == max && strchr(s[n - 1], ';') != NULL;
	if (t->opts.reverse) {
		for (size_t i = 0; i < n / 2; i++) {
			const char *ts = s[i];
			size_t tl = len[i];

			s[i] = s[n - 1 - i], len[i] = len[n - 1 - i];
			s[n - 1 - i] = ts, len[n - 1 - i] = tl;
		}
	}
	return n;
}

#define TREE_MAX_FRAMES 1024

/* Counts count samples of line on n's side (a node of a Python frame, whose file it keeps). */
static int add_line(struct node *n, const struct tree_frame *src, uint64_t count, enum tree_side side)
{
	struct tree_node *p = &n->pub;
	uint32_t i;

	if (!p->file) {
		p->file = strdup(src->file);
		if (!p->file)
			return -ENOMEM;
		p->start_line = src->start_line;
	}
	for (i = 0; i < p->nlines && p->lines[i].line != src->line; i++)
		;
	if (i == p->nlines) {
		struct tree_line *l = reallocarray(p->lines, p->nlines + 1, sizeof(*l));

		if (!l)
			return -ENOMEM;
		p->lines = l;
		p->lines[p->nlines++] = (struct tree_line){ .line = src->line };
	}
	p->lines[i].value[side] += count;
	return 0;
}

/* Adds count samples along the path s[0..n) (src[i]: frame i's source, NULL: none). */
static int add_path(struct tree *t, const char *const *s, const size_t *len,
		    const struct tree_frame *const *src, size_t n, bool cut, uint64_t count, enum tree_side side)
{
	struct node *node = t->root;
	int err = 0;

	if (cut)
		t->truncated += count;
	node->pub.value[side] += count;
	for (size_t i = 0; i < n; i++) {
		struct node *c = child(t, node, s[i], len[i], &err);

		if (!c) {
			if (err != -ENOSPC)
				return err;
			t->truncated += count;
			break;
		}
		c->pub.value[side] += count;
		if (src && src[i] && (err = add_line(c, src[i], count, side)))
			return err;
		node = c;
	}
	node->pub.self[side] += count;
	return 0;
}

int tree_add(struct tree *t, const char *comm, const char *folded, uint64_t count, enum tree_side side)
{
	const char *s[TREE_MAX_FRAMES];
	size_t len[TREE_MAX_FRAMES], n;
	bool cut = false;

	if (!count || !folded || !folded[0] || (side != TREE_NEW && side != TREE_BASE))
		return -EINVAL;
	n = split(t, comm, folded, s, len, TREE_MAX_FRAMES, &cut);
	if (!n)
		return -EINVAL;
	return add_path(t, s, len, NULL, n, cut, count, side);
}

int tree_add_frames(struct tree *t, const char *comm, const struct tree_frame *frames, size_t nframes,
		    uint64_t count, enum tree_side side)
{
	const char *s[TREE_MAX_FRAMES];
	const struct tree_frame *src[TREE_MAX_FRAMES];
	size_t len[TREE_MAX_FRAMES], n = 0;

	if (!count || !frames || !nframes || (side != TREE_NEW && side != TREE_BASE))
		return -EINVAL;
	if (!t->opts.no_comm) {
		s[n] = comm && comm[0] ? comm : "[unknown]";
		src[n] = NULL;
		len[n] = strlen(s[n]);
		n++;
	}
	for (size_t i = 0; i < nframes && n < TREE_MAX_FRAMES; i++) {
		if (!frames[i].name || !frames[i].name[0])
			return -EINVAL;
		s[n] = frames[i].name;
		len[n] = strlen(s[n]);
		src[n++] = frames[i].file && frames[i].file[0] ? &frames[i] : NULL;
	}
	if (t->opts.reverse) {
		for (size_t i = 0; i < n / 2; i++) {
			const char *ts = s[i];
			const struct tree_frame *tf = src[i];
			size_t tl = len[i];

			s[i] = s[n - 1 - i], len[i] = len[n - 1 - i], src[i] = src[n - 1 - i];
			s[n - 1 - i] = ts, len[n - 1 - i] = tl, src[n - 1 - i] = tf;
		}
	}
	return add_path(t, s, len, src, n, n == TREE_MAX_FRAMES && nframes + 1 > TREE_MAX_FRAMES, count, side);
}

static int by_line(const void *a, const void *b)
{
	const struct tree_line *x = a, *y = b;

	return (x->line > y->line) - (x->line < y->line);
}

static int by_name(const void *a, const void *b)
{
	const struct tree_node *x = *(const struct tree_node *const *)a, *y = *(const struct tree_node *const *)b;

	return strcmp(x->name, y->name);
}

void tree_finish(struct tree *t)
{
	if (t->root->pub.nchildren)
		qsort(t->root->pub.children, t->root->pub.nchildren, sizeof(struct tree_node *), by_name);
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slots[i] && t->slots[i]->pub.nchildren)
			qsort(t->slots[i]->pub.children, t->slots[i]->pub.nchildren, sizeof(struct tree_node *),
			      by_name);
		if (t->slots[i] && t->slots[i]->pub.nlines)
			qsort(t->slots[i]->pub.lines, t->slots[i]->pub.nlines, sizeof(struct tree_line), by_line);
	}
}

const struct tree_node *tree_root(const struct tree *t)
{
	return &t->root->pub;
}

uint64_t tree_truncated(const struct tree *t)
{
	return t->truncated;
}

size_t tree_nodes(const struct tree *t)
{
	return t->n + 1;
}

void tree_free(struct tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; t->slots && i < t->cap; i++) {
		if (t->slots[i]) {
			free(t->slots[i]->pub.children);
			free((char *)t->slots[i]->pub.file);
			free(t->slots[i]->pub.lines);
			free(t->slots[i]);
		}
	}
	if (t->root)
		free(t->root->pub.children);
	free(t->root);
	free(t->slots);
	free(t);
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t l = strlen(suffix);

	return len >= l && !memcmp(s + len - l, suffix, l);
}

/* "QUALNAME (FILE)": ends in a parenthesis whose " (" opens a non-empty FILE holding no parenthesis. A
 * native name never has " (": raw symbols are mangled, the others end in a FlameGraph suffix. */
static bool is_python(const char *s, size_t len)
{
	const char *open;

	if (len < 4 || s[len - 1] != ')')
		return false;
	for (open = s + len - 2; open > s && *open != '(' && *open != ')'; open--)
		;
	/* open: the parenthesis nearest the end; a file, and a name before " (", must be there */
	return *open == '(' && open - s >= 2 && open[-1] == ' ' && open + 1 < s + len - 1;
}

enum frame_class frame_classify(const char *name)
{
	size_t len = strlen(name);

	if (!strncmp(name, "[unknown]", 9) || strstr(name, "+0x"))
		return FRAME_CLASS_UNKNOWN;
	if (ends_with(name, len, "_[k]"))
		return FRAME_CLASS_KERNEL;
	if (ends_with(name, len, "_[j]"))
		return FRAME_CLASS_JIT;
	if (ends_with(name, len, "_[i]"))
		return FRAME_CLASS_INLINED;
	if (is_python(name, len))
		return FRAME_CLASS_PYTHON;
	return FRAME_CLASS_USER;
}
