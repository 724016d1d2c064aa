/* lru.h - an intrusive doubly-linked list kept in most-recently-used order, for the symbolizer's caches. */
#ifndef FLAMED_SYMBOLIZE_LRU_H
#define FLAMED_SYMBOLIZE_LRU_H

#include <stddef.h>

/* A link embedded in a cached object; the list head is a bare lru_node. */
struct lru_node {
	struct lru_node *prev, *next;
};

/* The object that embeds node ptr as its member. */
#define lru_entry(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Makes head an empty list (or n an unlinked node). */
static inline void lru_init(struct lru_node *head)
{
	head->prev = head;
	head->next = head;
}

/* Unlinks n from its list; n becomes an empty node (unlinking it again is harmless). */
static inline void lru_remove(struct lru_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	lru_init(n);
}

/* Puts n (unlinked or linked) at the front: the most recently used end. */
static inline void lru_touch(struct lru_node *head, struct lru_node *n)
{
	lru_remove(n);
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}

/* The least recently used node, or NULL when the list is empty. */
static inline struct lru_node *lru_oldest(const struct lru_node *head)
{
	return head->prev == head ? NULL : head->prev;
}

/* The node used next after n, toward the most recent end, or NULL when n is the most recent. */
static inline struct lru_node *lru_newer(const struct lru_node *head, const struct lru_node *n)
{
	return n->prev == head ? NULL : n->prev;
}

#endif
