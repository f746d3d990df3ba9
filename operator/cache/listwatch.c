/* listwatch — the lister-watcher interface; see listwatch.h. */
#include "listwatch.h"

#include <stddef.h>

void fg_listwatch_free(struct fg_listwatch *lw)
{
    if (!lw)
        return;
    lw->ops->cancel(lw);
    lw->ops->free(lw);
}
