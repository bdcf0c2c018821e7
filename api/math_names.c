/*
 * math_names.c: the names of the math modes (for the model descriptor,
 * --math and reports); present in every build.
 */
#include <strings.h>

#include "api/api.h"

static const char *const math_names[] = {"ffma", "tf32", "3xtf32"};
#define N_MATH (sizeof math_names / sizeof math_names[0])

const char *rnnc_math_name(rnnc_math m)
{
    return (unsigned)m < N_MATH ? math_names[m] : "unknown";
}

rnnc_status rnnc_math_from_name(const char *name, rnnc_math *out)
{
    for (size_t i = 0; name && out && i < N_MATH; i++)
        if (strcasecmp(name, math_names[i]) == 0) {
            *out = (rnnc_math)i;
            return RNNC_OK;
        }
    return err_fail(RNNC_ERR_INVALID_ARG, "unknown math mode '%s' (ffma, tf32, 3xtf32)",
                    name ? name : "(null)");
}
