/*
 * print_schedule.c: the schedule as text (RNNC_DUMP=schedule and
 * `rnnc dump --stage schedule`): where every node runs, what crosses
 * from one part to the next, and the phases of the step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static const char *const part_names[] = {"dead", "fold", "hoist", "step"};
static const char *const setting_names[] = {"all", "matmul", "none"};

static int append(char **buf, size_t *len, size_t *cap, const char *line)
{
    size_t n = strlen(line);
    if (*len + n + 1 > *cap) {
        size_t c = (*cap ? *cap * 2 : 4096) + n;
        char *p = realloc(*buf, c);
        if (!p)
            return -1;
        *buf = p;
        *cap = c;
    }
    memcpy(*buf + *len, line, n + 1);
    *len += n;
    return 0;
}

static void node_label(const ir_fn *f, int32_t i, char *buf, size_t n)
{
    const ir_node *x = &f->nodes[i];
    const char *name = x->op == IR_INPUT   ? f->inputs[x->i0].name
                       : x->op == IR_STATE ? f->states[x->i0].name
                       : x->op == IR_PARAM ? f->params[x->i0].name
                                           : NULL;
    const char *given = ir_value_name(f, i);
    char d[48];
    if (name)
        snprintf(buf, n, "%%%d %s", (int)i, name);
    else
        snprintf(buf, n, "%%%d %s%s%s [%s]", (int)i, given ? given : "", given ? " = " : "",
                 ir_ops[x->op].name, ir_dim_str(x->cols, d, sizeof d));
}

rnnc_status ir_schedule_print(const ir_schedule *s, char **text)
{
    const ir_fn *f = s->fn;
    char *buf = NULL, line[256], label[128];
    size_t len = 0, cap = 0;
    int err = 0;
    snprintf(line, sizeof line, "schedule %s (hoist=%s): %d fold, %d hoisted, %d step nodes in %d phase%s\n",
             f->name, setting_names[s->setting % 3], s->n_fold_out, s->n_hoist_out, s->n_step,
             s->n_phases, s->n_phases == 1 ? "" : "s");
    err |= append(&buf, &len, &cap, line);
    for (int32_t i = 0; i < f->n; i++) {
        node_label(f, i, label, sizeof label);
        if (s->hoist.part[i] == IR_PART_STEP && s->phase[i] >= 0)
            snprintf(line, sizeof line, "  step/%d  %s\n", s->phase[i], label);
        else
            snprintf(line, sizeof line, "  %-6s  %s\n", part_names[s->hoist.part[i] & 3], label);
        err |= append(&buf, &len, &cap, line);
    }
    for (int32_t k = 0; k < s->n_fold_out; k++) {
        node_label(f, s->fold_out[k], label, sizeof label);
        snprintf(line, sizeof line, "  fold_out  %s\n", label);
        err |= append(&buf, &len, &cap, line);
    }
    for (int32_t k = 0; k < s->n_hoist_out; k++) {
        node_label(f, s->hoist_out[k], label, sizeof label);
        snprintf(line, sizeof line, "  hoist_out %s\n", label);
        err |= append(&buf, &len, &cap, line);
    }
    if (err) {
        free(buf);
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "printing the schedule: out of memory");
    }
    *text = buf;
    return RNNC_OK;
}
