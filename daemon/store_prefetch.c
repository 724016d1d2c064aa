/* store_prefetch.c - before a full scan of a table, tells the kernel every page the scan will read, so that they come from disk together instead of one synchronous read at a time (SQLite reads a page when it gets to it). Finds them by reading the b-tree's interior pages from the database file (the SQLite file format, read only). A hint is never needed for an answer: a page that is stale (newer in the WAL) or a b-tree this code cannot follow only costs the reads the scan would have done anyway. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "store_impl.h"

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

/* Appends the children of the interior page in w->page (header at hdr) to out[*n] (room for max). */
static int children(struct walk *w, size_t hdr, uint32_t *out, size_t *n, size_t max)
{
	uint32_t cells = be16(w->page + hdr + 3), child;

	if (hdr + 12 + 2 * (size_t)cells > w->page_size)
		return -EIO;
	for (uint32_t i = 0; i <= cells; i++) {
		if (i < cells) {
			uint32_t off = be16(w->page + hdr + 12 + 2 * i);

			if (off < hdr + 12 || off + 4 > w->page_size)
				return -EIO;
			child = be32(w->page + off);
		} else {
			child = be32(w->page + hdr + 8); /* the right-most pointer */
		}
		if (child < 2 || child > w->npages)
			return -EIO;
		if (*n >= max)
			return -E2BIG;
		out[(*n)++] = child;
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

int store_prefetch_pages(const char *path, uint32_t root, size_t max, uint32_t *pages, size_t *n)
{
	struct walk w = { .max = max, .found = pages };
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

int store_prefetch_table(struct store *st, const char *table)
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
	err = store_prefetch_pages(path, (uint32_t)root, STORE_PREFETCH_MAX_PAGES, pages, &n);
	free(pages);
	return err ? err : (int)n;
}
