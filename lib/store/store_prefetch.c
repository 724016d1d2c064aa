/* store_prefetch.c - before a full scan of a table, tells the kernel every page the scan will read, so that they come from disk together instead of one synchronous read at a time (SQLite reads a page when it gets to it). Finds them by reading the b-tree's interior pages from the database file (the SQLite file format, read only). A hint is never needed for an answer: a page that is stale (newer in the WAL) or a b-tree this code cannot follow only costs the reads the scan would have done anyway. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "store/store_impl.h"

#define PREFETCH_MAX_LEVELS 16      /* b-tree depth followed at most (SQLite's are far shallower) */
#define PREFETCH_MAX_INTERIOR 4096  /* interior pages read at most */

/* SQLite b-tree page types (the first byte of the page header). */
enum { PAGE_INTERIOR_INDEX = 2, PAGE_INTERIOR_TABLE = 5, PAGE_LEAF_INDEX = 10, PAGE_LEAF_TABLE = 13 };

static uint32_t be16(const unsigned char *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A b-tree being read: the file, its geometry, the page buffer and the pages found. */
struct walk {
	int fd;
	uint32_t page_size, npages;
	unsigned char *page;
	uint32_t *found; /* a level's pages */
	size_t nfound, max;
	unsigned interior_read;
	const int64_t *lo, *hi; /* an index b-tree's keys whose first two columns are in [lo, hi]; NULL: all */
};

/* Reads page pgno; returns its type (or -EIO). */
static int read_page(struct walk *w, uint32_t pgno, size_t *hdr)
{
	ssize_t got;

	if (pgno < 1 || pgno > w->npages || w->interior_read >= PREFETCH_MAX_INTERIOR)
		return -EIO;
	w->interior_read++;
	got = pread(w->fd, w->page, w->page_size, (off_t)(pgno - 1) * w->page_size);
	if (got != (ssize_t)w->page_size)
		return -EIO;
	*hdr = pgno == 1 ? 100 : 0; /* page 1 starts with the database header */
	return w->page[*hdr];
}

/* An SQLite varint at p[*pos] (at most 9 bytes, big-endian groups of 7 bits, the 9th of 8), within end. */
static int varint(const unsigned char *p, size_t end, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (int i = 0; i < 9; i++) {
		if (*pos >= end)
			return -EIO;
		unsigned char b = p[(*pos)++];

		if (i == 8) {
			*v = *v << 8 | b;
			return 0;
		}
		*v = *v << 7 | (b & 0x7f);
		if (!(b & 0x80))
			return 0;
	}
	return 0;
}

/* The first two columns of the record that starts at p[pos] (within end), when both are integers:
 * 1, or 0 when they are something else (or cut short by the page: the caller then keeps the child). */
static int record_key(const unsigned char *p, size_t pos, size_t end, int64_t key[2])
{
	static const unsigned char int_size[10] = { 0, 1, 2, 3, 4, 6, 8, 0, 0, 0 };
	uint64_t hdr_len, type[2];
	size_t hp = pos, body;

	if (varint(p, end, &hp, &hdr_len) || varint(p, end, &hp, &type[0]) || varint(p, end, &hp, &type[1]))
		return 0;
	body = pos + hdr_len;
	for (int c = 0; c < 2; c++) {
		if (type[c] == 8 || type[c] == 9) {
			key[c] = (int64_t)type[c] - 8;
			continue;
		}
		if (type[c] < 1 || type[c] > 6 || body + int_size[type[c]] > end || hdr_len > end - pos)
			return 0;
		uint64_t v = p[body] & 0x80 ? UINT64_MAX : 0; /* big-endian two's complement */

		for (unsigned i = 0; i < int_size[type[c]]; i++)
			v = v << 8 | p[body + i];
		key[c] = (int64_t)v;
		body += int_size[type[c]];
	}
	return 1;
}

/* a <=> b on two columns. */
static int cmp_key(const int64_t a[2], const int64_t b[2])
{
	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	return a[1] < b[1] ? -1 : a[1] > b[1];
}

/* Appends the children of the interior page in w->page (header at hdr) to out[*n] (room for max): all
 * of them, or with a range, those that can hold a key in it. In an index b-tree, the child left of a
 * cell holds keys below the cell's, the right-most one keys above the last cell's. */
static int children(struct walk *w, size_t hdr, uint32_t *out, size_t *n, size_t max)
{
	uint32_t cells = be16(w->page + hdr + 3), child;
	bool prev_known = false, prev_above = false; /* the previous cell's key is past hi */

	if (hdr + 12 + 2 * (size_t)cells > w->page_size)
		return -EIO;
	for (uint32_t i = 0; i <= cells; i++) {
		bool take = true, known = false, below = false;
		int64_t key[2];

		if (i < cells) {
			uint32_t off = be16(w->page + hdr + 12 + 2 * i);
			size_t pos = off + 4;
			uint64_t payload;

			if (off < hdr + 12 || off + 4 > w->page_size)
				return -EIO;
			child = be32(w->page + off);
			if (w->lo && !varint(w->page, w->page_size, &pos, &payload) &&
			    record_key(w->page, pos, w->page_size, key)) {
				known = true;
				below = cmp_key(key, w->lo) < 0; /* every key left of it is below lo too */
			}
		} else {
			child = be32(w->page + hdr + 8); /* the right-most pointer */
		}
		if (w->lo)
			take = !below && !(prev_known && prev_above);
		if (child < 2 || child > w->npages)
			return -EIO;
		if (take) {
			if (*n >= max)
				return -E2BIG;
			out[(*n)++] = child;
		}
		prev_known = known;
		prev_above = known && cmp_key(key, w->hi) > 0;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Hints pages[0..n) to the kernel, runs of consecutive pages as one range each. */
static void hint(struct walk *w, uint32_t *pages, size_t n)
{
	qsort(pages, n, sizeof(*pages), cmp_u32);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && pages[j] <= pages[j - 1] + 1)
			j++;
		posix_fadvise(w->fd, (off_t)(pages[i] - 1) * w->page_size,
			      (off_t)(pages[j - 1] - pages[i] + 1) * w->page_size, POSIX_FADV_WILLNEED);
		i = j;
	}
}

/* Finds the leaf pages of the b-tree rooted at root: the depth from its leftmost path, then each
 * interior level in turn, every level's pages hinted before they are read. Leaves in w->found. */
static int leaves(struct walk *w, uint32_t root)
{
	uint32_t *next = calloc(w->max, sizeof(*next));
	unsigned depth = 0;
	size_t hdr, n = 0;
	uint32_t pg = root;
	int type, err = 0;

	if (!next)
		return -ENOMEM;
	/* The leftmost path: how many interior levels there are (every leaf of a b-tree is as deep). */
	while ((type = read_page(w, pg, &hdr)) == PAGE_INTERIOR_TABLE || type == PAGE_INTERIOR_INDEX) {
		uint32_t off = be16(w->page + hdr + 12);

		if (++depth > PREFETCH_MAX_LEVELS || be16(w->page + hdr + 3) == 0 || off < hdr + 12 ||
		    off + 4 > w->page_size)
			break;
		pg = be32(w->page + off);
	}
	if (type < 0 || (type != PAGE_LEAF_TABLE && type != PAGE_LEAF_INDEX) || depth > PREFETCH_MAX_LEVELS)
		err = -EIO;
	w->found[0] = root;
	w->nfound = 1;
	for (unsigned level = 0; !err && level < depth; level++) {
		n = 0;
		for (size_t i = 0; !err && i < w->nfound; i++) {
			type = read_page(w, w->found[i], &hdr);
			err = type == PAGE_INTERIOR_TABLE || type == PAGE_INTERIOR_INDEX ? children(w, hdr, next, &n, w->max)
											 : -EIO;
		}
		if (!err) {
			hint(w, next, n);
			memcpy(w->found, next, n * sizeof(*next));
			w->nfound = n;
		}
	}
	if (!err && !depth)
		w->nfound = 0; /* the root is the only page, and a leaf: nothing to hint */
	free(next);
	return err;
}

int store_prefetch_pages(const char *path, uint32_t root, const int64_t lo[2], const int64_t hi[2], size_t max,
			 uint32_t *pages, size_t *n)
{
	struct walk w = { .max = max, .found = pages, .lo = lo && hi ? lo : NULL, .hi = hi };
	unsigned char head[100];
	struct stat sb;
	int err;

	*n = 0;
	if (!max)
		return -EINVAL;
	w.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (w.fd < 0)
		return -errno;
	if (fstat(w.fd, &sb) < 0 || pread(w.fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    memcmp(head, "SQLite format 3", 16) != 0) {
		close(w.fd);
		return -EIO;
	}
	w.page_size = be16(head + 16) == 1 ? 65536 : be16(head + 16);
	if (w.page_size < 512 || (w.page_size & (w.page_size - 1))) {
		close(w.fd);
		return -EIO;
	}
	w.npages = (uint32_t)((uint64_t)sb.st_size / w.page_size);
	w.page = malloc(w.page_size);
	err = w.page ? leaves(&w, root) : -ENOMEM;
	if (!err)
		*n = w.nfound;
	free(w.page);
	close(w.fd);
	return err;
}

int store_prefetch_range(struct store *st, const char *table, const int64_t lo[2], const int64_t hi[2])
{
	const char *path = sqlite3_db_filename(st->db, "main");
	sqlite3_stmt *s = NULL;
	uint32_t *pages;
	int64_t root = 0;
	size_t n = 0;
	int err;

	if (!path || !*path)
		return 0; /* a database in memory */
	if (sqlite3_prepare_v2(st->db, "SELECT rootpage FROM sqlite_schema WHERE name = ?1", -1, &s, NULL) !=
	    SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		root = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (root < 1 || root > UINT32_MAX)
		return -ENOENT;
	pages = malloc(STORE_PREFETCH_MAX_PAGES * sizeof(*pages));
	if (!pages)
		return -ENOMEM;
	err = store_prefetch_pages(path, (uint32_t)root, lo, hi, STORE_PREFETCH_MAX_PAGES, pages, &n);
	free(pages);
	return err ? err : (int)n;
}

int store_prefetch_table(struct store *st, const char *table)
{
	return store_prefetch_range(st, table, NULL, NULL);
}
