/*
 * env.c: reading the RNNC_* environment variables that tune or trace the
 * library.  A variable that is unset or empty means "the default" everywhere.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

bool cm_env_is(const char *name, const char *value)
{
    const char *e = getenv(name);
    return e && strcmp(e, value) == 0;
}

long cm_env_long(const char *name, long dflt)
{
    const char *e = getenv(name);
    return e && *e ? strtol(e, NULL, 10) : dflt;
}

bool cm_log_enabled(const char *level)
{
    const char *env = getenv("RNNC_LOG");
    if (!env || !*env)
        return false;
    if (strstr(env, level) || strstr(env, "debug"))
        return true;
    return strcmp(level, "info") == 0 && strstr(env, "all");
}
