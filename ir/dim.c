/*
 * dim.c: symbolic feature sizes c + i*I + h*H + p*P.  Dims stay symbolic
 * until a model binds I, H and P, so one cell serves every shape.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

ir_dim ir_dim_const(int32_t c)
{
    return (ir_dim){c, 0, 0, 0};
}

bool ir_dim_eq(ir_dim a, ir_dim b)
{
    return a.c == b.c && a.i == b.i && a.h == b.h && a.p == b.p;
}

ir_dim ir_dim_add(ir_dim a, ir_dim b)
{
    return (ir_dim){a.c + b.c, a.i + b.i, a.h + b.h, a.p + b.p};
}

bool ir_dim_is_const(ir_dim d, int32_t c)
{
    return d.i == 0 && d.h == 0 && d.p == 0 && d.c == c;
}

bool ir_dim_div(ir_dim d, int32_t k, ir_dim *out)
{
    if (k <= 0 || d.c % k || d.i % k || d.h % k || d.p % k)
        return false;
    *out = (ir_dim){d.c / k, d.i / k, d.h / k, d.p / k};
    return true;
}

int64_t ir_dim_eval(ir_dim d, ir_sizes s)
{
    return d.c + d.i * s.I + d.h * s.H + d.p * s.P;
}

bool ir_dim_uses_p(ir_dim d)
{
    return d.p != 0;
}

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* One term: 4H, 4*H, H*4, H, 7. */
static bool parse_term(const char **ps, ir_dim *acc)
{
    const char *s = skip_space(*ps);
    long k = 1;
    bool have_num = false;
    if (isdigit((unsigned char)*s)) {
        k = 0;
        while (isdigit((unsigned char)*s)) {
            k = k * 10 + (*s++ - '0');
            if (k > 1000000)
                return false;
        }
        have_num = true;
        s = skip_space(s);
        if (*s == '*')
            s = skip_space(s + 1);
    }
    int32_t *slot = NULL;
    switch (*s) {
    case 'I': slot = &acc->i; break;
    case 'H': slot = &acc->h; break;
    case 'P': slot = &acc->p; break;
    default: break;
    }
    if (!slot) {
        if (!have_num || s[-1] == '*')
            return false;
        acc->c += (int32_t)k;
        *ps = s;
        return true;
    }
    s = skip_space(s + 1);
    if (*s == '*' && !have_num) {
        s = skip_space(s + 1);
        if (!isdigit((unsigned char)*s))
            return false;
        k = 0;
        while (isdigit((unsigned char)*s)) {
            k = k * 10 + (*s++ - '0');
            if (k > 1000000)
                return false;
        }
    }
    *slot += (int32_t)k;
    *ps = s;
    return true;
}

bool ir_dim_parse(const char *s, ir_dim *out)
{
    ir_dim d = {0, 0, 0, 0};
    if (!s)
        return false;
    for (;;) {
        if (!parse_term(&s, &d))
            return false;
        s = skip_space(s);
        if (*s == 0)
            break;
        if (*s++ != '+')
            return false;
    }
    if (d.c < 0 || (d.c == 0 && d.i == 0 && d.h == 0 && d.p == 0))
        return false;
    *out = d;
    return true;
}

static size_t put_term(char *buf, size_t n, size_t at, int32_t k, const char *sym)
{
    if (k == 0 || at >= n)
        return at;
    const char *plus = at ? "+" : "";
    int w = (k == 1 && *sym) ? snprintf(buf + at, n - at, "%s%s", plus, sym)
                             : snprintf(buf + at, n - at, "%s%d%s", plus, (int)k, sym);
    return w < 0 ? at : at + (size_t)w;
}

const char *ir_dim_str(ir_dim d, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    at = put_term(buf, n, at, d.i, "I");
    at = put_term(buf, n, at, d.h, "H");
    at = put_term(buf, n, at, d.p, "P");
    at = put_term(buf, n, at, d.c, "");
    if (at == 0)
        snprintf(buf, n, "0");
    return buf;
}
