/* rnnc_main.c: the `rnnc` command (being written). */
#include <stdio.h>

#include "rnnc.h"

int main(void)
{
    printf("rnnc %s\n", rnnc_version_string());
    return 0;
}
