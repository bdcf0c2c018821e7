/*
 * arena.c: one arena per compilation.  Blocks are chained and freed at
 * once, so passes allocate freely and never free piecemeal.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct block {
    struct block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} block;

struct ir_arena {
    block *head;
};

ir_arena *ir_arena_create(void)
{
    return calloc(1, sizeof(ir_arena));
}

void ir_arena_destroy(ir_arena *a)
{
    if (!a)
        return;
    for (block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(a);
}

void *ir_arena_alloc(ir_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        block *b = malloc(sizeof(block) + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    memset(p, 0, n);
    return p;
}
