/* tree.h - a flame graph's frame tree, aggregated from folded stacks; two sides for differential graphs. */
#ifndef FLAMED_RENDER_TREE_H
#define FLAMED_RENDER_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tree;

enum tree_side {
	TREE_NEW = 0,  /* the profile, or the new window of a diff */
	TREE_BASE = 1, /* the base window of a diff */
};

/* Samples of a Python frame's node by the line it ran, per side. */
struct tree_line {
	int line;
	uint64_t value[2];
};

struct tree_node {
	const char *name;             /* frame name, owned by the tree */
	const char *file;             /* a Python frame's file (tree_add_frames), owned; NULL: none */
	int start_line;               /* its function's first line */
	struct tree_line *lines;      /* its samples by line run, sorted by line once tree_finish() ran */
	uint32_t nlines;
	uint64_t value[2];            /* samples in this frame and below, per side */
	uint64_t self[2];             /* samples with this frame as leaf, per side */
	struct tree_node **children;  /* sorted by name once tree_finish() ran */
	uint32_t nchildren;
	uint32_t depth;               /* 0 for the root */
};

struct tree_opts {
	bool reverse;         /* icicle: each stack added leaf first (callers under the hot leaves) */
	bool no_comm;         /* leave out the process name as the first frame */
	size_t max_nodes;     /* 0: 1,000,000; frames beyond are cut and counted */
};

/* Creates an empty tree whose root is named "all". Returns 0 or -ENOMEM. */
int tree_new(const struct tree_opts *opts, struct tree **out);

/* Adds count samples of the stack folded ("a;b;c", root first) of process comm to side.
 * Returns 0, -EINVAL (count 0, empty stack), or -ENOMEM. */
int tree_add(struct tree *t, const char *comm, const char *folded, uint64_t count, enum tree_side side);

/* One frame of a stack given with its source: a Python frame's file (NULL or "": none), its function's
 * first line and the line it ran. */
struct tree_frame {
	const char *name;
	const char *file;
	int start_line, line;
};

/* tree_add() of a stack given as frames (root first, n of them, none empty): a node of a Python frame
 * keeps its file and first line and counts its samples by the line run. Returns as tree_add(). */
int tree_add_frames(struct tree *t, const char *comm, const struct tree_frame *frames, size_t n,
		    uint64_t count, enum tree_side side);

/* Sorts every node's children by name (the order flame graphs draw them in). Call once, after the
 * last tree_add(). */
void tree_finish(struct tree *t);

/* The root ("all"); its value is the total of each side. */
const struct tree_node *tree_root(const struct tree *t);

/* Samples whose stacks were cut short because the tree reached max_nodes (they count at the
 * deepest frame kept). */
uint64_t tree_truncated(const struct tree *t);

/* Number of nodes, root included. */
size_t tree_nodes(const struct tree *t);

/* Frees the tree; NULL is safe. */
void tree_free(struct tree *t);

/* The kind of a frame, from the FlameGraph suffixes and unknown markers. */
enum frame_class {
	FRAME_CLASS_USER = 0,
	FRAME_CLASS_KERNEL,   /* ends in "_[k]" */
	FRAME_CLASS_JIT,      /* ends in "_[j]" */
	FRAME_CLASS_INLINED,  /* ends in "_[i]" */
	FRAME_CLASS_UNKNOWN,  /* "[unknown]", "[unknown]_[k]" or "module+0xOFF" */
	FRAME_CLASS_PYTHON,   /* "QUALNAME (FILE)": a Python function, FILE with no parentheses */
	FRAME_CLASS_COUNT
};

/* Classifies a frame name. */
enum frame_class frame_classify(const char *name);

#endif
