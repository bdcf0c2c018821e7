/*
 * cli_outputs.c: nothing a user gives is lost.  A command refuses to write
 * an output over one of its own inputs (or over another of its outputs),
 * whatever the spelling: `x`, `./x`, a hard or symbolic link are the same
 * file by device and inode.  Checked before any work, so the input is
 * untouched and no time is spent.
 */
#include <stddef.h>

#include "common/common.h"
#include "tools/cli.h"

rnnc_status cli_check_outputs(const cli_path *outs, int n_out, const cli_path *ins, int n_in)
{
    for (int o = 0; o < n_out; o++) {
        const char *out = outs[o].path;
        if (!out || cm_is_discard(out))
            continue;
        for (int i = 0; i < n_in; i++)
            if (cm_same_file(out, ins[i].path))
                return cli_error(RNNC_ERR_INVALID_ARG,
                                 "%s '%s' is the same file as %s '%s': rnnc does not write "
                                 "over its inputs; give another path",
                                 outs[o].opt, out, ins[i].opt, ins[i].path);
        for (int j = 0; j < o; j++)
            if (cm_same_target(out, outs[j].path))
                return cli_error(RNNC_ERR_INVALID_ARG,
                                 "%s '%s' is the same file as %s '%s': give two paths",
                                 outs[o].opt, out, outs[j].opt, outs[j].path);
    }
    return RNNC_OK;
}
