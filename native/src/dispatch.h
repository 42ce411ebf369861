#ifndef BLOBSTORE_DISPATCH_H
#define BLOBSTORE_DISPATCH_H

#include "kernels.h"

/* The kernel of the path in use. */
rs_kernel *rs_kernel_current(void);

#endif
