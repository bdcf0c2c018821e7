/*
 * builtin.c: the built-in cells (frontend/cells/NAME.cell, embedded into the
 * library at build time) and loading a cell by name or from a file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "frontend/frontend.h"

#define MAX_CELL_FILE (64u << 20) /* a .cell file larger than this is not one */

/* Names accepted for a built-in cell that is another's text: premul and
 * premul_bias are lstm with a hoist setting (rnnc_model_desc.hoist). */
static const struct {
    const char *alias, *name;
} aliases[] = {{"premul", "lstm"}, {"premul_bias", "lstm"}};

const char *const *rnnc_cell_builtin_names(void)
{
    return rnnc_builtin_cell_names;
}

static const fe_builtin *find_builtin(const char *name)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0)
            name = aliases[i].name;
    for (const fe_builtin *b = rnnc_builtin_cells; b->name; b++)
        if (strcmp(b->name, name) == 0)
            return b;
    return NULL;
}

static rnnc_status not_found(const char *name)
{
    char list[512] = "";
    size_t n = 0;
    for (const fe_builtin *b = rnnc_builtin_cells; b->name && n < sizeof list - 64; b++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", b->name);
    return err_fail(RNNC_ERR_NOT_FOUND, "no built-in cell '%s' (built-in: %s, premul, premul_bias)",
                    name, list);
}

rnnc_status rnnc_cell_builtin(rnnc_cell **out, const char *name, const char *attrs)
{
    if (!out || !name)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_builtin: NULL argument");
    *out = NULL;
    const fe_builtin *b = find_builtin(name);
    if (!b)
        return not_found(name);
    char label[FE_MAX_NAME + 16];
    snprintf(label, sizeof label, "<builtin>/%s.cell", b->name);
    return rnnc_cell_parse(out, b->text, b->len, label, b->name, attrs);
}

/* The whole file in a malloc'ed buffer (common/: a FIFO or a directory is
 * refused before anything is read). */
static rnnc_status read_all(const char *path, char **text, size_t *len)
{
    cm_why why;
    rnnc_status s = cm_read_file(path, 0, MAX_CELL_FILE, text, len, &why);
    if (s == RNNC_ERR_NOT_FOUND)
        s = RNNC_ERR_IO;
    return s == RNNC_OK ? RNNC_OK : err_fail(s, "%s", why.text);
}

rnnc_status rnnc_cell_load_file(rnnc_cell **out, const char *path, const char *cell_name,
                                const char *attrs)
{
    if (!out || !path)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_load_file: NULL argument");
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    rnnc_status s = read_all(path, &text, &len);
    if (s != RNNC_OK)
        return s;
    s = rnnc_cell_parse(out, text, len, path, cell_name, attrs);
    free(text);
    return s;
}

static bool is_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && strcmp(s + n - 5, ".cell") == 0);
}

rnnc_status rnnc_cell_load(rnnc_cell **out, const char *name_or_path, const char *attrs)
{
    if (!out || !name_or_path)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_cell_load: NULL argument");
    if (is_path(name_or_path))
        return rnnc_cell_load_file(out, name_or_path, NULL, attrs);
    return rnnc_cell_builtin(out, name_or_path, attrs);
}
