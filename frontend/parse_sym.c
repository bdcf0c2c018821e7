/*
 * parse_sym.c: the names of one cell while it is parsed (a hash table, so a
 * megabyte of names stays linear) and the `attrs` overrides string.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "frontend/frontend.h"

void fe_symtab_free(fe_symtab *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static uint32_t slot_of(const fe_symtab *t, const char *name, uint32_t len)
{
    return (uint32_t)XXH3_64bits(name, len) & (t->cap - 1);
}

fe_sym *fe_sym_find(const fe_symtab *t, const char *name, uint32_t len)
{
    if (t->cap == 0)
        return NULL;
    for (uint32_t i = slot_of(t, name, len);; i = (i + 1) & (t->cap - 1)) {
        fe_sym *s = &t->slots[i];
        if (!s->name)
            return NULL;
        if (s->len == len && memcmp(s->name, name, len) == 0)
            return s;
    }
}

static bool grow(fe_symtab *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    fe_sym *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    fe_symtab bigger = {slots, cap, 0};
    for (uint32_t i = 0; i < t->cap; i++) {
        fe_sym *s = &t->slots[i];
        if (!s->name)
            continue;
        uint32_t j = slot_of(&bigger, s->name, s->len);
        while (slots[j].name)
            j = (j + 1) & (cap - 1);
        slots[j] = *s;
        bigger.n++;
    }
    free(t->slots);
    *t = bigger;
    return true;
}

fe_sym *fe_sym_add(fe_symtab *t, const char *name, uint32_t len)
{
    if ((t->n + 1) * 2 > t->cap && !grow(t))
        return NULL;
    uint32_t i = slot_of(t, name, len);
    while (t->slots[i].name)
        i = (i + 1) & (t->cap - 1);
    fe_sym *s = &t->slots[i];
    memset(s, 0, sizeof *s);
    s->name = name;
    s->len = len;
    s->v = RNNC_NONE;
    t->n++;
    return s;
}

void fe_overrides_free(fe_attr_override *o, int n)
{
    for (int i = 0; i < n; i++)
        free(o[i].name);
    free(o);
}

static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || n > FE_MAX_NAME || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

static size_t trim(const char **s, size_t n)
{
    while (n && (**s == ' ' || **s == '\t'))
        (*s)++, n--;
    while (n && ((*s)[n - 1] == ' ' || (*s)[n - 1] == '\t'))
        n--;
    return n;
}

/* One "name=value" item of the overrides string. */
static rnnc_status parse_item(const char *item, size_t n, fe_attr_override *o)
{
    const char *eq = memchr(item, '=', n);
    if (!eq)
        return err_fail(RNNC_ERR_INVALID_ARG, "attrs: expected name=value, got '%.*s'",
                        (int)(n > 80 ? 80 : n), item);
    const char *name = item;
    size_t name_len = trim(&name, (size_t)(eq - item));
    const char *val = eq + 1;
    size_t val_len = trim(&val, n - (size_t)(eq + 1 - item));
    if (!valid_name(name, name_len))
        return err_fail(RNNC_ERR_INVALID_ARG, "attrs: bad attribute name '%.*s'",
                        (int)(name_len > 80 ? 80 : name_len), name);
    char buf[72];
    char *end = NULL;
    if (val_len == 0 || val_len >= sizeof buf)
        return err_fail(RNNC_ERR_INVALID_ARG, "attrs: bad value for '%.*s'", (int)name_len,
                        name);
    memcpy(buf, val, val_len);
    buf[val_len] = 0;
    errno = 0;
    o->value = strtod(buf, &end);
    if (*end || !isfinite(o->value))
        return err_fail(RNNC_ERR_INVALID_ARG, "attrs: '%s' is not a number (attribute '%.*s')",
                        buf, (int)name_len, name);
    o->name = strndup(name, name_len);
    return o->name ? RNNC_OK : err_fail(RNNC_ERR_OUT_OF_MEMORY, "attrs: out of memory");
}

rnnc_status fe_overrides_parse(const char *attrs, fe_attr_override **out, int *n)
{
    *out = NULL;
    *n = 0;
    if (!attrs || !*attrs)
        return RNNC_OK;
    int cap = 1;
    for (const char *c = attrs; *c; c++)
        cap += *c == ',';
    if (cap > 256) /* the duplicate check below is quadratic */
        return err_fail(RNNC_ERR_INVALID_ARG, "attrs: more than 256 overrides");
    fe_attr_override *o = calloc((size_t)cap, sizeof *o);
    if (!o)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "attrs: out of memory");
    int k = 0;
    for (const char *item = attrs;;) {
        const char *comma = strchr(item, ',');
        size_t len = comma ? (size_t)(comma - item) : strlen(item);
        rnnc_status s = parse_item(item, len, &o[k]);
        if (s != RNNC_OK) {
            fe_overrides_free(o, k + 1);
            return s;
        }
        for (int j = 0; j < k; j++)
            if (strcmp(o[j].name, o[k].name) == 0) {
                s = err_fail(RNNC_ERR_INVALID_ARG, "attrs: '%s' given twice", o[k].name);
                fe_overrides_free(o, k + 1);
                return s;
            }
        k++;
        if (!comma)
            break;
        item = comma + 1;
    }
    *out = o;
    *n = k;
    return RNNC_OK;
}
